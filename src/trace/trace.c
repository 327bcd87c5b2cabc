/* Chrome trace-event JSON: {"traceEvents": [...], "displayTimeUnit": "ns"}, with "M"
 * metadata events naming the process and its tracks, "X" complete slices, "i" instants, "C"
 * counters and "s"/"f" flow pairs. Times are microseconds (with fractions) from the
 * earliest event, as the format expects. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

typedef struct event {
  char ph; /* X, i, C, s, f */
  int track;
  uint64_t ts, dur;
  char *name, *cat, *args; /* args: members of a JSON object, or NULL */
  double value;            /* counters */
  uint64_t id;             /* flows */
} event;

struct clg_trace {
  char *process;
  char **tracks;
  int num_tracks, cap_tracks;
  event *ev;
  int num_ev, cap_ev;
  int num_slices;
  uint64_t next_flow;
};

clg_trace *clg_trace_new(const char *process_name)
{
  clg_trace *t = calloc(1, sizeof *t);
  if (t && !(t->process = clg_strdup(process_name ? process_name : "clgraph"))) {
    free(t);
    t = NULL;
  }
  return t;
}

void clg_trace_free(clg_trace *t)
{
  if (!t)
    return;
  for (int i = 0; i < t->num_tracks; i++)
    free(t->tracks[i]);
  for (int i = 0; i < t->num_ev; i++) {
    free(t->ev[i].name);
    free(t->ev[i].cat);
    free(t->ev[i].args);
  }
  free(t->tracks);
  free(t->ev);
  free(t->process);
  free(t);
}

int clg_trace_track(clg_trace *t, const char *name)
{
  if (t->num_tracks == t->cap_tracks) {
    int cap = t->cap_tracks ? 2 * t->cap_tracks : 8;
    char **v = realloc(t->tracks, sizeof *v * (size_t)cap);
    if (!v)
      return -1;
    t->tracks = v;
    t->cap_tracks = cap;
  }
  if (!(t->tracks[t->num_tracks] = clg_strdup(name ? name : "")))
    return -1;
  return t->num_tracks++;
}

static event *push(clg_trace *t, char ph, int track, const char *name, const char *cat,
                   const char *args)
{
  if (track < 0 || track >= t->num_tracks)
    return NULL;
  if (t->num_ev == t->cap_ev) {
    int cap = t->cap_ev ? 2 * t->cap_ev : 64;
    event *v = realloc(t->ev, sizeof *v * (size_t)cap);
    if (!v)
      return NULL;
    t->ev = v;
    t->cap_ev = cap;
  }
  event *e = &t->ev[t->num_ev];
  memset(e, 0, sizeof *e);
  e->ph = ph;
  e->track = track;
  e->name = clg_strdup(name ? name : "");
  e->cat = cat ? clg_strdup(cat) : NULL;
  e->args = args ? clg_strdup(args) : NULL;
  if (!e->name || (cat && !e->cat) || (args && !e->args)) {
    free(e->name);
    free(e->cat);
    free(e->args);
    return NULL;
  }
  t->num_ev++;
  return e;
}

bool clg_trace_slice(clg_trace *t, int track, const char *name, const char *category,
                     uint64_t start_ns, uint64_t end_ns, const char *args_json)
{
  event *e = push(t, 'X', track, name, category, args_json);
  if (!e)
    return false;
  e->ts = start_ns;
  e->dur = end_ns > start_ns ? end_ns - start_ns : 0;
  t->num_slices++;
  return true;
}

bool clg_trace_instant(clg_trace *t, int track, const char *name, uint64_t ts_ns)
{
  event *e = push(t, 'i', track, name, "step", NULL);
  if (e)
    e->ts = ts_ns;
  return e != NULL;
}

bool clg_trace_counter(clg_trace *t, int track, const char *name, uint64_t ts_ns, double value)
{
  event *e = push(t, 'C', track, name, "memory", NULL);
  if (e) {
    e->ts = ts_ns;
    e->value = value;
  }
  return e != NULL;
}

bool clg_trace_flow(clg_trace *t, const char *name, int from_track, uint64_t from_ts, int to_track,
                    uint64_t to_ts)
{
  uint64_t id = ++t->next_flow;
  event *s = push(t, 's', from_track, name, "copy", NULL);
  if (!s)
    return false;
  s->ts = from_ts;
  s->id = id;
  event *f = push(t, 'f', to_track, name, "copy", NULL);
  if (!f) {
    t->num_ev--;
    free(s->name);
    free(s->cat);
    return false;
  }
  f->ts = to_ts;
  f->id = id;
  return true;
}

int clg_trace_num_slices(const clg_trace *t) { return t ? t->num_slices : 0; }

static void json_us(clg_strbuf *b, uint64_t ns)
{
  clg_strbuf_printf(b, "%llu.%03llu", (unsigned long long)(ns / 1000),
                    (unsigned long long)(ns % 1000));
}

char *clg_trace_json(const clg_trace *t)
{
  clg_strbuf b;
  clg_strbuf_init(&b);
  uint64_t t0 = UINT64_MAX;
  for (int i = 0; i < t->num_ev; i++)
    if (t->ev[i].ts < t0)
      t0 = t->ev[i].ts;
  if (t0 == UINT64_MAX)
    t0 = 0;
  clg_strbuf_append(&b, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  clg_strbuf_append(&b, "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": "
                        "{\"name\": ");
  clg_strbuf_json_string(&b, t->process);
  clg_strbuf_append(&b, "}}");
  for (int i = 0; i < t->num_tracks; i++) {
    clg_strbuf_printf(&b,
                      ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
                      "\"args\": {\"name\": ",
                      i + 1);
    clg_strbuf_json_string(&b, t->tracks[i]);
    clg_strbuf_printf(&b,
                      "}},\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": "
                      "\"thread_sort_index\", \"args\": {\"sort_index\": %d}}",
                      i + 1, i);
  }
  for (int i = 0; i < t->num_ev; i++) {
    const event *e = &t->ev[i];
    clg_strbuf_printf(&b, ",\n{\"ph\": \"%c\", \"pid\": 1, \"tid\": %d, \"name\": ", e->ph,
                      e->track + 1);
    clg_strbuf_json_string(&b, e->name);
    if (e->cat) {
      clg_strbuf_append(&b, ", \"cat\": ");
      clg_strbuf_json_string(&b, e->cat);
    }
    clg_strbuf_append(&b, ", \"ts\": ");
    json_us(&b, e->ts - t0);
    switch (e->ph) {
    case 'X':
      clg_strbuf_append(&b, ", \"dur\": ");
      json_us(&b, e->dur);
      break;
    case 'i':
      clg_strbuf_append(&b, ", \"s\": \"g\"");
      break;
    case 'C':
      clg_strbuf_append(&b, ", \"args\": {");
      clg_strbuf_json_string(&b, e->name);
      clg_strbuf_printf(&b, ": %.17g}", e->value);
      break;
    case 's':
    case 'f':
      /* "bp": "e" binds the arrow to the slice that encloses ts. */
      clg_strbuf_printf(&b, ", \"id\": %llu, \"bp\": \"e\"", (unsigned long long)e->id);
      break;
    default:
      break;
    }
    if (e->args && e->ph != 'C')
      clg_strbuf_printf(&b, ", \"args\": {%s}", e->args);
    clg_strbuf_append(&b, "}");
  }
  clg_strbuf_append(&b, "\n]}\n");
  return clg_strbuf_take(&b);
}

clg_code clg_trace_write(const clg_trace *t, const char *path)
{
  if (!t)
    return clg_error(CLG_INVALID_ARGUMENT, "writing a trace: the trace is NULL");
  char *json = clg_trace_json(t);
  if (!json)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing the trace to '%s'",
                     path ? path : "(NULL)");
  clg_code code = clg_file_write_atomic(path, json, strlen(json));
  free(json);
  return code;
}
