/* `clgraph trace-html IN.json OUT.html`: a trace as a page any browser opens offline. The
 * page (tools/trace_viewer.html.in, embedded) draws the trace with its own script; the
 * trace goes inside it as JSON, so the page is one self-contained file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "tool.h"
#include "trace/trace.h"

extern const char clg_tool_trace_viewer[];

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph trace-html TRACE.json OUT.html\n\n"
             "Writes a self-contained HTML page that draws a Chrome trace-event file (as\n"
             "written by --trace or clg_session_write_trace): a row per device with a box per\n"
             "op, copies and their flow arrows, memory counters and step markers. Open it in\n"
             "any browser, offline (wheel: zoom, drag: pan, hover: the op's shapes and inputs).\n"
             "Exit status: 0 when written, 1 when the trace cannot be read, 2 for usage.\n");
}

/* The page: head, the trace's JSON text, tail. The JSON goes inside a <script> element, and
 * the HTML parser reads markup in a script's text: "</script" ends it early, and after
 * "<!--<script" not even the page's own "</script>" ends it (a trace event named that way
 * kept the page's script from ever running). So '<', '>' and '&' are written \u003c,
 * \u003e and \u0026: in JSON text they stand only inside strings, where the escape means
 * the same character, and the parser sees none of them. */
static char *fill_page(const char *head, size_t head_len, const char *json, const char *tail,
                       size_t *len)
{
  size_t n = strlen(json), specials = 0, tail_len = strlen(tail);
  for (size_t i = 0; i < n; i++)
    specials += json[i] == '<' || json[i] == '>' || json[i] == '&';
  *len = head_len + n + 5 * specials + tail_len;
  char *page = malloc(*len + 1), *at = page;
  if (!page)
    return NULL;
  memcpy(at, head, head_len);
  at += head_len;
  for (size_t i = 0; i < n; i++) {
    char c = json[i];
    if (c == '<' || c == '>' || c == '&') {
      memcpy(at, c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : "\\u0026", 6);
      at += 6;
    } else {
      *at++ = c;
    }
  }
  memcpy(at, tail, tail_len + 1);
  return page;
}

int clg_tool_trace_html(int argc, char **argv)
{
  /* No options: argv[1] and argv[2] are the files when there are two arguments. */
  clg_tool_cmd cmd = {.name = "trace-html", .usage = usage, .max_args = 2};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (argc != 3) {
    fprintf(stderr, "clgraph trace-html: want TRACE.json and OUT.html\n\n");
    usage(stderr);
    return 2;
  }
  int fd;
  if (clg_file_open_read(argv[1], &fd) != CLG_OK) {
    fprintf(stderr, "clgraph trace-html: %s\n", clg_last_error());
    return 1;
  }
  json_error_t err;
  json_t *root = json_loadfd(fd, 0, &err);
  close(fd);
  if (!root) {
    if (err.line > 0)
      fprintf(stderr, "clgraph trace-html: '%s': %s (line %d)\n", argv[1], err.text, err.line);
    else
      fprintf(stderr, "clgraph trace-html: '%s': %s\n", argv[1], err.text);
    return 1;
  }
  json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
  if (!json_is_array(events)) {
    fprintf(stderr, "clgraph trace-html: '%s' is not a trace: no traceEvents array\n", argv[1]);
    json_decref(root);
    return 1;
  }
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  const char *mark = strstr(clg_tool_trace_viewer, "@TRACE@");
  char *page = NULL;
  size_t total = 0;
  if (text && mark)
    page = fill_page(clg_tool_trace_viewer, (size_t)(mark - clg_tool_trace_viewer), text,
                     mark + strlen("@TRACE@"), &total);
  free(text);
  if (!page) {
    fprintf(stderr, "clgraph trace-html: out of memory\n");
    return 1;
  }
  clg_code code = clg_file_write_atomic(argv[2], page, total);
  free(page);
  if (code != CLG_OK) {
    fprintf(stderr, "clgraph trace-html: %s\n", clg_last_error());
    return 1;
  }
  return 0;
}
