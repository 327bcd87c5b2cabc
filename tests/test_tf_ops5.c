/* The ops the last five control-flow-free tfjs graphs lacked (issue 23): SquaredDifference
 * (movenet), Size (movenet-multipose), SparseToDense (nanodet) and MatMul on int32 and int64
 * (facemesh-attention's SpatialTransformer), on CPU:0 and on the PoCL stand-in GPUs, each
 * against naive double loops written here from TensorFlow's documented semantics: numpy
 * broadcasting, wrapping integer arithmetic, SquaredDifference's gradient as TensorFlow's
 * _SquaredDifferenceGrad, Size folded to a Const at import, SparseToDense's 0-D/1-D/2-D indices,
 * scalar values, repeated indices without validate_indices and TensorFlow's errors for bad
 * indices and shapes, each naming the node. SparseToDense's OpenCL kernel takes Const indices
 * (checked at build); with fed ones a GPU node is refused without soft placement (as TensorFlow
 * 1.x's CPU-only kernel) and runs on CPU:0 with it. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
// ctest: clblast_off CLGRAPH_LOG_LEVEL=error CLGRAPH_CLBLAST_DISABLE=single,double
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/import.h"
#include "testutil.h"

static clg_session_options session_opt;
static int gpu_turn;

/* A host tensor of dtype holding v (NULL: 0, 1, 2, ...). */
static clg_tensor *tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    clg_test_set_elem(t, i, v ? v[i] : (double)i);
  return t;
}

/* count values: floats uniform in [-4, 4) on a grid of 1/8 (differences and squares exact in
 * float), integers in [-1000, 1000]. */
static double *random_values(clg_dtype dt, size_t count)
{
  double *v = malloc(sizeof(double) * (count ? count : 1));
  for (size_t i = 0; i < count; i++)
    v[i] = dt == CLG_FLOAT32 || dt == CLG_FLOAT64 ? floor(clg_test_uniform(-4, 4) * 8) / 8
                                                  : floor(clg_test_uniform(-1000, 1001));
  return v;
}

typedef struct input {
  clg_tensor *t;
  bool is_const;
} input;

typedef struct want {
  clg_dtype dtype;
  int rank;
  int64_t dims[8];
  const double *v;
} want;

/* Exact comparison: every reference here is exact in the output's dtype. */
static void check_out(const clg_tensor *t, const want *w, const char *what, const char *dev)
{
  clg_test_check_values(t, w->dtype, w->rank, w->dims, w->v, 0, 0, false, what, dev);
}

static clg_output make_input(clg_graph *g, const input *in)
{
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < clg_tensor_rank(in->t); k++)
    dims[k] = clg_tensor_dim(in->t, k);
  clg_node *p = in->is_const ? clg_const(g, NULL, in->t)
                             : clg_placeholder(g, NULL, clg_tensor_dtype(in->t),
                                               clg_tensor_rank(in->t), dims);
  return clg_out(p, 0);
}

/* op on the inputs on CPU:0 and on a stand-in GPU (gpu) in one session, both checked
 * against w. soft: a session with soft placement (the GPU node may move to CPU:0). */
static void run_case_soft(const char *what, const char *op, int nin, const input *in, int nattrs,
                          const clg_attr *attrs, const want *w, bool gpu, bool soft)
{
  static const char *const gpus[4] = {"/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                      "/device:GPU:3"};
  clg_graph *g = clg_graph_new();
  clg_output ins[8], feeds[8];
  clg_tensor *feed_t[8];
  int nfeeds = 0;
  for (int i = 0; i < nin; i++) {
    ins[i] = make_input(g, &in[i]);
    if (!in[i].is_const) {
      feeds[nfeeds] = ins[i];
      feed_t[nfeeds++] = in[i].t;
    }
  }
  int ndev = gpu ? 2 : 1;
  clg_node *node[2];
  clg_graph_push_device(g, "/cpu:0");
  node[0] = clg_op(g, op, NULL, nin, ins, nattrs, attrs);
  clg_graph_pop_device(g);
  if (gpu) {
    clg_graph_push_device(g, gpus[gpu_turn++ % 4]);
    node[1] = clg_op(g, op, NULL, nin, ins, nattrs, attrs);
    clg_graph_pop_device(g);
  }
  clg_code code = clg_graph_status(g);
  CHECK_MSG(code == CLG_OK, "%s: build: %s", what, clg_graph_error(g));
  clg_session *s = NULL;
  clg_session_options o = session_opt;
  o.allow_soft_placement = soft;
  if (code == CLG_OK)
    CHECK_OK(code = clg_session_new(g, &o, &s));
  if (code == CLG_OK) {
    clg_output fetch[2] = {clg_out(node[0], 0), gpu ? clg_out(node[1], 0) : clg_out(node[0], 0)};
    clg_tensor *out[2] = {NULL, NULL};
    code = clg_session_run_outputs(s, nfeeds, feeds, feed_t, ndev, fetch, out, 0, NULL);
    CHECK_MSG(code == CLG_OK, "%s: run: %s", what, clg_last_error());
    for (int d = 0; d < ndev; d++) {
      if (code == CLG_OK)
        check_out(out[d], w, what, d ? "GPU" : "CPU:0");
      clg_tensor_free(out[d]);
    }
  }
  clg_session_free(s);
  clg_graph_free(g);
}

static void run_case(const char *what, const char *op, int nin, const input *in, int nattrs,
                     const clg_attr *attrs, const want *w)
{
  run_case_soft(what, op, nin, in, nattrs, attrs, w, true, false);
}

/* A build of op named "bad_node" that fails with INVALID_ARGUMENT naming it and saying text. */
static void expect_build_error(const char *op, int nin, const input *in, int nattrs,
                               const clg_attr *attrs, const char *text, int line)
{
  clg_graph *g = clg_graph_new();
  clg_output ins[8];
  for (int i = 0; i < nin; i++)
    ins[i] = make_input(g, &in[i]);
  clg_node *n = clg_op(g, op, "bad_node", nin, ins, nattrs, attrs);
  const char *e = clg_graph_error(g);
  CHECK_MSG(n == NULL && clg_graph_status(g) == CLG_INVALID_ARGUMENT, "line %d: status %s (%s)",
            line, clg_code_name(clg_graph_status(g)), e);
  CHECK_MSG(e && strstr(e, "bad_node") && strstr(e, text),
            "line %d: error \"%s\" lacks the node or \"%s\"", line, e ? e : "", text);
  clg_graph_free(g);
}
#define EXPECT_BUILD_ERROR(op, nin, in, nattrs, attrs, text)                                       \
  expect_build_error(op, nin, in, nattrs, attrs, text, __LINE__)

/* A run of op (named "bad_node", on CPU:0, non-Const inputs fed) that fails with
 * INVALID_ARGUMENT naming the node and saying text; the session stays usable (a second run
 * fails the same way). */
static void expect_run_error(const char *op, int nin, const input *in, int nattrs,
                             const clg_attr *attrs, const char *text, int line)
{
  clg_graph *g = clg_graph_new();
  clg_output ins[8], feeds[8];
  clg_tensor *feed_t[8];
  int nfeeds = 0;
  for (int i = 0; i < nin; i++) {
    ins[i] = make_input(g, &in[i]);
    if (!in[i].is_const) {
      feeds[nfeeds] = ins[i];
      feed_t[nfeeds++] = in[i].t;
    }
  }
  clg_graph_push_device(g, "/cpu:0");
  clg_node *n = clg_op(g, op, "bad_node", nin, ins, nattrs, attrs);
  clg_graph_pop_device(g);
  clg_session *s = NULL;
  CHECK_MSG(n != NULL, "line %d: build: %s", line, clg_graph_error(g));
  if (n && clg_session_new(g, &session_opt, &s) == CLG_OK) {
    for (int r = 0; r < 2; r++) {
      clg_output f = clg_out(n, 0);
      clg_tensor *out = NULL;
      clg_code code = clg_session_run_outputs(s, nfeeds, feeds, feed_t, 1, &f, &out, 0, NULL);
      const char *e = clg_last_error();
      CHECK_MSG(code == CLG_INVALID_ARGUMENT && out == NULL, "line %d: run %d: status %s (%s)",
                line, r, clg_code_name(code), e);
      CHECK_MSG(e && strstr(e, "bad_node") && strstr(e, text),
                "line %d: error \"%s\" lacks the node or \"%s\"", line, e ? e : "", text);
      clg_tensor_free(out);
    }
  }
  clg_session_free(s);
  clg_graph_free(g);
}
#define EXPECT_RUN_ERROR(op, nin, in, nattrs, attrs, text)                                         \
  expect_run_error(op, nin, in, nattrs, attrs, text, __LINE__)

static clg_tensor *ints(clg_dtype dt, int n, const int64_t *v)
{
  double d[16];
  for (int i = 0; i < n; i++)
    d[i] = (double)v[i];
  return tensor(dt, 1, (int64_t[]){n}, d);
}

/* The numpy broadcast of a [ra] and b [rb] into o (rank ro): for output element i, the offsets
 * of a and b. */
static void bcast_offsets(int ra, const int64_t *da, int rb, const int64_t *db, int ro,
                          const int64_t *dout, size_t i, size_t *ia, size_t *ib)
{
  size_t sa = 1, sb = 1;
  *ia = *ib = 0;
  for (int k = ro - 1; k >= 0; k--) {
    size_t at = i % (size_t)dout[k];
    i /= (size_t)dout[k];
    int ka = k - (ro - ra), kb = k - (ro - rb);
    if (ka >= 0) {
      *ia += (da[ka] == 1 ? 0 : at) * sa;
      sa *= (size_t)da[ka];
    }
    if (kb >= 0) {
      *ib += (db[kb] == 1 ? 0 : at) * sb;
      sb *= (size_t)db[kb];
    }
  }
}

/* (x - y)^2 in dtype: floats exact (values on a grid of 1/8), integers wrapping mod 2^bits. */
static double sqdiff_ref(clg_dtype dt, double x, double y)
{
  if (dt == CLG_INT32) {
    uint32_t d = (uint32_t)(int32_t)x - (uint32_t)(int32_t)y;
    return (double)(int32_t)(d * d);
  }
  if (dt == CLG_INT64) {
    uint64_t d = (uint64_t)(int64_t)x - (uint64_t)(int64_t)y;
    return (double)(int64_t)(d * d);
  }
  return (x - y) * (x - y);
}

/* --- SquaredDifference ------------------------------------------------------------------- */

static void test_squared_difference(void)
{
  static const clg_dtype dts[4] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64};
  struct {
    int ra, rb;
    int64_t da[4], db[4];
  } cases[] = {
      {2, 2, {2, 3}, {2, 3}},       /* same shape */
      {2, 1, {2, 3}, {3}},          /* a row against each row */
      {3, 2, {2, 1, 4}, {3, 1}},    /* both broadcast: [2,3,4] */
      {0, 1, {0}, {5}},             /* a scalar */
      {2, 1, {0, 3}, {3}},          /* empty */
      {1, 4, {7}, {2, 1, 3, 1}},    /* rank 4 out of rank 1 and 4 */
      {3, 3, {1, 2, 1}, {3, 1, 5}}, /* [3,2,5] */
  };
  for (int t = 0; t < 4; t++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      clg_dtype dt = dts[t];
      int ra = cases[c].ra, rb = cases[c].rb, ro = ra > rb ? ra : rb;
      const int64_t *da = cases[c].da, *db = cases[c].db;
      int64_t dout[4];
      for (int k = 0; k < ro; k++) {
        int ka = k - (ro - ra), kb = k - (ro - rb);
        int64_t x = ka >= 0 ? da[ka] : 1, y = kb >= 0 ? db[kb] : 1;
        dout[k] = x == 1 ? y : x;
      }
      size_t na = clg_test_count(ra, da), nb = clg_test_count(rb, db),
             no = clg_test_count(ro, dout);
      double *av = random_values(dt, na), *bv = random_values(dt, nb);
      double *ref = malloc(sizeof(double) * (no ? no : 1));
      for (size_t i = 0; i < no; i++) {
        size_t ia, ib;
        bcast_offsets(ra, da, rb, db, ro, dout, i, &ia, &ib);
        ref[i] = sqdiff_ref(dt, av[ia], bv[ib]);
      }
      input in[2] = {{tensor(dt, ra, da, av), false}, {tensor(dt, rb, db, bv), c == 1}};
      want w = {dt, ro, {0}, ref};
      memcpy(w.dims, dout, sizeof(int64_t) * (size_t)ro);
      char what[96];
      snprintf(what, sizeof what, "SquaredDifference %s case %zu", clg_dtype_name(dt), c);
      run_case(what, "SquaredDifference", 2, in, 0, NULL, &w);
      clg_tensor_free(in[0].t);
      clg_tensor_free(in[1].t);
      free(av);
      free(bv);
      free(ref);
    }
  /* Integers wrap as TensorFlow's: 46341^2 and (-2^31 - 1)^2 past int32, 2^32 * 2^32 in int64. */
  {
    const double x32[3] = {46341, INT32_MIN, 65536}, y32[3] = {0, 1, 0};
    const double want32[3] = {sqdiff_ref(CLG_INT32, 46341, 0), sqdiff_ref(CLG_INT32, INT32_MIN, 1),
                              0};
    CHECK(want32[0] == -2147479015.0 && want32[1] == 1.0);
    input in[2] = {{tensor(CLG_INT32, 1, (int64_t[]){3}, x32), false},
                   {tensor(CLG_INT32, 1, (int64_t[]){3}, y32), false}};
    want w = {CLG_INT32, 1, {3}, want32};
    run_case("SquaredDifference int32 wrapping", "SquaredDifference", 2, in, 0, NULL, &w);
    clg_tensor_free(in[0].t);
    clg_tensor_free(in[1].t);
    const double x64[2] = {4294967296.0, -3037000500.0}, y64[2] = {0, 0};
    const double want64[2] = {0, sqdiff_ref(CLG_INT64, -3037000500.0, 0)};
    CHECK(want64[1] < 0); /* 3037000500^2 passes INT64_MAX */
    input in64[2] = {{tensor(CLG_INT64, 1, (int64_t[]){2}, x64), false},
                     {tensor(CLG_INT64, 1, (int64_t[]){2}, y64), false}};
    want w64 = {CLG_INT64, 1, {2}, want64};
    run_case("SquaredDifference int64 wrapping", "SquaredDifference", 2, in64, 0, NULL, &w64);
    clg_tensor_free(in64[0].t);
    clg_tensor_free(in64[1].t);
  }
  /* Bad input. */
  clg_tensor *a = tensor(CLG_FLOAT32, 2, (int64_t[]){2, 3}, NULL);
  clg_tensor *b = tensor(CLG_FLOAT32, 1, (int64_t[]){2}, NULL);
  clg_tensor *i = tensor(CLG_INT32, 2, (int64_t[]){2, 3}, NULL);
  EXPECT_BUILD_ERROR("SquaredDifference", 2, ((input[]){{a, false}, {b, false}}), 0, NULL,
                     "Incompatible shapes: [2,3] vs. [2]");
  EXPECT_BUILD_ERROR("SquaredDifference", 2, ((input[]){{a, false}, {i, false}}), 0, NULL,
                     "dtypes differ: float vs int32");
  clg_tensor_free(a);
  clg_tensor_free(b);
  clg_tensor_free(i);
}

/* The gradients through clg_gradients against TensorFlow's _SquaredDifferenceGrad: for
 * z = (x - y)^2 broadcast and an incoming dz, dx[ia(o)] += 2 dz[o] (x - y) and dy[ib(o)] -=
 * the same, over every output element o. */
static void test_squared_difference_grad(void)
{
  int64_t dx_dims[3] = {2, 1, 4}, dy_dims[2] = {3, 1}, dout[3] = {2, 3, 4};
  for (int dev = 0; dev < 2; dev++) {
    clg_tensor *x = tensor(CLG_FLOAT64, 3, dx_dims, NULL),
               *y = tensor(CLG_FLOAT64, 2, dy_dims, NULL);
    clg_tensor *dz = tensor(CLG_FLOAT64, 3, dout, NULL);
    double *xv = random_values(CLG_FLOAT64, 8), *yv = random_values(CLG_FLOAT64, 3);
    double *dzv = random_values(CLG_FLOAT64, 24);
    memcpy(clg_tensor_data(x), xv, sizeof(double) * 8);
    memcpy(clg_tensor_data(y), yv, sizeof(double) * 3);
    memcpy(clg_tensor_data(dz), dzv, sizeof(double) * 24);
    double gx[8] = {0}, gy[3] = {0};
    for (size_t o = 0; o < 24; o++) {
      size_t ia, ib;
      bcast_offsets(3, dx_dims, 2, dy_dims, 3, dout, o, &ia, &ib);
      double g = 2 * dzv[o] * (xv[ia] - yv[ib]);
      gx[ia] += g;
      gy[ib] -= g;
    }
    clg_graph *g = clg_graph_new();
    clg_node *px = clg_placeholder(g, "x", CLG_FLOAT64, 3, dx_dims);
    clg_node *py = clg_placeholder(g, "y", CLG_FLOAT64, 2, dy_dims);
    clg_node *pdz = clg_placeholder(g, "dz", CLG_FLOAT64, 3, dout);
    clg_graph_push_device(g, dev ? "/device:GPU:1" : "/cpu:0");
    clg_node *z = clg_squared_difference(g, "z", px, py);
    clg_output ys = clg_out(z, 0), gys = clg_out(pdz, 0), grads[2];
    clg_output xs[2] = {clg_out(px, 0), clg_out(py, 0)};
    clg_code code = clg_gradients(g, 1, &ys, &gys, 2, xs, NULL, grads);
    clg_graph_pop_device(g);
    CHECK_MSG(code == CLG_OK, "SquaredDifference gradients: %s", clg_graph_error(g));
    clg_session *s = NULL;
    if (code == CLG_OK)
      CHECK_OK(code = clg_session_new(g, &session_opt, &s));
    if (code == CLG_OK) {
      clg_output feeds[3] = {clg_out(px, 0), clg_out(py, 0), clg_out(pdz, 0)};
      clg_tensor *ft[3] = {x, y, dz}, *out[2] = {NULL, NULL};
      code = clg_session_run_outputs(s, 3, feeds, ft, 2, grads, out, 0, NULL);
      CHECK_MSG(code == CLG_OK, "SquaredDifference gradients: run: %s", clg_last_error());
      if (code == CLG_OK) {
        want wx = {CLG_FLOAT64, 3, {2, 1, 4}, gx}, wy = {CLG_FLOAT64, 2, {3, 1}, gy};
        check_out(out[0], &wx, "SquaredDifference dx", dev ? "GPU" : "CPU:0");
        check_out(out[1], &wy, "SquaredDifference dy", dev ? "GPU" : "CPU:0");
      }
      clg_tensor_free(out[0]);
      clg_tensor_free(out[1]);
    }
    clg_session_free(s);
    clg_graph_free(g);
    clg_tensor_free(x);
    clg_tensor_free(y);
    clg_tensor_free(dz);
    free(xv);
    free(yv);
    free(dzv);
  }
}

/* --- Size -------------------------------------------------------------------------------- */

static void test_size(void)
{
  struct {
    int rank;
    int64_t dims[4];
    clg_dtype dt;
  } cases[] = {{3, {2, 3, 4}, CLG_FLOAT32},
               {0, {0}, CLG_INT32},
               {2, {0, 5}, CLG_FLOAT64},
               {1, {7}, CLG_BOOL}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int o = 0; o < 3; o++) { /* out_type unset (int32), int32, int64 */
      clg_tensor *x = tensor(cases[c].dt, cases[c].rank, cases[c].dims, NULL);
      input in = {x, false};
      double n = (double)clg_test_count(cases[c].rank, cases[c].dims);
      clg_attr ot = clg_attr_dtype("out_type", o == 2 ? CLG_INT64 : CLG_INT32);
      want w = {o == 2 ? CLG_INT64 : CLG_INT32, 0, {0}, &n};
      char what[64];
      snprintf(what, sizeof what, "Size case %zu out_type %d", c, o);
      run_case(what, "Size", 1, &in, o ? 1 : 0, &ot, &w);
      clg_tensor_free(x);
    }
  clg_tensor *x = tensor(CLG_FLOAT32, 1, (int64_t[]){3}, NULL);
  clg_attr bad = clg_attr_dtype("out_type", CLG_FLOAT32);
  EXPECT_BUILD_ERROR("Size", 1, ((input[]){{x, false}}), 1, &bad,
                     "out_type must be int32 or int64, not float");
  clg_tensor_free(x);
}

/* Size imported from a tfjs model: folded to a Const of the bound shape's element count. */
static void test_size_import(void)
{
  static const char *model =
      "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": ["
      "{\"name\": \"x\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": \"DT_FLOAT\"}, "
      "\"shape\": {\"shape\": {\"dim\": [{\"size\": \"-1\"}, {\"size\": \"3\"}]}}}},"
      "{\"name\": \"n\", \"op\": \"Size\", \"input\": [\"x\"], \"attr\": {\"T\": {\"type\": "
      "\"DT_FLOAT\"}, \"out_type\": {\"type\": \"DT_INT32\"}}},"
      "{\"name\": \"n64\", \"op\": \"Size\", \"input\": [\"x\"], \"attr\": {\"T\": {\"type\": "
      "\"DT_FLOAT\"}, \"out_type\": {\"type\": \"DT_INT64\"}}},"
      "{\"name\": \"m\", \"op\": \"Mul\", \"input\": [\"n\", \"n\"], \"attr\": {\"T\": {\"type\": "
      "\"DT_INT32\"}}}"
      "]}, \"weightsManifest\": []}";
  clg_graph *g = clg_graph_new();
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_shape sh = {"x", 2, {5, 3}};
  o.input_shapes = &sh;
  o.num_input_shapes = 1;
  clg_import_result *r = NULL;
  clg_code code = clg_graph_import_memory(g, CLG_IMPORT_TFJS, model, strlen(model), &o, &r);
  CHECK_MSG(code == CLG_OK, "Size import: %s", clg_graph_error(g));
  if (code == CLG_OK) {
    const char *names[3] = {"n", "n64", "m"};
    const clg_dtype dts[3] = {CLG_INT32, CLG_INT64, CLG_INT32};
    const double vals[3] = {15, 15, 225};
    for (int i = 0; i < 3; i++) {
      clg_output v;
      CHECK_OK(clg_import_find(r, names[i], &v));
      /* Folded: a Const (Size's and the Mul of two of them), as Shape. */
      CHECK_MSG(v.node && strcmp(clg_node_op(v.node), "Const") == 0, "%s imports as %s", names[i],
                v.node ? clg_node_op(v.node) : "nothing");
      clg_session *s = NULL;
      clg_tensor *t = NULL;
      if (v.node && clg_session_new(g, &session_opt, &s) == CLG_OK)
        CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 1, &v, &t, 0, NULL));
      want w = {dts[i], 0, {0}, &vals[i]};
      check_out(t, &w, names[i], "import");
      clg_tensor_free(t);
      clg_session_free(s);
    }
  }
  clg_import_result_free(r);
  clg_graph_free(g);
}

/* --- SparseToDense ----------------------------------------------------------------------- */

/* The reference: default everywhere, then values[j] (or the scalar) at index j, in order. */
static void sparse_ref(int ix_rank, int64_t num_elems, int num_dims, const int64_t *ix, int rank,
                       const int64_t *shape, bool scalar, const double *values, double def,
                       double *out)
{
  size_t count = clg_test_count(rank, shape);
  for (size_t i = 0; i < count; i++)
    out[i] = def;
  (void)ix_rank;
  for (int64_t j = 0; j < num_elems; j++) {
    size_t off = 0;
    for (int d = 0; d < num_dims; d++)
      off = off * (size_t)shape[d] + (size_t)ix[j * num_dims + d];
    out[off] = scalar ? values[0] : values[j];
  }
}

typedef struct sparse_case {
  const char *what;
  int ix_rank;
  int64_t ix_dims[2];
  int64_t ix[12];
  int rank;
  int64_t shape[4];
  bool scalar;
  double values[6];
  double def;
  bool validate;
} sparse_case;

static void test_sparse_to_dense(void)
{
  const sparse_case cases[] = {
      {"2-D indices", 2, {3, 2}, {0, 1, 1, 0, 1, 2}, 2, {2, 3}, false, {5, 6, 7}, -1, true},
      {"1-D indices, scalar value", 1, {2}, {0, 3}, 1, {5}, true, {7}, 0.5, true},
      {"0-D index", 0, {0}, {2}, 1, {4}, true, {9}, 1, true},
      {"0-D index, 1 value", 0, {0}, {1}, 1, {3}, false, {4}, 2, true},
      {"no indices", 2, {0, 2}, {0}, 2, {2, 2}, false, {0}, 3, true},
      {"no indices, nanodet's [0,1] into [1]", 2, {0, 1}, {0}, 1, {1}, false, {0}, 0, true},
      {"rank 3", 2, {2, 3}, {0, 1, 2, 1, 0, 1}, 3, {2, 2, 3}, false, {-2, 8}, 0, true},
      {"repeated, validate_indices false: the last",
       2,
       {3, 1},
       {1, 1, 3},
       1,
       {4},
       false,
       {3, 4, 5},
       0,
       false},
      {"out of order, validate_indices false",
       1,
       {3},
       {3, 0, 2},
       1,
       {4},
       false,
       {1, 2, 3},
       -5,
       false},
      {"index tuples of none: a scalar", 2, {1, 0}, {0}, 0, {0}, false, {6}, 1, true},
  };
  static const clg_dtype vdts[4] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int it = 0; it < 2; it++)
      for (int vt = 0; vt < 4; vt++)
        for (int cst = 0; cst < 2; cst++) { /* indices fed, or a Const (checked at build) */
          const sparse_case *k = &cases[c];
          clg_dtype idt = it ? CLG_INT64 : CLG_INT32, vdt = vdts[vt];
          int64_t num_elems = k->ix_rank > 0 ? k->ix_dims[0] : 1;
          int num_dims = k->ix_rank > 1 ? (int)k->ix_dims[1] : 1;
          double ixd[12], out[64];
          for (int i = 0; i < 12; i++)
            ixd[i] = (double)k->ix[i];
          sparse_ref(k->ix_rank, num_elems, num_dims, k->ix, k->rank, k->shape, k->scalar,
                     k->values, k->def, out);
          input in[4] = {{tensor(idt, k->ix_rank, k->ix_dims, ixd), cst},
                         {ints(idt, k->rank, k->shape), true},
                         {tensor(vdt, k->scalar ? 0 : 1, (int64_t[]){num_elems}, k->values), false},
                         {tensor(vdt, 0, NULL, &k->def), false}};
          if (k->rank == 0) { /* a shape of no values */
            clg_tensor_free(in[1].t);
            in[1].t = clg_tensor_new(idt, 1, (int64_t[]){0}, NULL);
          }
          want w = {vdt, k->rank, {0}, out};
          memcpy(w.dims, k->shape, sizeof(int64_t) * (size_t)k->rank);
          clg_attr va = clg_attr_bool("validate_indices", k->validate);
          /* Integer values of the float cases: 0.5 becomes 0. */
          if (vdt == CLG_INT32 || vdt == CLG_INT64) {
            size_t n = clg_test_count(k->rank, k->shape);
            for (size_t i = 0; i < n; i++)
              out[i] = trunc(out[i]);
          }
          char what[128];
          snprintf(what, sizeof what, "SparseToDense %s (%s indices%s, %s values)", k->what,
                   clg_dtype_name(idt), cst ? " Const" : "", clg_dtype_name(vdt));
          /* On a GPU too with Const indices; fed ones have no OpenCL kernel (below). */
          run_case_soft(what, "SparseToDense", 4, in, 1, &va, &w, cst, false);
          for (int i = 0; i < 4; i++)
            clg_tensor_free(in[i].t);
        }
  /* bool values: true at the indices of a false default. */
  {
    double ones[2] = {1, 1}, out[6] = {0, 1, 0, 0, 0, 1}, f = 0;
    input in[4] = {{ints(CLG_INT32, 2, (int64_t[]){1, 5}), false},
                   {ints(CLG_INT32, 1, (int64_t[]){6}), true},
                   {tensor(CLG_BOOL, 1, (int64_t[]){2}, ones), false},
                   {tensor(CLG_BOOL, 0, NULL, &f), false}};
    want w = {CLG_BOOL, 1, {6}, out};
    run_case_soft("SparseToDense bool", "SparseToDense", 4, in, 0, NULL, &w, false, false);
    /* On a GPU with fed indices: no OpenCL kernel, so without soft placement it is refused at
     * placement ... */
    clg_graph *g = clg_graph_new();
    clg_output ins[4];
    for (int i = 0; i < 4; i++)
      ins[i] = make_input(g, &(input){in[i].t, i > 0});
    clg_graph_push_device(g, "/device:GPU:0");
    clg_node *n = clg_op(g, "SparseToDense", "on_gpu", 4, ins, 0, NULL);
    clg_graph_pop_device(g);
    clg_session *s = NULL;
    clg_code code = clg_session_new(g, &session_opt, &s);
    if (code == CLG_OK) { /* placement may come at the first run */
      clg_output f0 = clg_out(n, 0);
      clg_tensor *o = NULL;
      code = clg_session_run_outputs(s, 1, &ins[0], &in[0].t, 1, &f0, &o, 0, NULL);
      clg_tensor_free(o);
    }
    const char *e = clg_last_error();
    CHECK_MSG(code == CLG_INVALID_ARGUMENT && e &&
                  strstr(e, "no supported kernel for GPU devices is available (op SparseToDense"),
              "SparseToDense on GPU:0 without soft placement: %s (%s)", clg_code_name(code), e);
    clg_session_free(s);
    clg_graph_free(g);
    /* ... and with it runs on CPU:0. */
    run_case_soft("SparseToDense bool soft-placed from a GPU", "SparseToDense", 4, in, 0, NULL, &w,
                  true, true);
    /* Const indices: the GPU's own kernel, no soft placement. */
    in[0].is_const = true;
    run_case_soft("SparseToDense bool on a GPU", "SparseToDense", 4, in, 0, NULL, &w, true, false);
    for (int i = 0; i < 4; i++)
      clg_tensor_free(in[i].t);
  }
  /* Bad indices: TensorFlow's errors, at run time for fed indices, at build for Const ones. */
  struct {
    int64_t ix[4];
    bool validate;
    const char *text;
  } bad[] = {
      {{0, 1, 2, 0}, true, "indices[1] = [2,0] is out of bounds: need 0 <= index < [2,3]"},
      {{0, -1, 1, 0}, true, "indices[0] = [0,-1] is out of bounds: need 0 <= index < [2,3]"},
      {{1, 0, 0, 2}, true, "indices[1] = [0,2] is out of order. Many sparse ops require sorted"},
      {{1, 2, 1, 2}, true, "indices[1] = [1,2] is repeated"},
      {{0, 1, 0, 3}, false, "Indices are not valid (out of bounds).  Shape: [2,3]"},
  };
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    double ixd[4], vals[2] = {1, 2}, def = 0;
    for (int i = 0; i < 4; i++)
      ixd[i] = (double)bad[b].ix[i];
    input in[4] = {{tensor(CLG_INT64, 2, (int64_t[]){2, 2}, ixd), false},
                   {ints(CLG_INT64, 2, (int64_t[]){2, 3}), true},
                   {tensor(CLG_FLOAT32, 1, (int64_t[]){2}, vals), false},
                   {tensor(CLG_FLOAT32, 0, NULL, &def), false}};
    clg_attr va = clg_attr_bool("validate_indices", bad[b].validate);
    EXPECT_RUN_ERROR("SparseToDense", 4, in, 1, &va, bad[b].text);
    in[0].is_const = true;
    EXPECT_BUILD_ERROR("SparseToDense", 4, in, 1, &va, bad[b].text);
    for (int i = 0; i < 4; i++)
      clg_tensor_free(in[i].t);
  }
  /* Bad shapes. */
  {
    clg_tensor *ix2 = ints(CLG_INT32, 2, (int64_t[]){0, 1});
    clg_tensor *ix3 = tensor(CLG_INT32, 3, (int64_t[]){1, 1, 1}, NULL);
    clg_tensor *ixf = tensor(CLG_FLOAT32, 1, (int64_t[]){2}, NULL);
    clg_tensor *sh1 = ints(CLG_INT32, 1, (int64_t[]){4}),
               *sh2 = ints(CLG_INT32, 2, (int64_t[]){2, 2});
    clg_tensor *shn = ints(CLG_INT32, 1, (int64_t[]){-1}),
               *sh64 = ints(CLG_INT64, 1, (int64_t[]){4});
    clg_tensor *sh0 = tensor(CLG_INT32, 0, NULL, (const double[]){4});
    clg_tensor *v2 = tensor(CLG_FLOAT32, 1, (int64_t[]){2}, NULL);
    clg_tensor *v3 = tensor(CLG_FLOAT32, 1, (int64_t[]){3}, NULL);
    clg_tensor *d0 = tensor(CLG_FLOAT32, 0, NULL, (const double[]){0});
    clg_tensor *d1 = tensor(CLG_FLOAT32, 1, (int64_t[]){1}, NULL);
    clg_tensor *di = tensor(CLG_INT32, 0, NULL, (const double[]){0});
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix3, false}, {sh1, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "sparse_indices should be a scalar, vector, or matrix, got shape [1,1,1]");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ixf, false}, {sh1, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "sparse_indices must be int32 or int64, not float");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh2, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "output_shape has incorrect number of elements: 2 should be: 1");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh0, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "output_shape should be a vector, got shape []");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh64, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "output_shape is int64 but sparse_indices is int32");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh1, false}, {v2, false}, {d0, false}}), 0, NULL,
                       "output_shape (input 1) must be a constant");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {shn, true}, {v2, false}, {d0, false}}), 0, NULL,
                       "output_shape[0] = -1 must be >= 0");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh1, true}, {v3, false}, {d0, false}}), 0, NULL,
                       "sparse_values has incorrect shape [3], should be [] or [2]");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh1, true}, {v2, false}, {d1, false}}), 0, NULL,
                       "default_value should be a scalar.");
    EXPECT_BUILD_ERROR("SparseToDense", 4,
                       ((input[]){{ix2, false}, {sh1, true}, {v2, false}, {di, false}}), 0, NULL,
                       "default_value is int32 but sparse_values is float");
    clg_tensor *all[] = {ix2, ix3, ixf, sh1, sh2, shn, sh64, sh0, v2, v3, d0, d1, di};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      clg_tensor_free(all[i]);
  }
}

/* --- MatMul on int32 and int64 ----------------------------------------------------------- */

static void test_matmul_int(void)
{
  struct {
    int64_t m, n, k;
  } sizes[] = {{3, 5, 4}, {1, 1, 1}, {4, 3, 0}, {17, 9, 33}};
  for (int t = 0; t < 2; t++)
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
      for (int tr = 0; tr < 4; tr++) {
        clg_dtype dt = t ? CLG_INT64 : CLG_INT32;
        bool ta = tr & 1, tb = tr & 2;
        int64_t m = sizes[c].m, n = sizes[c].n, k = sizes[c].k;
        int64_t da[2] = {ta ? k : m, ta ? m : k}, db[2] = {tb ? n : k, tb ? k : n};
        double *av = random_values(dt, (size_t)(m * k)), *bv = random_values(dt, (size_t)(k * n));
        double *ref = malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double s = 0; /* |s| < 33 * 1000^2: exact in double, no wrap */
            for (int64_t q = 0; q < k; q++)
              s += av[ta ? q * m + i : i * k + q] * bv[tb ? j * k + q : q * n + j];
            ref[i * n + j] = s;
          }
        input in[2] = {{tensor(dt, 2, da, av), false}, {tensor(dt, 2, db, bv), false}};
        clg_attr at[2] = {clg_attr_bool("transpose_a", ta), clg_attr_bool("transpose_b", tb)};
        want w = {dt, 2, {m, n}, ref};
        char what[96];
        snprintf(what, sizeof what, "MatMul %s %lldx%lldx%lld ta %d tb %d", clg_dtype_name(dt),
                 (long long)m, (long long)k, (long long)n, ta, tb);
        run_case(what, "MatMul", 2, in, 2, at, &w);
        clg_tensor_free(in[0].t);
        clg_tensor_free(in[1].t);
        free(av);
        free(bv);
        free(ref);
      }
  /* Wrapping: 65536 * 65536 is 0 in int32; 2^31 - 1 + 1 wraps to INT32_MIN. */
  {
    const double a[2] = {65536, INT32_MAX}, b[2] = {65536, 0}, b2[2] = {1, 1};
    input in[2] = {{tensor(CLG_INT32, 2, (int64_t[]){1, 2}, a), false},
                   {tensor(CLG_INT32, 2, (int64_t[]){2, 1}, b), false}};
    want w = {CLG_INT32, 2, {1, 1}, (const double[]){0}};
    run_case("MatMul int32 wrapping product", "MatMul", 2, in, 0, NULL, &w);
    clg_tensor_free(in[1].t);
    in[1].t = tensor(CLG_INT32, 2, (int64_t[]){2, 1}, b2);
    in[0].t = (clg_tensor_free(in[0].t),
               tensor(CLG_INT32, 2, (int64_t[]){1, 2}, (const double[]){INT32_MAX, 1}));
    want w2 = {CLG_INT32, 2, {1, 1}, (const double[]){INT32_MIN}};
    run_case("MatMul int32 wrapping sum", "MatMul", 2, in, 0, NULL, &w2);
    clg_tensor_free(in[0].t);
    clg_tensor_free(in[1].t);
  }
}

int main(void)
{
  clg_test_seed(25);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_tf_ops5");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  session_opt.allow_soft_placement = 0; /* a GPU node without an OpenCL kernel fails */
  test_squared_difference();
  test_squared_difference_grad();
  test_size();
  test_size_import();
  test_sparse_to_dense();
  test_matmul_int();
  return clg_test_summary("test_tf_ops5");
}
