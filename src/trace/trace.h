/* The trace module's door: a timeline in the Chrome trace-event JSON format, which Perfetto's
 * UI and chrome://tracing open. Tracks (one per device) hold complete slices, instant
 * markers and counters; flow arrows join slices across tracks. All times are on one clock
 * (ns of the host's monotonic clock; device times are mapped before they get here). */
#ifndef CLG_TRACE_H
#define CLG_TRACE_H

#include <stdint.h>

#include "core/core.h"

typedef struct clg_trace clg_trace;

/* NULL when memory runs out. */
clg_trace *clg_trace_new(const char *process_name);
void clg_trace_free(clg_trace *t);

/* A track (a "thread" in the format) named `name`, e.g. a device's full name; returns its
 * id, or -1 when memory runs out. Tracks are listed in the order they are made. */
int clg_trace_track(clg_trace *t, const char *name);
/* A slice [start, end) on a track, with a category and arguments given as a JSON object's
 * members ("\"op\": \"MatMul\", \"shape\": \"[2,2]\"", or NULL). Returns false when memory
 * runs out (the trace then stays as it was). */
bool clg_trace_slice(clg_trace *t, int track, const char *name, const char *category,
                     uint64_t start_ns, uint64_t end_ns, const char *args_json);
/* A marker at one instant (a run's step marker). */
bool clg_trace_instant(clg_trace *t, int track, const char *name, uint64_t ts_ns);
/* A counter's value from ts on (memory in use per device). */
bool clg_trace_counter(clg_trace *t, int track, const char *name, uint64_t ts_ns, double value);
/* A flow arrow from (from_track, from_ts) to (to_track, to_ts), e.g. a copy between devices;
 * each ts must fall inside a slice on its track. */
bool clg_trace_flow(clg_trace *t, const char *name, int from_track, uint64_t from_ts, int to_track,
                    uint64_t to_ts);
/* Number of slices recorded. */
int clg_trace_num_slices(const clg_trace *t);

/* The trace as JSON (malloc'd; NULL when memory runs out). */
char *clg_trace_json(const clg_trace *t);
/* Writes the JSON to path atomically: a temporary file in the same folder, fsync'd, then
 * renamed, so a crash never leaves a half-written trace under its name. Errors name the
 * path and the failing call (clg_file_write_atomic in core). */
clg_code clg_trace_write(const clg_trace *t, const char *path);

#endif
