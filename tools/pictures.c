/* The picture options of the command line (see pictures.h). */
#include <stdlib.h>
#include <string.h>

#include "pictures.h"
#include "tool.h"

clg_tool_pictures clg_tool_bench_pictures;

void clg_tool_pictures_init(clg_tool_pictures *p, const char *command, int keep_runs)
{
  memset(p, 0, sizeof *p);
  p->command = command;
  p->runs = keep_runs > 0 ? keep_runs : 1;
}

clg_tool_opt clg_tool_trace_opt(clg_tool_pictures *p)
{
  return (clg_tool_opt){"--trace", CLG_TOOL_STRING, .meta = "FILE", .text = &p->trace};
}

clg_tool_opt clg_tool_profile_opt(clg_tool_pictures *p)
{
  return (clg_tool_opt){"--profile", CLG_TOOL_FLAG, .flag = &p->profile};
}

clg_tool_opt clg_tool_memory_map_opt(clg_tool_pictures *p)
{
  return (clg_tool_opt){"--memory-map", CLG_TOOL_STRING, .meta = "FILE.svg",
                        .text = &p->memory_map};
}

clg_tool_opt clg_tool_memory_map_device_opt(clg_tool_pictures *p)
{
  return (clg_tool_opt){"--memory-map-device", CLG_TOOL_STRING, .meta = "DEV",
                        .text = &p->memory_map_device};
}

bool clg_tool_pictures_check(const clg_tool_pictures *p)
{
  if (p->memory_map_device && !p->memory_map) {
    fprintf(stderr, "clgraph %s: --memory-map-device '%s' needs --memory-map FILE.svg\n",
            p->command, p->memory_map_device);
    return false;
  }
  return true;
}

bool clg_tool_pictures_wanted(const clg_tool_pictures *p)
{
  return p->trace || p->memory_map || p->profile;
}

void clg_tool_pictures_setup(clg_tool_pictures *p, clg_session *s)
{
  if (!s || !clg_tool_pictures_wanted(p))
    return;
  if (clg_session_set_trace(s, p->runs) != CLG_OK) {
    fprintf(stderr, "clgraph %s: tracing: %s\n", p->command, clg_last_error());
    p->failed = true;
  }
}

bool clg_tool_pictures_finish(clg_tool_pictures *p, clg_session *s)
{
  if (!s || !clg_tool_pictures_wanted(p))
    return true;
  clg_op_profile *rows = NULL;
  int n = 0;
  if (clg_session_profile(s, &rows, &n) != CLG_OK)
    return true; /* nothing traced in this session: another one draws */
  free(rows);
  bool ok = true;
  if (p->trace && clg_session_write_trace(s, p->trace) != CLG_OK) {
    fprintf(stderr, "clgraph %s: --trace: %s\n", p->command, clg_last_error());
    ok = false;
  }
  if (p->memory_map &&
      clg_session_write_memory_map(s, p->memory_map_device, p->memory_map) != CLG_OK) {
    fprintf(stderr, "clgraph %s: --memory-map: %s\n", p->command, clg_last_error());
    ok = false;
  }
  if (p->profile) {
    fflush(stdout);
    clg_session_print_profile(s, stdout);
    fflush(stdout);
  }
  p->written++;
  p->failed |= !ok;
  return ok;
}

bool clg_tool_pictures_done(clg_tool_pictures *p)
{
  if (!clg_tool_pictures_wanted(p))
    return true;
  if (!p->written && !p->failed) {
    fprintf(stderr, "clgraph %s: no graph ran: nothing to draw for %s\n", p->command,
            p->trace        ? "--trace"
            : p->memory_map ? "--memory-map"
                            : "--profile");
    return false;
  }
  return !p->failed;
}

void clg_tool_pictures_usage(FILE *f, bool with_map, bool with_profile)
{
  fprintf(f,
          "  --trace FILE   write a Chrome trace (JSON) of the runs: open it in Perfetto's UI\n"
          "                 (ui.perfetto.dev) or as a page with 'clgraph trace-html FILE OUT'\n");
  if (with_profile)
    fprintf(f, "  --profile      print the per-op profile (time per op type and device)\n");
  if (with_map)
    fprintf(f, "  --memory-map FILE.svg   write an SVG memory map after the last run (the device\n"
               "                 with the most bytes in use, or --memory-map-device DEV)\n");
}

void clg_tool_bench_session_setup(clg_session *s)
{
  static bool told;
  clg_tool_pictures *p = &clg_tool_bench_pictures;
  if (s && p->trace && !told) {
    told = true;
    fprintf(stderr,
            "clgraph %s: --trace: the timed runs are traced, so their figures include "
            "the cost of tracing\n",
            p->command);
  }
  clg_tool_pictures_setup(p, s);
}

clg_code clg_tool_bench_session_new(clg_graph *g, const clg_session_options *opt, clg_session **out)
{
  clg_code code = clg_session_new(g, opt, out);
  if (code == CLG_OK)
    clg_tool_bench_session_setup(*out);
  return code;
}

void clg_tool_bench_session_free(clg_session *s)
{
  clg_tool_pictures_finish(&clg_tool_bench_pictures, s);
  clg_session_free(s);
}
