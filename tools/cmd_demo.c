/* `clgraph demo`: walks the guide's scenarios S1-S7 on the devices of this machine. Each
 * scenario prints a title, the equivalent C, then what the guide prints (clgraph's own log,
 * captured through the log sink), and is checked against the guide's values. The demo is
 * written against the public API only: it is also an example of using it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

/* --- a growing string ------------------------------------------------------------------ */

typedef struct dbuf {
  char *s;
  size_t len, cap;
} dbuf;

static void dbuf_vprintf(dbuf *b, const char *fmt, va_list ap)
{
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + (size_t)n + 1 > cap)
      cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s)
      return; /* out of host memory: the text is cut short, nothing worse */
    b->s = s;
    b->cap = cap;
  }
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  b->len += (size_t)n;
}

static void dbuf_printf(dbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dbuf_printf(dbuf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  dbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

static const char *dbuf_str(const dbuf *b) { return b->s ? b->s : ""; }

static void dbuf_clear(dbuf *b)
{
  b->len = 0;
  if (b->s)
    b->s[0] = '\0';
}

static void dbuf_free(dbuf *b)
{
  free(b->s);
  memset(b, 0, sizeof *b);
}

static void dbuf_json_string(dbuf *b, const char *s)
{
  if (!s) {
    dbuf_printf(b, "null");
    return;
  }
  dbuf_printf(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      dbuf_printf(b, "\\%c", *p);
    else if (*p == '\n')
      dbuf_printf(b, "\\n");
    else if (*p == '\t')
      dbuf_printf(b, "\\t");
    else if (*p < 0x20)
      dbuf_printf(b, "\\u%04x", *p);
    else
      dbuf_printf(b, "%c", *p);
  }
  dbuf_printf(b, "\"");
}

/* A JSON array of the lines of text (a trailing newline ends the last line). */
static void dbuf_json_lines(dbuf *b, const char *text)
{
  dbuf_printf(b, "[");
  const char *p = text ? text : "";
  bool first = true;
  while (*p) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char *line = malloc(n + 1);
    if (line) {
      memcpy(line, p, n);
      line[n] = '\0';
      dbuf_printf(b, "%s", first ? "" : ",");
      dbuf_json_string(b, line);
      free(line);
      first = false;
    }
    p += n + (end ? 1 : 0);
  }
  dbuf_printf(b, "]");
}

static const char *fmt_bytes(uint64_t n, char *out, size_t size)
{
  const double k = 1024.0;
  if (n < 1024)
    snprintf(out, size, "%llu B", (unsigned long long)n);
  else if (n < 1024ull * 1024)
    snprintf(out, size, "%.1f KiB", (double)n / k);
  else if (n < 1024ull * 1024 * 1024)
    snprintf(out, size, "%.1f MiB", (double)n / (k * k));
  else
    snprintf(out, size, "%.2f GiB", (double)n / (k * k * k));
  return out;
}

/* --- the log, captured ------------------------------------------------------------------ */

/* The sink may be called from any thread that calls into clgraph. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static dbuf log_text;

static void demo_log_sink(clg_log_level level, const char *message, void *user)
{
  (void)user;
  pthread_mutex_lock(&log_lock);
  /* Placement lines (INFO) are printed exactly as the guide shows them; anything else is
   * marked so that it cannot be mistaken for them. */
  if (level >= CLG_LOG_WARNING)
    dbuf_printf(&log_text, "%s: ", clg_log_level_name(level));
  dbuf_printf(&log_text, "%s\n", message);
  pthread_mutex_unlock(&log_lock);
}

/* Moves what was logged since the last call into out (appending). */
static void log_take(dbuf *out)
{
  pthread_mutex_lock(&log_lock);
  if (out && log_text.len)
    dbuf_printf(out, "%s", log_text.s);
  dbuf_clear(&log_text);
  pthread_mutex_unlock(&log_lock);
}

/* --- scenarios: state and report ------------------------------------------------------- */

typedef enum devkind { DEV_GPU, DEV_STANDIN, DEV_MIXED, DEV_CPU_ONLY } devkind;

typedef struct demo {
  bool json, quiet;
  devkind kind;
  int gpus;     /* GPUs in the device set (real or standing in) */
  dbuf intro;   /* the line about the devices used, and hints */
  dbuf missing; /* CPU-only: what is missing and how to install it */
  dbuf objects; /* --json: the scenarios' objects */
  int run, wrong;
  bool force_growth; /* CLGRAPH_FORCE_GPU_ALLOW_GROWTH is set: S4's default mode grows */
} demo;

typedef struct scenario {
  const char *id, *title;
  dbuf code;    /* the equivalent C */
  dbuf notes;   /* about this machine: remapped devices and the like */
  dbuf out;     /* what the guide prints: the log, then the result or the error */
  dbuf problem; /* why the result is wrong; empty when right */
  dbuf memory;  /* S4: JSON objects, comma-separated */
  float value[4];
  bool has_value;
  const char *error_class; /* S5 */
  dbuf error;
} scenario;

static void sc_init(scenario *sc, const char *id, const char *title)
{
  memset(sc, 0, sizeof *sc);
  sc->id = id;
  sc->title = title;
}

static void sc_free(scenario *sc)
{
  dbuf_free(&sc->code);
  dbuf_free(&sc->notes);
  dbuf_free(&sc->out);
  dbuf_free(&sc->problem);
  dbuf_free(&sc->memory);
  dbuf_free(&sc->error);
}

static void sc_wrong(scenario *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sc_wrong(scenario *sc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (sc->problem.len)
    dbuf_printf(&sc->problem, "; ");
  dbuf_vprintf(&sc->problem, fmt, ap);
  va_end(ap);
}

/* Records a failed call: "<call>: <ErrorClass>: <message>". */
static void sc_failed(scenario *sc, const char *call, clg_code code)
{
  sc_wrong(sc, "%s failed: %s: %s: %s", call, clg_code_error_class(code), clg_code_title(code),
           clg_last_error());
}

static void report(demo *d, scenario *sc)
{
  bool ok = sc->problem.len == 0;
  d->run++;
  if (!ok)
    d->wrong++;
  if (d->json) {
    dbuf *j = &d->objects;
    dbuf_printf(j, "%s{\"id\":\"%s\",\"title\":", d->run > 1 ? "," : "", sc->id);
    dbuf_json_string(j, sc->title);
    dbuf_printf(j, ",\"ok\":%s,\"code\":", ok ? "true" : "false");
    dbuf_json_string(j, dbuf_str(&sc->code));
    dbuf_printf(j, ",\"notes\":");
    dbuf_json_lines(j, dbuf_str(&sc->notes));
    dbuf_printf(j, ",\"output\":");
    dbuf_json_lines(j, dbuf_str(&sc->out));
    dbuf_printf(j, ",\"result\":");
    if (sc->has_value)
      dbuf_printf(j, "[[%g,%g],[%g,%g]]", (double)sc->value[0], (double)sc->value[1],
                  (double)sc->value[2], (double)sc->value[3]);
    else
      dbuf_printf(j, "null");
    dbuf_printf(j, ",\"error\":");
    if (sc->error_class) {
      dbuf_printf(j, "{\"class\":");
      dbuf_json_string(j, sc->error_class);
      dbuf_printf(j, ",\"message\":");
      dbuf_json_string(j, dbuf_str(&sc->error));
      dbuf_printf(j, "}");
    } else {
      dbuf_printf(j, "null");
    }
    if (sc->memory.len)
      dbuf_printf(j, ",\"memory\":[%s]", sc->memory.s);
    dbuf_printf(j, ",\"problem\":");
    dbuf_json_string(j, ok ? NULL : sc->problem.s);
    dbuf_printf(j, "}");
    return;
  }
  if (d->quiet) {
    if (!ok)
      printf("%s WRONG: %s\n", sc->id, sc->problem.s);
    return;
  }
  printf("\n== %s  %s\n\n", sc->id, sc->title);
  /* The C, indented as a code block; then notes; then the guide's output, flush left. */
  const char *p = dbuf_str(&sc->code);
  while (*p) {
    const char *end = strchr(p, '\n');
    int n = end ? (int)(end - p) : (int)strlen(p);
    printf("    %.*s\n", n, p);
    p += n + (end ? 1 : 0);
  }
  printf("\n");
  if (sc->notes.len)
    printf("%s", sc->notes.s);
  printf("%s", dbuf_str(&sc->out));
  if (ok)
    printf("-> %s: right\n", sc->id);
  else
    printf("-> %s: WRONG: %s\n", sc->id, sc->problem.s);
  fflush(stdout);
}

/* --- graphs and checks ------------------------------------------------------------------ */

static const int64_t dims_a[2] = {2, 3}, dims_b[2] = {3, 2};
static const float values[6] = {1, 2, 3, 4, 5, 6};
static const float want_matmul[4] = {22, 28, 49, 64}; /* the guide's [[22, 28], [49, 64]] */
static const float want_towers[4] = {44, 56, 98, 128};
static const char *const text_matmul = "[[ 22.  28.]\n [ 49.  64.]]";
static const char *const text_towers = "[[  44.   56.]\n [  98.  128.]]";

/* The guide's graph: a [2,3] and b [3,2] built under scope ab_scope, c = matmul(a, b)
 * outside it; everything under outer_scope (NULL: no scope). */
static clg_graph *matmul_graph(const char *outer_scope, const char *ab_scope, clg_node **a_out,
                               clg_node **c_out)
{
  if (a_out)
    *a_out = NULL;
  *c_out = NULL;
  clg_graph *g = clg_graph_new();
  if (!g)
    return NULL;
  if (outer_scope)
    clg_graph_push_device(g, outer_scope);
  if (ab_scope)
    clg_graph_push_device(g, ab_scope);
  clg_node *a = clg_const_f32(g, "a", 2, dims_a, values);
  clg_node *b = clg_const_f32(g, "b", 2, dims_b, values);
  if (ab_scope)
    clg_graph_pop_device(g);
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  if (outer_scope)
    clg_graph_pop_device(g);
  if (a_out)
    *a_out = a;
  *c_out = c;
  return g;
}

/* Checks a fetched tensor against the guide: values and numpy text. */
static void check_value(scenario *sc, dbuf *out, const clg_tensor *t, const float *want,
                        const char *text)
{
  if (!t || clg_tensor_dtype(t) != CLG_FLOAT32 || clg_tensor_rank(t) != 2 ||
      clg_tensor_dim(t, 0) != 2 || clg_tensor_dim(t, 1) != 2) {
    sc_wrong(sc, "the result is not a 2x2 float tensor");
    return;
  }
  const float *v = clg_tensor_const_data(t);
  memcpy(sc->value, v, sizeof sc->value);
  sc->has_value = true;
  char *s = clg_tensor_to_string(t);
  dbuf_printf(out, "%s\n", s ? s : "(no text)");
  for (int i = 0; i < 4; i++)
    if (v[i] != want[i]) {
      sc_wrong(sc, "got [[%g, %g], [%g, %g]], want [[%g, %g], [%g, %g]]", (double)v[0],
               (double)v[1], (double)v[2], (double)v[3], (double)want[0], (double)want[1],
               (double)want[2], (double)want[3]);
      break;
    }
  if (!s || strcmp(s, text) != 0)
    sc_wrong(sc, "printed as \"%s\", want \"%s\"", s ? s : "(null)", text);
  free(s);
}

/* Checks that node n was placed on the device named want ("/device:GPU:0"). */
static void check_placed(scenario *sc, clg_session *s, const clg_node *n, const char *want)
{
  const clg_device_info *d = clg_devices_find(clg_session_devices(s), want);
  const char *got = clg_session_node_device(s, n);
  if (!d || !got || strcmp(got, d->full_name) != 0)
    sc_wrong(sc, "%s was placed on %s, want %s", clg_node_name(n), got ? got : "(nothing)", want);
}

/* Creates a session with opt on g and fetches `fetch`; the log goes to out, then the
 * value. Returns the session when keep is not NULL (the caller frees it). */
/* --trace, --memory-map: the pictures of each scenario's run; the last one's stay. */
static clg_tool_pictures pictures;

static void run_graph(scenario *sc, dbuf *out_text, clg_graph *g, const clg_session_options *opt,
                      clg_node *fetch, const float *want, const char *want_text, clg_session **keep)
{
  if (keep)
    *keep = NULL;
  if (!g || clg_graph_status(g) != CLG_OK) {
    sc_wrong(sc, "building the graph failed: %s", g ? clg_graph_error(g) : "out of memory");
    return;
  }
  log_take(NULL);
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_code code = clg_session_new(g, opt, &s);
  if (code == CLG_OK)
    clg_tool_pictures_setup(&pictures, s);
  if (code != CLG_OK)
    sc_failed(sc, "clg_session_new", code);
  else if ((code = clg_session_run(s, 0, NULL, NULL, 1, &fetch, &out)) != CLG_OK)
    sc_failed(sc, "clg_session_run", code);
  log_take(out_text);
  if (s && code == CLG_OK && clg_tool_pictures_wanted(&pictures)) {
    /* The pictures show a second, warm run: the first one compiles the kernels. */
    clg_tensor *again = NULL;
    if (clg_session_run(s, 0, NULL, NULL, 1, &fetch, &again) == CLG_OK)
      clg_tool_pictures_finish(&pictures, s);
    clg_tensor_free(again);
    log_take(NULL);
  }
  if (out)
    check_value(sc, out_text, out, want, want_text);
  clg_tensor_free(out);
  if (keep)
    *keep = s;
  else
    clg_session_free(s);
}

static clg_session_options logged_options(void)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.log_device_placement = 1;
  return opt;
}

/* The device automatic placement picks: the lowest-id GPU, else the host. */
static const char *first_device(const demo *d) { return d->gpus ? "/device:GPU:0" : "/cpu:0"; }

/* --- the scenarios ----------------------------------------------------------------------- */

static void s1_devices(demo *d, scenario *sc)
{
  dbuf_printf(&sc->code, "clg_devices *devs;\n"
                         "clg_devices_new(NULL, &devs);        // /device:CPU:0, then the GPUs\n"
                         "clg_node *c = clg_matmul(g, NULL, a, b, false, false);\n"
                         "clg_session_new(g, NULL, &s);        // no device named: GPU first\n"
                         "clg_session_node_device(s, c);       // where MatMul runs\n");
  clg_node *c = NULL;
  clg_graph *g = matmul_graph(NULL, NULL, NULL, &c);
  clg_session *s = NULL;
  dbuf value = {0};
  run_graph(sc, &value, g, NULL, c, want_matmul, text_matmul, &s);
  if (s) {
    /* The devices, where MatMul went and why, then the value. */
    const clg_devices *devs = clg_session_devices(s);
    for (int i = 0; i < clg_devices_count(devs); i++) {
      const clg_device_info *info = clg_devices_get(devs, i);
      char mem[32];
      fmt_bytes(info->global_mem, mem, sizeof mem);
      if (i == 0)
        dbuf_printf(&sc->out, "%-15s the host, %s of memory\n", info->name, mem);
      else
        dbuf_printf(&sc->out, "%-15s %s (%s, OpenCL type %s), %s\n", info->name, info->cl_name,
                    info->platform_name, info->cl_type, mem);
    }
    const char *where = clg_session_node_device(s, c);
    const char *why = clg_session_node_reason(s, c);
    dbuf_printf(&sc->out, "MatMul: %s   (%s)\n", where ? where : "?", why ? why : "?");
    check_placed(sc, s, c, first_device(d));
  }
  dbuf_printf(&sc->out, "%s", dbuf_str(&value));
  dbuf_free(&value);
  clg_session_free(s);
  clg_graph_free(g);
}

static void s2_logging(demo *d, scenario *sc)
{
  dbuf_printf(&sc->code, "clg_node *a = clg_const_f32(g, \"a\", 2, (int64_t[]){2, 3}, v);\n"
                         "clg_node *b = clg_const_f32(g, \"b\", 2, (int64_t[]){3, 2}, v);\n"
                         "clg_node *c = clg_matmul(g, NULL, a, b, false, false);   // \"MatMul\"\n"
                         "opt.log_device_placement = 1;\n"
                         "clg_session_new(g, &opt, &s);\n"
                         "clg_session_run(s, 0, NULL, NULL, 1, &c, &out);\n"
                         "char *text = clg_tensor_to_string(out);\n");
  clg_node *a = NULL, *c = NULL;
  clg_graph *g = matmul_graph(NULL, NULL, &a, &c);
  clg_session_options opt = logged_options();
  clg_session *s = NULL;
  run_graph(sc, &sc->out, g, &opt, c, want_matmul, text_matmul, &s);
  if (s) {
    check_placed(sc, s, a, first_device(d));
    check_placed(sc, s, c, first_device(d));
  }
  clg_session_free(s);
  clg_graph_free(g);
}

static void s3_manual(demo *d, scenario *sc)
{
  dbuf_printf(&sc->code,
              "clg_graph_push_device(g, \"/cpu:0\");     // with tf.device('/cpu:0'):\n"
              "clg_node *a = clg_const_f32(g, \"a\", 2, (int64_t[]){2, 3}, v);\n"
              "clg_node *b = clg_const_f32(g, \"b\", 2, (int64_t[]){3, 2}, v);\n"
              "clg_graph_pop_device(g);\n"
              "clg_node *c = clg_matmul(g, NULL, a, b, false, false);   // placed automatically\n");
  clg_node *a = NULL, *c = NULL;
  clg_graph *g = matmul_graph(NULL, "/cpu:0", &a, &c);
  clg_session_options opt = logged_options();
  clg_session *s = NULL;
  run_graph(sc, &sc->out, g, &opt, c, want_matmul, text_matmul, &s);
  if (s) {
    check_placed(sc, s, a, "/cpu:0");
    check_placed(sc, s, c, first_device(d));
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* One row of S4's table; `mode` is printed only on a mode's first row. */
static void s4_memory_row(scenario *sc, clg_session *s, const char *mode, bool first,
                          const char *device, clg_memory_stats *st)
{
  clg_code code = clg_session_memory_stats(s, device, st);
  if (code != CLG_OK) {
    sc_failed(sc, "clg_session_memory_stats", code);
    return;
  }
  char lim[32], res[32], use[32], peak[32];
  /* The host has no limit unless host_limit is set. */
  if (st->bytes_limit == 0 || st->bytes_limit == UINT64_MAX)
    snprintf(lim, sizeof lim, "none");
  else
    fmt_bytes(st->bytes_limit, lim, sizeof lim);
  dbuf_printf(&sc->out, "%-38s %-14s %10s %10s %9s %9s\n", first ? mode : "", device, lim,
              fmt_bytes(st->bytes_reserved, res, sizeof res),
              fmt_bytes(st->bytes_in_use, use, sizeof use),
              fmt_bytes(st->peak_bytes_in_use, peak, sizeof peak));
  dbuf_printf(&sc->memory,
              "%s{\"mode\":\"%s\",\"device\":\"%s\",\"bytes_limit\":%llu,\"bytes_reserved\":%llu,"
              "\"bytes_in_use\":%llu,\"peak_bytes_in_use\":%llu}",
              sc->memory.len ? "," : "", mode, device, (unsigned long long)st->bytes_limit,
              (unsigned long long)st->bytes_reserved, (unsigned long long)st->bytes_in_use,
              (unsigned long long)st->peak_bytes_in_use);
}

/* S4 runs each mode with no other session alive: the first live session's options
 * configure the device allocators, which are released with the last session. */
static void s4_memory(demo *d, scenario *sc)
{
  dbuf_printf(&sc->code,
              "clg_session_options opt;\n"
              "clg_session_options_init(&opt);                        // default: reserve all\n"
              "opt.gpu_options.allow_growth = 1;                      // or: grow as needed\n"
              "opt.gpu_options.per_process_gpu_memory_fraction = 0.4; // or: 40%% at most\n"
              "clg_session_new(g, &opt, &s);   // the first live session configures allocators\n"
              "clg_session_run(s, 0, NULL, NULL, 1, &c, &out);\n"
              "clg_session_memory_stats(s, \"/device:GPU:0\", &st);   // st.bytes_reserved, ...\n");
  static const struct {
    const char *label;
    int allow_growth;
    double fraction;
  } modes[3] = {
      {"default (reserve the whole limit)", 0, 0.0},
      {"allow_growth = 1", 1, 0.0},
      {"per_process_gpu_memory_fraction = 0.4", 0, 0.4},
  };
  if (!d->gpus)
    dbuf_printf(&sc->notes, "note: no GPU here, so the GPU memory options have nothing to act "
                            "on; the default mode runs on /device:CPU:0 alone.\n");
  else
    dbuf_printf(&sc->notes,
                "Each mode runs the S2 graph in a session alone (the first live session\n"
                "configures the allocators): the default reserves GPU:0's whole limit\n"
                "at first use, allow_growth starts small and grows as needed, and the\n"
                "fraction caps the limit at 40%% of the device's memory.\n");
  if (d->force_growth)
    dbuf_printf(&sc->notes,
                "note: CLGRAPH_FORCE_GPU_ALLOW_GROWTH=%s overrides allow_growth in "
                "every mode below.\n",
                getenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH"));
  dbuf_printf(&sc->out, "%-38s %-14s %10s %10s %9s %9s\n", "mode", "device", "limit", "reserved",
              "in use", "peak use");
  uint64_t default_reserved = 0;
  const int last = d->gpus ? 2 : 0;
  for (int m = 0; m <= last; m++) {
    clg_session_options opt;
    clg_session_options_init(&opt);
    opt.gpu_options.allow_growth = modes[m].allow_growth;
    opt.gpu_options.per_process_gpu_memory_fraction = modes[m].fraction;
    clg_node *c = NULL;
    clg_graph *g = matmul_graph(NULL, NULL, NULL, &c);
    clg_session *s = NULL;
    dbuf value = {0}; /* every mode computes it; the last one is shown under the table */
    run_graph(sc, &value, g, &opt, c, want_matmul, text_matmul, &s);
    if (s && d->gpus) {
      clg_memory_stats st;
      memset(&st, 0, sizeof st);
      s4_memory_row(sc, s, modes[m].label, true, "/device:GPU:0", &st);
      const clg_device_info *gpu = clg_devices_find(clg_session_devices(s), "/device:GPU:0");
      uint64_t total = gpu ? (gpu->memory_limit ? gpu->memory_limit : gpu->global_mem) : 0;
      if (m == 0) {
        default_reserved = st.bytes_reserved;
        if (!d->force_growth && st.bytes_reserved < st.bytes_limit)
          sc_wrong(sc, "default mode reserved %llu of %llu bytes, want all",
                   (unsigned long long)st.bytes_reserved, (unsigned long long)st.bytes_limit);
      } else if (m == 1) {
        if (default_reserved > 0 && st.bytes_reserved >= default_reserved)
          sc_wrong(sc, "allow_growth reserved %llu bytes, no less than the default's %llu",
                   (unsigned long long)st.bytes_reserved, (unsigned long long)default_reserved);
      } else {
        double want = 0.4 * (double)total, got = (double)st.bytes_limit;
        if (got > want || got + 1048576.0 < want)
          sc_wrong(sc, "fraction 0.4 gave a limit of %llu bytes, want about %.0f",
                   (unsigned long long)st.bytes_limit, want);
      }
    }
    if (s) {
      clg_memory_stats st;
      memset(&st, 0, sizeof st);
      s4_memory_row(sc, s, modes[m].label, d->gpus == 0, "/device:CPU:0", &st);
    }
    if (m == last)
      dbuf_printf(&sc->out, "%s", dbuf_str(&value));
    dbuf_free(&value);
    clg_session_free(s);
    clg_graph_free(g);
  }
}

/* The device S5 and S6 name: the guide's /device:GPU:2, or one past the last GPU where
 * GPU:2 exists. */
static void s5_spec(const demo *d, char *spec, size_t size)
{
  snprintf(spec, size, "/device:GPU:%d", d->gpus >= 3 ? d->gpus : 2);
}

static void s5_one_gpu(demo *d, scenario *sc)
{
  char spec[48];
  s5_spec(d, spec, sizeof spec);
  dbuf_printf(&sc->code,
              "clg_graph_push_device(g, \"%s\");   // with tf.device('%s'):\n"
              "... a, b and c = clg_matmul(g, NULL, a, b, false, false) as in S2 ...\n"
              "clg_graph_pop_device(g);\n"
              "clg_code code = clg_session_new(g, NULL, &s);   // no such device: an error\n"
              "if (code != CLG_OK)\n"
              "  printf(\"%%s: %%s: %%s\\n\", clg_code_error_class(code), clg_code_title(code),\n"
              "         clg_last_error());\n",
              spec, spec);
  if (d->gpus >= 3)
    dbuf_printf(&sc->notes,
                "note: this machine has %d GPUs, so GPU:2 exists; the demo names %s, which "
                "does not.\n",
                d->gpus, spec);
  /* First the device the guide's machine has: the lowest-id GPU runs it by default. */
  clg_node *c = NULL;
  clg_graph *g = matmul_graph(spec, NULL, NULL, &c);
  if (!g || clg_graph_status(g) != CLG_OK) {
    sc_wrong(sc, "building the graph failed: %s", g ? clg_graph_error(g) : "out of memory");
    clg_graph_free(g);
    return;
  }
  log_take(NULL);
  clg_session *s = NULL;
  clg_code code = clg_session_new(g, NULL, &s);
  log_take(&sc->out);
  if (code == CLG_OK) {
    sc_wrong(sc, "the session was created although %s does not exist", spec);
  } else {
    char prefix[160];
    snprintf(prefix, sizeof prefix,
             "Cannot assign a device to node 'b': Could not satisfy explicit device "
             "specification '%s'",
             spec);
    sc->error_class = clg_code_error_class(code);
    dbuf_printf(&sc->error, "%s", clg_last_error());
    dbuf_printf(&sc->out, "%s: %s: %s\n", clg_code_error_class(code), clg_code_title(code),
                clg_last_error());
    if (code != CLG_INVALID_ARGUMENT)
      sc_wrong(sc, "the error is %s, want INVALID_ARGUMENT", clg_code_name(code));
    if (strncmp(clg_last_error(), prefix, strlen(prefix)) != 0)
      sc_wrong(sc, "the message does not start with \"%s\"", prefix);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

static void s6_soft(demo *d, scenario *sc)
{
  char spec[48];
  s5_spec(d, spec, sizeof spec);
  dbuf_printf(&sc->code,
              "clg_graph_push_device(g, \"%s\");   // the S5 graph\n"
              "... a, b, c ...\n"
              "clg_graph_pop_device(g);\n"
              "opt.allow_soft_placement = 1;   // fall back to a device that exists\n"
              "opt.log_device_placement = 1;\n"
              "clg_session_new(g, &opt, &s);\n"
              "clg_session_run(s, 0, NULL, NULL, 1, &c, &out);\n",
              spec);
  clg_node *a = NULL, *c = NULL;
  clg_graph *g = matmul_graph(spec, NULL, &a, &c);
  clg_session_options opt = logged_options();
  opt.allow_soft_placement = 1;
  clg_session *s = NULL;
  run_graph(sc, &sc->out, g, &opt, c, want_matmul, text_matmul, &s);
  if (s)
    check_placed(sc, s, c, first_device(d));
  clg_session_free(s);
  clg_graph_free(g);
}

static void s7_towers(demo *d, scenario *sc)
{
  /* The guide's towers are on GPU:2 and GPU:3; with fewer GPUs, the last two that exist. */
  char tower[2][48];
  for (int i = 0; i < 2; i++) {
    if (d->gpus >= 4)
      snprintf(tower[i], sizeof tower[i], "/device:GPU:%d", 2 + i);
    else if (d->gpus >= 2)
      snprintf(tower[i], sizeof tower[i], "/device:GPU:%d", d->gpus - 2 + i);
    else if (d->gpus == 1)
      snprintf(tower[i], sizeof tower[i], "/device:GPU:0");
    else
      snprintf(tower[i], sizeof tower[i], "/cpu:0");
  }
  dbuf_printf(&sc->code,
              "const char *towers[2] = {\"%s\", \"%s\"};\n"
              "for (int i = 0; i < 2; i++) {\n"
              "  clg_graph_push_device(g, towers[i]);              // with tf.device(d):\n"
              "  clg_node *a = clg_const_f32(g, NULL, 2, (int64_t[]){2, 3}, v);\n"
              "  clg_node *b = clg_const_f32(g, NULL, 2, (int64_t[]){3, 2}, v);\n"
              "  c[i] = clg_matmul(g, NULL, a, b, false, false);\n"
              "  clg_graph_pop_device(g);\n"
              "}\n"
              "clg_graph_push_device(g, \"/cpu:0\");\n"
              "clg_node *sum = clg_add_n(g, NULL, 2, c);             // tf.add_n\n"
              "clg_graph_pop_device(g);\n",
              tower[0], tower[1]);
  if (d->gpus == 0)
    dbuf_printf(&sc->notes, "note: no GPU here: both towers run on /cpu:0 instead of "
                            "/device:GPU:2 and /device:GPU:3.\n");
  else if (d->gpus < 4)
    dbuf_printf(&sc->notes,
                "note: this machine has %d GPU%s, not the guide's four: the towers run on %s and "
                "%s instead of /device:GPU:2 and /device:GPU:3.\n",
                d->gpus, d->gpus == 1 ? "" : "s", tower[0], tower[1]);
  clg_graph *g = clg_graph_new();
  if (!g) {
    sc_wrong(sc, "out of host memory");
    return;
  }
  clg_node *c[2];
  for (int i = 0; i < 2; i++) {
    clg_graph_push_device(g, tower[i]);
    clg_node *a = clg_const_f32(g, NULL, 2, dims_a, values);
    clg_node *b = clg_const_f32(g, NULL, 2, dims_b, values);
    c[i] = clg_matmul(g, NULL, a, b, false, false);
    clg_graph_pop_device(g);
  }
  clg_graph_push_device(g, "/cpu:0");
  clg_node *sum = clg_add_n(g, NULL, 2, c);
  clg_graph_pop_device(g);
  clg_session_options opt = logged_options();
  clg_session *s = NULL;
  run_graph(sc, &sc->out, g, &opt, sum, want_towers, text_towers, &s);
  if (s) {
    check_placed(sc, s, c[0], tower[0]);
    check_placed(sc, s, c[1], tower[1]);
    check_placed(sc, s, sum, "/cpu:0");
  }
  clg_session_free(s);
  clg_graph_free(g);
}

static const struct {
  const char *id, *title;
  void (*run)(demo *, scenario *);
} scenarios[] = {
    {"S1", "Supported devices: /cpu:0 and /device:GPU:N; matmul prefers the GPU", s1_devices},
    {"S2", "Logging device placement: ConfigProto(log_device_placement=True)", s2_logging},
    {"S3", "Manual device placement: with tf.device('/cpu:0')", s3_manual},
    {"S4", "GPU memory: default, gpu_options.allow_growth, per_process_gpu_memory_fraction",
     s4_memory},
    {"S5", "One GPU on a multi-GPU machine: a device that does not exist", s5_one_gpu},
    {"S6", "Soft placement: allow_soft_placement=True", s6_soft},
    {"S7", "Several GPUs: two towers, summed with tf.add_n on the CPU", s7_towers},
};
enum { NUM_SCENARIOS = sizeof scenarios / sizeof scenarios[0] };

/* --- devices: real GPUs, PoCL standing in, or the host alone ----------------------------- */

/* True when an OpenCL ICD (driver) is registered: OCL_ICD_VENDORS or /etc/OpenCL/vendors. */
static bool have_icd_file(const char *name_part)
{
  const char *dir = getenv("OCL_ICD_VENDORS");
  char path[512];
  snprintf(path, sizeof path, "%s/%s.icd", dir && *dir ? dir : "/etc/OpenCL/vendors", name_part);
  return access(path, R_OK) == 0;
}

/* Counts the GPUs a device set built from the environment would have (-1 on error) and
 * the CPU devices among them; names them in `names` ("NVIDIA H200 (NVIDIA CUDA)"). */
static int probe_gpus(int *standins, dbuf *names, bool *alike)
{
  clg_devices *devs = NULL;
  if (clg_devices_new(NULL, &devs) != CLG_OK)
    return -1;
  int n = clg_devices_count(devs) - 1;
  *standins = 0;
  bool same = true;
  for (int i = 1; i <= n; i++) {
    const clg_device_info *info = clg_devices_get(devs, i);
    if (strcmp(info->cl_type, "CPU") == 0)
      ++*standins;
    same = same && strcmp(info->cl_name, clg_devices_get(devs, 1)->cl_name) == 0;
  }
  dbuf_clear(names);
  for (int i = 1; i <= n; i++) {
    const clg_device_info *info = clg_devices_get(devs, i);
    if (same && i > 1)
      break;
    if (!same)
      dbuf_printf(names, "%s%s ", i > 1 ? ", " : "", info->name);
    dbuf_printf(names, "%s (%s)", info->cl_name, info->platform_name);
  }
  clg_devices_free(devs);
  *alike = same && n > 1;
  return n;
}

/* Chooses the devices before the first session. PoCL reads POCL_DEVICES and
 * POCL_MEMORY_LIMIT once per process, so they are set before the first OpenCL call; they
 * only shape PoCL's own CPU devices, which are not used unless no GPU is found. */
static int choose_devices(demo *d)
{
  const bool user_types = getenv("CLGRAPH_DEVICE_TYPES") != NULL;
  const bool user_pocl = getenv("POCL_DEVICES") != NULL;
  const bool user_limit = getenv("POCL_MEMORY_LIMIT") != NULL;
  if (!user_pocl)
    setenv("POCL_DEVICES", "pthread pthread pthread pthread", 1);
  /* The default mode reserves every device's whole memory: 2 GiB per stand-in, as in CI,
   * rather than most of the host's memory four times over. */
  if (!user_limit)
    setenv("POCL_MEMORY_LIMIT", "2", 1);
  const char *force = getenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH");
  d->force_growth = force && strcmp(force, "true") == 0;

  int standins = 0;
  dbuf names = {0};
  bool alike = false;
  int n = probe_gpus(&standins, &names, &alike);
  if (n < 0) {
    dbuf_free(&names);
    fprintf(stderr, "clgraph demo: cannot enumerate devices: %s: %s\n",
            clg_code_name(clg_last_code()), clg_last_error());
    return -1;
  }
  if (n == 0 && !user_types) {
    setenv("CLGRAPH_DEVICE_TYPES", "all", 1);
    n = probe_gpus(&standins, &names, &alike);
    if (n < 0) {
      fprintf(stderr, "clgraph demo: cannot enumerate devices: %s\n", clg_last_error());
      dbuf_free(&names);
      return -1;
    }
  }
  d->gpus = n;
  if (n == 0) {
    d->kind = DEV_CPU_ONLY;
    dbuf_printf(&d->intro, "Devices: no GPU and no OpenCL device found, so every scenario runs "
                           "on /device:CPU:0 (the host).\n");
    if (user_types)
      dbuf_printf(&d->missing,
                  "CLGRAPH_DEVICE_TYPES=%s selects no OpenCL device on this machine; unset it "
                  "(or set it to \"all\") to let PoCL's CPU devices stand in as GPUs.\n",
                  getenv("CLGRAPH_DEVICE_TYPES"));
    else if (have_icd_file("pocl"))
      dbuf_printf(&d->missing,
                  "PoCL is registered but gave no device (POCL_DEVICES=\"%s\"); try "
                  "POCL_DEVICES=\"pthread pthread pthread pthread\" and clinfo -l.\n",
                  getenv("POCL_DEVICES"));
    else
      dbuf_printf(&d->missing,
                  "What is missing: an OpenCL driver. Without a GPU, PoCL's CPU devices can "
                  "stand in as GPUs (as in CI):\n"
                  "    apt-get install pocl-opencl-icd\n"
                  "For a real GPU, install its OpenCL driver (NVIDIA: nvidia-opencl-icd; AMD: "
                  "mesa-opencl-icd or ROCm's rocm-opencl-runtime; see README.md), then run "
                  "`clgraph demo` again.\n");
  } else if (standins == n) {
    d->kind = DEV_STANDIN;
    char range[32] = "";
    if (n > 1)
      snprintf(range, sizeof range, "-%d", n - 1);
    dbuf_printf(&d->intro,
                "Devices: no GPU found, so %d PoCL CPU device%s stand%s in as /device:GPU:0%s "
                "(POCL_DEVICES=\"%s\", CLGRAPH_DEVICE_TYPES=%s, POCL_MEMORY_LIMIT=%s GiB).\n",
                n, n == 1 ? "" : "s", n == 1 ? "s" : "", range, getenv("POCL_DEVICES"),
                getenv("CLGRAPH_DEVICE_TYPES"), getenv("POCL_MEMORY_LIMIT"));
  } else {
    d->kind = standins ? DEV_MIXED : DEV_GPU;
    dbuf_printf(&d->intro, "Devices: %d GPU%s: %s%s", n, n == 1 ? "" : "s", alike ? "each " : "",
                dbuf_str(&names));
    if (standins)
      dbuf_printf(&d->intro,
                  ", of which %d %s PoCL CPU device%s standing in (CLGRAPH_DEVICE_TYPES=%s)",
                  standins, standins == 1 ? "is a" : "are", standins == 1 ? "" : "s",
                  getenv("CLGRAPH_DEVICE_TYPES"));
    dbuf_printf(&d->intro, ".\n");
  }
  dbuf_free(&names);
  log_take(NULL);
  return 0;
}

static const char *kind_name(devkind k)
{
  switch (k) {
  case DEV_GPU:
    return "gpu";
  case DEV_STANDIN:
    return "pocl-stand-in";
  case DEV_MIXED:
    return "gpu-and-stand-in";
  case DEV_CPU_ONLY:
    return "cpu-only";
  }
  return "?";
}

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph demo [--scenario S1..S7] [--json] [--quiet] [--trace FILE]\n"
             "                    [--memory-map FILE.svg [--memory-map-device DEV]]\n\n"
             "Walks the \"Using GPUs\" guide's scenarios on this machine's devices: for each, a\n"
             "title, the equivalent C, then what the guide prints (device mapping, placement\n"
             "lines, the result or the error), checked against the guide's values.\n\n"
             "  --scenario S3  run one scenario only\n"
             "  --json         one JSON object with every scenario's output and verdict\n"
             "  --quiet        print only wrong results and the summary line\n");
  clg_tool_pictures_usage(f, true, false);
  fprintf(f, "                 (the pictures are of the last scenario that runs a graph: S7's\n"
             "                 towers with --scenario S7 or without --scenario)\n\n"
             "Without a GPU, four PoCL CPU devices stand in as GPUs (POCL_DEVICES,\n"
             "CLGRAPH_DEVICE_TYPES=all). Exit status: 0 when every result is right, 1 when one\n"
             "is wrong, 2 for a usage error.\n");
}

int clg_tool_demo(int argc, char **argv)
{
  demo d;
  memset(&d, 0, sizeof d);
  const char *only = NULL;
  clg_tool_pictures_init(&pictures, "demo", 1);
  clg_tool_opt opts[] = {{"--scenario", CLG_TOOL_STRING, .meta = "S1..S7", .text = &only},
                         {"--json", CLG_TOOL_FLAG, .flag = &d.json},
                         {"--quiet", CLG_TOOL_FLAG, .alias = "-q", .flag = &d.quiet},
                         clg_tool_trace_opt(&pictures),
                         clg_tool_memory_map_opt(&pictures),
                         clg_tool_memory_map_device_opt(&pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "demo", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (!clg_tool_pictures_check(&pictures))
    return 2;
  int pick = -1;
  if (only) {
    for (int i = 0; i < NUM_SCENARIOS; i++) {
      const char *id = scenarios[i].id;
      if ((only[0] == 'S' || only[0] == 's') && strcmp(only + 1, id + 1) == 0)
        pick = i;
      if (strcmp(only, id + 1) == 0)
        pick = i;
    }
    if (pick < 0) {
      fprintf(stderr, "clgraph demo: --scenario '%s': want one of S1 to S7\n", only);
      return 2;
    }
  }

  clg_log_set_sink(demo_log_sink, NULL);
  if (clg_log_get_level() > CLG_LOG_INFO)
    clg_log_set_level(CLG_LOG_INFO); /* the placement lines are INFO */
  if (choose_devices(&d) != 0) {
    clg_log_set_sink(NULL, NULL);
    dbuf_free(&d.intro);
    dbuf_free(&d.missing);
    return 2;
  }
  if (!d.json) {
    if (!d.quiet)
      printf("clgraph %s demo: the guide \"Using GPUs\" (S1-S7) on this machine.\n", clg_version());
    if (!d.quiet || d.kind == DEV_CPU_ONLY)
      printf("%s", dbuf_str(&d.intro));
    fflush(stdout);
  }

  /* The device state lives while a session does. An idle session on an empty graph keeps
   * it (and each GPU's reserved memory) from one scenario to the next, as a TensorFlow
   * process would; S4 lets it go, since it needs to be the only session alive. */
  clg_graph *anchor_graph = clg_graph_new();
  clg_session *anchor = NULL;
  for (int i = 0; i < NUM_SCENARIOS; i++) {
    if (pick >= 0 && i != pick)
      continue;
    bool alone = scenarios[i].run == s4_memory;
    if (alone && anchor) {
      clg_session_free(anchor);
      anchor = NULL;
    } else if (!alone && !anchor && anchor_graph && pick < 0) {
      clg_session_new(anchor_graph, NULL, &anchor); /* a failure only costs time */
    }
    scenario sc;
    sc_init(&sc, scenarios[i].id, scenarios[i].title);
    scenarios[i].run(&d, &sc);
    log_take(&sc.out); /* anything logged after the last capture (warnings at free) */
    report(&d, &sc);
    sc_free(&sc);
  }

  clg_session_free(anchor);
  clg_graph_free(anchor_graph);
  if (d.json) {
    dbuf top = {0};
    dbuf_printf(&top, "{\"clgraph\":\"%s\",\"devices\":{\"kind\":\"%s\",\"gpus\":%d,\"note\":",
                clg_version(), kind_name(d.kind), d.gpus);
    if (d.intro.len && d.intro.s[d.intro.len - 1] == '\n')
      d.intro.s[--d.intro.len] = '\0';
    dbuf_json_string(&top, dbuf_str(&d.intro));
    dbuf_printf(&top, ",\"missing\":");
    dbuf_json_string(&top, d.missing.len ? d.missing.s : NULL);
    dbuf_printf(&top, "},\"scenarios\":[%s],\"run\":%d,\"wrong\":%d,\"ok\":%s}\n",
                dbuf_str(&d.objects), d.run, d.wrong, d.wrong ? "false" : "true");
    fputs(dbuf_str(&top), stdout);
    dbuf_free(&top);
  } else {
    printf("%s%d scenario%s run, %s.\n", d.quiet ? "" : "\n", d.run, d.run == 1 ? "" : "s",
           d.wrong ? "SOME RESULTS ARE WRONG" : "every result right");
    if (d.wrong)
      printf("%d wrong (see the lines marked WRONG).\n", d.wrong);
    if (d.missing.len)
      printf("%s", d.missing.s);
  }
  clg_log_set_sink(NULL, NULL);
  dbuf_free(&d.intro);
  dbuf_free(&d.missing);
  dbuf_free(&d.objects);
  dbuf_free(&log_text);
  bool pictures_ok = clg_tool_pictures_done(&pictures);
  return d.wrong || !pictures_ok ? 1 : 0;
}
