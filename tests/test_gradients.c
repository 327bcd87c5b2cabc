/* clg_gradients (tf.gradients): every gradient checked against central finite differences in
 * float64 (TensorFlow's compute_gradient_error: the whole Jacobian, one row per unit
 * grad_ys, one column per perturbed input), on CPU:0 and on an OpenCL stand-in; paths that
 * meet are summed; an unreachable x gets NULL; an op without a gradient is named; gradients
 * are placed by the caller's scope or, with colocate_gradients_with_ops, with their op. */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

#define MAXN 64

/* Builds y from the inputs x[0..nx) (placeholders of the shapes given). */
typedef clg_node *(*build_fn)(clg_graph *g, clg_node *const *x);

/* How inputs are drawn: uniform in [-1, 1), away from 0 (kinks, divisors), positive (Log,
 * Sqrt), or all distinct and spaced far beyond the step (MaxPool, Max, Maximum: no ties, and no
 * step reorders them). */
enum { INIT_UNIFORM, INIT_AWAY, INIT_POSITIVE, INIT_DISTINCT };

typedef struct fcase {
  const char *name;
  int nx;
  int rank[2];
  int64_t dims[2][4];
  build_fn build;
  int init;
} fcase;

static size_t count_of(int rank, const int64_t *dims)
{
  size_t c = 1;
  for (int i = 0; i < rank; i++)
    c *= (size_t)dims[i];
  return c;
}

static double *run_y(clg_session *s, int nx, clg_node *const *x, clg_tensor *const *xv, clg_node *y,
                     size_t *ny)
{
  clg_tensor *out = NULL;
  if (clg_session_run(s, nx, x, xv, 1, &y, &out) != CLG_OK) {
    CHECK_MSG(false, "forward run: %s", clg_last_error());
    return NULL;
  }
  *ny = clg_tensor_count(out);
  double *v = malloc(sizeof *v * (*ny ? *ny : 1));
  memcpy(v, clg_tensor_const_data(out), sizeof *v * *ny);
  clg_tensor_free(out);
  return v;
}

/* Max relative error between the analytic and numeric Jacobians of y over every x. */
static double check_case(const fcase *fc, const char *device)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, device));
  clg_node *x[2];
  for (int i = 0; i < fc->nx; i++)
    x[i] = clg_placeholder(g, NULL, CLG_FLOAT64, fc->rank[i], fc->dims[i]);
  clg_node *y = fc->build(g, x);
  int64_t ydims[4] = {0};
  for (int k = 0; y && k < clg_node_rank(y) && k < 4; k++)
    ydims[k] = clg_node_dim(y, k);
  clg_node *gy = clg_placeholder(g, "gy", CLG_FLOAT64, y ? clg_node_rank(y) : 0, ydims);
  clg_output ys = clg_out(y, 0), gys = clg_out(gy, 0), xs[2], dx[2];
  for (int i = 0; i < fc->nx; i++)
    xs[i] = clg_out(x[i], 0);
  CHECK_OK(clg_gradients(g, 1, &ys, &gys, fc->nx, xs, NULL, dx));
  CHECK_OK(clg_graph_pop_device(g));
  double worst = 0;
  clg_session *s = NULL;
  /* allow_growth: each case's session touches only what it uses, not the whole limit. */
  clg_session_options so;
  clg_session_options_init(&so);
  so.gpu_options.allow_growth = 1;
  if (clg_graph_status(g) != CLG_OK || clg_session_new(g, &so, &s) != CLG_OK) {
    CHECK_MSG(false, "%s on %s: %s", fc->name, device, clg_last_error());
    clg_graph_free(g);
    return INFINITY;
  }
  clg_tensor *xv[2];
  for (int i = 0; i < fc->nx; i++) {
    xv[i] = clg_tensor_new(CLG_FLOAT64, fc->rank[i], fc->dims[i], NULL);
    double *p = clg_tensor_data(xv[i]);
    size_t n = count_of(fc->rank[i], fc->dims[i]);
    for (size_t k = 0; k < n; k++) {
      p[k] = clg_test_uniform(-1, 1);
      if (fc->init == INIT_AWAY && fabs(p[k]) < 0.1)
        p[k] += p[k] < 0 ? -0.2 : 0.2;
      if (fc->init == INIT_POSITIVE)
        p[k] = 0.5 + fabs(p[k]);
      if (fc->init == INIT_DISTINCT) /* a shuffled ramp: steps of 0.01 (input 1 offset) */
        p[k] = ((double)k - (double)(n / 2)) * 0.01 + 0.003 * i;
    }
    for (size_t k = n; fc->init == INIT_DISTINCT && k > 1; k--) {
      size_t j = (size_t)(clg_test_rand() % k);
      double t = p[k - 1];
      p[k - 1] = p[j];
      p[j] = t;
    }
  }
  size_t ny = 0;
  double *y0 = run_y(s, fc->nx, x, xv, y, &ny);
  free(y0);
  clg_tensor *gyv = clg_tensor_new(CLG_FLOAT64, clg_node_rank(y), ydims, NULL);
  for (int i = 0; i < fc->nx; i++) {
    size_t n = count_of(fc->rank[i], fc->dims[i]);
    CHECK_MSG(dx[i].node != NULL, "%s: no gradient for x%d", fc->name, i);
    if (!dx[i].node)
      continue;
    /* Analytic: row j of the Jacobian is dx for grad_ys = e_j. */
    double *ana = calloc(ny * n, sizeof *ana);
    for (size_t j = 0; j < ny; j++) {
      memset(clg_tensor_data(gyv), 0, ny * sizeof(double));
      ((double *)clg_tensor_data(gyv))[j] = 1;
      clg_node *feed_nodes[3] = {x[0], fc->nx > 1 ? x[1] : gy, gy};
      clg_tensor *feeds[3] = {xv[0], fc->nx > 1 ? xv[1] : gyv, gyv};
      clg_tensor *out = NULL;
      clg_output fetch = dx[i];
      clg_output fa[3] = {clg_out(feed_nodes[0], 0), clg_out(feed_nodes[1], 0),
                          clg_out(feed_nodes[2], 0)};
      CHECK_OK(clg_session_run_outputs(s, fc->nx + 1, fa, feeds, 1, &fetch, &out, 0, NULL));
      if (out)
        memcpy(ana + j * n, clg_tensor_const_data(out), n * sizeof(double));
      clg_tensor_free(out);
    }
    /* Numeric: column k from central differences. */
    const double h = 1e-6;
    double *p = clg_tensor_data(xv[i]);
    for (size_t k = 0; k < n; k++) {
      double keep = p[k];
      size_t n1, n2;
      p[k] = keep + h;
      double *yp = run_y(s, fc->nx, x, xv, y, &n1);
      p[k] = keep - h;
      double *ym = run_y(s, fc->nx, x, xv, y, &n2);
      p[k] = keep;
      for (size_t j = 0; yp && ym && j < ny; j++) {
        double num = (yp[j] - ym[j]) / (2 * h);
        double err = fabs(ana[j * n + k] - num) / fmax(1.0, fabs(num));
        worst = fmax(worst, err);
      }
      free(yp);
      free(ym);
    }
    free(ana);
  }
  CHECK_MSG(worst < 1e-6, "%s on %s: max relative error %g", fc->name, device, worst);
  for (int i = 0; i < fc->nx; i++)
    clg_tensor_free(xv[i]);
  clg_tensor_free(gyv);
  clg_session_free(s);
  clg_graph_free(g);
  return worst;
}

static clg_node *b_matmul(clg_graph *g, clg_node *const *x)
{
  return clg_matmul(g, NULL, x[0], x[1], false, false);
}
static clg_node *b_matmul_ta(clg_graph *g, clg_node *const *x)
{
  return clg_matmul(g, NULL, x[0], x[1], true, false);
}
static clg_node *b_matmul_tb(clg_graph *g, clg_node *const *x)
{
  return clg_matmul(g, NULL, x[0], x[1], false, true);
}
static clg_node *b_matmul_tt(clg_graph *g, clg_node *const *x)
{
  return clg_matmul(g, NULL, x[0], x[1], true, true);
}
static clg_node *b_add(clg_graph *g, clg_node *const *x) { return clg_add(g, NULL, x[0], x[1]); }
static clg_node *b_sub(clg_graph *g, clg_node *const *x) { return clg_sub(g, NULL, x[0], x[1]); }
static clg_node *b_mul(clg_graph *g, clg_node *const *x) { return clg_mul(g, NULL, x[0], x[1]); }
static clg_node *b_addn(clg_graph *g, clg_node *const *x)
{
  return clg_add_n(g, NULL, 3, (clg_node *[]){x[0], x[1], x[0]});
}
static clg_node *b_identity(clg_graph *g, clg_node *const *x)
{
  return clg_identity(g, NULL, x[0]);
}
static clg_node *b_relu(clg_graph *g, clg_node *const *x) { return clg_relu(g, NULL, x[0]); }
static clg_node *b_neg(clg_graph *g, clg_node *const *x) { return clg_neg(g, NULL, x[0]); }
static clg_node *b_square(clg_graph *g, clg_node *const *x) { return clg_square(g, NULL, x[0]); }
/* Paths that meet: x*x + x, and a small network relu(x w) squared. */
static clg_node *b_paths(clg_graph *g, clg_node *const *x)
{
  return clg_add(g, NULL, clg_mul(g, NULL, x[0], x[0]), x[0]);
}
static clg_node *b_net(clg_graph *g, clg_node *const *x)
{
  clg_node *h = clg_relu(g, NULL, clg_matmul(g, NULL, x[0], x[1], false, false));
  return clg_square(g, NULL, clg_sub(g, NULL, h, clg_neg(g, NULL, h)));
}

/* --- the CNN set ------------------------------------------------------------------------ */

static const int64_t S1[4] = {1, 1, 1, 1}, S2[4] = {1, 2, 2, 1}, K3[4] = {1, 3, 3, 1},
                     K2[4] = {1, 2, 2, 1};
static clg_node *b_conv_same(clg_graph *g, clg_node *const *x)
{
  return clg_conv2d(g, NULL, x[0], x[1], S1, "SAME", NULL);
}
static clg_node *b_conv_valid_s2(clg_graph *g, clg_node *const *x)
{
  return clg_conv2d(g, NULL, x[0], x[1], S2, "VALID", NULL);
}
static clg_node *b_conv_same_s2(clg_graph *g, clg_node *const *x)
{
  return clg_conv2d(g, NULL, x[0], x[1], S2, "SAME", NULL);
}
static clg_node *b_conv_dilated(clg_graph *g, clg_node *const *x)
{
  static const int64_t d2[4] = {1, 2, 2, 1};
  return clg_conv2d(g, NULL, x[0], x[1], S1, "SAME", d2);
}
static clg_node *b_maxpool_same(clg_graph *g, clg_node *const *x)
{
  return clg_max_pool(g, NULL, x[0], K3, S2, "SAME");
}
static clg_node *b_maxpool_valid(clg_graph *g, clg_node *const *x)
{
  return clg_max_pool(g, NULL, x[0], K2, S1, "VALID");
}
static clg_node *b_avgpool_same(clg_graph *g, clg_node *const *x)
{
  return clg_avg_pool(g, NULL, x[0], K3, S2, "SAME");
}
static clg_node *b_avgpool_valid(clg_graph *g, clg_node *const *x)
{
  return clg_avg_pool(g, NULL, x[0], K2, S1, "VALID");
}
static clg_node *b_lrn(clg_graph *g, clg_node *const *x)
{
  return clg_lrn(g, NULL, x[0], 2, 1.0, 0.5, 0.75);
}
static clg_node *b_bias_add(clg_graph *g, clg_node *const *x)
{
  return clg_bias_add(g, NULL, x[0], x[1]);
}
static clg_node *b_reshape(clg_graph *g, clg_node *const *x)
{
  return clg_square(g, NULL, clg_reshape(g, NULL, x[0], 2, (int64_t[]){3, -1}));
}
static clg_node *b_transpose(clg_graph *g, clg_node *const *x)
{
  return clg_square(g, NULL, clg_transpose(g, NULL, x[0], 3, (int64_t[]){2, 0, 1}));
}
static clg_node *b_sum(clg_graph *g, clg_node *const *x)
{
  return clg_sum(g, NULL, clg_square(g, NULL, x[0]), 1, (int64_t[]){1}, false);
}
static clg_node *b_sum_keep(clg_graph *g, clg_node *const *x)
{
  return clg_sum(g, NULL, clg_square(g, NULL, x[0]), 2, (int64_t[]){0, -1}, true);
}
static clg_node *b_mean(clg_graph *g, clg_node *const *x)
{
  return clg_mean(g, NULL, clg_square(g, NULL, x[0]), 1, (int64_t[]){0}, false);
}
static clg_node *b_max(clg_graph *g, clg_node *const *x)
{
  return clg_max(g, NULL, x[0], 1, (int64_t[]){1}, false);
}
static clg_node *b_l2loss(clg_graph *g, clg_node *const *x) { return clg_l2_loss(g, NULL, x[0]); }
static clg_node *b_softmax(clg_graph *g, clg_node *const *x) { return clg_softmax(g, NULL, x[0]); }
static clg_node *b_log_softmax(clg_graph *g, clg_node *const *x)
{
  return clg_log_softmax(g, NULL, x[0]);
}
static clg_node *b_xent(clg_graph *g, clg_node *const *x)
{
  clg_tensor *t = clg_tensor_new(CLG_INT32, 1, (int64_t[]){3}, (int32_t[]){2, 0, 3});
  clg_node *labels = clg_const(g, "labels", t);
  clg_tensor_free(t);
  return clg_sparse_softmax_cross_entropy_with_logits(g, NULL, x[0], labels);
}
static clg_node *b_exp(clg_graph *g, clg_node *const *x) { return clg_exp(g, NULL, x[0]); }
static clg_node *b_log(clg_graph *g, clg_node *const *x) { return clg_log_e(g, NULL, x[0]); }
static clg_node *b_sqrt(clg_graph *g, clg_node *const *x) { return clg_sqrt(g, NULL, x[0]); }
static clg_node *b_rsqrt(clg_graph *g, clg_node *const *x) { return clg_rsqrt(g, NULL, x[0]); }
static clg_node *b_real_div(clg_graph *g, clg_node *const *x)
{
  return clg_real_div(g, NULL, x[0], x[1]);
}
static clg_node *b_maximum(clg_graph *g, clg_node *const *x)
{
  return clg_maximum(g, NULL, x[0], x[1]);
}
/* Select on x0 >= x1 (Maximum by hand), and on a constant condition choosing whole rows. */
static clg_node *b_select(clg_graph *g, clg_node *const *x)
{
  return clg_select(g, NULL, clg_greater_equal(g, NULL, x[0], x[1]), x[0], x[1]);
}
static clg_node *b_select_rows(clg_graph *g, clg_node *const *x)
{
  clg_tensor *t = clg_tensor_new(CLG_BOOL, 1, (int64_t[]){3}, (uint8_t[]){1, 0, 1});
  clg_node *c = clg_const(g, "rows", t);
  clg_tensor_free(t);
  return clg_select(g, NULL, c, x[0], x[1]);
}
static clg_node *b_cast(clg_graph *g, clg_node *const *x)
{
  return clg_square(g, NULL, clg_cast(g, NULL, x[0], CLG_FLOAT64));
}

static void test_finite_differences(void)
{
  const fcase cases[] = {
      {"MatMul", 2, {2, 2}, {{3, 4}, {4, 2}}, b_matmul, false},
      {"MatMul transpose_a", 2, {2, 2}, {{4, 3}, {4, 2}}, b_matmul_ta, false},
      {"MatMul transpose_b", 2, {2, 2}, {{3, 4}, {2, 4}}, b_matmul_tb, false},
      {"MatMul both", 2, {2, 2}, {{4, 3}, {2, 4}}, b_matmul_tt, false},
      {"Add", 2, {2, 2}, {{2, 3}, {2, 3}}, b_add, false},
      {"Sub", 2, {2, 2}, {{2, 3}, {2, 3}}, b_sub, false},
      {"Mul", 2, {2, 2}, {{2, 3}, {2, 3}}, b_mul, false},
      {"AddN", 2, {2, 2}, {{2, 3}, {2, 3}}, b_addn, false},
      {"Identity", 1, {2}, {{2, 3}}, b_identity, false},
      {"Relu", 1, {2}, {{3, 3}}, b_relu, true},
      {"Neg", 1, {2}, {{2, 3}}, b_neg, false},
      {"Square", 1, {2}, {{2, 3}}, b_square, false},
      {"paths meet", 1, {2}, {{2, 2}}, b_paths, false},
      {"network", 2, {2, 2}, {{2, 3}, {3, 2}}, b_net, true},
      {"Conv2D SAME", 2, {4, 4}, {{1, 4, 4, 2}, {3, 3, 2, 2}}, b_conv_same, 0},
      {"Conv2D VALID stride 2", 2, {4, 4}, {{2, 5, 5, 2}, {2, 2, 2, 3}}, b_conv_valid_s2, 0},
      {"Conv2D SAME stride 2", 2, {4, 4}, {{1, 5, 4, 2}, {3, 2, 2, 2}}, b_conv_same_s2, 0},
      {"Conv2D dilated", 2, {4, 4}, {{1, 5, 5, 1}, {2, 2, 1, 2}}, b_conv_dilated, 0},
      {"Conv2D 1x1", 2, {4, 4}, {{1, 3, 3, 2}, {1, 1, 2, 3}}, b_conv_same, 0},
      {"MaxPool SAME", 1, {4}, {{1, 5, 5, 2}}, b_maxpool_same, INIT_DISTINCT},
      {"MaxPool VALID", 1, {4}, {{2, 3, 4, 1}}, b_maxpool_valid, INIT_DISTINCT},
      {"AvgPool SAME", 1, {4}, {{1, 5, 5, 2}}, b_avgpool_same, 0},
      {"AvgPool VALID", 1, {4}, {{2, 3, 4, 1}}, b_avgpool_valid, 0},
      {"LRN", 1, {4}, {{1, 2, 2, 6}}, b_lrn, 0},
      {"BiasAdd", 2, {2, 1}, {{3, 4}, {4}}, b_bias_add, 0},
      {"BiasAdd 4-D", 2, {4, 1}, {{1, 2, 2, 3}, {3}}, b_bias_add, 0},
      {"Reshape", 1, {2}, {{2, 3}}, b_reshape, 0},
      {"Transpose", 1, {3}, {{2, 3, 2}}, b_transpose, 0},
      {"Sum", 1, {2}, {{2, 3}}, b_sum, 0},
      {"Sum keep_dims", 1, {3}, {{2, 3, 2}}, b_sum_keep, 0},
      {"Mean", 1, {2}, {{3, 2}}, b_mean, 0},
      {"Max", 1, {2}, {{3, 4}}, b_max, INIT_DISTINCT},
      {"L2Loss", 1, {2}, {{2, 3}}, b_l2loss, 0},
      {"Softmax", 1, {2}, {{2, 4}}, b_softmax, 0},
      {"LogSoftmax", 1, {2}, {{2, 4}}, b_log_softmax, 0},
      {"SparseSoftmaxCrossEntropyWithLogits", 1, {2}, {{3, 5}}, b_xent, 0},
      {"Exp", 1, {2}, {{2, 3}}, b_exp, 0},
      {"Log", 1, {2}, {{2, 3}}, b_log, INIT_POSITIVE},
      {"Sqrt", 1, {2}, {{2, 3}}, b_sqrt, INIT_POSITIVE},
      {"Rsqrt", 1, {2}, {{2, 3}}, b_rsqrt, INIT_POSITIVE},
      {"RealDiv broadcast", 2, {2, 1}, {{2, 3}, {3}}, b_real_div, INIT_AWAY},
      {"Maximum", 2, {2, 2}, {{2, 3}, {2, 3}}, b_maximum, INIT_DISTINCT},
      {"Maximum broadcast", 2, {2, 1}, {{2, 3}, {3}}, b_maximum, INIT_DISTINCT},
      {"Select", 2, {2, 2}, {{2, 3}, {2, 3}}, b_select, INIT_DISTINCT},
      {"Select rows", 2, {3, 3}, {{3, 2, 2}, {3, 2, 2}}, b_select_rows, 0},
      {"Cast", 1, {2}, {{2, 3}}, b_cast, 0},
  };
  const char *devices[2] = {"/cpu:0", "/device:GPU:0"};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
#ifndef CLG_HAVE_CLBLAST /* MatMul and Conv2D have no OpenCL kernel in this build */
      if (d == 1 && (strncmp(cases[i].name, "MatMul", 6) == 0 || cases[i].build == b_net ||
                     strncmp(cases[i].name, "Conv2D", 6) == 0))
        continue;
#endif
      check_case(&cases[i], devices[d]);
    }
}

/* Small chunks of patch rows (one row each): Conv2D's gradients add the filter's partial sums
 * chunk by chunk and col2im each chunk's share, on both device kinds. */
static void test_conv_chunks(void)
{
  const fcase cases[] = {
      {"Conv2D SAME, chunked", 2, {4, 4}, {{1, 4, 4, 2}, {3, 3, 2, 2}}, b_conv_same, 0},
      {"Conv2D VALID stride 2, chunked",
       2,
       {4, 4},
       {{2, 5, 5, 2}, {2, 2, 2, 3}},
       b_conv_valid_s2,
       0},
  };
  setenv("CLGRAPH_CONV_CHUNK_BYTES", "200", 1);
  const char *devices[2] = {"/cpu:0", "/device:GPU:0"};
#ifdef CLG_HAVE_CLBLAST
  int ndev = 2;
#else
  int ndev = 1; /* Conv2D has no OpenCL kernel in this build */
#endif
  for (int d = 0; d < ndev; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      check_case(&cases[i], devices[d]);
  unsetenv("CLGRAPH_CONV_CHUNK_BYTES");
}

/* float32 at a larger size (several work-groups, overlapping windows, a real LRN radius):
 * the gradients of conv -> bias -> relu -> max pool -> LRN -> avg pool on GPU:0 equal
 * CPU:0's to float tolerance. */
static void test_float_cpu_vs_gpu(void)
{
#ifdef CLG_HAVE_CLBLAST
  int64_t xd[4] = {3, 12, 12, 5}, fd[4] = {5, 5, 5, 8}, bd[1] = {8};
  const int64_t s1[4] = {1, 1, 1, 1}, s2[4] = {1, 2, 2, 1}, k3[4] = {1, 3, 3, 1};
  clg_tensor *v[3] = {clg_tensor_new(CLG_FLOAT32, 4, xd, NULL),
                      clg_tensor_new(CLG_FLOAT32, 4, fd, NULL),
                      clg_tensor_new(CLG_FLOAT32, 1, bd, NULL)};
  for (int i = 0; i < 3; i++)
    clg_test_fill_random(CLG_FLOAT32, clg_tensor_data(v[i]), clg_tensor_count(v[i]));
  clg_tensor *got[2][3] = {{NULL}};
  const char *devices[2] = {"/cpu:0", "/device:GPU:0"};
  for (int d = 0; d < 2; d++) {
    clg_graph *g = clg_graph_new();
    CHECK_OK(clg_graph_push_device(g, devices[d]));
    clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 4, xd);
    clg_node *f = clg_placeholder(g, "f", CLG_FLOAT32, 4, fd);
    clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 1, bd);
    clg_node *h =
        clg_relu(g, NULL, clg_bias_add(g, NULL, clg_conv2d(g, NULL, x, f, s1, "SAME", NULL), b));
    h = clg_lrn(g, NULL, clg_max_pool(g, NULL, h, k3, s2, "SAME"), 2, 1.0, 0.1, 0.75);
    clg_node *y = clg_sum(g, NULL, clg_square(g, NULL, clg_avg_pool(g, NULL, h, k3, s2, "SAME")), 4,
                          (int64_t[]){0, 1, 2, 3}, false);
    clg_output ys = clg_out(y, 0), xs[3] = {clg_out(x, 0), clg_out(f, 0), clg_out(b, 0)}, dx[3];
    CHECK_OK(clg_gradients(g, 1, &ys, NULL, 3, xs, NULL, dx));
    CHECK_OK(clg_graph_pop_device(g));
    clg_session_options so;
    clg_session_options_init(&so);
    so.gpu_options.allow_growth = 1;
    clg_session *s = NULL;
    if (clg_graph_status(g) == CLG_OK && clg_session_new(g, &so, &s) == CLG_OK)
      CHECK_OK(clg_session_run_outputs(s, 3, xs, v, 3, dx, got[d], 0, NULL));
    else
      CHECK_MSG(false, "float32 gradients on %s: %s", devices[d], clg_last_error());
    clg_session_free(s);
    clg_graph_free(g);
  }
  for (int i = 0; i < 3; i++) {
    if (!got[0][i] || !got[1][i])
      continue;
    const float *a = clg_tensor_const_data(got[0][i]), *c = clg_tensor_const_data(got[1][i]);
    double worst = 0, scale = 0;
    for (size_t k = 0; k < clg_tensor_count(got[0][i]); k++) {
      worst = fmax(worst, fabs((double)a[k] - (double)c[k]));
      scale = fmax(scale, fabs((double)a[k]));
    }
    CHECK_MSG(scale > 0 && worst <= 1e-4 * scale,
              "float32 gradient %d: GPU:0 differs by %g (scale %g)", i, worst, scale);
    clg_tensor_free(got[0][i]);
    clg_tensor_free(got[1][i]);
  }
  for (int i = 0; i < 3; i++)
    clg_tensor_free(v[i]);
#endif
}

/* An empty batch: the gradients of an empty convolution and pooling are empty, the filter's
 * and bias's are zeros, on both device kinds. */
static void test_empty_batch(void)
{
  int64_t xd[4] = {0, 4, 4, 2}, fd[4] = {3, 3, 2, 3}, bd[1] = {3};
  const int64_t s1[4] = {1, 1, 1, 1}, k3[4] = {1, 3, 3, 1};
  const char *devices[2] = {"/cpu:0", "/device:GPU:0"};
#ifdef CLG_HAVE_CLBLAST
  int ndev = 2;
#else
  int ndev = 1; /* Conv2D has no OpenCL kernel in this build */
#endif
  for (int d = 0; d < ndev; d++) {
    clg_graph *g = clg_graph_new();
    CHECK_OK(clg_graph_push_device(g, devices[d]));
    clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 4, xd);
    clg_node *f = clg_placeholder(g, "f", CLG_FLOAT32, 4, fd);
    clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 1, bd);
    clg_node *h = clg_bias_add(g, NULL, clg_conv2d(g, NULL, x, f, s1, "SAME", NULL), b);
    h = clg_lrn(g, NULL, clg_max_pool(g, NULL, h, k3, s1, "SAME"), 1, 1.0, 0.5, 0.75);
    clg_node *y = clg_sum(g, NULL, clg_avg_pool(g, NULL, h, k3, s1, "SAME"), 4,
                          (int64_t[]){0, 1, 2, 3}, false);
    clg_output ys = clg_out(y, 0), xs[3] = {clg_out(x, 0), clg_out(f, 0), clg_out(b, 0)}, dx[3];
    CHECK_OK(clg_gradients(g, 1, &ys, NULL, 3, xs, NULL, dx));
    CHECK_OK(clg_graph_pop_device(g));
    clg_tensor *v[3] = {clg_tensor_new(CLG_FLOAT32, 4, xd, NULL),
                        clg_tensor_new(CLG_FLOAT32, 4, fd, NULL),
                        clg_tensor_new(CLG_FLOAT32, 1, bd, NULL)};
    clg_test_fill_random(CLG_FLOAT32, clg_tensor_data(v[1]), clg_tensor_count(v[1]));
    clg_test_fill_random(CLG_FLOAT32, clg_tensor_data(v[2]), clg_tensor_count(v[2]));
    clg_tensor *out[3] = {NULL};
    clg_session_options so;
    clg_session_options_init(&so);
    so.gpu_options.allow_growth = 1;
    clg_session *s = NULL;
    if (clg_graph_status(g) == CLG_OK && clg_session_new(g, &so, &s) == CLG_OK)
      CHECK_OK(clg_session_run_outputs(s, 3, xs, v, 3, dx, out, 0, NULL));
    else
      CHECK_MSG(false, "empty batch on %s: %s", devices[d], clg_last_error());
    if (out[0] && out[1] && out[2]) {
      CHECK(clg_tensor_count(out[0]) == 0);
      const float *df = clg_tensor_const_data(out[1]), *db = clg_tensor_const_data(out[2]);
      bool zeros = clg_tensor_count(out[1]) == 54 && clg_tensor_count(out[2]) == 3;
      for (size_t k = 0; zeros && k < 54; k++)
        zeros = df[k] == 0;
      for (size_t k = 0; zeros && k < 3; k++)
        zeros = db[k] == 0;
      CHECK_MSG(zeros, "empty batch on %s: the filter's and bias's gradients are not zeros",
                devices[d]);
    }
    for (int i = 0; i < 3; i++) {
      clg_tensor_free(out[i]);
      clg_tensor_free(v[i]);
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
}

/* --- the CIFAR-10 model (cifar10.inference + loss), tiny ------------------------------------ */

enum { CIFAR_VARS = 10 };

static clg_node *cifar_layer(clg_graph *g, clg_node *in, clg_node *w, clg_node *b, bool relu)
{
  clg_node *y = clg_add(g, NULL, clg_matmul(g, NULL, in, w, false, false), b);
  return relu ? clg_relu(g, NULL, y) : y;
}

/* The tutorial's model on a [2,8,8,3] batch with 4 channels per conv layer and local layers of
 * 8 and 6: its loss is the mean cross-entropy plus 0.004 * L2Loss of local3's and local4's
 * weights. The weights are placeholders w[0..9]. */
static clg_node *cifar_loss(clg_graph *g, clg_node **w)
{
  static const int64_t shapes[CIFAR_VARS][4] = {{5, 5, 3, 4}, {4}, {5, 5, 4, 4}, {4}, {16, 8}, {8},
                                                {8, 6},       {6}, {6, 10},      {10}};
  static const int ranks[CIFAR_VARS] = {4, 1, 4, 1, 2, 1, 2, 1, 2, 1};
  static const char *names[CIFAR_VARS] = {
      "conv1/weights",          "conv1/biases",         "conv2/weights",  "conv2/biases",
      "local3/weights",         "local3/biases",        "local4/weights", "local4/biases",
      "softmax_linear/weights", "softmax_linear/biases"};
  for (int i = 0; i < CIFAR_VARS; i++)
    w[i] = clg_placeholder(g, names[i], CLG_FLOAT64, ranks[i], shapes[i]);
  int64_t xd[4] = {2, 8, 8, 3};
  clg_tensor *xt = clg_tensor_new(CLG_FLOAT64, 4, xd, NULL);
  double *xp = clg_tensor_data(xt);
  for (size_t k = 0; k < clg_tensor_count(xt); k++)
    xp[k] = clg_test_uniform(-1, 1);
  clg_node *images = clg_const(g, "images", xt);
  clg_tensor_free(xt);
  clg_tensor *lt = clg_tensor_new(CLG_INT32, 1, (int64_t[]){2}, (int32_t[]){3, 7});
  clg_node *labels = clg_const(g, "labels", lt);
  clg_tensor_free(lt);
  const int64_t s1[4] = {1, 1, 1, 1}, s2[4] = {1, 2, 2, 1}, k3[4] = {1, 3, 3, 1};
  clg_node *conv1 = clg_relu(
      g, NULL, clg_bias_add(g, NULL, clg_conv2d(g, NULL, images, w[0], s1, "SAME", NULL), w[1]));
  clg_node *pool1 = clg_max_pool(g, "pool1", conv1, k3, s2, "SAME");
  clg_node *norm1 = clg_lrn(g, "norm1", pool1, 4, 1.0, 0.001 / 9.0, 0.75);
  clg_node *conv2 = clg_relu(
      g, NULL, clg_bias_add(g, NULL, clg_conv2d(g, NULL, norm1, w[2], s1, "SAME", NULL), w[3]));
  clg_node *norm2 = clg_lrn(g, "norm2", conv2, 4, 1.0, 0.001 / 9.0, 0.75);
  clg_node *pool2 = clg_max_pool(g, "pool2", norm2, k3, s2, "SAME");
  clg_node *flat = clg_reshape(g, NULL, pool2, 2, (int64_t[]){2, -1});
  clg_node *local3 = cifar_layer(g, flat, w[4], w[5], true);
  clg_node *local4 = cifar_layer(g, local3, w[6], w[7], true);
  clg_node *logits = cifar_layer(g, local4, w[8], w[9], false);
  clg_node *xent = clg_sparse_softmax_cross_entropy_with_logits(g, NULL, logits, labels);
  clg_node *ce = clg_mean(g, "cross_entropy", xent, 1, (int64_t[]){0}, false);
  clg_tensor *dt = clg_tensor_new(CLG_FLOAT64, 0, NULL, (double[]){0.004});
  clg_node *decay = clg_const(g, "wd", dt);
  clg_tensor_free(dt);
  clg_node *l3 = clg_mul(g, NULL, clg_l2_loss(g, NULL, w[4]), decay);
  clg_node *l4 = clg_mul(g, NULL, clg_l2_loss(g, NULL, w[6]), decay);
  return clg_add_n(g, "total_loss", 3, (clg_node *[]){ce, l3, l4});
}

static double run_scalar(clg_session *s, clg_node **w, clg_tensor **wv, clg_node *y)
{
  clg_tensor *out = NULL;
  double v = NAN;
  if (clg_session_run(s, CIFAR_VARS, w, wv, 1, &y, &out) == CLG_OK)
    v = *(const double *)clg_tensor_const_data(out);
  else
    CHECK_MSG(false, "loss run: %s", clg_last_error());
  clg_tensor_free(out);
  return v;
}

static void test_cifar_model(void)
{
  const char *devices[2] = {"/cpu:0", "/device:GPU:0"};
  for (int d = 0; d < 2; d++) {
    clg_graph *g = clg_graph_new();
    CHECK_OK(clg_graph_push_device(g, devices[d]));
    clg_node *w[CIFAR_VARS];
    clg_node *loss = cifar_loss(g, w);
    clg_output ys = clg_out(loss, 0), xs[CIFAR_VARS], dw[CIFAR_VARS];
    for (int i = 0; i < CIFAR_VARS; i++)
      xs[i] = clg_out(w[i], 0);
    CHECK_OK(clg_gradients(g, 1, &ys, NULL, CIFAR_VARS, xs, NULL, dw));
    CHECK_OK(clg_graph_pop_device(g));
    clg_session_options so;
    clg_session_options_init(&so);
    so.gpu_options.allow_growth = 1;
#ifndef CLG_HAVE_CLBLAST /* the convolutions and matmuls fall back to CPU:0 in this build */
    so.allow_soft_placement = 1;
#endif
    clg_session *s = NULL;
    if (clg_graph_status(g) != CLG_OK || clg_session_new(g, &so, &s) != CLG_OK) {
      CHECK_MSG(false, "CIFAR-10 model on %s: %s", devices[d], clg_last_error());
      clg_graph_free(g);
      continue;
    }
    clg_tensor *wv[CIFAR_VARS];
    for (int i = 0; i < CIFAR_VARS; i++) {
      int64_t dims[4];
      for (int k = 0; k < clg_node_rank(w[i]); k++)
        dims[k] = clg_node_dim(w[i], k);
      wv[i] = clg_tensor_new(CLG_FLOAT64, clg_node_rank(w[i]), dims, NULL);
      double *p = clg_tensor_data(wv[i]);
      bool bias = clg_node_rank(w[i]) == 1;
      for (size_t k = 0; k < clg_tensor_count(wv[i]); k++)
        p[k] = bias ? 0.1 + clg_test_uniform(-0.05, 0.05) : clg_test_uniform(-0.5, 0.5);
    }
    clg_tensor *grads[CIFAR_VARS] = {NULL};
    bool all = true;
    for (int i = 0; i < CIFAR_VARS; i++) {
      CHECK_MSG(dw[i].node != NULL, "no gradient for %s", clg_node_name(w[i]));
      all = all && dw[i].node != NULL;
    }
    clg_output feeds[CIFAR_VARS];
    for (int i = 0; i < CIFAR_VARS; i++)
      feeds[i] = clg_out(w[i], 0);
    if (all)
      CHECK_OK(clg_session_run_outputs(s, CIFAR_VARS, feeds, wv, CIFAR_VARS, dw, grads, 0, NULL));
    double worst = 0;
    int checked = 0;
    const double h = 1e-6;
    for (int i = 0; all && grads[0] && i < CIFAR_VARS; i++) {
      size_t n = clg_tensor_count(wv[i]);
      double *p = clg_tensor_data(wv[i]);
      const double *ana = clg_tensor_const_data(grads[i]);
      for (int sample = 0; sample < 4; sample++) {
        size_t k = sample == 0 ? 0 : (size_t)(clg_test_rand() % n);
        double keep = p[k];
        p[k] = keep + h;
        double lp = run_scalar(s, w, wv, loss);
        p[k] = keep - h;
        double lm = run_scalar(s, w, wv, loss);
        p[k] = keep;
        double num = (lp - lm) / (2 * h);
        double err = fabs(ana[k] - num) / fmax(1.0, fabs(num));
        CHECK_MSG(err < 1e-6, "%s[%zu] on %s: analytic %.10g, numeric %.10g", clg_node_name(w[i]),
                  k, devices[d], ana[k], num);
        worst = fmax(worst, err);
        checked++;
      }
    }
    CHECK_MSG(checked == 4 * CIFAR_VARS, "checked %d coordinates on %s", checked, devices[d]);
    for (int i = 0; i < CIFAR_VARS; i++) {
      clg_tensor_free(wv[i]);
      clg_tensor_free(grads[i]);
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
}

static clg_node *const_sizes(clg_graph *g, const int64_t *v)
{
  int32_t v32[4] = {(int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[3]};
  clg_tensor *t = clg_tensor_new(CLG_INT32, 1, (int64_t[]){4}, v32);
  clg_node *n = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return n;
}

/* Gradient ops with bad inputs: errors name the node; nothing runs. */
static void test_grad_op_errors(void)
{
  int64_t d4[4] = {1, 4, 4, 2}, f4[4] = {3, 3, 2, 2}, bad[4] = {1, 3, 3, 2};
  const int64_t s1[4] = {1, 1, 1, 1}, k3[4] = {1, 3, 3, 1};
  clg_graph *g = clg_graph_new();
  clg_node *sizes = clg_placeholder(g, "sizes", CLG_INT32, 1, (int64_t[]){4});
  clg_node *f = clg_placeholder(g, "f", CLG_FLOAT32, 4, f4);
  clg_node *dy = clg_placeholder(g, "dy", CLG_FLOAT32, 4, d4);
  clg_attr at[2] = {clg_attr_int_list("strides", 4, s1), clg_attr_string("padding", "SAME")};
  CHECK(clg_op(g, "Conv2DBackpropInput", "bi", 3,
               (clg_output[]){clg_out(sizes, 0), clg_out(f, 0), clg_out(dy, 0)}, 2, at) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "Conv2DBackpropInput 'bi': input_sizes (input 0) must be a "
                                     "constant");
  clg_graph_free(g);

  g = clg_graph_new();
  f = clg_placeholder(g, "f", CLG_FLOAT32, 4, f4);
  dy = clg_placeholder(g, "dy", CLG_FLOAT32, 4, bad);
  clg_node *cs = const_sizes(g, d4);
  CHECK(clg_op(g, "Conv2DBackpropInput", "bi", 3,
               (clg_output[]){clg_out(cs, 0), clg_out(f, 0), clg_out(dy, 0)}, 2, at) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "Conv2DBackpropInput 'bi': out_backprop is [1,3,3,2] but "
                                     "the convolution's output is [1,4,4,2]");
  clg_graph_free(g);

  g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 4, d4);
  dy = clg_placeholder(g, "dy", CLG_FLOAT32, 4, bad);
  clg_attr pa[3] = {clg_attr_int_list("ksize", 4, k3), clg_attr_int_list("strides", 4, s1),
                    clg_attr_string("padding", "SAME")};
  CHECK(clg_op(g, "MaxPoolGrad", "mpg", 3,
               (clg_output[]){clg_out(x, 0), clg_out(x, 0), clg_out(dy, 0)}, 3, pa) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "MaxPoolGrad 'mpg': grad is [1,3,3,2] but the pooling's "
                                     "output is [1,4,4,2]");
  clg_graph_free(g);

  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 4, d4);
  dy = clg_placeholder(g, "dy", CLG_FLOAT32, 4, bad);
  CHECK(clg_op(g, "LRNGrad", "lg", 3, (clg_output[]){clg_out(dy, 0), clg_out(x, 0), clg_out(x, 0)},
               0, NULL) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "LRNGrad 'lg': input_grads (float [1,3,3,2]) and "
                                     "input_image (float [1,4,4,2])");
  clg_graph_free(g);

  /* A gradient through the cross-entropy's backprop output (a second derivative). */
  g = clg_graph_new();
  clg_node *logits = clg_placeholder(g, "logits", CLG_FLOAT64, 2, (int64_t[]){2, 3});
  clg_tensor *lt = clg_tensor_new(CLG_INT32, 1, (int64_t[]){2}, (int32_t[]){0, 1});
  clg_node *labels = clg_const(g, "labels", lt);
  clg_tensor_free(lt);
  clg_node *xe = clg_sparse_softmax_cross_entropy_with_logits(g, "xent", logits, labels);
  clg_output ys = clg_out(xe, 1), xs = clg_out(logits, 0), dx;
  CHECK_CODE(clg_gradients(g, 1, &ys, NULL, 1, &xs, NULL, &dx), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "SparseSoftmaxCrossEntropyWithLogits 'xent': no gradient "
                                   "through output 1");
  /* The labels get none (they are not differentiable), the loss's logits do. */
  clg_output ys0 = clg_out(xe, 0), two[2] = {clg_out(logits, 0), clg_out(labels, 0)}, d2[2];
  CHECK_OK(clg_gradients(g, 1, &ys0, NULL, 2, two, NULL, d2));
  CHECK(d2[0].node != NULL && d2[1].node == NULL);
  clg_graph_free(g);
}

/* Whether t holds exactly want (NaN where want is NaN, infinities with their sign). */
static bool same_values(const clg_tensor *t, const double *want, size_t n, const char *what)
{
  CHECK_MSG(t && clg_tensor_count(t) == n, "%s: %zu elements, want %zu", what,
            t ? clg_tensor_count(t) : 0, n);
  for (size_t i = 0; t && i < n && i < clg_tensor_count(t); i++) {
    double v = clg_test_elem(t, i);
    if (!(v == want[i] || (isnan(v) && isnan(want[i])))) {
      CHECK_MSG(false, "%s: element %zu is %g, want %g", what, i, v, want[i]);
      return false;
    }
  }
  return t != NULL;
}

/* Maximum's gradient is TensorFlow 1.x's _MaximumGrad (issue 21): a = x >= y gets dy, b the
 * rest, by a select, so infinities and NaN in dy reach one input and never the other (a
 * product with a 0/1 mask gave inf * 0 = NaN), ties go to x, and a NaN in x or y sends dy to
 * y. Both dtypes, on CPU:0 and a stand-in GPU, and with y broadcast (summed over the rows). */
static void test_maximum_nonfinite(void)
{
  const double inf = INFINITY, nan = NAN;
  /* x, y, dy and the expected da, db per element. */
  static const double x[] = {inf, 1, 2, nan, 1, -inf, -0.0, 3, 4, -inf};
  static const double y[] = {1, inf, 2, 1, nan, -inf, 0.0, -5, 1, nan};
  static const double dy[] = {inf, inf, inf, 5, 7, -inf, 2, 3, nan, inf};
  static const double da[] = {inf, 0, inf, 0, 0, -inf, 2, 3, nan, 0};
  static const double db[] = {0, inf, 0, 5, 7, 0, 0, 0, 0, inf};
  /* x [2,3] against y [3]: x >= y is [[T,F,F],[T,T,F]]. */
  static const double bx[] = {inf, 1, 2, 1, inf, -inf}, by[] = {1, inf, nan};
  static const double bdy[] = {inf, 2, 3, 4, 5, 6}, bda[] = {inf, 0, 0, 4, 5, 0}, bdb[] = {0, 2, 9};
  const char *devices[2] = {"/cpu:0", "/device:GPU:1"};
  for (int d = 0; d < 2; d++)
    for (int f64 = 0; f64 < 2; f64++)
      for (int bc = 0; bc < 2; bc++) {
        clg_dtype dt = f64 ? CLG_FLOAT64 : CLG_FLOAT32;
        int64_t n = 10, xd[2] = {bc ? 2 : n, 3}, yd[1] = {bc ? 3 : n};
        int xr = bc ? 2 : 1;
        clg_graph *g = clg_graph_new();
        CHECK_OK(clg_graph_push_device(g, devices[d]));
        clg_node *xn = clg_placeholder(g, "x", dt, xr, xd);
        clg_node *yn = clg_placeholder(g, "y", dt, 1, yd);
        clg_node *m = clg_maximum(g, "m", xn, yn);
        clg_node *gy = clg_placeholder(g, "gy", dt, xr, xd);
        clg_output ys = clg_out(m, 0), gys = clg_out(gy, 0),
                   xs[2] = {clg_out(xn, 0), clg_out(yn, 0)}, dx[2] = {{NULL, 0}, {NULL, 0}};
        CHECK_OK(clg_gradients(g, 1, &ys, &gys, 2, xs, NULL, dx));
        CHECK_OK(clg_graph_pop_device(g));
        size_t nx = bc ? 6 : 10, ny = bc ? 3 : 10;
        clg_tensor *in[3] = {clg_tensor_new(dt, xr, xd, NULL), clg_tensor_new(dt, 1, yd, NULL),
                             clg_tensor_new(dt, xr, xd, NULL)};
        for (size_t i = 0; i < nx; i++) {
          double xv = bc ? bx[i] : x[i], gv = bc ? bdy[i] : dy[i];
          if (f64) {
            ((double *)clg_tensor_data(in[0]))[i] = xv;
            ((double *)clg_tensor_data(in[2]))[i] = gv;
          } else {
            ((float *)clg_tensor_data(in[0]))[i] = (float)xv;
            ((float *)clg_tensor_data(in[2]))[i] = (float)gv;
          }
        }
        for (size_t i = 0; i < ny; i++) {
          double yv = bc ? by[i] : y[i];
          if (f64)
            ((double *)clg_tensor_data(in[1]))[i] = yv;
          else
            ((float *)clg_tensor_data(in[1]))[i] = (float)yv;
        }
        clg_session_options so;
        clg_session_options_init(&so);
        so.gpu_options.allow_growth = 1;
        clg_session *s = NULL;
        clg_tensor *out[2] = {NULL, NULL};
        clg_output feeds[3] = {xs[0], xs[1], gys};
        if (clg_graph_status(g) == CLG_OK && clg_session_new(g, &so, &s) == CLG_OK)
          CHECK_OK(clg_session_run_outputs(s, 3, feeds, in, 2, dx, out, 0, NULL));
        else
          CHECK_MSG(false, "Maximum's gradient on %s: %s", devices[d], clg_last_error());
        for (int k = 0; k < 2; k++) {
          char what[96];
          snprintf(what, sizeof what, "d/d%s of Maximum (%s%s) on %s", k ? "y" : "x",
                   clg_dtype_name(dt), bc ? ", y broadcast" : "", devices[d]);
          const double *want = k ? (bc ? bdb : db) : (bc ? bda : da);
          if (same_values(out[k], want, k ? ny : nx, what))
            clg_test_passed++;
        }
        for (int i = 0; i < 3; i++)
          clg_tensor_free(in[i]);
        clg_tensor_free(out[0]);
        clg_tensor_free(out[1]);
        clg_session_free(s);
        clg_graph_free(g);
      }
}

static void test_none_and_errors(void)
{
  int64_t d2[2] = {2, 2};
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT64, 2, d2);
  clg_node *b = clg_placeholder(g, "b", CLG_FLOAT64, 2, d2);
  clg_node *y = clg_square(g, "y", a);
  clg_output ys = clg_out(y, 0), xs[2] = {clg_out(a, 0), clg_out(b, 0)}, dx[2];
  CHECK_OK(clg_gradients(g, 1, &ys, NULL, 2, xs, NULL, dx));
  CHECK(dx[0].node != NULL && dx[1].node == NULL); /* b: TensorFlow's None */
  CHECK_CONTAINS(clg_node_name(dx[0].node), "gradients/y_grad/");
  /* An op without a gradient on the path is named. */
  clg_node *r = clg_relu_grad(g, "rg", y, a);
  clg_output rs = clg_out(r, 0);
  CHECK_CODE(clg_gradients(g, 1, &rs, NULL, 1, xs, NULL, dx), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "No gradient defined for operation 'rg' (op type: ReluGrad)");
  CHECK(dx[0].node == NULL);
  clg_graph_free(g);
  /* A wrong grad_ys shape; foreign outputs. */
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT64, 2, d2);
  y = clg_neg(g, "y", a);
  clg_node *bad = clg_placeholder(g, "bad", CLG_FLOAT64, 1, d2);
  ys = clg_out(y, 0);
  clg_output gys = clg_out(bad, 0), xa = clg_out(a, 0);
  CHECK_CODE(clg_gradients(g, 1, &ys, &gys, 1, &xa, NULL, dx), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "grad_ys[0] ('bad') does not match ys[0] ('y')");
  clg_output far = {NULL, 0};
  CHECK_CODE(clg_gradients(g, 1, &ys, NULL, 1, &far, NULL, dx), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_gradients(NULL, 1, &ys, NULL, 1, &xa, NULL, dx), CLG_INVALID_ARGUMENT);
  clg_graph_free(g);
}

/* Placement: by default the scope open at the call; with colocation, the forward op's. */
static void test_placement_rules(void)
{
  int64_t d2[2] = {2, 2};
  for (int colocate = 0; colocate < 2; colocate++) {
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, d2);
    clg_node *y[2];
    for (int t = 0; t < 2; t++) {
      char dev[32], name[16];
      snprintf(dev, sizeof dev, "/device:GPU:%d", t + 1);
      snprintf(name, sizeof name, "tower%d", t);
      CHECK_OK(clg_graph_push_device(g, dev));
      y[t] = clg_square(g, name, clg_relu(g, NULL, x));
      CHECK_OK(clg_graph_pop_device(g));
    }
    CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
    clg_gradients_options opt;
    clg_gradients_options_init(&opt);
    opt.colocate_gradients_with_ops = colocate;
    clg_output ys[2] = {clg_out(y[0], 0), clg_out(y[1], 0)}, xs = clg_out(x, 0), dx;
    CHECK_OK(clg_gradients(g, 2, ys, NULL, 1, &xs, &opt, &dx));
    CHECK_OK(clg_graph_pop_device(g));
    clg_session_options so;
    clg_session_options_init(&so);
    so.log_device_placement = 1;
    clg_session *s = NULL;
    clg_test_log_capture_start(CLG_LOG_INFO);
    CHECK_OK(clg_session_new(g, &so, &s));
    const char *log = clg_test_log_capture_stop();
    clg_node *sq = clg_graph_find(g, "gradients/tower1_grad/Mul_1");
    CHECK_MSG(sq != NULL, "no gradients/tower1_grad/Mul_1 in the graph");
    if (s && sq) {
      const char *want = colocate ? "/job:localhost/replica:0/task:0/device:GPU:2"
                                  : "/job:localhost/replica:0/task:0/device:CPU:0";
      CHECK_STR(clg_session_node_device(s, sq), want);
      char line[160];
      snprintf(line, sizeof line, "gradients/tower1_grad/Mul_1: %s", want);
      CHECK_CONTAINS(log, line);
      /* Both towers' gradients meet in one AddN for x. */
      CHECK(dx.node && strcmp(clg_node_op(dx.node), "AddN") == 0);
      clg_tensor *xv = clg_tensor_new(CLG_FLOAT32, 2, d2, (float[]){1, -2, 3, 0.5f});
      clg_tensor *out = NULL;
      CHECK_OK(clg_session_run_outputs(s, 1, &xs, &xv, 1, &dx, &out, 0, NULL));
      if (out) { /* two towers of d relu(x)^2 / dx = 2 relu(x) each */
        const float *o = clg_tensor_const_data(out);
        CHECK(o[0] == 4 && o[1] == 0 && o[2] == 12 && o[3] == 2);
      }
      clg_tensor_free(out);
      clg_tensor_free(xv);
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_gradients");
  clg_test_seed(7);
  test_finite_differences();
  test_conv_chunks();
  test_float_cpu_vs_gpu();
  test_empty_batch();
  test_cifar_model();
  test_grad_op_errors();
  test_maximum_nonfinite();
  test_none_and_errors();
  test_placement_rules();
  return clg_test_summary("test_gradients");
}
