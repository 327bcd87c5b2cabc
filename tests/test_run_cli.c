/* clgraph run, inspect and export through the built binary (issue 23).
 *
 * A small model built here (x [2,3] -> MatMul by a variable W -> Add b -> Relu, plus a second
 * output), frozen by clg_session_export_graphdef, is run by `clgraph run` on an .npy input;
 * its .npy outputs must equal the double loops below exactly (the values are chosen so that
 * float32 computes them without rounding). --json is parsed with jansson and every field
 * checked; each option is refused with its own message. A GraphDef written byte by byte here
 * holds an op clgraph lacks: inspect lists it and exits 1, run fails naming it. Then the
 * round trip: `clgraph train` a few steps, `clgraph export` its checkpoint, `clgraph run` the
 * .pb, and the logits must match the CIFAR-10 model computed here with naive loops from the
 * checkpoint's moving averages (rtol 1e-3, atol 1e-4: float32 sums over up to 2304 terms). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char bin[2048], dir[2048], err_path[2200];

static char *slurp_file(FILE *f)
{
  size_t len = 0, cap = 4096, n;
  char *buf = malloc(cap);
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *grown = realloc(buf, cap * 2);
      if (!grown)
        break;
      buf = grown;
      cap *= 2;
    }
  }
  if (buf)
    buf[len] = '\0';
  return buf;
}

/* Runs `[env] clgraph <args>` (at most 300 s): the exit status, stdout and stderr. */
static int run_tool_env(const char *env, const char *args, char **out, char **err)
{
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "%s timeout 300 '%s' %s 2>'%s'", env ? env : "", bin, args, err_path);
  FILE *p = popen(cmd, "r");
  *out = p ? slurp_file(p) : NULL;
  int status = p ? pclose(p) : -1;
  FILE *e = fopen(err_path, "r");
  *err = e ? slurp_file(e) : NULL;
  if (e)
    fclose(e);
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_tool(const char *args, char **out, char **err)
{
  return run_tool_env(NULL, args, out, err);
}

/* `clgraph args` exits with status want and stderr holds every one of reasons. */
static void check_fails(const char *args, int want, const char *reason, const char *reason2)
{
  char *out = NULL, *err = NULL;
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == want, "clgraph %s: exit status %d, want %d\nstderr: %s", args, rc, want,
            err ? err : "(none)");
  CHECK_MSG(err && strstr(err, reason), "clgraph %s: stderr lacks \"%s\":\n%s", args, reason,
            err ? err : "(none)");
  if (reason2)
    CHECK_MSG(err && strstr(err, reason2), "clgraph %s: stderr lacks \"%s\":\n%s", args, reason2,
              err ? err : "(none)");
  free(out);
  free(err);
}

static const char *tmp(const char *name)
{
  static char paths[8][2300];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  return p;
}

/* Whether a tensor name is want, ":0" optional (as clgraph run takes names). */
static bool same_tensor(const char *got, const char *want)
{
  if (!got)
    return false;
  size_t n = strlen(want);
  return strncmp(got, want, n) == 0 && (got[n] == '\0' || strcmp(got + n, ":0") == 0);
}

/* --- the small model --------------------------------------------------------------------- */

static const float X[6] = {1, 2, 3, -4, 5, -6};
static const float W[6] = {0.5f, -1, 2, 0.25f, -1, 1};
static const float B[2] = {1, -2};

/* y = x W (2x3 by 3x2), relu(y + b): double loops. */
static void reference(const float *x, double *y, double *relu)
{
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double s = 0;
      for (int k = 0; k < 3; k++)
        s += (double)x[i * 3 + k] * W[k * 2 + j];
      y[i * 2 + j] = s;
      relu[i * 2 + j] = s + B[j] > 0 ? s + B[j] : 0;
    }
}

/* Builds and freezes the model into path; W is a variable (a Const in the file). */
static bool write_small_model(const char *path)
{
  clg_graph *g = clg_graph_new();
  int64_t dx[2] = {2, 3}, dw[2] = {3, 2}, db[1] = {2};
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, dx);
  clg_node *w = clg_variable(g, "W", CLG_FLOAT32, 2, dw, clg_const_f32(g, "W_init", 2, dw, W));
  clg_node *y = clg_matmul(g, "MatMul", x, w, false, false);
  clg_node *b = clg_const_f32(g, "out_add", 1, db, B); /* beside "out/add" */
  clg_graph_push_name_scope(g, "out");
  clg_node *r = clg_relu(g, "relu", clg_add(g, "add", y, b));
  clg_graph_pop_name_scope(g);
  clg_node *init = clg_global_variables_initializer(g, "init");
  CHECK_OK(clg_graph_status(g));
  clg_session *s = NULL;
  bool ok = false;
  if (clg_graph_status(g) == CLG_OK && clg_session_new(g, NULL, &s) == CLG_OK &&
      clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init) == CLG_OK) {
    /* Exporting the initializer (an Assign) is refused: a frozen graph holds no state. */
    clg_output assign = clg_out(clg_graph_find(g, "W/Assign"), 0);
    CHECK_CODE(clg_session_export_graphdef(s, 1, &assign, path), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "node 'W/Assign' (Assign) updates a variable");
    /* No outputs, a NULL one, an index the node lacks: each named. */
    void *bytes = NULL;
    size_t len = 0;
    CHECK_CODE(clg_session_export_graphdef_memory(s, 0, NULL, &bytes, &len), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "at least one output (got 0)");
    clg_output none = {NULL, 0}, past = clg_out(r, 1);
    CHECK_CODE(clg_session_export_graphdef_memory(s, 1, &none, &bytes, &len), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "output 0 is NULL");
    CHECK_CODE(clg_session_export_graphdef_memory(s, 1, &past, &bytes, &len), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "output 0 is out/relu:1, but out/relu has 1 outputs");
    CHECK(bytes == NULL && len == 0);
    clg_output outs[1] = {clg_out(r, 0)};
    ok = clg_session_export_graphdef(s, 1, outs, path) == CLG_OK;
    CHECK_MSG(ok, "export: %s", clg_last_error());
    /* A checkpoint that is not clgraph train's, for clgraph export. */
    CHECK_OK(clg_session_save(s, tmp("small.safetensors"), 0, NULL));
  }
  CHECK(ok);
  clg_session_free(s);
  clg_graph_free(g);
  return ok;
}

static clg_tensor *load_npy(const char *path)
{
  clg_tensor *t = NULL;
  CHECK_OK(clg_tensor_load_npy(path, &t));
  return t;
}

static void check_values(const char *path, int rows, int cols, const double *want, bool exact)
{
  clg_tensor *t = load_npy(path);
  CHECK(t && clg_tensor_dtype(t) == CLG_FLOAT32 && clg_tensor_rank(t) == 2 &&
        clg_tensor_dim(t, 0) == rows && clg_tensor_dim(t, 1) == cols);
  for (int i = 0; t && i < rows * cols && (size_t)i < clg_tensor_count(t); i++) {
    double got = ((const float *)clg_tensor_const_data(t))[i];
    CHECK_MSG(exact ? got == want[i] : fabs(got - want[i]) <= 1e-4 + 1e-3 * fabs(want[i]),
              "%s[%d] = %.9g, want %.9g", path, i, got, want[i]);
  }
  clg_tensor_free(t);
}

static json_t *parse_json(const char *text)
{
  json_error_t e;
  json_t *o = text ? json_loads(text, 0, &e) : NULL;
  CHECK_MSG(o && json_is_object(o), "not a JSON object: %s", text ? text : "(none)");
  return o;
}

static void check_shape(json_t *shape, int rank, const int64_t *dims)
{
  CHECK(json_is_array(shape) && (int)json_array_size(shape) == rank);
  for (int i = 0; i < rank && json_is_array(shape); i++)
    CHECK(json_integer_value(json_array_get(shape, (size_t)i)) == dims[i]);
}

static void test_run_small(const char *model)
{
  int64_t dx[2] = {2, 3};
  clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 2, dx, X);
  CHECK_OK(clg_tensor_save_npy(x, tmp("x.npy")));
  clg_tensor_free(x);
  double y[4], relu[4];
  reference(X, y, relu);

  /* The model's outputs by default, written to --out-dir (made when missing), in --json. */
  char args[8192], *out = NULL, *err = NULL;
  snprintf(args, sizeof args, "run '%s' --input x=%s --out-dir %s --json", model, tmp("x.npy"),
           tmp("out1"));
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  json_t *o = parse_json(out);
  CHECK_STR(json_string_value(json_object_get(o, "format")), "graphdef");
  json_t *ins = json_object_get(o, "inputs"), *outs = json_object_get(o, "outputs");
  CHECK(json_array_size(ins) == 1 && json_array_size(outs) == 1);
  json_t *in0 = json_array_get(ins, 0), *out0 = json_array_get(outs, 0);
  CHECK(json_is_string(json_object_get(in0, "name")) &&
        same_tensor(json_string_value(json_object_get(in0, "name")), "x"));
  CHECK_STR(json_string_value(json_object_get(in0, "dtype")), "float");
  check_shape(json_object_get(in0, "shape"), 2, dx);
  CHECK(json_is_string(json_object_get(out0, "name")) &&
        same_tensor(json_string_value(json_object_get(out0, "name")), "out/relu"));
  CHECK_STR(json_string_value(json_object_get(out0, "dtype")), "float");
  check_shape(json_object_get(out0, "shape"), 2, (int64_t[]){2, 2});
  const char *file = json_string_value(json_object_get(out0, "file"));
  /* "out/relu" or "out/relu:0": '/' and ':' become '_'. */
  CHECK(file && (strcmp(file, tmp("out1/out_relu.npy")) == 0 ||
                 strcmp(file, tmp("out1/out_relu_0.npy")) == 0));
  if (file)
    check_values(file, 2, 2, relu, true);
  /* Every node on some device; they add up to the graph's nodes (6 NodeDefs here). */
  json_t *devs = json_object_get(o, "devices");
  const char *dname;
  json_t *dcount;
  long long placed = 0;
  CHECK(json_is_object(devs) && json_object_size(devs) >= 1);
  json_object_foreach(devs, dname, dcount)
  {
    CHECK_CONTAINS(dname, "/device:");
    CHECK(json_integer_value(dcount) >= 1);
    placed += json_integer_value(dcount);
  }
  CHECK_MSG(placed == 6, "placed %lld nodes, want 6", placed);
  json_t *ms = json_object_get(o, "run_ms");
  CHECK(json_is_array(ms) && json_array_size(ms) == 1);
  CHECK(json_number_value(json_array_get(ms, 0)) > 0);
  CHECK(json_number_value(json_object_get(o, "median_ms")) ==
        json_number_value(json_array_get(ms, 0)));
  json_decref(o);
  free(out);
  free(err);

  /* --output names any tensor, ":0" optional; --repeats: N timed runs, their median. */
  snprintf(args, sizeof args,
           "run '%s' --input x:0=%s --output MatMul:0 --output out/relu --out-dir %s --json "
           "--repeats 3",
           model, tmp("x.npy"), tmp("out2"));
  rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  o = parse_json(out);
  outs = json_object_get(o, "outputs");
  CHECK(json_array_size(outs) == 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 0), "name")), "MatMul:0");
  CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 0), "file")),
            tmp("out2/MatMul_0.npy"));
  CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 1), "file")),
            tmp("out2/out_relu.npy"));
  check_values(tmp("out2/MatMul_0.npy"), 2, 2, y, true);
  check_values(tmp("out2/out_relu.npy"), 2, 2, relu, true);
  ms = json_object_get(o, "run_ms");
  CHECK(json_is_array(ms) && json_array_size(ms) == 3);
  double v[3] = {0};
  for (size_t i = 0; i < 3 && json_is_array(ms); i++)
    v[i] = json_number_value(json_array_get(ms, i));
  double med = v[0] > v[1] ? (v[1] > v[2] ? v[1] : (v[0] > v[2] ? v[2] : v[0]))
                           : (v[0] > v[2] ? v[0] : (v[1] > v[2] ? v[2] : v[1]));
  CHECK(json_number_value(json_object_get(o, "median_ms")) == med);
  json_decref(o);
  free(out);
  free(err);

  /* Text output: the values printed as numpy prints them. */
  snprintf(args, sizeof args, "run '%s' --input x=%s", model, tmp("x.npy"));
  rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  CHECK_CONTAINS(out, "[[  2.5   0.5]\n [ 15.    0. ]]");
  free(out);
  free(err);

  /* Random inputs: the same for one --seed, others for another, floats in [0, 1). */
  float seen[3][6];
  const int seeds[3] = {5, 5, 6};
  for (int k = 0; k < 3; k++) {
    char d[64];
    snprintf(d, sizeof d, "rand%d", k);
    snprintf(args, sizeof args, "run '%s' --seed %d --output x --output out/relu --out-dir %s",
             model, seeds[k], tmp(d));
    rc = run_tool(args, &out, &err);
    CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
    free(out);
    free(err);
    snprintf(d, sizeof d, "rand%d/x.npy", k);
    clg_tensor *t = load_npy(tmp(d));
    for (int i = 0; i < 6; i++) {
      seen[k][i] =
          t && clg_tensor_count(t) == 6 ? ((const float *)clg_tensor_const_data(t))[i] : -1;
      CHECK(seen[k][i] >= 0 && seen[k][i] < 1);
    }
    clg_tensor_free(t);
    /* And the output is the model of that input. */
    reference(seen[k], y, relu);
    snprintf(d, sizeof d, "rand%d/out_relu.npy", k);
    check_values(tmp(d), 2, 2, relu, false);
  }
  CHECK(memcmp(seen[0], seen[1], sizeof seen[0]) == 0);
  CHECK(memcmp(seen[0], seen[2], sizeof seen[0]) != 0);

  /* --device, soft placement and the placement log; --trace. */
  snprintf(args, sizeof args, "run '%s' --input x=%s --device /device:GPU:0 --json --trace %s",
           model, tmp("x.npy"), tmp("trace.json"));
  rc = run_tool_env("CLGRAPH_LOG_LEVEL=info", args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  o = parse_json(out);
  CHECK(json_integer_value(json_object_get(json_object_get(o, "devices"),
                                           "/job:localhost/replica:0/task:0/device:GPU:0")) >= 1);
  json_decref(o);
  free(out);
  free(err);
  FILE *tf = fopen(tmp("trace.json"), "r");
  char *trace = tf ? slurp_file(tf) : NULL;
  if (tf)
    fclose(tf);
  CHECK_CONTAINS(trace, "\"traceEvents\"");
  CHECK_CONTAINS(trace, "MatMul");
  free(trace);
  /* --trace-runs N: the last N runs (the warm one counts), each a "step" span; one without. */
  const int trace_runs[3] = {0, 2, 5};
  for (int k = 0; k < 3; k++) {
    char extra[32] = "";
    if (trace_runs[k])
      snprintf(extra, sizeof extra, " --trace-runs %d", trace_runs[k]);
    snprintf(args, sizeof args, "run '%s' --input x=%s --repeats 4 --trace %s%s", model,
             tmp("x.npy"), tmp("trace_n.json"), extra);
    rc = run_tool(args, &out, &err);
    CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
    free(out);
    free(err);
    json_error_t jerr;
    json_t *t = json_load_file(tmp("trace_n.json"), 0, &jerr);
    json_t *ev = json_object_get(t, "traceEvents");
    int steps = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
      json_t *e = json_array_get(ev, i);
      const char *cat = json_string_value(json_object_get(e, "cat"));
      const char *ph = json_string_value(json_object_get(e, "ph"));
      steps += cat && ph && strcmp(cat, "step") == 0 && strcmp(ph, "X") == 0;
    }
    int want = trace_runs[k] ? trace_runs[k] : 1;
    CHECK_MSG(steps == want, "%s: %d steps in the trace, want %d", args, steps, want);
    json_decref(t);
  }
  snprintf(args, sizeof args, "run '%s' --input x=%s --log-device-placement", model, tmp("x.npy"));
  rc = run_tool_env("CLGRAPH_LOG_LEVEL=info", args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  CHECK_CONTAINS(err, "\nMatMul: /job:localhost/replica:0/task:0/device:");
  free(out);
  free(err);
  /* Without soft placement a device the machine lacks fails the run, naming it. */
  snprintf(args, sizeof args, "run '%s' --input x=%s --device /device:GPU:7 --no-soft-placement",
           model, tmp("x.npy"));
  check_fails(args, 1, "GPU:7", NULL);
  snprintf(args, sizeof args, "run '%s' --input x=%s --device /device:GPU:7 --json", model,
           tmp("x.npy"));
  rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  free(out);
  free(err);
}

static void test_run_refused(const char *model)
{
  char args[8192];
  check_fails("run", 2, "clgraph run: a MODEL is required", "usage: clgraph run");
  check_fails("run a.pb b.pb", 2, "clgraph run: unexpected argument 'b.pb'", "usage: clgraph run");
  check_fails("run m.pb --no-such-option", 2, "clgraph run: unknown option '--no-such-option'",
              "usage: clgraph run");
  check_fails("run m.pb --input", 2, "clgraph run: --input needs a value", NULL);
  check_fails("run m.pb --repeats 0", 2, "clgraph run: --repeats '0': want 1..100000", NULL);
  check_fails("run m.pb --seed -1", 2, "clgraph run: --seed '-1': want 0..2147483647", NULL);
  check_fails("run m.pb --json --json", 2, "clgraph run: --json given twice", NULL);
  check_fails("run m.pb --out-dir a --out-dir b", 2,
              "clgraph run: --out-dir given twice ('a', then 'b')", NULL);
  check_fails("run m.pb --input x", 2, "clgraph run: --input 'x': want NAME=FILE.npy", NULL);
  check_fails("run m.pb --input =x.npy", 2, "clgraph run: --input '=x.npy': want NAME=FILE.npy",
              NULL);
  check_fails("run m.pb --shape x=2,a", 2,
              "clgraph run: --shape x=2,a: want NAME=D,D,... with up to 8 whole numbers >= 0",
              NULL);
  check_fails("run m.pb --shape x=1,2,3,4,5,6,7,8,9", 2, "up to 8 whole numbers", NULL);
  check_fails("run m.pb --input x=a.npy --input x:0=b.npy", 2,
              "clgraph run: --input x:0 given twice", NULL);
  check_fails("run /nonexistent/m.pb", 1, "/nonexistent/m.pb", NULL);
  snprintf(args, sizeof args, "run '%s' --input x=%s", model, tmp("absent.npy"));
  check_fails(args, 1, "clgraph run: --input x: ", "absent.npy");
  snprintf(args, sizeof args, "run '%s' --input y=%s", model, tmp("x.npy"));
  check_fails(args, 1, "clgraph run: --input y: ", "has no input of that name (its inputs: x");
  snprintf(args, sizeof args, "run '%s' --shape y=1,2", model);
  check_fails(args, 1, "clgraph run: --shape y: ", "has no input of that name");
  /* A file of another dtype or shape than the input. */
  int64_t d3[2] = {3, 3}, d23[2] = {2, 3};
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 2, d3, NULL);
  CHECK_OK(clg_tensor_save_npy(t, tmp("x33.npy")));
  clg_tensor_free(t);
  t = clg_tensor_new(CLG_INT32, 2, d23, NULL);
  CHECK_OK(clg_tensor_save_npy(t, tmp("xi.npy")));
  clg_tensor_free(t);
  snprintf(args, sizeof args, "run '%s' --input x=%s", model, tmp("x33.npy"));
  check_fails(args, 1, "clgraph run: --input x: the shape [3,3] does not fit the model's input x",
              "[2,3]");
  snprintf(args, sizeof args, "run '%s' --input x=%s --shape x:0=2,3", model, tmp("x.npy"));
  check_fails(args, 1, "clgraph run: --shape x:0 and --input both give the shape of input x",
              "give one");
  snprintf(args, sizeof args, "run '%s' --shape x=2,4", model);
  check_fails(args, 1, "clgraph run: --shape x: the shape [2,4] does not fit", NULL);
  snprintf(args, sizeof args, "run '%s' --input x=%s", model, tmp("xi.npy"));
  check_fails(args, 1, "the file holds int32, the model's input x", "is float");
  snprintf(args, sizeof args, "run '%s' --output nosuch", model);
  check_fails(args, 1, "clgraph run: --output nosuch: ", "nosuch");
  snprintf(args, sizeof args, "run '%s' --device /device:FOO:x", model);
  check_fails(args, 2, "clgraph run: --device '/device:FOO:x'", NULL);
  /* Two outputs that would write one file. */
  snprintf(args, sizeof args, "run '%s' --output out/add --output out_add --out-dir %s", model,
           tmp("clash"));
  check_fails(args, 2, "clgraph run: outputs out/add and out_add would both be written to ",
              "clash/out_add.npy");
}

/* --- a GraphDef written byte by byte: an op clgraph lacks -------------------------------- */

typedef struct pbuf {
  uint8_t b[1024];
  size_t n;
} pbuf;

static void pb_varint(pbuf *p, uint64_t v)
{
  while (v >= 0x80) {
    p->b[p->n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p->b[p->n++] = (uint8_t)v;
}

static void pb_bytes(pbuf *p, int field, const void *data, size_t n)
{
  pb_varint(p, (uint64_t)field << 3 | 2);
  pb_varint(p, n);
  memcpy(p->b + p->n, data, n);
  p->n += n;
}

static void pb_str(pbuf *p, int field, const char *s) { pb_bytes(p, field, s, strlen(s)); }

/* NodeDef {name, op, input?, attr {key "dtype", value {type: DT_FLOAT}}} */
static void node(pbuf *g, const char *name, const char *op, const char *input)
{
  pbuf n = {.n = 0}, entry = {.n = 0}, value = {.n = 0};
  pb_str(&n, 1, name);
  pb_str(&n, 2, op);
  if (input)
    pb_str(&n, 3, input);
  pb_varint(&value, 6 << 3 | 0);
  pb_varint(&value, 1);
  pb_str(&entry, 1, input ? "T" : "dtype");
  pb_bytes(&entry, 2, value.b, value.n);
  pb_bytes(&n, 5, entry.b, entry.n);
  if (!input) { /* shape {dim {size 2}} */
    pbuf shape = {.n = 0}, dim = {.n = 0}, v2 = {.n = 0}, e2 = {.n = 0};
    pb_varint(&dim, 1 << 3 | 0);
    pb_varint(&dim, 2);
    pb_bytes(&shape, 2, dim.b, dim.n);
    pb_bytes(&v2, 7, shape.b, shape.n);
    pb_str(&e2, 1, "shape");
    pb_bytes(&e2, 2, v2.b, v2.n);
    pb_bytes(&n, 5, e2.b, e2.n);
  }
  pb_bytes(g, 1, n.b, n.n);
}

static void test_unsupported(const char *small)
{
  pbuf g = {.n = 0};
  node(&g, "a", "Placeholder", NULL);
  node(&g, "b", "NoSuchOpInClgraph", "a");
  node(&g, "c", "Relu", "b");
  FILE *f = fopen(tmp("unsupported.pb"), "wb");
  CHECK(f && fwrite(g.b, 1, g.n, f) == g.n);
  if (f)
    fclose(f);
  char args[8192], *out = NULL, *err = NULL;
  snprintf(args, sizeof args, "inspect %s --json", tmp("unsupported.pb"));
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 1, "clgraph %s: status %d, want 1\n%s", args, rc, err ? err : "");
  json_t *o = parse_json(out);
  CHECK_STR(json_string_value(json_object_get(o, "format")), "graphdef");
  CHECK_STR(json_string_value(json_object_get(o, "producer")), "");
  CHECK(json_integer_value(json_object_get(o, "nodes")) == 3);
  json_t *ops = json_object_get(o, "op_types"), *bad = json_object_get(o, "unsupported");
  CHECK(json_array_size(ops) == 3);
  for (size_t i = 0; i < json_array_size(ops); i++) {
    json_t *t = json_array_get(ops, i);
    const char *op = json_string_value(json_object_get(t, "op"));
    CHECK(json_integer_value(json_object_get(t, "count")) == 1);
    CHECK(op &&
          json_is_true(json_object_get(t, "supported")) == (strcmp(op, "NoSuchOpInClgraph") != 0));
  }
  CHECK(json_array_size(bad) == 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(bad, 0), "op")), "NoSuchOpInClgraph");
  CHECK(json_integer_value(json_object_get(json_array_get(bad, 0), "count")) == 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(bad, 0), "example_node")), "b");
  json_t *ins = json_object_get(o, "inputs");
  CHECK(json_array_size(ins) == 1);
  CHECK(same_tensor(json_string_value(json_object_get(json_array_get(ins, 0), "name")), "a"));
  check_shape(json_object_get(json_array_get(ins, 0), "shape"), 1, (int64_t[]){2});
  json_decref(o);
  free(out);
  free(err);
  snprintf(args, sizeof args, "inspect %s", tmp("unsupported.pb"));
  rc = run_tool(args, &out, &err);
  CHECK(rc == 1);
  CHECK_CONTAINS(out, "op types clgraph cannot run: 1\n  NoSuchOpInClgraph: 1 node, e.g. 'b'");
  free(out);
  free(err);
  snprintf(args, sizeof args, "run %s", tmp("unsupported.pb"));
  check_fails(args, 1, "NoSuchOpInClgraph", "'b'");

  /* The small model: every op supported, exit 0; what it declares. */
  snprintf(args, sizeof args, "inspect '%s' --json", small);
  rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  o = parse_json(out);
  CHECK(json_integer_value(json_object_get(o, "nodes")) == 6);
  CHECK(json_array_size(json_object_get(o, "unsupported")) == 0);
  ins = json_object_get(o, "inputs");
  CHECK(json_array_size(ins) == 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(ins, 0), "dtype")), "float");
  check_shape(json_object_get(json_array_get(ins, 0), "shape"), 2, (int64_t[]){2, 3});
  json_t *outs = json_object_get(o, "outputs");
  CHECK(
      json_array_size(outs) == 1 &&
      same_tensor(json_string_value(json_object_get(json_array_get(outs, 0), "name")), "out/relu"));
  /* Op types and counts: Placeholder 1, Const 2 (W frozen, b), MatMul 1, Add 1, Relu 1. */
  static const struct {
    const char *op;
    int count;
  } want[] = {{"Placeholder", 1}, {"Const", 2}, {"MatMul", 1}, {"Add", 1}, {"Relu", 1}};
  ops = json_object_get(o, "op_types");
  CHECK(json_array_size(ops) == 5);
  for (size_t k = 0; k < 5; k++) {
    bool found = false;
    for (size_t i = 0; i < json_array_size(ops); i++) {
      json_t *t = json_array_get(ops, i);
      if (strcmp(json_string_value(json_object_get(t, "op")), want[k].op) == 0)
        found = json_integer_value(json_object_get(t, "count")) == want[k].count &&
                json_is_true(json_object_get(t, "supported"));
    }
    CHECK_MSG(found, "op type %s x%d not listed", want[k].op, want[k].count);
  }
  json_decref(o);
  free(out);
  free(err);
  check_fails("inspect", 2, "clgraph inspect: a MODEL is required", "usage: clgraph inspect");
  check_fails("inspect m.pb --shape x=1", 2, "clgraph inspect: unknown option '--shape'", NULL);
  check_fails("inspect /nonexistent/m.pb", 1, "/nonexistent/m.pb", NULL);
}

/* --- the round trip: train, export, run ----------------------------------------------------- */

enum { NUM_VARS = 10 };
static const char *var_names[NUM_VARS] = {
    "conv1/weights",          "conv1/biases",         "conv2/weights",  "conv2/biases",
    "local3/weights",         "local3/biases",        "local4/weights", "local4/biases",
    "softmax_linear/weights", "softmax_linear/biases"};

/* The ten tensors of the model from a checkpoint (suffix "/ExponentialMovingAverage" or ""). */
static bool read_weights(const char *path, const char *suffix, clg_tensor **w)
{
  clg_checkpoint *ck = NULL;
  CHECK_OK(clg_checkpoint_open(path, &ck));
  int found = 0;
  for (int v = 0; ck && v < NUM_VARS; v++) {
    char want[128];
    snprintf(want, sizeof want, "%s%s", var_names[v], suffix);
    w[v] = NULL;
    for (int i = 0; i < clg_checkpoint_num_tensors(ck); i++) {
      clg_checkpoint_tensor info;
      if (clg_checkpoint_tensor_info(ck, i, &info) == CLG_OK && strcmp(info.name, want) == 0 &&
          clg_checkpoint_read(ck, i, &w[v]) == CLG_OK)
        found++;
    }
    CHECK_MSG(w[v] != NULL, "%s has no %s", path, want);
  }
  clg_checkpoint_close(ck);
  return found == NUM_VARS;
}

static const float *F(const clg_tensor *t) { return clg_tensor_const_data(t); }

/* 5x5 convolution, SAME (2 before, 2 after), stride 1, + bias, Relu: [s,s,ci] -> [s,s,co]. */
static void ref_conv(const double *x, int s, int ci, const clg_tensor *w, const clg_tensor *b,
                     int co, double *y)
{
  for (int h = 0; h < s; h++)
    for (int x0 = 0; x0 < s; x0++)
      for (int o = 0; o < co; o++) {
        double sum = F(b)[o];
        for (int kh = 0; kh < 5; kh++)
          for (int kw = 0; kw < 5; kw++) {
            int ih = h + kh - 2, iw = x0 + kw - 2;
            if (ih < 0 || ih >= s || iw < 0 || iw >= s)
              continue;
            for (int c = 0; c < ci; c++)
              sum += x[(ih * s + iw) * ci + c] * F(w)[((kh * 5 + kw) * ci + c) * co + o];
          }
        y[(h * s + x0) * co + o] = sum > 0 ? sum : 0;
      }
}

/* 3x3 max pooling, stride 2, SAME: [s,s,c] -> [p,p,c], p = ceil(s/2). */
static void ref_pool(const double *x, int s, int c, double *y)
{
  int p = (s + 1) / 2, pad = ((p - 1) * 2 + 3 - s) / 2;
  for (int h = 0; h < p; h++)
    for (int w = 0; w < p; w++)
      for (int k = 0; k < c; k++) {
        double m = -INFINITY;
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) {
            int ih = h * 2 + i - pad, iw = w * 2 + j - pad;
            if (ih >= 0 && ih < s && iw >= 0 && iw < s && x[(ih * s + iw) * c + k] > m)
              m = x[(ih * s + iw) * c + k];
          }
        y[(h * p + w) * c + k] = m;
      }
}

/* LRN over the channels: depth_radius 4, bias 1, alpha 0.001/9, beta 0.75 (the tutorial's). */
static void ref_lrn(double *x, int pixels, int c)
{
  double *row = malloc((size_t)c * sizeof *row);
  for (int p = 0; p < pixels; p++) {
    memcpy(row, x + (size_t)p * c, (size_t)c * sizeof *row);
    for (int k = 0; k < c; k++) {
      double sq = 0;
      for (int j = k - 4; j <= k + 4; j++)
        if (j >= 0 && j < c)
          sq += row[j] * row[j];
      x[p * c + k] = row[k] / pow(1.0 + 0.001 / 9.0 * sq, 0.75);
    }
  }
  free(row);
}

static void ref_dense(const double *x, int in, const clg_tensor *w, const clg_tensor *b, int out,
                      bool relu, double *y)
{
  for (int o = 0; o < out; o++) {
    double s = F(b)[o];
    for (int i = 0; i < in; i++)
      s += x[i] * F(w)[i * out + o];
    y[o] = relu && s < 0 ? 0 : s;
  }
}

/* cifar10.inference on one 24x24x3 image, in doubles. */
static void ref_cifar(const float *image, clg_tensor *const *w, double *logits)
{
  double *x = malloc(24 * 24 * 3 * sizeof *x), *a = malloc(24 * 24 * 64 * sizeof *a),
         *p = malloc(12 * 12 * 64 * sizeof *p), *c = malloc(12 * 12 * 64 * sizeof *c),
         *q = malloc(6 * 6 * 64 * sizeof *q), l3[384], l4[192];
  for (int i = 0; i < 24 * 24 * 3; i++)
    x[i] = image[i];
  ref_conv(x, 24, 3, w[0], w[1], 64, a);
  ref_pool(a, 24, 64, p);
  ref_lrn(p, 12 * 12, 64);
  ref_conv(p, 12, 64, w[2], w[3], 64, c);
  ref_lrn(c, 12 * 12, 64);
  ref_pool(c, 12, 64, q);
  ref_dense(q, 6 * 6 * 64, w[4], w[5], 384, true, l3);
  ref_dense(l3, 384, w[6], w[7], 192, true, l4);
  ref_dense(l4, 192, w[8], w[9], 10, false, logits);
  free(x);
  free(a);
  free(p);
  free(c);
  free(q);
}

static void test_round_trip(void)
{
  char args[8192], *out = NULL, *err = NULL;
  char ck[2300]; /* tmp()'s buffers are reused */
  snprintf(ck, sizeof ck, "%s", tmp("cifar.safetensors"));
  snprintf(args, sizeof args,
           "train --dataset synthetic --steps 3 --batch 4 --checkpoint %s --quiet --seed 1", ck);
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
  free(out);
  free(err);
  /* Two images of random values, as clgraph eval's crops are fed. */
  int64_t dims[4] = {2, 24, 24, 3};
  clg_tensor *img = clg_tensor_new(CLG_FLOAT32, 4, dims, NULL);
  clg_test_seed(23);
  for (size_t i = 0; i < clg_tensor_count(img); i++)
    ((float *)clg_tensor_data(img))[i] = (float)clg_test_uniform(-1, 1);
  CHECK_OK(clg_tensor_save_npy(img, tmp("images.npy")));
  for (int raw = 0; raw < 2; raw++) {
    const char *pb = tmp(raw ? "cifar_raw.pb" : "cifar.pb");
    snprintf(args, sizeof args, "export --checkpoint %s --output %s --batch 2%s", ck, pb,
             raw ? " --raw" : "");
    rc = run_tool(args, &out, &err);
    CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
    CHECK_CONTAINS(out, "output logits [2,10]");
    free(out);
    free(err);
    snprintf(args, sizeof args, "run %s --input images=%s --out-dir %s --json", pb,
             tmp("images.npy"), tmp(raw ? "cifar_raw_out" : "cifar_out"));
    rc = run_tool(args, &out, &err);
    CHECK_MSG(rc == 0, "clgraph %s: status %d\n%s", args, rc, err ? err : "");
    json_t *o = parse_json(out);
    json_t *outs = json_object_get(o, "outputs");
    CHECK(json_array_size(outs) == 1);
    CHECK(
        same_tensor(json_string_value(json_object_get(json_array_get(outs, 0), "name")), "logits"));
    const char *file = json_string_value(json_object_get(json_array_get(outs, 0), "file"));
    clg_tensor *w[NUM_VARS] = {0};
    if (file && read_weights(ck, raw ? "" : "/ExponentialMovingAverage", w)) {
      double want[20];
      for (int n = 0; n < 2; n++)
        ref_cifar((const float *)clg_tensor_const_data(img) + n * 24 * 24 * 3, w, want + n * 10);
      check_values(file, 2, 10, want, false);
    }
    for (int v = 0; v < NUM_VARS; v++)
      clg_tensor_free(w[v]);
    json_decref(o);
    free(out);
    free(err);
  }
  clg_tensor_free(img);
  /* The moving averages are not the raw weights: the two files differ. */
  clg_tensor *a = load_npy(tmp("cifar_out/logits.npy")),
             *b = load_npy(tmp("cifar_raw_out/logits.npy"));
  CHECK(a && b &&
        memcmp(clg_tensor_const_data(a), clg_tensor_const_data(b), clg_tensor_bytes(a)) != 0);
  clg_tensor_free(a);
  clg_tensor_free(b);

  check_fails("export", 2, "clgraph export: --checkpoint FILE is required",
              "usage: clgraph export");
  check_fails("export --checkpoint x", 2, "clgraph export: --output FILE is required", NULL);
  check_fails("export --checkpoint x --output y --dataset foo", 2,
              "clgraph export: --dataset 'foo': want cifar10, digits or synthetic", NULL);
  check_fails("export --checkpoint /nonexistent/ck --output y", 1, "/nonexistent/ck", NULL);
  snprintf(args, sizeof args, "export --checkpoint %s --output %s", tmp("small.safetensors"),
           tmp("y.pb"));
  check_fails(args, 1, "has no tensor conv1/weights", "not a checkpoint of clgraph train");
  snprintf(args, sizeof args, "export --checkpoint %s --output /nonexistent/y.pb", ck);
  check_fails(args, 1, "/nonexistent/y.pb", NULL);
}

int main(void)
{
  const char *bdir = getenv("CLG_BINARY_DIR");
  CHECK_MSG(bdir != NULL, "CLG_BINARY_DIR is not set (run through ctest)");
  if (!bdir)
    return clg_test_summary("test_run_cli");
  snprintf(bin, sizeof bin, "%s/clgraph", bdir);
  snprintf(dir, sizeof dir, "%s/test_run_cli.%ld", bdir, (long)getpid());
  snprintf(err_path, sizeof err_path, "%s.stderr", dir);
  CHECK_MSG(access(bin, X_OK) == 0, "%s is not built (build the clgraph_tool target)", bin);
  CHECK(mkdir(dir, 0777) == 0);
  static char model[2300]; /* tmp()'s buffers are reused */
  snprintf(model, sizeof model, "%s", tmp("small.pb"));
  if (write_small_model(model)) {
    test_run_small(model);
    test_run_refused(model);
    test_unsupported(model);
  }
  test_round_trip();
  char cmd[4600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, err_path);
  CHECK(system(cmd) == 0);
  return clg_test_summary("test_run_cli");
}
