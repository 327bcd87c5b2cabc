/* The picture options shared by `clgraph demo`, `clgraph bench ...` and `clgraph train`:
 *   --trace FILE               a Chrome trace (JSON) of the last traced runs
 *   --profile                  the per-op profile table on stdout
 *   --memory-map FILE.svg      the memory map of a device after the last run
 *   --memory-map-device DEV    which device (default: the one with the most bytes in use)
 * A command starts a clg_tool_pictures with clg_tool_pictures_init, puts the entries below
 * into its option table (tool.h), checks them with clg_tool_pictures_check
 * after clg_tool_parse, calls clg_tool_pictures_setup after it creates a session and
 * clg_tool_pictures_finish before it frees it. */
#ifndef CLG_TOOL_PICTURES_H
#define CLG_TOOL_PICTURES_H

#include <stdbool.h>
#include <stdio.h>

#include "clgraph.h"
#include "tool.h"

typedef struct clg_tool_pictures {
  const char *command; /* "demo", "bench matmul", ... for messages */
  const char *trace, *memory_map, *memory_map_device;
  bool profile;
  int runs;    /* runs kept for the trace and the profile */
  int written; /* sessions whose pictures were written */
  bool failed; /* a picture could not be written (reported on stderr) */
} clg_tool_pictures;

/* Nothing asked yet. keep_runs: how many of a session's last runs the trace and profile
 * hold. */
void clg_tool_pictures_init(clg_tool_pictures *p, const char *command, int keep_runs);
/* The option table entries (tool.h) that fill p: --trace FILE, --profile, --memory-map
 * FILE.svg and --memory-map-device DEV. */
clg_tool_opt clg_tool_trace_opt(clg_tool_pictures *p);
clg_tool_opt clg_tool_profile_opt(clg_tool_pictures *p);
clg_tool_opt clg_tool_memory_map_opt(clg_tool_pictures *p);
clg_tool_opt clg_tool_memory_map_device_opt(clg_tool_pictures *p);
/* After clg_tool_parse: --memory-map-device without --memory-map is reported on stderr
 * ("clgraph <command>: ..."); false then (exit 2). */
bool clg_tool_pictures_check(const clg_tool_pictures *p);
/* True when any picture is asked for. */
bool clg_tool_pictures_wanted(const clg_tool_pictures *p);
/* Turns tracing on in s when a trace, a profile or a memory map (for its chart) is asked. */
void clg_tool_pictures_setup(clg_tool_pictures *p, clg_session *s);
/* Writes what was asked from s's traced runs (a session without any is skipped) and prints
 * the profile; errors go to stderr and set p->failed. Returns false on such an error. */
bool clg_tool_pictures_finish(clg_tool_pictures *p, clg_session *s);
/* At the end of the command: false (with a message) when pictures were asked but no session
 * ran anything to draw, or one failed. */
bool clg_tool_pictures_done(clg_tool_pictures *p);
/* The option lines for a usage text; with_profile and with_map choose the lines. */
void clg_tool_pictures_usage(FILE *f, bool with_map, bool with_profile);

/* The picture options of `clgraph bench`: one instance for the benchmark that runs (started
 * by clg_tool_bench; a benchmark puts clg_tool_trace_opt(&clg_tool_bench_pictures) in its
 * table). The benchmarks create and free their sessions with these two, which call setup
 * and finish with it: the trace holds the last runs of the last session that ran. The first
 * traced session says on stderr that the timed runs include the cost of tracing. */
extern clg_tool_pictures clg_tool_bench_pictures;
clg_code clg_tool_bench_session_new(clg_graph *g, const clg_session_options *opt,
                                    clg_session **out);
/* What clg_tool_bench_session_new does after clg_session_new, for a session made otherwise. */
void clg_tool_bench_session_setup(clg_session *s);
void clg_tool_bench_session_free(clg_session *s);

#endif
