/* tf.cond at import (issue 23: rvm): a tfjs model with a cond, a cond nested in its true
 * branch, a Merge of both branches and a node with a control input from a branch, imported
 * with each predicate bound to a Const (input_map), run on CPU:0 and on a stand-in GPU and
 * checked against the branch TensorFlow's executor takes (values worked from x); tensors of
 * the branch not taken are dead (clg_import_find and signature outputs say so), and a Switch
 * whose predicate does not fold is refused with an error naming it. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define F32 "\"attr\": {\"T\": {\"type\": \"DT_FLOAT\"}}"
#define NODE(name, op, inputs) "{\"name\": \"" name "\", \"op\": \"" op "\", \"input\": [" inputs "], " F32 "},"
#define PH(name, type, dims)                                                                       \
  "{\"name\": \"" name "\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": \"" type     \
  "\"}, \"shape\": {\"shape\": {" dims "}}}},"

/* cond(p, lambda: cond(q, lambda: t*x, lambda: t+x) with t = x*x, lambda: x+x), and c =
 * Identity(x) run after t (a control input from the true branch). */
#define NODES                                                                                      \
  PH("x", "DT_FLOAT", "\"dim\": [{\"size\": \"2\"}, {\"size\": \"3\"}]")                           \
  PH("p", "DT_BOOL", "") PH("q", "DT_BOOL", "")                                                    \
  NODE("sw", "Switch", "\"x\", \"p\"") NODE("t", "Mul", "\"sw:1\", \"sw:1\"")                      \
  NODE("f", "Add", "\"sw:0\", \"sw:0\"") NODE("sw2", "Switch", "\"t\", \"q\"")                     \
  NODE("t2", "Mul", "\"sw2:1\", \"x\"") NODE("f2", "Add", "\"sw2:0\", \"x\"")                      \
  NODE("m2", "Merge", "\"f2\", \"t2\"") NODE("m", "Merge", "\"f\", \"m2\"")                        \
  NODE("c", "Identity", "\"x\", \"^t\"")                                                           \
  "{\"name\": \"end\", \"op\": \"NoOp\"}"

static const char *model = "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": [" NODES
                           "]}, \"weightsManifest\": []}";

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
  clg_import_map map[2] = {{"p", clg_out(bool_const(g, p), 0)}, {"q", clg_out(bool_const(g, q), 0)}};
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
    clg_test_check_values(out[0], CLG_FLOAT32, 2, (int64_t[]){2, 3}, want, 1e-6, 1e-6, false,
                          what, d);
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
  static const char *sig = "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": [" NODES
                           "]}, \"signature\": {\"outputs\": {\"y\": {\"name\": \"t:0\"}}}, "
                           "\"weightsManifest\": []}";
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
  /* q fed at run time: the inner Switch cannot be resolved at import */
  g = clg_graph_new();
  r = import_with(g, model, NULL, true, false, false, &code);
  CHECK_CODE(code, CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "op type Switch (node 'sw2') is not supported");
  clg_import_result_free(r);
  clg_graph_free(g);
  /* ... but when p is false the inner cond is dead, so q need not be known */
  g = clg_graph_new();
  r = import_with(g, model, NULL, false, false, false, &code);
  CHECK_OK(code);
  clg_import_result_free(r);
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_tf_control");
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++)
      run_cond(d ? "/device:GPU:0" : NULL, k > 0, k == 1);
  test_errors();
  return clg_test_summary("test_tf_control");
}
