/* tf.cond (issue 23: rvm): a tfjs model with a cond, a cond nested in its true branch, a Merge
 * of both branches and a node with a control input from a branch, on CPU:0 and on a stand-in
 * GPU, checked against the branch TensorFlow's executor takes (values worked from x). With
 * each predicate bound to a Const (input_map) the import resolves the conds: tensors of the
 * branch not taken are dead (clg_import_find and signature outputs say so). With predicates
 * fed, the runner does: both values of each, the outer one bound or fed, and a dead fetch is
 * an error that leaves the session usable. A Switch whose pred is no bool scalar is refused. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define F32 "\"attr\": {\"T\": {\"type\": \"DT_FLOAT\"}}"
#define NODE(name, op, inputs)                                                                     \
  "{\"name\": \"" name "\", \"op\": \"" op "\", \"input\": [" inputs "], " F32 "}"
#define PH(name, type, dims)                                                                       \
  "{\"name\": \"" name "\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": \"" type     \
  "\"}, \"shape\": {\"shape\": {" dims "}}}}"

/* cond(p, lambda: cond(q, lambda: t*x, lambda: t+x) with t = x*x, lambda: x+x), and c =
 * Identity(x) run after t (a control input from the true branch). */
static const char *const nodes[] = {
    PH("x", "DT_FLOAT", "\"dim\": [{\"size\": \"2\"}, {\"size\": \"3\"}]"),
    PH("p", "DT_BOOL", ""),
    PH("q", "DT_BOOL", ""),
    NODE("sw", "Switch", "\"x\", \"p\""),
    NODE("t", "Mul", "\"sw:1\", \"sw:1\""),
    NODE("f", "Add", "\"sw:0\", \"sw:0\""),
    NODE("sw2", "Switch", "\"t\", \"q\""),
    NODE("t2", "Mul", "\"sw2:1\", \"x\""),
    NODE("f2", "Add", "\"sw2:0\", \"x\""),
    NODE("m2", "Merge", "\"f2\", \"t2\""),
    NODE("m", "Merge", "\"f\", \"m2\""),
    NODE("c", "Identity", "\"x\", \"^t\""),
    "{\"name\": \"end\", \"op\": \"NoOp\"}",
};

/* The model's JSON with `extra` (a signature, or "") after its topology. */
static const char *model_text(const char *extra, char *buf, size_t size)
{
  size_t at =
      (size_t)snprintf(buf, size, "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": [");
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%s", nodes[i],
                           i + 1 < sizeof nodes / sizeof nodes[0] ? ", " : "");
  snprintf(buf + at, size - at, "]}, %s\"weightsManifest\": []}", extra);
  return buf;
}

static char model_buf[4096];
static const char *model;

static const double xv[6] = {1, -2, 0.5, 3, -1.5, 2};

static clg_node *bool_const(clg_graph *g, bool v)
{
  clg_tensor *t = clg_test_tensor(CLG_BOOL, 0, NULL, (const double[]){v ? 1 : 0});
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

/* Imports `text` with p and q bound (q only when bind_q) under device dev; NULL result when the
 * import failed (code in *code). */
static clg_import_result *import_with(clg_graph *g, const char *text, const char *dev, bool p,
                                      bool q, bool bind_q, clg_code *code)
{
  clg_import_map map[2] = {{"p", clg_out(bool_const(g, p), 0)},
                           {"q", clg_out(bool_const(g, q), 0)}};
  clg_import_options o;
  clg_import_options_init(&o);
  o.input_map = map;
  o.num_input_map = bind_q ? 2 : 1;
  clg_import_result *r = NULL;
  if (dev)
    CHECK_OK(clg_graph_push_device(g, dev));
  *code = clg_graph_import_memory(g, CLG_IMPORT_TFJS, text, strlen(text), &o, &r);
  if (dev)
    clg_graph_pop_device(g);
  return r;
}

static void expect_dead(const clg_import_result *r, const char *name, const char *what)
{
  clg_output v = {NULL, 0};
  clg_code code = clg_import_find(r, name, &v);
  CHECK_MSG(code == CLG_INVALID_ARGUMENT && v.node == NULL, "%s: '%s' should be dead (%s)", what,
            name, clg_code_name(code));
  if (code == CLG_INVALID_ARGUMENT) {
    CHECK_CONTAINS(clg_last_error(), name);
    CHECK_CONTAINS(clg_last_error(), "is dead");
  }
}

/* One predicate setting on one device: fetch m, m:1 (and m2:1, c where live) and check them. */
static void run_cond(const char *dev, bool p, bool q)
{
  char what[96];
  snprintf(what, sizeof what, "cond p=%d q=%d on %s", p, q, dev ? dev : "CPU:0");
  clg_graph *g = clg_graph_new();
  clg_code code;
  clg_import_result *r = import_with(g, model, dev, p, q, true, &code);
  CHECK_MSG(code == CLG_OK, "%s: import: %s", what, clg_last_error());
  if (code != CLG_OK) {
    clg_graph_free(g);
    return;
  }
  /* The expected values: TensorFlow's executor takes exactly one branch of each cond. */
  double want[6], wc[6];
  for (int i = 0; i < 6; i++) {
    double x = xv[i], t = x * x;
    want[i] = !p ? x + x : q ? t * x : t + x;
    wc[i] = x;
  }
  const char *names[4] = {"m", "m:1", "m2:1", "c"};
  int nf = p ? 4 : 2;
  clg_output fetch[4];
  for (int i = 0; i < nf; i++)
    CHECK_OK(clg_import_find(r, names[i], &fetch[i]));
  if (!p) { /* the true branch is dead: t, the inner cond and what ran after t */
    expect_dead(r, "t", what);
    expect_dead(r, "sw:1", what);
    expect_dead(r, "m2", what);
    expect_dead(r, "m2:1", what);
    expect_dead(r, "c", what);
  } else {
    expect_dead(r, "f", what);
    expect_dead(r, q ? "f2" : "t2", what);
  }
  clg_output xin;
  CHECK_OK(clg_import_find(r, "x", &xin));
  clg_tensor *x = clg_test_tensor(CLG_FLOAT32, 2, (int64_t[]){2, 3}, xv);
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  opt.allow_soft_placement = 0;
  clg_session *s = NULL;
  clg_tensor *out[4] = {NULL, NULL, NULL, NULL};
  code = clg_session_new(g, &opt, &s);
  if (code == CLG_OK)
    code = clg_session_run_outputs(s, 1, &xin, &x, nf, fetch, out, 0, NULL);
  CHECK_MSG(code == CLG_OK, "%s: run: %s", what, clg_last_error());
  if (code == CLG_OK) {
    const char *d = dev ? dev : "CPU:0";
    clg_test_check_values(out[0], CLG_FLOAT32, 2, (int64_t[]){2, 3}, want, 1e-6, 1e-6, false, what,
                          d);
    clg_test_check_values(out[1], CLG_INT32, 0, NULL, (const double[]){p ? 1 : 0}, 0, 0, false,
                          what, d);
    if (p) {
      clg_test_check_values(out[2], CLG_INT32, 0, NULL, (const double[]){q ? 1 : 0}, 0, 0, false,
                            what, d);
      clg_test_check_values(out[3], CLG_FLOAT32, 2, (int64_t[]){2, 3}, wc, 0, 0, false, what, d);
    }
  }
  for (int i = 0; i < 4; i++)
    clg_tensor_free(out[i]);
  clg_tensor_free(x);
  clg_session_free(s);
  clg_import_result_free(r);
  clg_graph_free(g);
}

static void test_errors(void)
{
  /* A signature output on the branch not taken: TensorFlow's "Retval does not have value". */
  char sig_buf[4096];
  const char *sig = model_text("\"signature\": {\"outputs\": {\"y\": {\"name\": \"t:0\"}}}, ",
                               sig_buf, sizeof sig_buf);
  clg_graph *g = clg_graph_new();
  clg_code code;
  clg_import_result *r = import_with(g, sig, NULL, false, false, true, &code);
  CHECK_CODE(code, CLG_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK_CONTAINS(clg_last_error(), "signature output");
  CHECK_CONTAINS(clg_last_error(), "'t:0' is dead");
  clg_graph_free(g);
  /* The same taken: imports */
  g = clg_graph_new();
  r = import_with(g, sig, NULL, true, false, true, &code);
  CHECK_OK(code);
  clg_import_result_free(r);
  clg_graph_free(g);
  /* A Switch whose predicate is not a bool scalar */
  static const char *bad = "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": [" PH(
      "x", "DT_FLOAT",
      "\"dim\": [{\"size\": \"2\"}]") ", " NODE("sw", "Switch",
                                                "\"x\", \"x\"") "]}, \"weightsManifest\": []}";
  g = clg_graph_new();
  r = NULL;
  code = clg_graph_import_memory(g, CLG_IMPORT_TFJS, bad, strlen(bad), NULL, &r);
  CHECK_CODE(code, CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_graph_error(g), "Switch 'sw'");
  CHECK_CONTAINS(clg_graph_error(g), "pred must be a bool scalar, not float of shape [2]");
  clg_import_result_free(r);
  clg_graph_free(g);
  /* ... but when p is false the inner cond is dead, so q need not be known */
  g = clg_graph_new();
  r = import_with(g, model, NULL, false, false, false, &code);
  CHECK_OK(code);
  clg_import_result_free(r);
  clg_graph_free(g);
}

/* The predicates fed at run time (p bound at import when bind_p): the runner's dead tensors.
 * Fetches m, m:1 and m2:1 (m2 dead when p is false: its fetch must fail naming it). */
static void run_fed(const char *dev, bool bind_p, bool p, bool q)
{
  char what[112];
  snprintf(what, sizeof what, "run-time cond p=%d%s q=%d on %s", p, bind_p ? " (bound)" : "", q,
           dev ? dev : "CPU:0");
  clg_graph *g = clg_graph_new();
  clg_import_map map[1] = {{"p", clg_out(bool_const(g, p), 0)}};
  clg_import_options o;
  clg_import_options_init(&o);
  o.input_map = map;
  o.num_input_map = bind_p ? 1 : 0;
  clg_import_result *r = NULL;
  if (dev)
    CHECK_OK(clg_graph_push_device(g, dev));
  clg_code code = clg_graph_import_memory(g, CLG_IMPORT_TFJS, model, strlen(model), &o, &r);
  if (dev)
    clg_graph_pop_device(g);
  CHECK_MSG(code == CLG_OK, "%s: import: %s", what, clg_last_error());
  if (code != CLG_OK) {
    clg_graph_free(g);
    return;
  }
  double want[6];
  for (int i = 0; i < 6; i++) {
    double x = xv[i], t = x * x;
    want[i] = !p ? x + x : q ? t * x : t + x;
  }
  clg_output feed_at[3], fetch[3];
  clg_tensor *feeds[3] = {clg_test_tensor(CLG_FLOAT32, 2, (int64_t[]){2, 3}, xv),
                          clg_test_tensor(CLG_BOOL, 0, NULL, (const double[]){q}),
                          clg_test_tensor(CLG_BOOL, 0, NULL, (const double[]){p})};
  CHECK_OK(clg_import_find(r, "x", &feed_at[0]));
  CHECK_OK(clg_import_find(r, "q", &feed_at[1]));
  if (!bind_p)
    CHECK_OK(clg_import_find(r, "p", &feed_at[2]));
  CHECK_OK(clg_import_find(r, "m", &fetch[0]));
  CHECK_OK(clg_import_find(r, "m:1", &fetch[1]));
  bool m2_dead = !p && !bind_p; /* bound false: m2 was dropped at import */
  if (p)
    CHECK_OK(clg_import_find(r, "m2:1", &fetch[2]));
  else if (!bind_p)
    CHECK_OK(clg_import_find(r, "m2", &fetch[2]));
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  opt.allow_soft_placement = 0;
  clg_session *s = NULL;
  clg_tensor *out[3] = {NULL, NULL, NULL};
  int nfeeds = bind_p ? 2 : 3, nf = p ? 3 : 2;
  code = clg_session_new(g, &opt, &s);
  CHECK_MSG(code == CLG_OK, "%s: session: %s", what, clg_last_error());
  if (code == CLG_OK)
    code = clg_session_run_outputs(s, nfeeds, feed_at, feeds, nf, fetch, out, 0, NULL);
  CHECK_MSG(code == CLG_OK, "%s: run: %s", what, clg_last_error());
  const char *d = dev ? dev : "CPU:0";
  if (code == CLG_OK) {
    clg_test_check_values(out[0], CLG_FLOAT32, 2, (int64_t[]){2, 3}, want, 1e-6, 1e-6, false, what,
                          d);
    clg_test_check_values(out[1], CLG_INT32, 0, NULL, (const double[]){p ? 1 : 0}, 0, 0, false,
                          what, d);
    if (p)
      clg_test_check_values(out[2], CLG_INT32, 0, NULL, (const double[]){q ? 1 : 0}, 0, 0, false,
                            what, d);
  }
  if (m2_dead && s) { /* the inner Merge's output: dead this run */
    clg_tensor *got = NULL;
    code = clg_session_run_outputs(s, nfeeds, feed_at, feeds, 1, &fetch[2], &got, 0, NULL);
    CHECK_MSG(code == CLG_INVALID_ARGUMENT, "%s: fetching dead m2 gave %s", what,
              clg_code_name(code));
    CHECK_CONTAINS(clg_last_error(), "fetching 'm2:0'");
    CHECK_CONTAINS(clg_last_error(), "Retval does not have value");
    CHECK(got == NULL);
    clg_tensor_free(got);
    /* the session stays usable: the live fetches again */
    for (int i = 0; i < 2; i++) {
      clg_tensor_free(out[i]);
      out[i] = NULL;
    }
    CHECK_OK(clg_session_run_outputs(s, nfeeds, feed_at, feeds, 2, fetch, out, 0, NULL));
    if (out[0])
      clg_test_check_values(out[0], CLG_FLOAT32, 2, (int64_t[]){2, 3}, want, 1e-6, 1e-6, false,
                            what, d);
  }
  for (int i = 0; i < 3; i++) {
    clg_tensor_free(out[i]);
    clg_tensor_free(feeds[i]);
  }
  clg_session_free(s);
  clg_import_result_free(r);
  clg_graph_free(g);
}

int main(void)
{
  model = model_text("", model_buf, sizeof model_buf);
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_tf_control");
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++)
      run_cond(d ? "/device:GPU:0" : NULL, k > 0, k == 1);
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 8; k++)
      run_fed(d ? "/device:GPU:0" : NULL, k >= 4, k & 1, k >> 1 & 1);
  test_errors();
  return clg_test_summary("test_tf_control");
}
