/* The ops of ONNX import and the tfjs graphs that did not run (issues 23, 24): Min, Prod,
 * ArgMin, BatchMatMulV2, ResizeNearestNeighbor, GatherNd, ScatterNd, OneHot, ReverseV2,
 * Cumsum, TopKV2 and Einsum on CPU:0 and on the PoCL stand-in GPUs (without soft placement,
 * so each GPU node ran its OpenCL kernel), each against a naive double-precision reference written
 * here from TensorFlow's documented semantics and the examples of its documentation (dtype, shape
 * and every value), edge cases (ties, k = 0 and k = n, partial index depth, negative axes, empty
 * reductions, duplicate scatter indices), BatchMatMulV2's gradients against their definition,
 * and bad input refused with errors naming the node. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
// ctest: clblast_off CLGRAPH_LOG_LEVEL=error CLGRAPH_CLBLAST_DISABLE=single,double
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static clg_session_options session_opt;
static int gpu_turn;

/* A host tensor of dtype from double values (NULL: 0, 1, 2, ...; RANDOM: uniform in [-2, 2)
 * rounded to 1/8 so that sums and products are exact in float). */
static const double RANDOM[1];

static clg_tensor *tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    clg_test_set_elem(t, i,
                      v == RANDOM ? floor(clg_test_uniform(-2, 2) * 8) / 8
                      : v         ? v[i]
                                  : (double)i);
  return t;
}

/* One input of a case: fed through a placeholder, or a Const. */
typedef struct input {
  clg_tensor *t;
  bool is_const;
} input;

/* The expected output: dtype, shape and values. */
typedef struct want {
  clg_dtype dtype;
  int rank;
  int64_t dims[8];
  const double *v;
  double tol;
} want;

/* Within tol of the value relative to 1 + |want|. */
static void check_out(const clg_tensor *t, const want *w, const char *what, const char *dev)
{
  clg_test_check_values(t, w->dtype, w->rank, w->dims, w->v, w->tol, w->tol, false, what, dev);
}

enum { ON_GPU = 1, CPU_ONLY = 0 };

/* Builds op on the inputs with attrs on CPU:0 and (gpu) on a stand-in GPU, runs them in one
 * session and checks outputs 0..nout-1 of both against w[]. */
static void run_case(const char *what, const char *op, int nin, const input *in, int nattrs,
                     const clg_attr *attrs, int nout, const want *w, int gpu)
{
  static const char *const gpus[4] = {"/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                      "/device:GPU:3"};
  clg_graph *g = clg_graph_new();
  clg_output ins[8];
  clg_output feeds[8];
  clg_tensor *feed_t[8];
  int nfeeds = 0;
  for (int i = 0; i < nin; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(in[i].t); k++)
      dims[k] = clg_tensor_dim(in[i].t, k);
    clg_node *p = in[i].is_const ? clg_const(g, NULL, in[i].t)
                                 : clg_placeholder(g, NULL, clg_tensor_dtype(in[i].t),
                                                   clg_tensor_rank(in[i].t), dims);
    ins[i] = clg_out(p, 0);
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
  if (code == CLG_OK)
    CHECK_OK(code = clg_session_new(g, &session_opt, &s));
  if (code == CLG_OK) {
    clg_output fetch[8];
    clg_tensor *out[8] = {NULL};
    for (int d = 0; d < ndev; d++)
      for (int o = 0; o < nout; o++)
        fetch[d * nout + o] = clg_out(node[d], o);
    code = clg_session_run_outputs(s, nfeeds, feeds, feed_t, ndev * nout, fetch, out, 0, NULL);
    CHECK_MSG(code == CLG_OK, "%s: run: %s", what, clg_last_error());
    for (int d = 0; d < ndev; d++)
      for (int o = 0; o < nout; o++) {
        if (code == CLG_OK)
          check_out(out[d * nout + o], &w[o], what, d ? "GPU" : "CPU:0");
        clg_tensor_free(out[d * nout + o]);
      }
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* A build of op that fails with INVALID_ARGUMENT naming the node and saying text. */
static void expect_build_error(const char *op, int nin, const input *in, int nattrs,
                               const clg_attr *attrs, const char *text, int line)
{
  clg_graph *g = clg_graph_new();
  clg_output ins[8];
  for (int i = 0; i < nin; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(in[i].t); k++)
      dims[k] = clg_tensor_dim(in[i].t, k);
    clg_node *p = in[i].is_const ? clg_const(g, NULL, in[i].t)
                                 : clg_placeholder(g, NULL, clg_tensor_dtype(in[i].t),
                                                   clg_tensor_rank(in[i].t), dims);
    ins[i] = clg_out(p, 0);
  }
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

static clg_tensor *ints(int n, const int64_t *v)
{
  double d[16];
  for (int i = 0; i < n; i++)
    d[i] = (double)v[i];
  return tensor(CLG_INT32, 1, (int64_t[]){n}, d);
}

static clg_tensor *scalar_int(int64_t v)
{
  return tensor(CLG_INT32, 0, NULL, (const double[]){(double)v});
}

/* Row-major strides of dims. */
static void strides(int rank, const int64_t *dims, size_t *s)
{
  size_t m = 1;
  for (int k = rank - 1; k >= 0; k--) {
    s[k] = m;
    m *= (size_t)dims[k];
  }
}

/* --- Min, Prod, ArgMin ------------------------------------------------------------------- */

/* The reference reduction of x (rank dims) over axes: 0 min, 1 prod. */
static void reduce_ref(int op, const double *x, int rank, const int64_t *dims, const bool *red,
                       double *y)
{
  size_t st[8], total = 1, nout = 1;
  strides(rank, dims, st);
  for (int k = 0; k < rank; k++) {
    total *= (size_t)dims[k];
    if (!red[k])
      nout *= (size_t)dims[k];
  }
  for (size_t o = 0; o < nout; o++)
    y[o] = op == 0 ? INFINITY : 1;
  for (size_t i = 0; i < total; i++) {
    size_t o = 0;
    for (int k = 0; k < rank; k++)
      if (!red[k])
        o = o * (size_t)dims[k] + (i / st[k]) % (size_t)dims[k];
    y[o] = op == 0 ? fmin(y[o], x[i]) : y[o] * x[i];
  }
}

static void test_reductions(void)
{
  static const char *const ops[2] = {"Min", "Prod"};
  int64_t dims[3] = {3, 4, 5};
  struct {
    int n;
    int64_t axes[3];
  } cases[] = {{1, {1}}, {2, {0, -1}}, {1, {-3}}, {3, {0, 1, 2}}, {0, {0}}};
  for (int op = 0; op < 2; op++)
    for (int dt = 0; dt < 2; dt++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int keep = 0; keep < 2; keep++) {
          clg_dtype t = dt ? CLG_FLOAT64 : CLG_FLOAT32;
          clg_tensor *x = tensor(t, 3, dims, RANDOM);
          double *xv = clg_test_values(x), y[60];
          bool red[3] = {false, false, false};
          for (int i = 0; i < cases[c].n; i++)
            red[(cases[c].axes[i] + 3) % 3] = true;
          reduce_ref(op, xv, 3, dims, red, y);
          want w = {t, 0, {0}, y, dt ? 1e-12 : 1e-6};
          for (int k = 0; k < 3; k++)
            if (!red[k] || keep)
              w.dims[w.rank++] = red[k] ? 1 : dims[k];
          input in[2] = {{x, false}, {ints(cases[c].n, cases[c].axes), true}};
          clg_attr kd = clg_attr_bool("keep_dims", keep);
          char what[64];
          snprintf(what, sizeof what, "%s %s case %zu keep_dims %d", ops[op], clg_dtype_name(t), c,
                   keep);
          run_case(what, ops[op], 2, in, 1, &kd, 1, &w, ON_GPU);
          clg_tensor_free(in[1].t);
          clg_tensor_free(x);
          free(xv);
        }
  /* Empty reductions give the identities: Min +inf, Prod 1. */
  for (int op = 0; op < 2; op++) {
    clg_tensor *x = tensor(CLG_FLOAT32, 2, (int64_t[]){3, 0}, NULL);
    input in[2] = {{x, false}, {ints(1, (int64_t[]){1}), true}};
    double id[3] = {op ? 1 : INFINITY, op ? 1 : INFINITY, op ? 1 : INFINITY};
    want w = {CLG_FLOAT32, 1, {3}, id, 0};
    run_case(op ? "Prod over an empty axis" : "Min over an empty axis", ops[op], 2, in, 0, NULL, 1,
             &w, ON_GPU);
    clg_tensor_free(in[1].t);
    clg_tensor_free(x);
  }
  /* ArgMin: the first index of the smallest, ties included; negative dimension. */
  {
    const double xv[12] = {3, 1, 1, 2, /**/ 0, 0, 5, 0, /**/ 7, 6, 6, 6};
    clg_tensor *x = tensor(CLG_FLOAT32, 2, (int64_t[]){3, 4}, xv);
    input in[2] = {{x, false}, {scalar_int(-1), true}};
    want w = {CLG_INT64, 1, {3}, (const double[]){1, 0, 1}, 0};
    run_case("ArgMin axis -1 with ties", "ArgMin", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(in[1].t);
    in[1].t = scalar_int(0);
    clg_attr ot = clg_attr_dtype("output_type", CLG_INT32);
    want w0 = {CLG_INT32, 1, {4}, (const double[]){1, 1, 0, 1}, 0};
    run_case("ArgMin axis 0 int32", "ArgMin", 2, in, 1, &ot, 1, &w0, ON_GPU);
    clg_tensor_free(in[1].t);
    in[1].t = scalar_int(2);
    EXPECT_BUILD_ERROR("ArgMin", 2, in, 0, NULL, "Expected dimension in the range [-2, 2)");
    clg_tensor_free(in[1].t);
    clg_tensor_free(x);
  }
  /* A long row: the OpenCL tree's partial results and ties across work-items. */
  {
    enum { N = 3000 };
    double *xv = malloc(sizeof(double) * N);
    for (int i = 0; i < N; i++)
      xv[i] = (double)((i * 37) % 101);
    clg_tensor *x = tensor(CLG_FLOAT32, 1, (int64_t[]){N}, xv);
    input in[2] = {{x, false}, {scalar_int(0), true}};
    int first = 0;
    for (int i = 0; i < N; i++)
      if (xv[i] < xv[first])
        first = i;
    want w = {CLG_INT64, 0, {0}, (const double[]){first}, 0};
    run_case("ArgMin of 3000 with repeated minima", "ArgMin", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(in[1].t);
    clg_tensor_free(x);
    free(xv);
  }
}

/* --- BatchMatMulV2 ----------------------------------------------------------------------- */

typedef struct bmm_case {
  int rx, ry;
  int64_t dx[5], dy[5];
  bool ax, ay;
} bmm_case;

static void test_batch_matmul(void)
{
  bmm_case cases[] = {
      {3, 3, {2, 3, 4}, {2, 4, 5}, false, false},
      {4, 3, {2, 1, 3, 4}, {5, 4, 2}, false, false}, /* batch [2,1] with [5]: [2,5] */
      {3, 2, {3, 4, 3}, {2, 4}, true, true},         /* y broadcast over x's batch */
      {2, 4, {3, 4}, {2, 2, 5, 4}, false, true},
      {3, 3, {1, 2, 0}, {4, 0, 3}, false, false}, /* k = 0: zeros */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int dt = 0; dt < 2; dt++) {
      const bmm_case *b = &cases[c];
      clg_dtype t = dt ? CLG_FLOAT64 : CLG_FLOAT32;
      clg_tensor *x = tensor(t, b->rx, b->dx, RANDOM), *y = tensor(t, b->ry, b->dy, RANDOM);
      double *xv = clg_test_values(x), *yv = clg_test_values(y);
      int64_t m = b->dx[b->rx - (b->ax ? 1 : 2)], k = b->dx[b->rx - (b->ax ? 2 : 1)];
      int64_t n = b->dy[b->ry - (b->ay ? 2 : 1)];
      int r = (b->rx > b->ry ? b->rx : b->ry) - 2;
      int64_t bx[5], by[5], bo[5];
      for (int d = 0; d < r; d++) {
        bx[d] = d < r - (b->rx - 2) ? 1 : b->dx[d - (r - (b->rx - 2))];
        by[d] = d < r - (b->ry - 2) ? 1 : b->dy[d - (r - (b->ry - 2))];
        bo[d] = bx[d] > by[d] ? bx[d] : by[d];
      }
      want w = {t, r + 2, {0}, NULL, dt ? 1e-12 : 1e-6};
      size_t batches = 1;
      for (int d = 0; d < r; d++) {
        w.dims[d] = bo[d];
        batches *= (size_t)bo[d];
      }
      w.dims[r] = m;
      w.dims[r + 1] = n;
      double *ref = malloc(sizeof(double) * (batches * (size_t)(m * n) + 1));
      for (size_t bi = 0; bi < batches; bi++) {
        /* x's and y's batch: the output's coordinates, 0 where broadcast. */
        size_t rest = bi, xb = 0, yb = 0, xs = 1, ys = 1;
        for (int d = r - 1; d >= 0; d--) {
          size_t at = rest % (size_t)bo[d];
          rest /= (size_t)bo[d];
          xb += (bx[d] == 1 ? 0 : at) * xs;
          yb += (by[d] == 1 ? 0 : at) * ys;
          xs *= (size_t)bx[d];
          ys *= (size_t)by[d];
        }
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t q = 0; q < k; q++) {
              double a = xv[xb * (size_t)(m * k) + (size_t)(b->ax ? q * m + i : i * k + q)];
              double e = yv[yb * (size_t)(k * n) + (size_t)(b->ay ? j * k + q : q * n + j)];
              s += a * e;
            }
            ref[bi * (size_t)(m * n) + (size_t)(i * n + j)] = s;
          }
      }
      w.v = ref;
      input in[2] = {{x, false}, {y, false}};
      clg_attr at[2] = {clg_attr_bool("adj_x", b->ax), clg_attr_bool("adj_y", b->ay)};
      char what[64];
      snprintf(what, sizeof what, "BatchMatMulV2 case %zu %s", c, clg_dtype_name(t));
      run_case(what, "BatchMatMulV2", 2, in, 2, at, 1, &w, ON_GPU);
      free(ref);
      free(xv);
      free(yv);
      clg_tensor_free(x);
      clg_tensor_free(y);
    }
  clg_tensor *x = tensor(CLG_FLOAT32, 3, (int64_t[]){2, 3, 4}, NULL);
  clg_tensor *y = tensor(CLG_FLOAT32, 3, (int64_t[]){3, 4, 5}, NULL);
  clg_tensor *z = tensor(CLG_FLOAT32, 3, (int64_t[]){2, 5, 4}, NULL);
  clg_tensor *v = tensor(CLG_FLOAT32, 1, (int64_t[]){4}, NULL);
  EXPECT_BUILD_ERROR("BatchMatMulV2", 2, ((input[]){{x, false}, {y, false}}), 0, NULL,
                     "must have compatible batch dimensions: [2,3,4] vs. [3,4,5]");
  EXPECT_BUILD_ERROR("BatchMatMulV2", 2, ((input[]){{x, false}, {z, false}}), 0, NULL,
                     "Matrix size-incompatible: In[0]: [2,3,4], In[1]: [2,5,4]");
  EXPECT_BUILD_ERROR("BatchMatMulV2", 2, ((input[]){{v, false}, {z, false}}), 0, NULL,
                     "In[0] ndims must be >= 2: 1");
  clg_tensor_free(x);
  clg_tensor_free(y);
  clg_tensor_free(z);
  clg_tensor_free(v);
}

/* The gradients of BatchMatMulV2 through clg_gradients against their definition: for
 * z = x @ y (batch-broadcast) and an incoming dz, dx[bx(o), i, q] += dz[o, i, j] y[by(o), q, j]
 * and dy[by(o), q, j] += x[bx(o), i, q] dz[o, i, j] over every output batch o (indices as the
 * matrices are stored, with the adjoint flags). */
static void test_batch_matmul_grad(void)
{
  bmm_case cases[] = {{4, 3, {2, 1, 3, 4}, {5, 4, 2}, false, false},
                      {3, 2, {3, 4, 3}, {2, 4}, true, true},
                      {2, 3, {3, 4}, {2, 2, 4}, false, true}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int dev = 0; dev < 2; dev++) {
      const bmm_case *b = &cases[c];
      clg_tensor *x = tensor(CLG_FLOAT64, b->rx, b->dx, RANDOM);
      clg_tensor *y = tensor(CLG_FLOAT64, b->ry, b->dy, RANDOM);
      int64_t m = b->dx[b->rx - (b->ax ? 1 : 2)], k = b->dx[b->rx - (b->ax ? 2 : 1)];
      int64_t n = b->dy[b->ry - (b->ay ? 2 : 1)];
      int r = (b->rx > b->ry ? b->rx : b->ry) - 2;
      int64_t bx[5], by[5], od[6];
      size_t batches = 1, nx = clg_tensor_count(x), ny = clg_tensor_count(y);
      for (int d = 0; d < r; d++) {
        bx[d] = d < r - (b->rx - 2) ? 1 : b->dx[d - (r - (b->rx - 2))];
        by[d] = d < r - (b->ry - 2) ? 1 : b->dy[d - (r - (b->ry - 2))];
        od[d] = bx[d] > by[d] ? bx[d] : by[d];
        batches *= (size_t)od[d];
      }
      od[r] = m;
      od[r + 1] = n;
      clg_tensor *dz = tensor(CLG_FLOAT64, r + 2, od, RANDOM);
      double *xv = clg_test_values(x), *yv = clg_test_values(y), *dzv = clg_test_values(dz);
      double *gx = calloc(nx, sizeof(double)), *gy = calloc(ny, sizeof(double));
      for (size_t o = 0; o < batches; o++) {
        size_t rest = o, xb = 0, yb = 0, xs = 1, ys = 1;
        for (int d = r - 1; d >= 0; d--) {
          size_t at = rest % (size_t)od[d];
          rest /= (size_t)od[d];
          xb += (bx[d] == 1 ? 0 : at) * xs;
          yb += (by[d] == 1 ? 0 : at) * ys;
          xs *= (size_t)bx[d];
          ys *= (size_t)by[d];
        }
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++)
            for (int64_t q = 0; q < k; q++) {
              size_t xi = xb * (size_t)(m * k) + (size_t)(b->ax ? q * m + i : i * k + q);
              size_t yi = yb * (size_t)(k * n) + (size_t)(b->ay ? j * k + q : q * n + j);
              double g = dzv[o * (size_t)(m * n) + (size_t)(i * n + j)];
              gx[xi] += g * yv[yi];
              gy[yi] += xv[xi] * g;
            }
      }
      clg_graph *g = clg_graph_new();
      clg_node *xp = clg_placeholder(g, "x", CLG_FLOAT64, b->rx, b->dx);
      clg_node *yp = clg_placeholder(g, "y", CLG_FLOAT64, b->ry, b->dy);
      clg_node *dp = clg_placeholder(g, "dz", CLG_FLOAT64, r + 2, od);
      clg_graph_push_device(g, dev ? "/device:GPU:2" : "/cpu:0");
      clg_attr at[2] = {clg_attr_bool("adj_x", b->ax), clg_attr_bool("adj_y", b->ay)};
      clg_node *z =
          clg_op(g, "BatchMatMulV2", "z", 2, (clg_output[]){clg_out(xp, 0), clg_out(yp, 0)}, 2, at);
      clg_output zs = clg_out(z, 0), dzs = clg_out(dp, 0), grads[2] = {{NULL, 0}, {NULL, 0}};
      clg_output xs[2] = {clg_out(xp, 0), clg_out(yp, 0)};
      clg_code code = clg_gradients(g, 1, &zs, &dzs, 2, xs, NULL, grads);
      clg_graph_pop_device(g);
      CHECK_MSG(code == CLG_OK && grads[0].node && grads[1].node, "BatchMatMulV2 grad %zu: %s", c,
                clg_graph_error(g));
      clg_session *s = NULL;
      if (code == CLG_OK)
        CHECK_OK(code = clg_session_new(g, &session_opt, &s));
      clg_tensor *out[2] = {NULL, NULL};
      if (code == CLG_OK) {
        clg_output feeds[3] = {clg_out(xp, 0), clg_out(yp, 0), clg_out(dp, 0)};
        clg_tensor *ft[3] = {x, y, dz};
        CHECK_OK(code = clg_session_run_outputs(s, 3, feeds, ft, 2, grads, out, 0, NULL));
      }
      if (code == CLG_OK) {
        want wx = {CLG_FLOAT64, b->rx, {0}, gx, 1e-12}, wy = {CLG_FLOAT64, b->ry, {0}, gy, 1e-12};
        memcpy(wx.dims, b->dx, sizeof(int64_t) * (size_t)b->rx);
        memcpy(wy.dims, b->dy, sizeof(int64_t) * (size_t)b->ry);
        char what[64];
        snprintf(what, sizeof what, "BatchMatMulV2 case %zu dx", c);
        check_out(out[0], &wx, what, dev ? "GPU" : "CPU:0");
        snprintf(what, sizeof what, "BatchMatMulV2 case %zu dy", c);
        check_out(out[1], &wy, what, dev ? "GPU" : "CPU:0");
      }
      clg_tensor_free(out[0]);
      clg_tensor_free(out[1]);
      clg_session_free(s);
      clg_graph_free(g);
      clg_tensor_free(x);
      clg_tensor_free(y);
      clg_tensor_free(dz);
      free(xv);
      free(yv);
      free(dzv);
      free(gx);
      free(gy);
    }
}

/* --- ResizeNearestNeighbor --------------------------------------------------------------- */

/* TensorFlow's source index, written out again from resize_nearest_neighbor_op.cc. */
static int64_t nearest_ref(int64_t out_i, int64_t in, int64_t out, bool align, bool half)
{
  float scale = align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
  float s = half ? ((float)out_i + 0.5f) * scale : (float)out_i * scale;
  int64_t v = align ? (int64_t)roundf(s) : (int64_t)floorf(s);
  if (v > in - 1)
    v = in - 1;
  return half && v < 0 ? 0 : v;
}

static void test_resize_nearest(void)
{
  /* 2x2 to 4x4, legacy: every pixel twice each way (TensorFlow's documented upsampling). */
  {
    clg_tensor *x = tensor(CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 1}, NULL);
    input in[2] = {{x, false}, {ints(2, (int64_t[]){4, 4}), true}};
    want w = {CLG_FLOAT32,
              4,
              {1, 4, 4, 1},
              (const double[]){0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3},
              0};
    run_case("ResizeNearestNeighbor 2x2 to 4x4", "ResizeNearestNeighbor", 2, in, 0, NULL, 1, &w,
             ON_GPU);
    clg_tensor_free(in[1].t);
    clg_tensor_free(x);
  }
  int64_t sizes[3][2] = {{7, 5}, {2, 3}, {1, 9}};
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT32, CLG_FLOAT64};
  for (int mode = 0; mode < 3; mode++)
    for (int sz = 0; sz < 3; sz++) {
      clg_dtype t = dts[sz];
      int64_t dims[4] = {2, 3, 4, 2}, oh = sizes[sz][0], ow = sizes[sz][1];
      bool align = mode == 1, half = mode == 2;
      clg_tensor *x = tensor(t, 4, dims, NULL);
      double *ref = malloc(sizeof(double) * (size_t)(2 * oh * ow * 2));
      for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < oh; i++)
          for (int64_t j = 0; j < ow; j++)
            for (int64_t c = 0; c < 2; c++)
              ref[((b * oh + i) * ow + j) * 2 + c] =
                  (double)(((b * 3 + nearest_ref(i, 3, oh, align, half)) * 4 +
                            nearest_ref(j, 4, ow, align, half)) *
                               2 +
                           c);
      input in[2] = {{x, false}, {ints(2, (int64_t[]){oh, ow}), true}};
      clg_attr at[2] = {clg_attr_bool("align_corners", align),
                        clg_attr_bool("half_pixel_centers", half)};
      want w = {t, 4, {2, oh, ow, 2}, ref, 0};
      char what[96];
      snprintf(what, sizeof what, "ResizeNearestNeighbor %s to %lldx%lld mode %d",
               clg_dtype_name(t), (long long)oh, (long long)ow, mode);
      run_case(what, "ResizeNearestNeighbor", 2, in, 2, at, 1, &w, ON_GPU);
      if (mode == 0 && sz == 0) {
        clg_attr both[2] = {clg_attr_bool("align_corners", 1),
                            clg_attr_bool("half_pixel_centers", 1)};
        EXPECT_BUILD_ERROR("ResizeNearestNeighbor", 2, in, 2, both,
                           "If half_pixel_centers is True, align_corners must be False.");
      }
      clg_tensor_free(in[1].t);
      clg_tensor_free(x);
      free(ref);
    }
}

/* --- GatherNd and ScatterNd --------------------------------------------------------------- */

/* The reference GatherNd: output[j, t] = params[tuple j, t]. */
static void gather_nd_ref(const double *p, int prank, const int64_t *pdims, const double *ix,
                          size_t count, int q, double *out)
{
  size_t st[8], slice = 1;
  strides(prank, pdims, st);
  for (int k = q; k < prank; k++)
    slice *= (size_t)pdims[k];
  for (size_t j = 0; j < count; j++) {
    size_t off = 0;
    for (int d = 0; d < q; d++)
      off += (size_t)ix[j * (size_t)q + (size_t)d] * st[d];
    for (size_t t = 0; t < slice; t++)
      out[j * slice + t] = p[off + t];
  }
}

static void test_gather_nd(void)
{
  /* TensorFlow's documented examples on params [[a, b], [c, d]] = [[0, 1], [2, 3]]. */
  clg_tensor *p = tensor(CLG_FLOAT32, 2, (int64_t[]){2, 2}, NULL);
  {
    clg_tensor *ix = tensor(CLG_INT32, 2, (int64_t[]){2, 2}, (const double[]){0, 0, 1, 1});
    input in[2] = {{p, false}, {ix, false}};
    want w = {CLG_FLOAT32, 1, {2}, (const double[]){0, 3}, 0};
    run_case("GatherNd [[0,0],[1,1]]", "GatherNd", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(ix);
  }
  {
    /* Partial depth: indices [[1], [0]] take rows. */
    clg_tensor *ix = tensor(CLG_INT64, 2, (int64_t[]){2, 1}, (const double[]){1, 0});
    input in[2] = {{p, false}, {ix, false}};
    want w = {CLG_FLOAT32, 2, {2, 2}, (const double[]){2, 3, 0, 1}, 0};
    run_case("GatherNd [[1],[0]]", "GatherNd", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(ix);
  }
  {
    /* Batched: [[[0, 1]], [[1, 0]]] gives [[b], [c]]. */
    clg_tensor *ix = tensor(CLG_INT32, 3, (int64_t[]){2, 1, 2}, (const double[]){0, 1, 1, 0});
    input in[2] = {{p, false}, {ix, true}};
    want w = {CLG_FLOAT32, 2, {2, 1}, (const double[]){1, 2}, 0};
    run_case("GatherNd batched", "GatherNd", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(ix);
  }
  {
    /* Depth 0: every tuple is the whole params. */
    clg_tensor *ix = tensor(CLG_INT32, 2, (int64_t[]){3, 0}, NULL);
    input in[2] = {{p, false}, {ix, false}};
    want w = {CLG_FLOAT32, 3, {3, 2, 2}, (const double[]){0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, 0};
    run_case("GatherNd depth 0", "GatherNd", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(ix);
  }
  /* Random tuples of every depth into [3,4,5] params, int32 and int64 elements. */
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT64, CLG_FLOAT64};
  for (int q = 1; q <= 3; q++) {
    int64_t pd[3] = {3, 4, 5};
    clg_tensor *pp = tensor(dts[q - 1], 3, pd, RANDOM);
    double *pv = clg_test_values(pp), ixv[4 * 2 * 3];
    for (int j = 0; j < 8; j++)
      for (int d = 0; d < q; d++)
        ixv[j * q + d] = (double)(clg_test_rand() % (unsigned long long)pd[d]);
    clg_tensor *ix = tensor(q == 2 ? CLG_INT64 : CLG_INT32, 3, (int64_t[]){4, 2, q}, ixv);
    size_t slice = 1;
    for (int k = q; k < 3; k++)
      slice *= (size_t)pd[k];
    double *ref = malloc(sizeof(double) * 8 * slice);
    gather_nd_ref(pv, 3, pd, ixv, 8, q, ref);
    want w = {dts[q - 1], 2 + 3 - q, {4, 2, 4, 5}, ref, 0};
    if (q == 1)
      w.dims[2] = 4, w.dims[3] = 5;
    else if (q == 2)
      w.dims[2] = 5;
    input in[2] = {{pp, false}, {ix, false}};
    char what[48];
    snprintf(what, sizeof what, "GatherNd random depth %d", q);
    run_case(what, "GatherNd", 2, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(ix);
    clg_tensor_free(pp);
    free(pv);
    free(ref);
  }
  /* A Const tuple out of range is refused at build; a fed one by the host kernel; the GPU
   * kernel gives zeros, as TensorFlow's GPU kernel. */
  {
    clg_tensor *ix = tensor(CLG_INT32, 2, (int64_t[]){2, 2}, (const double[]){0, 1, 2, 0});
    EXPECT_BUILD_ERROR("GatherNd", 2, ((input[]){{p, false}, {ix, true}}), 0, NULL,
                       "indices[1] = [2, 0] does not index into param shape [2,2]");
    clg_tensor *deep = tensor(CLG_INT32, 2, (int64_t[]){1, 3}, (const double[]){0, 0, 0});
    EXPECT_BUILD_ERROR("GatherNd", 2, ((input[]){{p, false}, {deep, true}}), 0, NULL,
                       "index innermost dimension length must be <= params rank; saw: 3 vs. 2");
    clg_tensor_free(deep);
    clg_graph *g = clg_graph_new();
    clg_node *pn = clg_placeholder(g, "p", CLG_FLOAT32, 2, (int64_t[]){2, 2});
    clg_node *in = clg_placeholder(g, "ix", CLG_INT32, 2, (int64_t[]){2, 2});
    clg_output ins[2] = {clg_out(pn, 0), clg_out(in, 0)};
    clg_graph_push_device(g, "/cpu:0");
    clg_node *cpu = clg_op(g, "GatherNd", "gnd_cpu", 2, ins, 0, NULL);
    clg_graph_pop_device(g);
    clg_graph_push_device(g, "/device:GPU:1");
    clg_node *gpu = clg_op(g, "GatherNd", "gnd_gpu", 2, ins, 0, NULL);
    clg_graph_pop_device(g);
    clg_session *s = NULL;
    CHECK_OK(clg_session_new(g, &session_opt, &s));
    clg_output feeds[2] = {clg_out(pn, 0), clg_out(in, 0)};
    clg_tensor *ft[2] = {p, ix}, *out = NULL;
    clg_output f1 = clg_out(cpu, 0), f2 = clg_out(gpu, 0);
    CHECK_CODE(clg_session_run_outputs(s, 2, feeds, ft, 1, &f1, &out, 0, NULL),
               CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "gnd_cpu");
    CHECK_CONTAINS(clg_last_error(), "indices[1] = [2, 0] does not index into param shape [2,2]");
    CHECK_OK(clg_session_run_outputs(s, 2, feeds, ft, 1, &f2, &out, 0, NULL));
    want w = {CLG_FLOAT32, 1, {2}, (const double[]){1, 0}, 0};
    check_out(out, &w, "GatherNd out of range", "GPU");
    clg_tensor_free(out);
    clg_session_free(s);
    clg_graph_free(g);
    clg_tensor_free(ix);
  }
  clg_tensor_free(p);
}

static void test_scatter_nd(void)
{
  /* TensorFlow's documented example: 4 scalars into a vector of 8. */
  {
    clg_tensor *ix = tensor(CLG_INT32, 2, (int64_t[]){4, 1}, (const double[]){4, 3, 1, 7});
    clg_tensor *u = tensor(CLG_FLOAT32, 1, (int64_t[]){4}, (const double[]){9, 10, 11, 12});
    input in[3] = {{ix, false}, {u, false}, {ints(1, (int64_t[]){8}), true}};
    want w = {CLG_FLOAT32, 1, {8}, (const double[]){0, 11, 0, 10, 9, 0, 0, 12}, 0};
    run_case("ScatterNd documented", "ScatterNd", 3, in, 0, NULL, 1, &w, ON_GPU);
    clg_tensor_free(in[2].t);
    clg_tensor_free(ix);
    clg_tensor_free(u);
  }
  /* Random slices into [4,3,2] with duplicates (they add), every depth, float and int. */
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT32, CLG_FLOAT64};
  for (int q = 1; q <= 3; q++) {
    int64_t sd[3] = {4, 3, 2};
    enum { J = 6 };
    double ixv[J * 3];
    for (int j = 0; j < J; j++)
      for (int d = 0; d < q; d++)
        ixv[j * q + d] =
            j == J - 1 ? ixv[d] : (double)(clg_test_rand() % (unsigned long long)sd[d]);
    clg_tensor *ix = tensor(q == 3 ? CLG_INT64 : CLG_INT32, 2, (int64_t[]){J, q}, ixv);
    int64_t ud[3] = {J, 0, 0};
    int ur = 1;
    size_t slice = 1;
    for (int k = q; k < 3; k++) {
      ud[ur++] = sd[k];
      slice *= (size_t)sd[k];
    }
    clg_tensor *u = tensor(dts[q - 1], ur, ud, RANDOM);
    double *uv = clg_test_values(u), ref[24] = {0};
    size_t st[3];
    strides(3, sd, st);
    for (int j = 0; j < J; j++) {
      size_t off = 0;
      for (int d = 0; d < q; d++)
        off += (size_t)ixv[j * q + d] * st[d];
      for (size_t t = 0; t < slice; t++)
        ref[off + t] += uv[(size_t)j * slice + t];
    }
    input in[3] = {{ix, false}, {u, false}, {ints(3, sd), true}};
    want w = {dts[q - 1], 3, {4, 3, 2}, ref, 1e-6};
    char what[48];
    snprintf(what, sizeof what, "ScatterNd random depth %d", q);
    run_case(what, "ScatterNd", 3, in, 0, NULL, 1, &w, ON_GPU);
    if (q == 1) {
      clg_tensor *bad = ints(3, (int64_t[]){4, 2, 2});
      input b[3] = {{ix, false}, {u, false}, {bad, true}};
      EXPECT_BUILD_ERROR("ScatterNd", 3, b, 0, NULL,
                         "updates must have shape indices.shape[:-1] + shape[1:] = [6,2,2], not "
                         "[6,3,2]");
      clg_tensor_free(bad);
      clg_tensor *cix = tensor(CLG_INT32, 2, (int64_t[]){6, 1}, (const double[]){0, 1, 2, 3, 4, 0});
      input c[3] = {{cix, true}, {u, false}, {in[2].t, true}};
      EXPECT_BUILD_ERROR("ScatterNd", 3, c, 0, NULL,
                         "indices[4] = [4] does not index into shape [4,3,2]");
      clg_tensor_free(cix);
    }
    clg_tensor_free(in[2].t);
    clg_tensor_free(ix);
    clg_tensor_free(u);
    free(uv);
  }
}

/* --- OneHot ------------------------------------------------------------------------------- */

static void test_one_hot(void)
{
  /* TensorFlow's documented example: indices [0, 2, -1, 1], depth 3, on 5, off 0. */
  const double iv[4] = {0, 2, -1, 1};
  clg_tensor *ix = tensor(CLG_INT64, 1, (int64_t[]){4}, iv);
  clg_tensor *on = tensor(CLG_FLOAT32, 0, NULL, (const double[]){5});
  clg_tensor *off = tensor(CLG_FLOAT32, 0, NULL, (const double[]){0});
  {
    input in[4] = {{ix, false}, {scalar_int(3), true}, {on, false}, {off, false}};
    want w = {CLG_FLOAT32, 2, {4, 3}, (const double[]){5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}, 0};
    run_case("OneHot documented", "OneHot", 4, in, 0, NULL, 1, &w, ON_GPU);
    clg_attr ax = clg_attr_int("axis", 0);
    want w0 = {CLG_FLOAT32, 2, {3, 4}, (const double[]){5, 0, 0, 0, 0, 0, 0, 5, 0, 5, 0, 0}, 0};
    run_case("OneHot axis 0", "OneHot", 4, in, 1, &ax, 1, &w0, ON_GPU);
    clg_attr big = clg_attr_int("axis", 2);
    EXPECT_BUILD_ERROR("OneHot", 4, in, 1, &big, "Expected axis to be -1 or between [0, 2)");
    clg_tensor_free(in[1].t);
    in[1].t = scalar_int(-1);
    EXPECT_BUILD_ERROR("OneHot", 4, in, 0, NULL, "depth must be non-negative, got: -1");
    clg_tensor_free(in[1].t);
  }
  /* [2,3] int32 indices, depth 4 at axis 1, int32 values: against the definition. */
  {
    double v[6] = {3, 0, 4, 1, 1, -2};
    clg_tensor *ix2 = tensor(CLG_INT32, 2, (int64_t[]){2, 3}, v);
    clg_tensor *on2 = tensor(CLG_INT32, 0, NULL, (const double[]){7});
    clg_tensor *off2 = tensor(CLG_INT32, 0, NULL, (const double[]){-1});
    double ref[24];
    for (int a = 0; a < 2; a++)
      for (int d = 0; d < 4; d++)
        for (int t = 0; t < 3; t++)
          ref[(a * 4 + d) * 3 + t] = v[a * 3 + t] == d ? 7 : -1;
    input in[4] = {{ix2, false}, {scalar_int(4), true}, {on2, false}, {off2, false}};
    clg_attr ax = clg_attr_int("axis", 1);
    want w = {CLG_INT32, 3, {2, 4, 3}, ref, 0};
    run_case("OneHot [2,3] axis 1 int32", "OneHot", 4, in, 1, &ax, 1, &w, ON_GPU);
    clg_tensor_free(in[1].t);
    clg_tensor_free(ix2);
    clg_tensor_free(on2);
    clg_tensor_free(off2);
  }
  clg_tensor_free(ix);
  clg_tensor_free(on);
  clg_tensor_free(off);
}

/* --- ReverseV2 ---------------------------------------------------------------------------- */

static void test_reverse(void)
{
  int64_t dims[3] = {2, 3, 4};
  struct {
    int n;
    int64_t axes[3];
  } cases[] = {{1, {1}}, {2, {-1, 0}}, {0, {0}}, {3, {0, 1, 2}}};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_INT64};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int dt = 0; dt < 2; dt++) {
      clg_tensor *x = tensor(dts[dt], 3, dims, NULL);
      bool rev[3] = {false, false, false};
      for (int i = 0; i < cases[c].n; i++)
        rev[(cases[c].axes[i] + 3) % 3] = true;
      double ref[24];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
          for (int e = 0; e < 4; e++)
            ref[(a * 3 + b) * 4 + e] =
                (double)(((rev[0] ? 1 - a : a) * 3 + (rev[1] ? 2 - b : b)) * 4 +
                         (rev[2] ? 3 - e : e));
      input in[2] = {{x, false}, {ints(cases[c].n, cases[c].axes), true}};
      want w = {dts[dt], 3, {2, 3, 4}, ref, 0};
      char what[48];
      snprintf(what, sizeof what, "ReverseV2 case %zu %s", c, clg_dtype_name(dts[dt]));
      run_case(what, "ReverseV2", 2, in, 0, NULL, 1, &w, ON_GPU);
      clg_tensor_free(in[1].t);
      clg_tensor_free(x);
    }
  clg_tensor *x = tensor(CLG_FLOAT32, 3, dims, NULL);
  clg_tensor *dup = ints(2, (int64_t[]){1, -2}), *out = ints(1, (int64_t[]){3});
  EXPECT_BUILD_ERROR("ReverseV2", 2, ((input[]){{x, false}, {dup, true}}), 0, NULL,
                     "axis 1 specified more than once");
  EXPECT_BUILD_ERROR("ReverseV2", 2, ((input[]){{x, false}, {out, true}}), 0, NULL,
                     "'axis'[0] = 3 is out of valid range [-3, 3)");
  clg_tensor_free(dup);
  clg_tensor_free(out);
  clg_tensor_free(x);
}

/* --- Cumsum ------------------------------------------------------------------------------- */

static void test_cumsum(void)
{
  /* tf.cumsum([a, b, c]) and its documented variants on [1, 2, 3]. */
  {
    clg_tensor *x = tensor(CLG_FLOAT32, 1, (int64_t[]){3}, (const double[]){1, 2, 3});
    const double want_v[4][3] = {{1, 3, 6}, {0, 1, 3}, {6, 5, 3}, {5, 3, 0}};
    for (int m = 0; m < 4; m++) {
      input in[2] = {{x, false}, {scalar_int(0), true}};
      clg_attr at[2] = {clg_attr_bool("exclusive", m & 1), clg_attr_bool("reverse", m >> 1)};
      want w = {CLG_FLOAT32, 1, {3}, want_v[m], 0};
      char what[48];
      snprintf(what, sizeof what, "Cumsum [1,2,3] exclusive %d reverse %d", m & 1, m >> 1);
      run_case(what, "Cumsum", 2, in, 2, at, 1, &w, ON_GPU);
      clg_tensor_free(in[1].t);
    }
    clg_tensor_free(x);
  }
  int64_t dims[3] = {2, 5, 3};
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT32, CLG_FLOAT64};
  for (int axis = -3; axis < 3; axis++)
    for (int m = 0; m < 4; m++) {
      clg_dtype t = dts[(axis + 3 + m) % 3];
      clg_tensor *x = tensor(t, 3, dims, RANDOM);
      if (t == CLG_INT32) {
        clg_tensor_free(x);
        x = tensor(t, 3, dims, NULL);
      }
      double *xv = clg_test_values(x), ref[30];
      int a = (axis + 3) % 3;
      bool ex = m & 1, rev = m >> 1;
      size_t st[3];
      strides(3, dims, st);
      for (size_t i = 0; i < 30; i++) {
        int64_t pos = (int64_t)((i / st[a]) % (size_t)dims[a]);
        double s = 0;
        for (int64_t p = 0; p < dims[a]; p++) {
          bool take = rev ? (ex ? p > pos : p >= pos) : (ex ? p < pos : p <= pos);
          if (take)
            s += xv[i + (size_t)(p - pos) * st[a]];
        }
        ref[i] = s;
      }
      input in[2] = {{x, false}, {scalar_int(axis), true}};
      clg_attr at[2] = {clg_attr_bool("exclusive", ex), clg_attr_bool("reverse", rev)};
      want w = {t, 3, {2, 5, 3}, ref, 1e-6};
      char what[64];
      snprintf(what, sizeof what, "Cumsum %s axis %d exclusive %d reverse %d", clg_dtype_name(t),
               axis, ex, rev);
      run_case(what, "Cumsum", 2, in, 2, at, 1, &w, ON_GPU);
      clg_tensor_free(in[1].t);
      clg_tensor_free(x);
      free(xv);
    }
  clg_tensor *x = tensor(CLG_FLOAT32, 3, dims, NULL), *ax = scalar_int(3);
  EXPECT_BUILD_ERROR("Cumsum", 2, ((input[]){{x, false}, {ax, true}}), 0, NULL,
                     "ScanOp: Expected scan axis in the range [-3, 3), but got 3");
  clg_tensor_free(ax);
  clg_tensor_free(x);
}

/* --- TopKV2 ------------------------------------------------------------------------------- */

/* The reference: a stable selection, larger first, equal values in index order. */
static void top_k_ref(const double *x, size_t rows, size_t n, size_t k, double *v, double *ix)
{
  bool *used = malloc(n ? n : 1);
  for (size_t r = 0; r < rows; r++) {
    memset(used, 0, n ? n : 1);
    for (size_t i = 0; i < k; i++) {
      size_t best = n;
      for (size_t j = 0; j < n; j++)
        if (!used[j] && (best == n || x[r * n + j] > x[r * n + best]))
          best = j;
      used[best] = true;
      v[r * k + i] = x[r * n + best];
      ix[r * k + i] = (double)best;
    }
  }
  free(used);
}

static void test_top_k(void)
{
  /* Ties: the lower index first. */
  {
    clg_tensor *x = tensor(CLG_FLOAT32, 1, (int64_t[]){6}, (const double[]){1, 3, 3, 2, 3, 0});
    input in[2] = {{x, false}, {scalar_int(3), true}};
    want w[2] = {{CLG_FLOAT32, 1, {3}, (const double[]){3, 3, 3}, 0},
                 {CLG_INT32, 1, {3}, (const double[]){1, 2, 4}, 0}};
    run_case("TopKV2 ties", "TopKV2", 2, in, 0, NULL, 2, w, ON_GPU);
    clg_tensor_free(in[1].t);
    clg_tensor_free(x);
  }
  /* Random rows with repeated values; k = 0, 1, some, n; float, double, int32, int64. */
  clg_dtype dts[4] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64};
  int64_t ks[4] = {0, 1, 7, 40};
  for (int d = 0; d < 4; d++)
    for (int kk = 0; kk < 4; kk++) {
      int64_t dims[3] = {2, 3, 40};
      double *xv = malloc(sizeof(double) * 240);
      for (int i = 0; i < 240; i++)
        xv[i] = (double)(clg_test_rand() % 13) - 6;
      clg_tensor *x = tensor(dts[d], 3, dims, xv);
      size_t k = (size_t)ks[kk];
      double *v = malloc(sizeof(double) * (6 * k + 1)), *ix = malloc(sizeof(double) * (6 * k + 1));
      top_k_ref(xv, 6, 40, k, v, ix);
      input in[2] = {{x, false}, {scalar_int(ks[kk]), true}};
      clg_attr it = clg_attr_dtype("index_type", CLG_INT64);
      want w[2] = {{dts[d], 3, {2, 3, ks[kk]}, v, 0},
                   {d == 3 ? CLG_INT64 : CLG_INT32, 3, {2, 3, ks[kk]}, ix, 0}};
      char what[64];
      snprintf(what, sizeof what, "TopKV2 %s k=%lld", clg_dtype_name(dts[d]), (long long)ks[kk]);
      run_case(what, "TopKV2", 2, in, d == 3 ? 1 : 0, &it, 2, w, ON_GPU);
      clg_tensor_free(in[1].t);
      clg_tensor_free(x);
      free(xv);
      free(v);
      free(ix);
    }
  /* An unpinned TopKV2 (and one of its own Consts) is placed on GPU:0, as TensorFlow's default
   * placement prefers a GPU with a kernel, with or without soft placement. */
  {
    clg_tensor *x = tensor(CLG_FLOAT32, 1, (int64_t[]){4}, (const double[]){2, 9, 4, 9});
    for (int soft = 0; soft < 2; soft++) {
      clg_graph *g = clg_graph_new();
      clg_tensor *kt = scalar_int(2);
      clg_node *xn = clg_const(g, "x", x), *kn = clg_const(g, "k", kt);
      clg_tensor_free(kt);
      clg_node *t =
          clg_op(g, "TopKV2", "topk", 2, (clg_output[]){clg_out(xn, 0), clg_out(kn, 0)}, 0, NULL);
      clg_session_options o = session_opt;
      o.allow_soft_placement = soft;
      clg_session *s = NULL;
      clg_code code = clg_session_new(g, &o, &s);
      clg_tensor *out[2] = {NULL, NULL};
      if (code == CLG_OK)
        code = clg_session_run_outputs(s, 0, NULL, NULL, 2,
                                       (clg_output[]){clg_out(t, 0), clg_out(t, 1)}, out, 0, NULL);
      CHECK_OK(code);
      if (code == CLG_OK) {
        CHECK_STR(clg_session_node_device(s, t), "/job:localhost/replica:0/task:0/device:GPU:0");
        want w[2] = {{CLG_FLOAT32, 1, {2}, (const double[]){9, 9}, 0},
                     {CLG_INT32, 1, {2}, (const double[]){1, 3}, 0}};
        check_out(out[0], &w[0], "TopKV2 unpinned", "GPU:0");
        check_out(out[1], &w[1], "TopKV2 unpinned", "GPU:0");
      }
      clg_tensor_free(out[0]);
      clg_tensor_free(out[1]);
      clg_session_free(s);
      clg_graph_free(g);
    }
    clg_tensor_free(x);
  }
  clg_tensor *x = tensor(CLG_FLOAT32, 2, (int64_t[]){2, 3}, NULL);
  clg_tensor *k4 = scalar_int(4), *km = scalar_int(-1), *kv = ints(1, (int64_t[]){1});
  EXPECT_BUILD_ERROR("TopKV2", 2, ((input[]){{x, false}, {k4, true}}), 0, NULL,
                     "input must have at least k columns. Had 3, needed 4");
  EXPECT_BUILD_ERROR("TopKV2", 2, ((input[]){{x, false}, {km, true}}), 0, NULL,
                     "Need k >= 0, got -1");
  EXPECT_BUILD_ERROR("TopKV2", 2, ((input[]){{x, false}, {kv, true}}), 0, NULL,
                     "k must be 0-D, got shape [1]");
  clg_tensor_free(k4);
  clg_tensor_free(km);
  clg_tensor_free(kv);
  clg_tensor_free(x);
}

/* TopKV2 of a fed x with Const k (clg_test_run_both's builder; ctx: k). */
static clg_node *build_top_k(clg_graph *g, clg_node *const *in, const void *ctx)
{
  clg_tensor *kt = scalar_int(*(const int64_t *)ctx);
  clg_node *kn = clg_const(g, NULL, kt);
  clg_tensor_free(kt);
  return clg_op(g, "TopKV2", NULL, 2, (clg_output[]){clg_out(in[0], 0), clg_out(kn, 0)}, 0, NULL);
}

/* NaN. For k = 1, TensorFlow's CPU kernel scans each row keeping the first element until a
 * larger one comes (x > best is false for NaN both ways): a NaN is picked only in column 0, and
 * one there is kept. For k > 1 TensorFlow leaves the order with NaN unspecified; the GPU must
 * then give CPU:0's values and indices exactly (NaN where CPU:0 has NaN). */
static void test_top_k_nan(void)
{
  static const double x[4][5] = {
      {NAN, 1, 3, NAN, 2}, {1, NAN, 3, 3, NAN}, {-1, -2, NAN, -1, -3}, {NAN, NAN, NAN, NAN, NAN}};
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = d ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *xt = tensor(dt, 2, (int64_t[]){4, 5}, &x[0][0]);
    double v[4], ix[4];
    for (int r = 0; r < 4; r++) {
      int best = 0;
      for (int c = 1; c < 5; c++)
        if (x[r][c] > x[r][best])
          best = c;
      v[r] = x[r][best];
      ix[r] = best;
    }
    input in[2] = {{xt, false}, {scalar_int(1), true}};
    want w[2] = {{dt, 2, {4, 1}, v, 0}, {CLG_INT32, 2, {4, 1}, ix, 0}};
    run_case(d ? "TopKV2 double NaN k=1" : "TopKV2 float NaN k=1", "TopKV2", 2, in, 0, NULL, 2, w,
             ON_GPU);
    clg_tensor_free(in[1].t);
    for (int64_t k = 2; k <= 5; k += 3)
      for (int o = 0; o < 2; o++) {
        clg_tensor *out[2];
        char err[512], what[64];
        snprintf(what, sizeof what, "TopKV2 %s NaN k=%lld output %d", clg_dtype_name(dt),
                 (long long)k, o);
        clg_code code =
            clg_test_run_both(&session_opt, 1, &xt, build_top_k, &k, o, out, err, sizeof err);
        CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
        if (code == CLG_OK) {
          double *cpu = clg_test_values(out[0]);
          clg_test_check_values(out[1], o ? CLG_INT32 : dt, 2, (int64_t[]){4, k}, cpu, 0, 0, true,
                                what, "GPU");
          free(cpu);
        }
        clg_tensor_free(out[0]);
        clg_tensor_free(out[1]);
      }
    clg_tensor_free(xt);
  }
}

/* --- Einsum ------------------------------------------------------------------------------ */

/* Runs Einsum(eq) on x (and y) on CPU:0 and a GPU and checks both against ref of rank/dims. */
static void einsum_case(const char *eq, clg_tensor *x, clg_tensor *y, int rank, const int64_t *dims,
                        const double *ref)
{
  input in[2] = {{x, false}, {y, false}};
  clg_attr at = clg_attr_string("equation", eq);
  want w = {clg_tensor_dtype(x), rank, {0}, ref, 1e-6};
  for (int k = 0; k < rank; k++)
    w.dims[k] = dims[k];
  char what[64];
  snprintf(what, sizeof what, "Einsum '%s'", eq);
  run_case(what, "Einsum", y ? 2 : 1, in, 1, &at, 1, &w, ON_GPU);
}

static void test_einsum(void)
{
  clg_tensor *a = tensor(CLG_FLOAT32, 2, (int64_t[]){3, 4}, RANDOM);
  clg_tensor *b = tensor(CLG_FLOAT32, 2, (int64_t[]){4, 5}, RANDOM);
  clg_tensor *sq = tensor(CLG_FLOAT64, 2, (int64_t[]){4, 4}, RANDOM);
  clg_tensor *a2 = tensor(CLG_FLOAT32, 2, (int64_t[]){3, 4}, RANDOM);
  double *av = clg_test_values(a), *bv = clg_test_values(b), *sv = clg_test_values(sq),
         *a2v = clg_test_values(a2);
  double ref[64];
  /* Matrix product, explicit and implicit. */
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 5; k++) {
      double s = 0;
      for (int j = 0; j < 4; j++)
        s += av[i * 4 + j] * bv[j * 5 + k];
      ref[i * 5 + k] = s;
    }
  einsum_case("ij,jk->ik", a, b, 2, (int64_t[]){3, 5}, ref);
  einsum_case("ij,jk", a, b, 2, (int64_t[]){3, 5}, ref);
  /* Its transpose by the output's order. */
  double tr[15];
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 5; k++)
      tr[k * 3 + i] = ref[i * 5 + k];
  einsum_case("ij,jk->ki", a, b, 2, (int64_t[]){5, 3}, tr);
  /* Transpose, diagonal, trace, row sums, outer product, a full contraction. */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      ref[j * 3 + i] = av[i * 4 + j];
  einsum_case("ij->ji", a, NULL, 2, (int64_t[]){4, 3}, ref);
  double diag[4], trace = 0;
  for (int i = 0; i < 4; i++) {
    diag[i] = sv[i * 4 + i];
    trace += diag[i];
  }
  einsum_case("ii->i", sq, NULL, 1, (int64_t[]){4}, diag);
  einsum_case("ii", sq, NULL, 0, NULL, &trace);
  double rows[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      rows[i] += av[i * 4 + j];
  einsum_case("ij->i", a, NULL, 1, (int64_t[]){3}, rows);
  clg_tensor *u = tensor(CLG_FLOAT32, 1, (int64_t[]){3}, RANDOM);
  clg_tensor *v = tensor(CLG_FLOAT32, 1, (int64_t[]){4}, RANDOM);
  double *uv = clg_test_values(u), *vv = clg_test_values(v);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      ref[i * 4 + j] = uv[i] * vv[j];
  einsum_case("i,j->ij", u, v, 2, (int64_t[]){3, 4}, ref);
  double dot = 0;
  for (int i = 0; i < 12; i++)
    dot += av[i] * a2v[i];
  einsum_case("ij,ij->", a, a2, 0, NULL, &dot);
  /* Batched with broadcast "..." dims: [2,1,3,4] x [5,4,2] -> [2,5,3,2]. */
  {
    clg_tensor *x = tensor(CLG_FLOAT32, 4, (int64_t[]){2, 1, 3, 4}, RANDOM);
    clg_tensor *y = tensor(CLG_FLOAT32, 3, (int64_t[]){5, 4, 2}, RANDOM);
    double *xv = clg_test_values(x), *yv = clg_test_values(y), out[60];
    for (int p = 0; p < 2; p++)
      for (int q = 0; q < 5; q++)
        for (int i = 0; i < 3; i++)
          for (int k = 0; k < 2; k++) {
            double s = 0;
            for (int j = 0; j < 4; j++)
              s += xv[(p * 3 + i) * 4 + j] * yv[(q * 4 + j) * 2 + k];
            out[((p * 5 + q) * 3 + i) * 2 + k] = s;
          }
    einsum_case("...ij,...jk->...ik", x, y, 4, (int64_t[]){2, 5, 3, 2}, out);
    clg_attr at = clg_attr_string("equation", "...ij,...jk->ik");
    EXPECT_BUILD_ERROR("Einsum", 2, ((input[]){{x, false}, {y, false}}), 1, &at,
                       "the operands have \"...\" dims but the output has no \"...\"");
    clg_tensor_free(x);
    clg_tensor_free(y);
    free(xv);
    free(yv);
  }
  /* Bad equations. */
  static const struct {
    const char *eq, *text;
  } bad[] = {{"ij,jk->il", "output label 'l' appears in no operand"},
             {"ij,jk->ii", "output label 'i' appears more than once"},
             {"ijk,jk->ik", "operand 0 has 3 label(s) but input 0 has shape [3,4]"},
             {"ij,kk->ik", "dimension 5 of input 1 (axis 1) differs from 4 for the same label"},
             {"i1,jk->ik", "invalid character '1' in operand 0"},
             {"ij->ij", "equation 'ij->ij' has 1 operand(s) but the node has 2 input(s)"},
             {"i..j,jk->ik", "has a '.' outside one \"...\""}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clg_attr at = clg_attr_string("equation", bad[i].eq);
    EXPECT_BUILD_ERROR("Einsum", 2, ((input[]){{a, false}, {b, false}}), 1, &at, bad[i].text);
  }
  clg_tensor_free(a);
  clg_tensor_free(b);
  clg_tensor_free(sq);
  clg_tensor_free(a2);
  clg_tensor_free(u);
  clg_tensor_free(v);
  free(av);
  free(bv);
  free(sv);
  free(a2v);
  free(uv);
  free(vv);
}

/* More equations on both devices, each against its own loops: batch matmul without "...",
 * A B^T, a 3-D transpose, a diagonal times a vector, "..." of different ranks broadcasting a
 * dim of 1, an empty contraction (zeros), double, and a long float contraction (the
 * sums in double, as the host's). */
static void test_einsum_more(void)
{
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = d ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *x = tensor(dt, 3, (int64_t[]){2, 3, 4}, RANDOM);
    clg_tensor *y = tensor(dt, 3, (int64_t[]){2, 4, 5}, RANDOM);
    clg_tensor *m = tensor(dt, 2, (int64_t[]){5, 4}, RANDOM);
    clg_tensor *q = tensor(dt, 2, (int64_t[]){4, 4}, RANDOM);
    clg_tensor *u = tensor(dt, 1, (int64_t[]){4}, RANDOM);
    clg_tensor *z = tensor(dt, 3, (int64_t[]){2, 1, 4}, RANDOM);
    clg_tensor *w = tensor(dt, 2, (int64_t[]){3, 4}, RANDOM);
    double *xv = clg_test_values(x), *yv = clg_test_values(y), *mv = clg_test_values(m),
           *qv = clg_test_values(q), *uv = clg_test_values(u), *zv = clg_test_values(z),
           *wv = clg_test_values(w), ref[64];
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 3; i++)
        for (int k = 0; k < 5; k++) {
          double s = 0;
          for (int j = 0; j < 4; j++)
            s += xv[(b * 3 + i) * 4 + j] * yv[(b * 4 + j) * 5 + k];
          ref[(b * 3 + i) * 5 + k] = s;
        }
    einsum_case("bij,bjk->bik", x, y, 3, (int64_t[]){2, 3, 5}, ref);
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 3; i++)
        for (int k = 0; k < 5; k++) {
          double s = 0;
          for (int j = 0; j < 4; j++)
            s += xv[(b * 3 + i) * 4 + j] * mv[k * 4 + j];
          ref[(b * 3 + i) * 5 + k] = s;
        }
    einsum_case("bij,kj->bik", x, m, 3, (int64_t[]){2, 3, 5}, ref);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++)
          ref[(k * 3 + j) * 2 + i] = xv[(i * 3 + j) * 4 + k];
    einsum_case("ijk->kji", x, NULL, 3, (int64_t[]){4, 3, 2}, ref);
    for (int i = 0; i < 4; i++)
      ref[i] = qv[i * 4 + i] * uv[i];
    einsum_case("ii,i->i", q, u, 1, (int64_t[]){4}, ref);
    /* [2,1,4] and [3,4]: "..." is [2,1] against [3], broadcast to [2,3]. */
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 3; b++) {
        double s = 0;
        for (int i = 0; i < 4; i++)
          s += zv[a * 4 + i] * wv[b * 4 + i];
        ref[a * 3 + b] = s;
      }
    einsum_case("...i,...i->...", z, w, 2, (int64_t[]){2, 3}, ref);
    einsum_case("...i,...i", z, w, 2, (int64_t[]){2, 3}, ref);
    double sum_all = 0;
    for (int i = 0; i < 24; i++)
      sum_all += xv[i];
    einsum_case("ijk->", x, NULL, 0, NULL, &sum_all);
    clg_tensor *e0 = tensor(dt, 2, (int64_t[]){3, 0}, NULL),
               *e1 = tensor(dt, 2, (int64_t[]){0, 5}, NULL);
    double zeros[15] = {0};
    einsum_case("ij,jk->ik", e0, e1, 2, (int64_t[]){3, 5}, zeros);
    clg_tensor *all[] = {x, y, m, q, u, z, w, e0, e1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      clg_tensor_free(all[i]);
    double *vals[] = {xv, yv, mv, qv, uv, zv, wv};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
      free(vals[i]);
  }
  /* 2000 terms of values off the 1/8 grid: float's own sums would be off by far more than
   * the 1e-6 of einsum_case; the double sums of both devices are not. */
  {
    clg_tensor *a = clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 2000}, NULL);
    clg_tensor *b = clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2000, 3}, NULL);
    clg_test_fill_random(CLG_FLOAT32, clg_tensor_data(a), 4000);
    clg_test_fill_random(CLG_FLOAT32, clg_tensor_data(b), 6000);
    double *av = clg_test_values(a), *bv = clg_test_values(b), ref[6];
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 3; k++) {
        double s = 0;
        for (int j = 0; j < 2000; j++)
          s += av[i * 2000 + j] * bv[j * 3 + k];
        ref[i * 3 + k] = (float)s;
      }
    einsum_case("ij,jk->ik", a, b, 2, (int64_t[]){2, 3}, ref);
    clg_tensor_free(a);
    clg_tensor_free(b);
    free(av);
    free(bv);
  }
}

int main(void)
{
  clg_test_seed(24);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_tf_ops4");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  session_opt.allow_soft_placement = 0; /* a GPU node without an OpenCL kernel fails */
  test_reductions();
  test_batch_matmul();
  test_batch_matmul_grad();
  test_resize_nearest();
  test_gather_nd();
  test_scatter_nd();
  test_one_hot();
  test_reverse();
  test_cumsum();
  test_top_k();
  test_top_k_nan();
  test_einsum();
  test_einsum_more();
  return clg_test_summary("test_tf_ops4");
}
