/* clgraph run and clgraph inspect: thin tools over the import API (clgraph/import.h). run
 * imports a model made elsewhere into a graph, feeds its inputs from .npy files (or
 * deterministic random values), runs it in a session (soft placement on: a model's nodes may
 * pin devices this machine lacks) and prints or writes its outputs; inspect reads a model
 * without building it and says what it holds and what clgraph cannot run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "clgraph.h"
#include "core/core.h"
#include "tool.h"

enum { RUN_MAX_NAMED = 64, RUN_MAX_DEVICES = 64 };

static void run_usage(FILE *f)
{
  fprintf(f,
          "usage: clgraph run MODEL [--input NAME=FILE.npy]... [--bind NAME]... [--seed N]\n"
          "                         [--shape NAME=D,D,...]... [--output NAME]... [--out-dir DIR]\n"
          "                         [--device DEV] [--no-soft-placement] [--log-device-placement]\n"
          "                         [--repeats N] [--trace FILE] [--trace-runs N] [--json]\n"
          "                         [--allow-growth]\n"
          "                         [--per-process-gpu-memory-fraction F]\n\n"
          "Imports MODEL (a frozen TensorFlow GraphDef .pb, a tfjs graph model.json with its\n"
          "weight shards beside it, or an ONNX .onnx) and runs it once. NAME is a tensor as the "
          "model names it\n"
          "(\":0\" optional).\n"
          "  --input NAME=FILE.npy  feed input NAME from numpy's .npy file (repeatable); inputs\n"
          "                         not given get random values: floats uniform in [0, 1),\n"
          "                         integers in 0..9, bools 0 or 1, from --seed (default 0)\n"
          "  --bind NAME            import input NAME as a Const of its --input file's value\n"
          "                         (tf.import_graph_def's input_map), so that shapes and\n"
          "                         tf.cond predicates computed from it fold (repeatable)\n"
          "  --shape NAME=D,D,...   the shape of input NAME where the model leaves dimensions\n"
          "                         unknown (repeatable; otherwise an unknown dimension is 1)\n"
          "  --output NAME          what to fetch (repeatable; default: the model's outputs)\n"
          "  --out-dir DIR          write each output as DIR/<NAME>.npy, each character of NAME\n"
          "                         outside [A-Za-z0-9._-] replaced by '_'\n"
          "  --device DEV           a device scope around the whole model (/device:GPU:0)\n"
          "  --no-soft-placement    fail where a node's device is missing (TensorFlow's default;\n"
          "                         run falls back to another device unless this is given)\n"
          "  --repeats N            after one warm run, N timed runs: median and min\n"
          "  --trace FILE           a Chrome trace of the last run (clgraph trace-html opens it)\n"
          "  --trace-runs N         the trace holds the last N runs, not one (per-op medians:\n"
          "                         tools/trace_op_medians.py)\n"
          "  --allow-growth         GPU memory grown as needed (GPUOptions.allow_growth)\n"
          "  --per-process-gpu-memory-fraction F\n"
          "                         cap each GPU's memory at F of its total (0 < F <= 1)\n"
          "  --json                 one JSON object: format, inputs, outputs, devices, run_ms,\n"
          "                         median_ms\n");
}

static void inspect_usage(FILE *f)
{
  fprintf(f, "usage: clgraph inspect MODEL [--json]\n\n"
             "Reads MODEL (a frozen GraphDef .pb, a tfjs model.json or an ONNX .onnx) without\n"
             "building it: its format and producer (ONNX: the opset), inputs and outputs with "
             "dtypes and shapes (-1 for an\n"
             "unknown dimension), its node count and op types with their counts, and the op\n"
             "types clgraph cannot run with a node that uses each. Exit status 1 when there\n"
             "are any, 0 otherwise.\n");
}

/* "x:0" and "x" name the same tensor. */
static size_t base_len(const char *s)
{
  size_t n = strlen(s);
  return n > 2 && strcmp(s + n - 2, ":0") == 0 ? n - 2 : n;
}

static bool same_name(const char *a, const char *b)
{
  size_t na = base_len(a), nb = base_len(b);
  return na == nb && strncmp(a, b, na) == 0;
}

/* "[1,224,224,3]" with -1 for unknown dimensions, "<unknown rank>" for rank -1. */
static void shape_text(int rank, const int64_t *dims, char *buf, size_t size)
{
  if (rank < 0) {
    snprintf(buf, size, "<unknown rank>");
    return;
  }
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < rank && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

static json_t *json_shape(int rank, const int64_t *dims)
{
  if (rank < 0)
    return json_null();
  json_t *a = json_array();
  for (int i = 0; i < rank; i++)
    json_array_append_new(a, json_integer((json_int_t)dims[i]));
  return a;
}

static json_t *json_tensor(const clg_import_tensor *t)
{
  return json_pack("{s:s, s:s, s:o}", "name", t->name, "dtype", clg_dtype_name(t->dtype), "shape",
                   json_shape(t->rank, t->dims));
}

static void print_json(json_t *o)
{
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  printf("%s\n", text ? text : "{}");
  free(text);
  json_decref(o);
}

/* --- clgraph inspect ----------------------------------------------------------------------- */

int clg_tool_inspect(int argc, char **argv)
{
  bool json = false;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json}, {NULL}};
  clg_tool_cmd cmd = {.name = "inspect", .usage = inspect_usage, .opts = opts, .max_args = 1};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (cmd.num_args != 1) {
    fprintf(stderr, "clgraph inspect: a MODEL is required\n\n");
    inspect_usage(stderr);
    return 2;
  }
  const char *path = cmd.args[0];
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_result *r = NULL;
  char err[1024] = "";
  if (clg_import_inspect(path, &o, &r, err, sizeof err) != CLG_OK) {
    fprintf(stderr, "clgraph inspect: %s\n", err[0] ? err : clg_last_error());
    clg_import_result_free(r);
    return 1;
  }
  int unsupported = 0;
  for (int i = 0; i < clg_import_num_op_types(r); i++)
    unsupported += !clg_import_op_type_at(r, i)->supported;
  if (json) {
    json_t *ins = json_array(), *outs = json_array(), *ops = json_array(), *bad = json_array();
    for (int i = 0; i < clg_import_num_inputs(r); i++)
      json_array_append_new(ins, json_tensor(clg_import_input(r, i)));
    for (int i = 0; i < clg_import_num_outputs(r); i++)
      json_array_append_new(outs, json_tensor(clg_import_output(r, i)));
    for (int i = 0; i < clg_import_num_op_types(r); i++) {
      const clg_import_op_type *t = clg_import_op_type_at(r, i);
      json_array_append_new(ops, json_pack("{s:s, s:i, s:b}", "op", t->op, "count", t->count,
                                           "supported", t->supported));
      if (!t->supported)
        json_array_append_new(bad, json_pack("{s:s, s:i, s:s}", "op", t->op, "count", t->count,
                                             "example_node", t->example_node));
    }
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:o, s:i, s:o, s:o}", "format", clg_import_format_name(r),
                  "producer", clg_import_producer(r), "inputs", ins, "outputs", outs, "nodes",
                  clg_import_num_model_nodes(r), "op_types", ops, "unsupported", bad);
    if (clg_import_opset(r))
      json_object_set_new(o, "opset", json_integer(clg_import_opset(r)));
    print_json(o);
  } else {
    char shape[256];
    printf("format: %s\n", clg_import_format_name(r));
    printf("producer: %s\n", clg_import_producer(r)[0] ? clg_import_producer(r) : "(none)");
    if (clg_import_opset(r))
      printf("opset: %d (the default ONNX domain)\n", clg_import_opset(r));
    printf("inputs:\n");
    for (int i = 0; i < clg_import_num_inputs(r); i++) {
      const clg_import_tensor *t = clg_import_input(r, i);
      shape_text(t->rank, t->dims, shape, sizeof shape);
      printf("  %s: %s %s\n", t->name, clg_dtype_name(t->dtype), shape);
    }
    printf("outputs:\n");
    for (int i = 0; i < clg_import_num_outputs(r); i++) {
      const clg_import_tensor *t = clg_import_output(r, i);
      shape_text(t->rank, t->dims, shape, sizeof shape);
      printf("  %s: %s %s\n", t->name, clg_dtype_name(t->dtype), shape);
    }
    printf("nodes: %d\n", clg_import_num_model_nodes(r));
    printf("op types: %d\n", clg_import_num_op_types(r));
    for (int i = 0; i < clg_import_num_op_types(r); i++) {
      const clg_import_op_type *t = clg_import_op_type_at(r, i);
      printf("  %-32s %6d%s\n", t->op, t->count, t->supported ? "" : "  (unsupported)");
    }
    if (unsupported) {
      printf("op types clgraph cannot run: %d\n", unsupported);
      for (int i = 0; i < clg_import_num_op_types(r); i++) {
        const clg_import_op_type *t = clg_import_op_type_at(r, i);
        if (!t->supported)
          printf("  %s: %d node%s, e.g. '%s'\n", t->op, t->count, t->count == 1 ? "" : "s",
                 t->example_node);
      }
    } else {
      printf("every op type is one clgraph runs\n");
    }
  }
  clg_import_result_free(r);
  return unsupported ? 1 : 0;
}

/* --- clgraph run --------------------------------------------------------------------------- */

/* NAME=VALUE: name copied into a malloc'd string, *value pointing into text. */
static bool split_named(const char *opt, const char *text, const char *want, char **name,
                        const char **value)
{
  const char *eq = strchr(text, '=');
  if (!eq || eq == text || !eq[1]) {
    fprintf(stderr, "clgraph run: %s '%s': want %s\n", opt, text, want);
    return false;
  }
  *name = malloc((size_t)(eq - text) + 1);
  if (!*name) {
    fprintf(stderr, "clgraph run: out of memory\n");
    return false;
  }
  memcpy(*name, text, (size_t)(eq - text));
  (*name)[eq - text] = '\0';
  *value = eq + 1;
  return true;
}

/* D,D,... of whole numbers >= 0, at most CLG_MAX_RANK of them. */
static bool parse_dims(const char *name, const char *text, clg_import_shape *s)
{
  s->name = name;
  s->rank = 0;
  for (const char *p = text;;) {
    char *end = NULL;
    errno = 0;
    long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
    if (v < 0 || errno || (*end && *end != ',') || s->rank == CLG_MAX_RANK) {
      fprintf(stderr,
              "clgraph run: --shape %s=%s: want NAME=D,D,... with up to %d whole numbers >= 0\n",
              name, text, CLG_MAX_RANK);
      return false;
    }
    s->dims[s->rank++] = v;
    if (!*end)
      return true;
    p = end + 1;
  }
}

static uint64_t splitmix(uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Deterministic values for an input not given: one stream per --seed, inputs in the model's
 * order. */
static void fill_random(clg_tensor *t, uint64_t *state)
{
  size_t n = clg_tensor_count(t);
  void *p = clg_tensor_data(t);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = splitmix(state);
    double u = (double)(r >> 11) * 0x1.0p-53;
    switch (clg_tensor_dtype(t)) {
    case CLG_FLOAT32:
      ((float *)p)[i] = (float)u;
      break;
    case CLG_FLOAT64:
      ((double *)p)[i] = u;
      break;
    case CLG_FLOAT16:
      ((uint16_t *)p)[i] = clg_half_from_double(u);
      break;
    case CLG_INT32:
      ((int32_t *)p)[i] = (int32_t)(r % 10);
      break;
    case CLG_INT64:
      ((int64_t *)p)[i] = (int64_t)(r % 10);
      break;
    case CLG_BOOL:
      ((uint8_t *)p)[i] = (uint8_t)(r & 1);
      break;
    case CLG_UINT8:
    case CLG_INT8:
      ((uint8_t *)p)[i] = (uint8_t)(r % 10);
      break;
    case CLG_INT16:
    case CLG_UINT16:
      ((uint16_t *)p)[i] = (uint16_t)(r % 10);
      break;
    case CLG_UINT32:
      ((uint32_t *)p)[i] = (uint32_t)(r % 10);
      break;
    case CLG_UINT64:
      ((uint64_t *)p)[i] = r % 10;
      break;
    }
  }
}

/* The file name of an output: each character outside [A-Za-z0-9._-] becomes '_'. */
static void sanitize(const char *name, char *out, size_t size)
{
  size_t n = 0;
  for (; name[n] && n + 1 < size; n++) {
    char c = name[n];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out[n] = ok ? c : '_';
  }
  out[n] = '\0';
}

typedef struct run_state {
  const char *input_args[RUN_MAX_NAMED], *shape_args[RUN_MAX_NAMED], *output_args[RUN_MAX_NAMED];
  int num_input_args, num_shape_args, num_output_args;
  const char *bind_args[RUN_MAX_NAMED]; /* --bind: inputs imported as Consts of their files */
  int num_bind_args;
  char *input_names[RUN_MAX_NAMED], *shape_names[RUN_MAX_NAMED];
  const char *input_files[RUN_MAX_NAMED];
  clg_tensor *input_values[RUN_MAX_NAMED]; /* loaded from input_files */
  clg_import_shape shapes[RUN_MAX_NAMED];  /* from --shape */
  clg_import_shape *bind;                  /* what import gets: one per model input */
  char **bind_names;                       /* their names (copies), num_bind of them */
  int num_bind;
  char **files; /* per output: DIR/<name>.npy or NULL */
} run_state;

static void run_state_free(run_state *st, int num_outputs)
{
  for (int i = 0; i < RUN_MAX_NAMED; i++) {
    free(st->input_names[i]);
    free(st->shape_names[i]);
    clg_tensor_free(st->input_values[i]);
  }
  free(st->bind);
  for (int i = 0; st->bind_names && i < st->num_bind; i++)
    free(st->bind_names[i]);
  free(st->bind_names);
  for (int i = 0; st->files && i < num_outputs; i++)
    free(st->files[i]);
  free(st->files);
}

/* The shapes import binds: for each input the model declares, the --input file's shape, or
 * --shape's, or the model's own with 1 for each unknown dimension. False after a message. */
static bool bind_shapes(run_state *st, const char *model, int *num_bind)
{
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_result *r = NULL;
  char err[1024] = "";
  if (clg_import_inspect(model, &o, &r, err, sizeof err) != CLG_OK) {
    fprintf(stderr, "clgraph run: %s\n", err[0] ? err : clg_last_error());
    clg_import_result_free(r);
    return false;
  }
  const int n = clg_import_num_inputs(r);
  bool ok = true;
  /* Every --input and --shape names an input of the model. */
  for (int k = 0; k < st->num_input_args + st->num_shape_args && ok; k++) {
    const char *name =
        k < st->num_input_args ? st->input_names[k] : st->shape_names[k - st->num_input_args];
    bool found = false;
    for (int i = 0; i < n && !found; i++)
      found = same_name(name, clg_import_input(r, i)->name);
    if (!found) {
      clg_strbuf b;
      clg_strbuf_init(&b);
      for (int i = 0; i < n; i++)
        clg_strbuf_printf(&b, "%s%s", i ? ", " : "", clg_import_input(r, i)->name);
      fprintf(stderr, "clgraph run: %s %s: %s has no input of that name (its inputs: %s)\n",
              k < st->num_input_args ? "--input" : "--shape", name, model,
              b.buf && n ? b.buf : "none");
      clg_strbuf_free(&b);
      ok = false;
    }
  }
  st->bind = ok ? calloc((size_t)n + 1, sizeof *st->bind) : NULL;
  st->bind_names = ok ? calloc((size_t)n + 1, sizeof *st->bind_names) : NULL;
  if (ok && (!st->bind || !st->bind_names)) {
    fprintf(stderr, "clgraph run: out of memory\n");
    ok = false;
  }
  st->num_bind = 0;
  for (int i = 0; i < n && ok; i++) {
    const clg_import_tensor *t = clg_import_input(r, i);
    clg_import_shape *b = &st->bind[i];
    char want[256], got[256], from[64] = "";
    shape_text(t->rank, t->dims, want, sizeof want);
    if (!(st->bind_names[i] = clg_strdup(t->name))) {
      fprintf(stderr, "clgraph run: out of memory\n");
      ok = false;
      break;
    }
    st->num_bind = i + 1;
    b->name = st->bind_names[i];
    for (int k = 0; k < st->num_input_args; k++)
      if (same_name(st->input_names[k], t->name)) {
        const clg_tensor *v = st->input_values[k];
        snprintf(from, sizeof from, "--input");
        b->rank = clg_tensor_rank(v);
        for (int d = 0; d < b->rank; d++)
          b->dims[d] = clg_tensor_dim(v, d);
        if (t->dtype && clg_tensor_dtype(v) != t->dtype) {
          fprintf(stderr,
                  "clgraph run: --input %s=%s: the file holds %s, the model's input %s is %s "
                  "(save it as that dtype)\n",
                  st->input_names[k], st->input_files[k], clg_dtype_name(clg_tensor_dtype(v)),
                  t->name, clg_dtype_name(t->dtype));
          ok = false;
        }
      }
    for (int k = 0; k < st->num_shape_args && ok; k++)
      if (same_name(st->shape_names[k], t->name)) {
        if (from[0]) {
          fprintf(stderr,
                  "clgraph run: --shape %s and --input both give the shape of input %s: give "
                  "one\n",
                  st->shape_names[k], t->name);
          ok = false;
        }
        snprintf(from, sizeof from, "--shape");
        b->rank = st->shapes[k].rank;
        memcpy(b->dims, st->shapes[k].dims, sizeof b->dims);
      }
    if (!ok)
      break;
    if (!from[0]) {
      if (t->rank < 0) {
        fprintf(stderr,
                "clgraph run: input %s of %s has an unknown rank: give --shape %s=D,D,... or "
                "--input %s=FILE.npy\n",
                t->name, model, t->name, t->name);
        ok = false;
        break;
      }
      b->rank = t->rank;
      for (int d = 0; d < t->rank; d++)
        b->dims[d] = t->dims[d] < 0 ? 1 : t->dims[d];
      continue;
    }
    /* A given shape keeps the model's known dimensions. */
    bool agrees = t->rank < 0 || t->rank == b->rank;
    for (int d = 0; agrees && t->rank >= 0 && d < t->rank; d++)
      agrees = t->dims[d] < 0 || t->dims[d] == b->dims[d];
    if (!agrees) {
      shape_text(b->rank, b->dims, got, sizeof got);
      fprintf(stderr, "clgraph run: %s %s: the shape %s does not fit the model's input %s %s\n",
              from, t->name, got, t->name, want);
      ok = false;
    }
  }
  *num_bind = ok ? n : 0;
  clg_import_result_free(r);
  return ok;
}

/* Counts the graph's nodes per device they were placed on. */
static int count_devices(clg_session *s, clg_graph *g, const char **names, int *counts)
{
  int n = 0;
  for (int i = 0; i < clg_graph_num_nodes(g); i++) {
    const char *d = clg_session_node_device(s, clg_graph_node(g, i));
    if (!d)
      continue;
    int k = 0;
    while (k < n && strcmp(names[k], d) != 0)
      k++;
    if (k == n) {
      if (n == RUN_MAX_DEVICES)
        continue;
      names[n] = d;
      counts[n++] = 0;
    }
    counts[k]++;
  }
  return n;
}

static double ms_since(uint64_t t0) { return (double)(clg_now_ns() - t0) / 1e6; }

/* What one `clgraph run` holds between its steps; freed by run_free. */
typedef struct run_job {
  const char *model, *out_dir, *device, *trace;
  int seed, repeats, trace_runs, num_bind, num_inputs, num_outputs;
  bool no_soft, log_placement, json, allow_growth;
  double memory_fraction;
  clg_graph *g;
  clg_session *s;
  clg_import_result *r;
  clg_output *fetch, *feed_at;
  clg_tensor **feeds, **outs;
  const char **out_names;
  double *times; /* the timed runs' milliseconds */
  double import_ms, session_ms, first_ms, median_ms, min_ms;
} run_job;

/* The command line's NAME=VALUE options, each checked before anything is read. 0 when they
 * hold, else the exit status after a message. */
static int parse_named(run_state *st)
{
  for (int k = 0; k < st->num_input_args; k++)
    if (!split_named("--input", st->input_args[k], "NAME=FILE.npy", &st->input_names[k],
                     &st->input_files[k]))
      return 2;
  for (int k = 0; k < st->num_shape_args; k++) {
    const char *dims = NULL;
    if (!split_named("--shape", st->shape_args[k], "NAME=D,D,...", &st->shape_names[k], &dims) ||
        !parse_dims(st->shape_names[k], dims, &st->shapes[k]))
      return 2;
  }
  for (int a = 0; a < st->num_input_args + st->num_shape_args; a++)
    for (int b = 0; b < a; b++) {
      const bool ai = a < st->num_input_args, bi = b < st->num_input_args;
      const char *na = ai ? st->input_names[a] : st->shape_names[a - st->num_input_args];
      const char *nb = bi ? st->input_names[b] : st->shape_names[b - st->num_input_args];
      if (ai == bi && same_name(na, nb)) {
        fprintf(stderr, "clgraph run: %s %s given twice\n", ai ? "--input" : "--shape", na);
        return 2;
      }
    }
  return 0;
}

/* --bind: each named input's --input value as a Const that import maps the input to, and
 * the shapes import binds less those inputs (not placeholders any more). 0, or the exit
 * status after a message. */
static int bind_values(run_job *j, run_state *st, clg_import_map *map, clg_import_options *o)
{
  o->input_map = map;
  o->num_input_map = st->num_bind_args;
  for (int b = 0; b < st->num_bind_args; b++) {
    int k = 0;
    while (k < st->num_input_args && !same_name(st->input_names[k], st->bind_args[b]))
      k++;
    if (k == st->num_input_args) {
      fprintf(stderr, "clgraph run: --bind %s: give its value with --input %s=FILE.npy\n",
              st->bind_args[b], st->bind_args[b]);
      return 2;
    }
    clg_node *c = clg_const(j->g, NULL, st->input_values[k]);
    if (!c) {
      fprintf(stderr, "clgraph run: --bind %s: %s\n", st->bind_args[b], clg_graph_error(j->g));
      return 1;
    }
    map[b] = (clg_import_map){st->bind_args[b], clg_out(c, 0)};
  }
  int n = 0;
  for (int i = 0; i < j->num_bind; i++) {
    bool bound = false;
    for (int b = 0; b < st->num_bind_args; b++)
      bound = bound || same_name(st->bind[i].name, st->bind_args[b]);
    if (!bound)
      st->bind[n++] = st->bind[i];
  }
  o->input_shapes = st->bind;
  o->num_input_shapes = n;
  return 0;
}

/* The import, inside the --device scope. 0, or the exit status after a message. */
static int import_model(run_job *j, run_state *st)
{
  if (!(j->g = clg_graph_new())) {
    fprintf(stderr, "clgraph run: out of memory\n");
    return 1;
  }
  if (j->device && clg_graph_push_device(j->g, j->device) != CLG_OK) {
    fprintf(stderr, "clgraph run: --device '%s': %s\n", j->device, clg_graph_error(j->g));
    return 2;
  }
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_map map[RUN_MAX_NAMED];
  int rc = bind_values(j, st, map, &o);
  if (rc)
    return rc;
  uint64_t t_import = clg_now_ns();
  if (clg_graph_import(j->g, j->model, &o, &j->r) != CLG_OK) {
    fprintf(stderr, "clgraph run: %s\n",
            clg_graph_error(j->g)[0] ? clg_graph_error(j->g) : clg_last_error());
    return 1;
  }
  if (j->device)
    clg_graph_pop_device(j->g);
  j->import_ms = ms_since(t_import);
  return 0;
}

/* The arrays of feeds, fetches and timings, sized from the imported model. */
static bool alloc_arrays(run_job *j, run_state *st)
{
  j->num_inputs = clg_import_num_inputs(j->r);
  j->feed_at = calloc((size_t)j->num_inputs + 1, sizeof *j->feed_at);
  j->feeds = calloc((size_t)j->num_inputs + 1, sizeof *j->feeds);
  j->num_outputs = st->num_output_args ? st->num_output_args : clg_import_num_outputs(j->r);
  j->fetch = calloc((size_t)j->num_outputs + 1, sizeof *j->fetch);
  j->outs = calloc((size_t)j->num_outputs + 1, sizeof *j->outs);
  j->out_names = calloc((size_t)j->num_outputs + 1, sizeof *j->out_names);
  st->files = calloc((size_t)j->num_outputs + 1, sizeof *st->files);
  j->times = calloc((size_t)(j->repeats ? j->repeats : 1), sizeof *j->times);
  if (!j->feed_at || !j->feeds || !j->fetch || !j->outs || !j->out_names || !st->files ||
      !j->times) {
    fprintf(stderr, "clgraph run: out of memory\n");
    return false;
  }
  return true;
}

/* Feeds: a given file, or random values of the bound shape. */
static bool make_feeds(run_job *j, run_state *st)
{
  uint64_t rng = (uint64_t)j->seed;
  for (int i = 0; i < j->num_inputs; i++) {
    const clg_import_tensor *t = clg_import_input(j->r, i);
    j->feed_at[i] = t->value;
    for (int k = 0; k < st->num_input_args && !j->feeds[i]; k++)
      if (same_name(st->input_names[k], t->name))
        j->feeds[i] = st->input_values[k], st->input_values[k] = NULL;
    if (j->feeds[i])
      continue;
    if (t->rank < 0 || !(j->feeds[i] = clg_tensor_new_uninit(t->dtype, t->rank, t->dims))) {
      fprintf(stderr, "clgraph run: input %s (%s %s): %s\n", t->name, clg_dtype_name(t->dtype),
              t->rank < 0 ? "of unknown rank" : "", t->rank < 0 ? "no shape" : clg_last_error());
      return false;
    }
    fill_random(j->feeds[i], &rng);
  }
  return true;
}

/* What to fetch and, with --out-dir, the file each goes to (two outputs never share one). 0,
 * or the exit status after a message. */
static int resolve_outputs(run_job *j, run_state *st)
{
  if (j->out_dir && mkdir(j->out_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "clgraph run: --out-dir %s: %s\n", j->out_dir, strerror(errno));
    return 1;
  }
  for (int i = 0; i < j->num_outputs; i++) {
    if (st->num_output_args) {
      j->out_names[i] = st->output_args[i];
      if (clg_import_find(j->r, st->output_args[i], &j->fetch[i]) != CLG_OK) {
        fprintf(stderr, "clgraph run: --output %s: %s\n", st->output_args[i], clg_last_error());
        return 1;
      }
    } else {
      j->out_names[i] = clg_import_output(j->r, i)->name;
      j->fetch[i] = clg_import_output(j->r, i)->value;
    }
    if (j->out_dir) {
      char base[512];
      sanitize(j->out_names[i], base, sizeof base);
      clg_strbuf b;
      clg_strbuf_init(&b);
      clg_strbuf_printf(&b, "%s/%s.npy", j->out_dir, base);
      if (!(st->files[i] = clg_strbuf_take(&b))) {
        fprintf(stderr, "clgraph run: out of memory\n");
        return 1;
      }
      for (int k = 0; k < i; k++)
        if (strcmp(st->files[k], st->files[i]) == 0) {
          fprintf(stderr, "clgraph run: outputs %s and %s would both be written to %s\n",
                  j->out_names[k], j->out_names[i], st->files[i]);
          return 2;
        }
    }
  }
  return 0;
}

/* The session, then one run, or a warm one and `repeats` timed ones (their outputs kept from
 * the last); sets the timings. */
static bool run_timed(run_job *j)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = !j->no_soft;
  opt.gpu_options.allow_growth = j->allow_growth;
  opt.gpu_options.per_process_gpu_memory_fraction = j->memory_fraction;
  opt.log_device_placement = j->log_placement;
  opt.trace_runs = j->trace ? (j->trace_runs > 0 ? j->trace_runs : 1) : 0;
  uint64_t t_session = clg_now_ns();
  if (clg_session_new(j->g, &opt, &j->s) != CLG_OK) {
    fprintf(stderr, "clgraph run: %s: %s\n", clg_code_name(clg_last_code()), clg_last_error());
    return false;
  }
  j->session_ms = ms_since(t_session);
  const int runs = j->repeats ? j->repeats + 1 : 1;
  for (int k = 0; k < runs; k++) {
    for (int i = 0; i < j->num_outputs; i++) {
      clg_tensor_free(j->outs[i]);
      j->outs[i] = NULL;
    }
    uint64_t t0 = clg_now_ns();
    if (clg_session_run_outputs(j->s, j->num_inputs, j->feed_at, j->feeds, j->num_outputs, j->fetch,
                                j->outs, 0, NULL) != CLG_OK) {
      fprintf(stderr, "clgraph run: %s: %s\n", clg_code_name(clg_last_code()), clg_last_error());
      return false;
    }
    double ms = ms_since(t0);
    if (k == 0)
      j->first_ms = ms;
    if (!j->repeats)
      j->times[0] = ms;
    else if (k > 0)
      j->times[k - 1] = ms;
  }
  const int timed = j->repeats ? j->repeats : 1;
  j->min_ms = j->times[0];
  for (int k = 1; k < timed; k++)
    j->min_ms = j->times[k] < j->min_ms ? j->times[k] : j->min_ms;
  double *sorted = malloc((size_t)timed * sizeof *sorted);
  if (!sorted) {
    fprintf(stderr, "clgraph run: out of memory\n");
    return false;
  }
  memcpy(sorted, j->times, (size_t)timed * sizeof *sorted);
  j->median_ms = clg_tool_median(sorted, timed);
  free(sorted);
  return true;
}

/* The --out-dir files and the --trace. */
static bool write_results(run_job *j, run_state *st)
{
  for (int i = 0; j->out_dir && i < j->num_outputs; i++)
    if (clg_tensor_save_npy(j->outs[i], st->files[i]) != CLG_OK) {
      fprintf(stderr, "clgraph run: output %s: %s\n", j->out_names[i], clg_last_error());
      return false;
    }
  if (j->trace && clg_session_write_trace(j->s, j->trace) != CLG_OK) {
    fprintf(stderr, "clgraph run: --trace %s: %s\n", j->trace, clg_last_error());
    return false;
  }
  return true;
}

static json_t *json_value(const char *name, const clg_tensor *t)
{
  int64_t dims[CLG_MAX_RANK];
  for (int d = 0; d < clg_tensor_rank(t); d++)
    dims[d] = clg_tensor_dim(t, d);
  return json_pack("{s:s, s:s, s:o}", "name", name, "dtype", clg_dtype_name(clg_tensor_dtype(t)),
                   "shape", json_shape(clg_tensor_rank(t), dims));
}

/* --json: one object with what ran where and how long. */
static void print_run_json(const run_job *j, const run_state *st)
{
  const char *dev_names[RUN_MAX_DEVICES];
  int dev_counts[RUN_MAX_DEVICES];
  const int num_devs = count_devices(j->s, j->g, dev_names, dev_counts);
  json_t *ins = json_array(), *os = json_array(), *devs = json_object(), *ms = json_array();
  for (int i = 0; i < j->num_inputs; i++)
    json_array_append_new(ins, json_value(clg_import_input(j->r, i)->name, j->feeds[i]));
  for (int i = 0; i < j->num_outputs; i++) {
    json_t *o = json_value(j->out_names[i], j->outs[i]);
    json_object_set_new(o, "file", st->files[i] ? json_string(st->files[i]) : json_null());
    json_array_append_new(os, o);
  }
  for (int k = 0; k < num_devs; k++)
    json_object_set_new(devs, dev_names[k], json_integer(dev_counts[k]));
  for (int k = 0; k < (j->repeats ? j->repeats : 1); k++)
    json_array_append_new(ms, json_real(j->times[k]));
  print_json(json_pack("{s:s, s:o, s:o, s:o, s:o, s:f, s:f, s:f, s:f, s:f}", "format",
                       clg_import_format_name(j->r), "inputs", ins, "outputs", os, "devices", devs,
                       "run_ms", ms, "median_ms", j->median_ms, "min_ms", j->min_ms, "first_run_ms",
                       j->first_ms, "import_ms", j->import_ms, "session_ms", j->session_ms));
}

/* The plain text report: inputs, outputs with their values, devices, timings. */
static void print_run_text(const run_job *j, const run_state *st)
{
  const char *dev_names[RUN_MAX_DEVICES];
  int dev_counts[RUN_MAX_DEVICES];
  const int num_devs = count_devices(j->s, j->g, dev_names, dev_counts);
  printf("%s: %s, %d nodes\n", j->model, clg_import_format_name(j->r),
         clg_import_num_model_nodes(j->r));
  for (int i = 0; i < j->num_inputs; i++) {
    char shape[256];
    clg_tensor_shape_string(j->feeds[i], shape, sizeof shape);
    const char *file = NULL;
    for (int k = 0; k < st->num_input_args; k++)
      if (same_name(st->input_names[k], clg_import_input(j->r, i)->name))
        file = st->input_files[k];
    printf("input %s: %s %s (%s)\n", clg_import_input(j->r, i)->name,
           clg_dtype_name(clg_tensor_dtype(j->feeds[i])), shape, file ? file : "random values");
  }
  for (int i = 0; i < j->num_outputs; i++) {
    char shape[256];
    clg_tensor_shape_string(j->outs[i], shape, sizeof shape);
    printf("output %s: %s %s%s%s\n", j->out_names[i], clg_dtype_name(clg_tensor_dtype(j->outs[i])),
           shape, st->files[i] ? " -> " : "", st->files[i] ? st->files[i] : "");
    char *text = clg_tensor_to_string(j->outs[i]);
    if (text)
      printf("%s\n", text);
    free(text);
  }
  for (int k = 0; k < num_devs; k++)
    printf("%s: %d nodes\n", dev_names[k], dev_counts[k]);
  if (j->repeats)
    printf("%d runs after a warm one: median %.3f ms, min %.3f ms (first run %.3f ms)\n",
           j->repeats, j->median_ms, j->min_ms, j->first_ms);
  else
    printf("run: %.3f ms (import %.3f ms, session %.3f ms)\n", j->first_ms, j->import_ms,
           j->session_ms);
}

static void run_free(run_job *j)
{
  for (int i = 0; j->feeds && i < clg_import_num_inputs(j->r); i++)
    clg_tensor_free(j->feeds[i]);
  for (int i = 0; j->outs && i < j->num_outputs; i++)
    clg_tensor_free(j->outs[i]);
  free(j->feeds);
  free(j->feed_at);
  free(j->outs);
  free(j->fetch);
  free(j->out_names);
  free(j->times);
  clg_session_free(j->s);
  clg_import_result_free(j->r);
  clg_graph_free(j->g);
}

/* Its steps in order: options, inputs, import, feeds, outputs, runs, results, report. */
static int run_steps(run_job *j, run_state *st)
{
  int rc = parse_named(st);
  if (rc)
    return rc;
  for (int k = 0; k < st->num_input_args; k++)
    if (clg_tensor_load_npy(st->input_files[k], &st->input_values[k]) != CLG_OK) {
      fprintf(stderr, "clgraph run: --input %s: %s\n", st->input_names[k], clg_last_error());
      return 1;
    }
  if (!bind_shapes(st, j->model, &j->num_bind))
    return 1;
  if ((rc = import_model(j, st)) != 0)
    return rc;
  if (!alloc_arrays(j, st) || !make_feeds(j, st))
    return 1;
  if ((rc = resolve_outputs(j, st)) != 0)
    return rc;
  if (!run_timed(j) || !write_results(j, st))
    return 1;
  if (j->json)
    print_run_json(j, st);
  else
    print_run_text(j, st);
  return 0;
}

int clg_tool_run(int argc, char **argv)
{
  run_state st;
  memset(&st, 0, sizeof st);
  run_job j;
  memset(&j, 0, sizeof j);
  clg_tool_opt opts[] = {
      {"--input", CLG_TOOL_REPEAT, .meta = "NAME=FILE.npy", .max_items = RUN_MAX_NAMED,
       .texts = st.input_args, .count = &st.num_input_args},
      {"--bind", CLG_TOOL_REPEAT, .meta = "NAME", .max_items = RUN_MAX_NAMED, .texts = st.bind_args,
       .count = &st.num_bind_args},
      {"--seed", CLG_TOOL_INT, .min = 0, .max = 2147483647, .integer = &j.seed},
      {"--shape", CLG_TOOL_REPEAT, .meta = "NAME=D,D,...", .max_items = RUN_MAX_NAMED,
       .texts = st.shape_args, .count = &st.num_shape_args},
      {"--output", CLG_TOOL_REPEAT, .meta = "NAME", .max_items = RUN_MAX_NAMED,
       .texts = st.output_args, .count = &st.num_output_args},
      {"--out-dir", CLG_TOOL_STRING, .meta = "DIR", .text = &j.out_dir},
      {"--device", CLG_TOOL_STRING, .meta = "DEV", .text = &j.device},
      {"--no-soft-placement", CLG_TOOL_FLAG, .flag = &j.no_soft},
      {"--log-device-placement", CLG_TOOL_FLAG, .flag = &j.log_placement},
      {"--repeats", CLG_TOOL_INT, .meta = "N", .min = 1, .max = 100000, .integer = &j.repeats},
      {"--trace", CLG_TOOL_STRING, .meta = "FILE", .text = &j.trace},
      {"--trace-runs", CLG_TOOL_INT, .meta = "N", .min = 1, .max = 100000,
       .integer = &j.trace_runs},
      {"--json", CLG_TOOL_FLAG, .flag = &j.json},
      {"--allow-growth", CLG_TOOL_FLAG, .flag = &j.allow_growth},
      {"--per-process-gpu-memory-fraction", CLG_TOOL_FLOAT, .meta = "F", .min = 0, .max = 1,
       .number = &j.memory_fraction},
      {NULL}};
  clg_tool_cmd cmd = {.name = "run", .usage = run_usage, .opts = opts, .max_args = 1};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (cmd.num_args != 1) {
    fprintf(stderr, "clgraph run: a MODEL is required\n\n");
    run_usage(stderr);
    return 2;
  }
  j.model = cmd.args[0];
  int rc = run_steps(&j, &st);
  run_free(&j);
  run_state_free(&st, j.num_outputs);
  return rc;
}
