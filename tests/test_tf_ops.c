/* The ops TensorFlow graphs use (issue 23): each on CPU:0 and on a PoCL stand-in GPU against a
 * naive double-precision reference written here from TensorFlow's documented semantics, the
 * two device kinds against each other, gradients against central finite differences in
 * float64 on both kinds, and bad input per op (clear errors naming the node). */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static clg_session_options session_opt;

/* --- tensors ---------------------------------------------------------------------------- */

static clg_tensor *rand_tensor(clg_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    clg_test_set_elem(t, i, clg_test_uniform(lo, hi));
  return t;
}

static int irand(int lo, int hi) { return lo + (int)(clg_test_rand() % (unsigned)(hi - lo + 1)); }

/* A Const int32 vector (or scalar with n < 0) of the values v. */
static clg_node *const_i32(clg_graph *g, int n, const int64_t *v)
{
  int32_t w[16];
  for (int i = 0; i < (n < 0 ? 1 : n); i++)
    w[i] = (int32_t)v[i];
  clg_tensor *t = clg_tensor_new(CLG_INT32, n < 0 ? 0 : 1, (int64_t[]){n}, w);
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

/* A Const int32 tensor of the shape given. */
static clg_node *const_i32_shaped(clg_graph *g, int rank, const int64_t *dims, const int64_t *v)
{
  size_t n = clg_test_count(rank, dims);
  int32_t w[64];
  for (size_t i = 0; i < n; i++)
    w[i] = (int32_t)v[i];
  clg_tensor *t = clg_tensor_new(CLG_INT32, rank, dims, w);
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

/* --- one op on both device kinds --------------------------------------------------------- */

typedef clg_test_build_fn build_fn;

/* Every element within tol (relative to max(1, |ref|)) of ref, and the shape as given. */
static bool close_to(const clg_tensor *t, const double *ref, int rank, const int64_t *dims,
                     double tol, const char *what, const char *dev)
{
  bool shape_ok = t && clg_tensor_rank(t) == rank;
  for (int k = 0; shape_ok && k < rank; k++)
    shape_ok = clg_tensor_dim(t, k) == dims[k];
  if (!shape_ok) {
    CHECK_MSG(false, "%s on %s: shape differs (rank %d, want %d)", what, dev,
              t ? clg_tensor_rank(t) : -1, rank);
    return false;
  }
  size_t n = clg_test_count(rank, dims);
  for (size_t i = 0; i < n; i++) {
    double v = clg_test_elem(t, i), err = fabs(v - ref[i]);
    bool ok = err <= tol * fmax(1.0, fabs(ref[i])) || (isnan(v) && isnan(ref[i])) ||
              (isinf(v) && v == ref[i]);
    if (!ok) {
      CHECK_MSG(false, "%s on %s: element %zu is %.9g, want %.9g", what, dev, i, v, ref[i]);
      return false;
    }
  }
  clg_test_passed++;
  return true;
}

/* Runs on both kinds and checks both against ref (of the shape given) and each other. */
static void check_op(const char *what, int nin, clg_tensor *const *inputs, build_fn fn,
                     const void *ctx, const double *ref, int rank, const int64_t *dims, double tol)
{
  clg_tensor *out[2];
  char err[1024];
  clg_code code = clg_test_run_both(&session_opt, nin, inputs, fn, ctx, 0, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK && close_to(out[0], ref, rank, dims, tol, what, "CPU:0")) {
    close_to(out[1], ref, rank, dims, tol, what, "GPU");
    double *cpu = clg_test_values(out[0]);
    close_to(out[1], cpu, rank, dims, 2 * tol, what, "GPU vs CPU:0");
    free(cpu);
  }
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
}

/* A build error: the graph's status is INVALID_ARGUMENT and its text holds `text`. */
static void expect_build_error(clg_graph *g, const char *text, int line)
{
  CHECK_MSG(clg_graph_status(g) == CLG_INVALID_ARGUMENT, "line %d: status %s (%s)", line,
            clg_code_name(clg_graph_status(g)), clg_graph_error(g));
  CHECK_MSG(strstr(clg_graph_error(g), text) != NULL, "line %d: error \"%s\" lacks \"%s\"", line,
            clg_graph_error(g), text);
  clg_graph_free(g);
}
#define EXPECT_BUILD_ERROR(g, text) expect_build_error(g, text, __LINE__)

/* --- gradients against finite differences ------------------------------------------------ */

enum { INIT_UNIFORM, INIT_AWAY, INIT_DISTINCT };

typedef struct gcase {
  const char *name;
  int nx;
  int rank[2];
  int64_t dims[2][4];
  build_fn build;
  const void *ctx;
  int init;
} gcase;

static double *run_y(clg_session *s, int nx, clg_node *const *x, clg_tensor *const *xv, clg_node *y,
                     size_t *ny)
{
  clg_tensor *out = NULL;
  if (clg_session_run(s, nx, x, xv, 1, &y, &out) != CLG_OK) {
    CHECK_MSG(false, "forward run: %s", clg_last_error());
    return NULL;
  }
  *ny = clg_tensor_count(out);
  double *v = clg_test_values(out);
  clg_tensor_free(out);
  return v;
}

/* The whole Jacobian of y over each x, analytic (one run per unit grad_ys) against central
 * differences, in float64 on `device`: the largest relative error must stay under 1e-6. */
static void check_grad(const gcase *fc, const char *device)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, device));
  clg_node *x[2];
  for (int i = 0; i < fc->nx; i++)
    x[i] = clg_placeholder(g, NULL, CLG_FLOAT64, fc->rank[i], fc->dims[i]);
  clg_node *y = fc->build(g, x, fc->ctx);
  int64_t ydims[CLG_MAX_RANK] = {0};
  for (int k = 0; y && k < clg_node_rank(y); k++)
    ydims[k] = clg_node_dim(y, k);
  clg_node *gy = clg_placeholder(g, "gy", CLG_FLOAT64, y ? clg_node_rank(y) : 0, ydims);
  clg_output ys = clg_out(y, 0), gys = clg_out(gy, 0), xs[2], dx[2] = {{NULL, 0}, {NULL, 0}};
  for (int i = 0; i < fc->nx; i++)
    xs[i] = clg_out(x[i], 0);
  CHECK_OK(clg_gradients(g, 1, &ys, &gys, fc->nx, xs, NULL, dx));
  CHECK_OK(clg_graph_pop_device(g));
  clg_session *s = NULL;
  if (clg_graph_status(g) != CLG_OK || clg_session_new(g, &session_opt, &s) != CLG_OK) {
    CHECK_MSG(false, "%s on %s: %s", fc->name, device, clg_last_error());
    clg_graph_free(g);
    return;
  }
  clg_tensor *xv[2];
  for (int i = 0; i < fc->nx; i++) {
    xv[i] = clg_tensor_new(CLG_FLOAT64, fc->rank[i], fc->dims[i], NULL);
    double *p = clg_tensor_data(xv[i]);
    size_t n = clg_test_count(fc->rank[i], fc->dims[i]);
    for (size_t k = 0; k < n; k++) {
      p[k] = clg_test_uniform(-1, 1) * (fc->init == INIT_AWAY ? 4 : 1);
      if (fc->init == INIT_AWAY && fabs(p[k]) < 0.1)
        p[k] += p[k] < 0 ? -0.2 : 0.2;
      if (fc->init == INIT_AWAY && fabs(p[k] - 6) < 0.1) /* Relu6's upper kink */
        p[k] -= 0.2;
      if (fc->init == INIT_DISTINCT) /* a ramp, shuffled below: no ties */
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
  free(run_y(s, fc->nx, x, xv, y, &ny));
  clg_tensor *gyv = clg_tensor_new(CLG_FLOAT64, clg_node_rank(y), ydims, NULL);
  double worst = 0;
  for (int i = 0; i < fc->nx; i++) {
    size_t n = clg_test_count(fc->rank[i], fc->dims[i]);
    CHECK_MSG(dx[i].node != NULL, "%s: no gradient for x%d", fc->name, i);
    if (!dx[i].node)
      continue;
    double *ana = calloc(ny * n + 1, sizeof *ana);
    for (size_t j = 0; j < ny; j++) {
      memset(clg_tensor_data(gyv), 0, ny * sizeof(double));
      ((double *)clg_tensor_data(gyv))[j] = 1;
      clg_output fa[3] = {clg_out(x[0], 0), clg_out(fc->nx > 1 ? x[1] : gy, 0), clg_out(gy, 0)};
      clg_tensor *feeds[3] = {xv[0], fc->nx > 1 ? xv[1] : gyv, gyv}, *out = NULL;
      CHECK_OK(clg_session_run_outputs(s, fc->nx + 1, fa, feeds, 1, &dx[i], &out, 0, NULL));
      if (out && clg_tensor_count(out) == n)
        memcpy(ana + j * n, clg_tensor_const_data(out), n * sizeof(double));
      else
        CHECK_MSG(false, "%s on %s: dx%d has the wrong size", fc->name, device, i);
      clg_tensor_free(out);
    }
    const double h = 1e-6;
    double *p = clg_tensor_data(xv[i]);
    for (size_t k = 0; k < n; k++) {
      double keep = p[k];
      size_t n1 = 0, n2 = 0;
      p[k] = keep + h;
      double *yp = run_y(s, fc->nx, x, xv, y, &n1);
      p[k] = keep - h;
      double *ym = run_y(s, fc->nx, x, xv, y, &n2);
      p[k] = keep;
      for (size_t j = 0; yp && ym && j < ny; j++) {
        double num = (yp[j] - ym[j]) / (2 * h);
        worst = fmax(worst, fabs(ana[j * n + k] - num) / fmax(1.0, fabs(num)));
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
}

static void check_grads(const gcase *cases, size_t n)
{
  const char *devices[2] = {"/cpu:0", "/device:GPU:1"};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < n; i++)
      check_grad(&cases[i], devices[d]);
}

/* --- activations ------------------------------------------------------------------------- */

typedef struct act_case {
  const char *op;
  int nin;
  double alpha; /* LeakyRelu, LeakyReluGrad; < -1e9: the default */
} act_case;

static clg_node *build_act(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const act_case *c = ctx;
  clg_output io[2] = {clg_out(in[0], 0), clg_out(c->nin > 1 ? in[1] : NULL, 0)};
  clg_attr a = clg_attr_float("alpha", c->alpha);
  return clg_op(g, c->op, NULL, c->nin, io, c->alpha > -1e9 ? 1 : 0, &a);
}

static double ref_act(const char *op, double alpha, double a, double b)
{
  if (!strcmp(op, "Sigmoid"))
    return 1 / (1 + exp(-a));
  if (!strcmp(op, "Tanh"))
    return tanh(a);
  if (!strcmp(op, "Relu6"))
    return isnan(a) ? a : fmin(fmax(a, 0), 6);
  if (!strcmp(op, "LeakyRelu"))
    return a > 0 ? a : alpha * a;
  if (!strcmp(op, "Abs"))
    return fabs(a);
  if (!strcmp(op, "Sign"))
    return isnan(a) ? a : a > 0 ? 1 : a < 0 ? -1 : 0;
  if (!strcmp(op, "SigmoidGrad"))
    return b * a * (1 - a);
  if (!strcmp(op, "TanhGrad"))
    return b * (1 - a * a);
  if (!strcmp(op, "Relu6Grad"))
    return b > 0 && b < 6 ? a : 0;
  return b > 0 ? a : alpha * a; /* LeakyReluGrad */
}

static void test_activations(void)
{
  const act_case cases[] = {
      {"Sigmoid", 1, -2e9},      {"Tanh", 1, -2e9},      {"Relu6", 1, -2e9},
      {"LeakyRelu", 1, -2e9},    {"LeakyRelu", 1, 0.01}, {"LeakyRelu", 1, 1.5},
      {"Abs", 1, -2e9},          {"Sign", 1, -2e9},      {"SigmoidGrad", 2, -2e9},
      {"TanhGrad", 2, -2e9},     {"Relu6Grad", 2, -2e9}, {"LeakyReluGrad", 2, -2e9},
      {"LeakyReluGrad", 2, 0.3},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const act_case *c = &cases[ci];
    for (int dti = 0; dti < 2; dti++) {
      clg_dtype dt = dti ? CLG_FLOAT64 : CLG_FLOAT32;
      int64_t dims[3] = {irand(1, 4), irand(1, 5), irand(1, 40)};
      clg_tensor *in[2] = {rand_tensor(dt, 3, dims, -9, 9), rand_tensor(dt, 3, dims, -9, 9)};
      /* The edges: 0, the kinks at 0 and 6, NaN and infinities. */
      double edges[] = {0, 6, -0.0, NAN, INFINITY, -INFINITY, 5.999, 6.001};
      size_t n = clg_test_count(3, dims);
      for (size_t k = 0; k < 8 && k < n; k++) {
        clg_test_set_elem(in[0], k, edges[k]);
        clg_test_set_elem(in[1], n - 1 - k, edges[k]);
      }
      double alpha = c->alpha > -1e9 ? c->alpha : 0.2;
      double *ref = malloc(sizeof *ref * n);
      for (size_t k = 0; k < n; k++) {
        ref[k] = ref_act(c->op, alpha, clg_test_elem(in[0], k), clg_test_elem(in[1], k));
        if (dt == CLG_FLOAT32 && !strcmp(c->op, "LeakyReluGrad")) /* alpha as a float */
          ref[k] =
              clg_test_elem(in[1], k) > 0 ? ref[k] : (double)(float)alpha * clg_test_elem(in[0], k);
      }
      char what[64];
      snprintf(what, sizeof what, "%s %s", c->op, clg_dtype_name(dt));
      check_op(what, c->nin, in, build_act, c, ref, 3, dims, dt == CLG_FLOAT32 ? 2e-6 : 1e-12);
      free(ref);
      clg_tensor_free(in[0]);
      clg_tensor_free(in[1]);
    }
  }
  /* Bad input: the gradient ops need one shape. */
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT32, 1, (int64_t[]){3});
  clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 1, (int64_t[]){4});
  clg_op(g, "TanhGrad", "tg", 2, (clg_output[]){{a, 0}, {b, 0}}, 0, NULL);
  EXPECT_BUILD_ERROR(g, "TanhGrad 'tg': inputs float [3] and float [4] must have one");
}

static clg_node *g_sigmoid(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_sigmoid(g, NULL, x[0]);
}
static clg_node *g_tanh(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_tanh(g, NULL, x[0]);
}
static clg_node *g_relu6(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_relu6(g, NULL, x[0]);
}
static clg_node *g_leaky(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_leaky_relu(g, NULL, x[0], 0.1);
}
static clg_node *g_abs(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_abs(g, NULL, x[0]);
}
/* Second order: the gradient of a gradient op (x squared through sigmoid's gradient). */
static clg_node *g_sigmoid2(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_op(g, "SigmoidGrad", NULL, 2, (clg_output[]){{x[0], 0}, {x[1], 0}}, 0, NULL);
}
static clg_node *g_tanh2(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_op(g, "TanhGrad", NULL, 2, (clg_output[]){{x[0], 0}, {x[1], 0}}, 0, NULL);
}

static void test_activation_grads(void)
{
  const gcase cases[] = {
      {"Sigmoid", 1, {2}, {{2, 3}}, g_sigmoid, NULL, INIT_UNIFORM},
      {"Tanh", 1, {2}, {{2, 3}}, g_tanh, NULL, INIT_UNIFORM},
      {"Relu6", 1, {2}, {{3, 4}}, g_relu6, NULL, INIT_AWAY},
      {"LeakyRelu", 1, {2}, {{3, 3}}, g_leaky, NULL, INIT_AWAY},
      {"Abs", 1, {2}, {{2, 3}}, g_abs, NULL, INIT_AWAY},
      {"SigmoidGrad", 2, {1, 1}, {{4}, {4}}, g_sigmoid2, NULL, INIT_UNIFORM},
      {"TanhGrad", 2, {1, 1}, {{4}, {4}}, g_tanh2, NULL, INIT_UNIFORM},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

/* --- AddV2, Minimum ---------------------------------------------------------------------- */

/* Index of the input element that broadcasts to output element i. */
static size_t bcast_index(size_t i, int ro, const int64_t *dout, int ri, const int64_t *di)
{
  size_t idx = 0, stride = 1;
  for (int k = ro - 1; k >= 0; k--) {
    size_t d = i % (size_t)dout[k];
    i /= (size_t)dout[k];
    int ki = k - (ro - ri);
    if (ki < 0)
      continue;
    idx += (di[ki] == 1 ? 0 : d) * stride;
    stride *= (size_t)di[ki];
  }
  return idx;
}

static clg_node *build_binary(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_op(g, ctx, NULL, 2, (clg_output[]){{in[0], 0}, {in[1], 0}}, 0, NULL);
}

static void test_binary_tf(void)
{
  const char *ops[3] = {"AddV2", "Minimum", "Prelu"};
  for (int rep = 0; rep < 18; rep++) {
    const char *op = ops[rep % 3];
    int ro = irand(1, 4);
    int64_t dout[4], da[4], db[4];
    for (int k = 0; k < ro; k++)
      dout[k] = irand(1, 5);
    int ra = rep < 4 ? ro : irand(0, ro), rb = rep < 4 ? ro : irand(0, ro);
    for (int k = 0; k < ra; k++)
      da[k] = rep >= 4 && clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - ra];
    for (int k = 0; k < rb; k++)
      db[k] = rep >= 4 && clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - rb];
    int r = ra > rb ? ra : rb;
    int64_t dr[4];
    for (int k = 0; k < r; k++) {
      int ka = k - (r - ra), kb = k - (r - rb);
      int64_t x = ka >= 0 ? da[ka] : 1, y = kb >= 0 ? db[kb] : 1;
      dr[k] = x == 1 ? y : x;
    }
    clg_dtype dt = rep % 5 == 3 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in[2] = {rand_tensor(dt, ra, da, -2, 2), rand_tensor(dt, rb, db, -2, 2)};
    /* Ties and NaN: Minimum keeps x on a tie, and a NaN in x (y < NaN is false). */
    if (clg_tensor_count(in[0]) > 1 && clg_tensor_count(in[1]) > 1) {
      clg_test_set_elem(in[0], 0, NAN);
      clg_test_set_elem(in[1], 1, NAN);
    }
    size_t n = clg_test_count(r, dr);
    double *ref = malloc(sizeof *ref * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
      double x = clg_test_elem(in[0], bcast_index(i, r, dr, ra, da));
      double y = clg_test_elem(in[1], bcast_index(i, r, dr, rb, db));
      ref[i] = rep % 3 == 1 ? (y < x ? y : x) : rep % 3 == 2 ? (x < 0 ? y * x : x) : x + y;
    }
    char what[64];
    snprintf(what, sizeof what, "%s rep %d", op, rep);
    check_op(what, 2, in, build_binary, op, ref, r, dr, dt == CLG_FLOAT32 ? 1e-6 : 1e-12);
    free(ref);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 1, (int64_t[]){4});
  clg_minimum(g, "m", a, b);
  EXPECT_BUILD_ERROR(g, "Minimum 'm': Incompatible shapes: [2,3] vs. [4]");
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT32, 1, (int64_t[]){3});
  b = clg_placeholder(g, "b", CLG_FLOAT64, 1, (int64_t[]){3});
  clg_add_v2(g, "s", a, b);
  EXPECT_BUILD_ERROR(g, "AddV2 's': dtypes differ: float vs double");
}

/* --- FloorDiv, FloorMod; integer arithmetic on the host ----------------------------------- */

/* Random broadcast-compatible shapes: out (rank *r, dims dr) from a's and b's. */
static void rand_bcast_shapes(int rep, int *ra, int64_t *da, int *rb, int64_t *db, int *r,
                              int64_t *dr)
{
  int ro = irand(1, 4);
  int64_t dout[4];
  for (int k = 0; k < ro; k++)
    dout[k] = irand(1, 5);
  *ra = rep < 3 ? ro : irand(0, ro);
  *rb = rep < 3 ? ro : irand(0, ro);
  for (int k = 0; k < *ra; k++)
    da[k] = rep >= 3 && clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - *ra];
  for (int k = 0; k < *rb; k++)
    db[k] = rep >= 3 && clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - *rb];
  *r = *ra > *rb ? *ra : *rb;
  for (int k = 0; k < *r; k++) {
    int ka = k - (*r - *ra), kb = k - (*r - *rb);
    int64_t x = ka >= 0 ? da[ka] : 1, y = kb >= 0 ? db[kb] : 1;
    dr[k] = x == 1 ? y : x;
  }
}

/* Fills t with k * step, k a random integer in [-kmax, kmax], never 0 when nonzero is set. */
static void fill_steps(clg_tensor *t, int kmax, double step, bool nonzero)
{
  for (size_t i = 0; i < clg_tensor_count(t); i++) {
    int k = irand(-kmax, kmax);
    if (nonzero && k == 0)
      k = clg_test_rand() % 2 ? kmax : -kmax;
    clg_test_set_elem(t, i, k * step);
  }
}

/* Python's // and %: the quotient rounded down, the remainder with y's sign (or 0). */
static double ref_floordiv(double x, double y) { return floor(x / y); }

static double ref_floormod(double x, double y) { return x - floor(x / y) * y; }

/* FloorDiv and FloorMod on floats, CPU:0 and GPU: x and y multiples of 1/2 (small), so the
 * quotient is an exact integer or at least 1/10 away from one, and x - floor(x/y)*y is exact. */
static void test_floor_div_mod(void)
{
  const char *ops[2] = {"FloorDiv", "FloorMod"};
  for (int rep = 0; rep < 16; rep++) {
    const char *op = ops[rep % 2];
    int ra, rb, r;
    int64_t da[4], db[4], dr[4];
    rand_bcast_shapes(rep, &ra, da, &rb, db, &r, dr);
    clg_dtype dt = rep % 4 >= 2 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in[2] = {clg_tensor_new(dt, ra, da, NULL), clg_tensor_new(dt, rb, db, NULL)};
    fill_steps(in[0], 40, 0.5, false);
    fill_steps(in[1], 10, 0.5, true);
    size_t n = clg_test_count(r, dr);
    double *ref = malloc(sizeof *ref * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
      double x = clg_test_elem(in[0], bcast_index(i, r, dr, ra, da));
      double y = clg_test_elem(in[1], bcast_index(i, r, dr, rb, db));
      ref[i] = rep % 2 ? ref_floormod(x, y) : ref_floordiv(x, y);
    }
    char what[64];
    snprintf(what, sizeof what, "%s rep %d", op, rep);
    check_op(what, 2, in, build_binary, op, ref, r, dr, 0);
    free(ref);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* Signs, and a zero divisor on floats: inf and NaN as TensorFlow's (no error). */
  int64_t d6[1] = {6};
  clg_tensor *in[2] = {clg_tensor_new(CLG_FLOAT32, 1, d6, NULL),
                       clg_tensor_new(CLG_FLOAT32, 1, d6, NULL)};
  const double xs[6] = {7, -7, 7, -7, 1, 0}, ys[6] = {2, 2, -2, -2, 0, 0};
  for (int i = 0; i < 6; i++) {
    clg_test_set_elem(in[0], (size_t)i, xs[i]);
    clg_test_set_elem(in[1], (size_t)i, ys[i]);
  }
  check_op("FloorDiv signs", 2, in, build_binary, "FloorDiv",
           (double[]){3, -4, -4, 3, INFINITY, NAN}, 1, d6, 0);
  check_op("FloorMod signs", 2, in, build_binary, "FloorMod", (double[]){1, 1, -1, -1, NAN, NAN}, 1,
           d6, 0);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
}

/* op on CPU:0 alone (integers have host kernels only); *out NULL and the error in err on
 * failure. */
static clg_code run_host(const char *op, clg_tensor *const *inputs, clg_tensor **out, char *err,
                         size_t err_size)
{
  *out = NULL;
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *ph[2];
  for (int i = 0; i < 2; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(inputs[i]); k++)
      dims[k] = clg_tensor_dim(inputs[i], k);
    ph[i] = clg_placeholder(g, NULL, clg_tensor_dtype(inputs[i]), clg_tensor_rank(inputs[i]), dims);
  }
  clg_node *y = build_binary(g, ph, op);
  clg_code code = clg_graph_status(g);
  clg_session *s = NULL;
  if (code == CLG_OK)
    code = clg_session_new(g, &session_opt, &s);
  if (code == CLG_OK)
    code = clg_session_run(s, 2, ph, inputs, 1, &y, out);
  snprintf(err, err_size, "%s", code == CLG_OK ? "" : clg_last_error());
  clg_session_free(s);
  clg_graph_free(g);
  return code;
}

/* int32 and int64 on the host, exactly: FloorDiv and FloorMod (both signs), and the arithmetic
 * the importer folds on shapes (Add, Sub, Mul, AddV2, Maximum, Minimum), broadcast and flat. */
static void test_int_binary(void)
{
  const char *ops[8] = {"FloorDiv", "FloorMod", "Add", "Sub", "Mul", "AddV2", "Maximum", "Minimum"};
  for (int rep = 0; rep < 48; rep++) {
    const char *op = ops[rep % 8];
    int ra, rb, r;
    int64_t da[4], db[4], dr[4];
    rand_bcast_shapes(rep / 8, &ra, da, &rb, db, &r, dr);
    clg_dtype dt = rep % 3 == 2 ? CLG_INT64 : CLG_INT32;
    clg_tensor *in[2] = {clg_tensor_new(dt, ra, da, NULL), clg_tensor_new(dt, rb, db, NULL)};
    fill_steps(in[0], 50, 1, false);
    fill_steps(in[1], 7, 1, true);
    clg_tensor *out = NULL;
    char err[1024], what[64];
    snprintf(what, sizeof what, "%s %s rep %d", op, clg_dtype_name(dt), rep);
    clg_code code = run_host(op, in, &out, err, sizeof err);
    CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
    bool ok = code == CLG_OK && clg_tensor_dtype(out) == dt && clg_tensor_rank(out) == r;
    for (int k = 0; ok && k < r; k++)
      ok = clg_tensor_dim(out, k) == dr[k];
    CHECK_MSG(code != CLG_OK || ok, "%s: dtype or shape differs", what);
    size_t n = clg_test_count(r, dr);
    for (size_t i = 0; ok && i < n; i++) {
      double x = clg_test_elem(in[0], bcast_index(i, r, dr, ra, da));
      double y = clg_test_elem(in[1], bcast_index(i, r, dr, rb, db));
      double want = rep % 8 == 0   ? ref_floordiv(x, y)
                    : rep % 8 == 1 ? ref_floormod(x, y)
                    : rep % 8 == 3 ? x - y
                    : rep % 8 == 4 ? x * y
                    : rep % 8 == 6 ? fmax(x, y)
                    : rep % 8 == 7 ? fmin(x, y)
                                   : x + y;
      double v = clg_test_elem(out, i);
      ok = v == want;
      CHECK_MSG(ok, "%s: element %zu is %.17g, want %.17g (x %g, y %g)", what, i, v, want, x, y);
    }
    if (ok)
      clg_test_passed++;
    clg_tensor_free(out);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* INT32_MIN // -1 wraps to INT32_MIN (as TensorFlow's two's complement), % -1 is 0; a zero
   * divisor is TensorFlow's error. */
  const char *ops2[2] = {"FloorDiv", "FloorMod"};
  for (int j = 0; j < 2; j++) {
    int64_t d2[1] = {2};
    clg_tensor *in[2] = {clg_tensor_new(CLG_INT32, 1, d2, NULL),
                         clg_tensor_new(CLG_INT32, 1, d2, NULL)};
    ((int32_t *)clg_tensor_data(in[0]))[0] = INT32_MIN;
    ((int32_t *)clg_tensor_data(in[0]))[1] = 5;
    ((int32_t *)clg_tensor_data(in[1]))[0] = -1;
    ((int32_t *)clg_tensor_data(in[1]))[1] = -1;
    clg_tensor *out = NULL;
    char err[1024];
    clg_code code = run_host(ops2[j], in, &out, err, sizeof err);
    CHECK_MSG(code == CLG_OK, "%s by -1: %s", ops2[j], err);
    if (code == CLG_OK) {
      const int32_t *o = clg_tensor_data(out);
      CHECK_MSG(o[0] == (j ? 0 : INT32_MIN) && o[1] == (j ? 0 : -5), "%s by -1: %d %d", ops2[j],
                o[0], o[1]);
    }
    clg_tensor_free(out);
    ((int32_t *)clg_tensor_data(in[1]))[1] = 0;
    code = run_host(ops2[j], in, &out, err, sizeof err);
    CHECK_MSG(code == CLG_INVALID_ARGUMENT && strstr(err, "Integer division by zero"),
              "%s by 0: %s (%s)", ops2[j], clg_code_name(code), err);
    clg_tensor_free(out);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
}

static clg_node *g_add_v2(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_add_v2(g, NULL, x[0], x[1]);
}
static clg_node *g_minimum(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_minimum(g, NULL, x[0], x[1]);
}

static clg_node *g_prelu(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_prelu(g, NULL, x[0], x[1]);
}

static void test_binary_tf_grads(void)
{
  const gcase cases[] = {
      {"Prelu", 2, {2, 2}, {{2, 3}, {2, 3}}, g_prelu, NULL, INIT_AWAY},
      {"Prelu broadcast", 2, {3, 1}, {{2, 2, 3}, {3}}, g_prelu, NULL, INIT_AWAY},
      {"AddV2 broadcast", 2, {2, 1}, {{2, 3}, {3}}, g_add_v2, NULL, INIT_UNIFORM},
      {"Minimum", 2, {2, 2}, {{2, 3}, {2, 3}}, g_minimum, NULL, INIT_DISTINCT},
      {"Minimum broadcast", 2, {2, 2}, {{2, 3}, {1, 3}}, g_minimum, NULL, INIT_DISTINCT},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

/* --- Squeeze, ExpandDims, Slice, Pad, PadV2, ConcatV2 ------------------------------------ */

static void unravel(size_t i, int rank, const int64_t *dims, int64_t *idx)
{
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = (int64_t)(i % (size_t)dims[k]);
    i /= (size_t)dims[k];
  }
}

static size_t ravel(int rank, const int64_t *dims, const int64_t *idx)
{
  size_t r = 0;
  for (int k = 0; k < rank; k++)
    r = r * (size_t)dims[k] + (size_t)idx[k];
  return r;
}

typedef struct array_case {
  const char *op;
  int nin;      /* placeholders */
  int nconst;   /* Const int32 inputs after them: values, shapes */
  int crank[2]; /* -1: a scalar */
  int64_t cdims[2][2];
  int64_t cv[2][16];
  int nattrs;
  clg_attr attrs[2];
} array_case;

static clg_node *build_array(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const array_case *c = ctx;
  clg_output io[8];
  int k = 0;
  for (int i = 0; i < c->nin; i++)
    io[k++] = clg_out(in[i], 0);
  for (int i = 0; i < c->nconst; i++)
    io[k++] = clg_out(c->crank[i] < 0    ? const_i32(g, -1, c->cv[i])
                      : c->crank[i] == 1 ? const_i32(g, (int)c->cdims[i][0], c->cv[i])
                                         : const_i32_shaped(g, 2, c->cdims[i], c->cv[i]),
                      0);
  /* PadV2's constant_values after the paddings: placeholder nin - 1 goes last. */
  if (!strcmp(c->op, "PadV2")) {
    clg_output t = io[c->nin - 1];
    io[c->nin - 1] = io[c->nin];
    io[c->nin] = t;
  }
  return clg_op(g, c->op, NULL, k, io, c->nattrs, c->attrs);
}

static clg_dtype pick_dtype(int rep)
{
  return rep % 4 == 1 ? CLG_FLOAT64 : rep % 4 == 3 ? CLG_INT32 : CLG_FLOAT32;
}

static void test_squeeze_expand(void)
{
  for (int rep = 0; rep < 12; rep++) {
    clg_dtype dt = pick_dtype(rep);
    int rank = irand(1, 5);
    int64_t dims[5];
    for (int k = 0; k < rank; k++)
      dims[k] = clg_test_rand() % 2 ? 1 : irand(2, 4);
    clg_tensor *x = rand_tensor(dt, rank, dims, -50, 50);
    double *ref = clg_test_values(x);
    /* Squeeze: every 1 (no attribute), or a chosen subset (negative indices half the time). */
    array_case c = {"Squeeze", 1, 0, {0}, {{0}}, {{0}}, 0, {{0}}};
    int64_t sd[5], od[5];
    int nsd = 0, ro = 0;
    for (int k = 0; k < rank; k++) {
      bool drop = dims[k] == 1 && (rep % 2 == 0 || clg_test_rand() % 2);
      if (drop)
        sd[nsd++] = clg_test_rand() % 2 ? k - rank : k;
      else
        od[ro++] = dims[k];
    }
    if (rep % 2) {
      c.nattrs = 1;
      c.attrs[0] = clg_attr_int_list("squeeze_dims", nsd, sd);
      if (nsd == 0) { /* an empty list squeezes every 1, as TensorFlow's default */
        ro = 0;
        for (int k = 0; k < rank; k++)
          if (dims[k] != 1)
            od[ro++] = dims[k];
      }
    }
    char what[64];
    snprintf(what, sizeof what, "Squeeze rep %d", rep);
    check_op(what, 1, &x, build_array, &c, ref, ro, od, 0);
    /* ExpandDims at every axis in [-rank-1, rank]. */
    int64_t axis = irand(-rank - 1, rank), pos = axis < 0 ? axis + rank + 1 : axis;
    array_case e = {"ExpandDims", 1, 1, {-1}, {{0}}, {{axis}}, 0, {{0}}};
    int64_t ed[6];
    for (int k = 0, j = 0; k <= rank; k++)
      ed[k] = k == pos ? 1 : dims[j++];
    snprintf(what, sizeof what, "ExpandDims axis %lld rep %d", (long long)axis, rep);
    check_op(what, 1, &x, build_array, &e, ref, rank + 1, ed, 0);
    free(ref);
    clg_tensor_free(x);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){1, 3});
  clg_squeeze(g, "s", x, 1, (int64_t[]){1});
  EXPECT_BUILD_ERROR(g, "Squeeze 's': Can not squeeze dim[1], expected a dimension of 1, got 3");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){1, 3});
  clg_squeeze(g, "s", x, 1, (int64_t[]){2});
  EXPECT_BUILD_ERROR(g, "Tried to squeeze dim index 2 for tensor with 2 dimensions.");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){1, 3});
  clg_expand_dims(g, "e", x, -4);
  EXPECT_BUILD_ERROR(g,
                     "ExpandDims 'e': Tried to expand dim index -4 for tensor with 2 dimensions.");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){1, 3});
  clg_node *ax = clg_placeholder(g, "ax", CLG_INT32, 0, NULL);
  clg_op(g, "ExpandDims", "e", 2, (clg_output[]){{x, 0}, {ax, 0}}, 0, NULL);
  EXPECT_BUILD_ERROR(g, "dim (input 1) must be a constant: shapes are static, but 'ax' is a "
                        "Placeholder");
}

static void test_slice_pad(void)
{
  for (int rep = 0; rep < 16; rep++) {
    clg_dtype dt = pick_dtype(rep);
    int rank = irand(1, 4);
    int64_t dims[4], begin[4], size[4], sdims[4], before[4], after[4], pdims[4];
    for (int k = 0; k < rank; k++) {
      dims[k] = irand(1, 5);
      begin[k] = irand(0, (int)dims[k]);
      size[k] = irand(0, (int)(dims[k] - begin[k]));
      sdims[k] = size[k];
      if (rep % 3 == 0 && k == 0) { /* -1: to the end */
        sdims[k] = dims[k] - begin[k];
        size[k] = -1;
      }
      before[k] = irand(0, 3);
      after[k] = irand(0, 3);
      pdims[k] = dims[k] + before[k] + after[k];
    }
    clg_tensor *in[2] = {rand_tensor(dt, rank, dims, -50, 50), rand_tensor(dt, 0, NULL, 1, 9)};
    array_case sc = {"Slice", 1, 2, {1, 1}, {{rank}, {rank}}, {{0}}, 0, {{0}}};
    memcpy(sc.cv[0], begin, sizeof begin);
    memcpy(sc.cv[1], size, sizeof size);
    size_t ns = clg_test_count(rank, sdims), np = clg_test_count(rank, pdims);
    double *ref = malloc(sizeof *ref * (ns + np + 1));
    for (size_t i = 0; i < ns; i++) {
      int64_t idx[4];
      unravel(i, rank, sdims, idx);
      for (int k = 0; k < rank; k++)
        idx[k] += begin[k];
      ref[i] = clg_test_elem(in[0], ravel(rank, dims, idx));
    }
    char what[64];
    snprintf(what, sizeof what, "Slice rep %d", rep);
    check_op(what, 1, in, build_array, &sc, ref, rank, sdims, 0);
    /* Pad (zeros) on even reps, PadV2 (a fed constant) on odd ones. */
    bool v2 = rep % 2;
    array_case pc = {v2 ? "PadV2" : "Pad", v2 ? 2 : 1, 1, {2}, {{rank, 2}}, {{0}}, 0, {{0}}};
    for (int k = 0; k < rank; k++) {
      pc.cv[0][2 * k] = before[k];
      pc.cv[0][2 * k + 1] = after[k];
    }
    double cv = v2 ? clg_test_elem(in[1], 0) : 0;
    for (size_t i = 0; i < np; i++) {
      int64_t idx[4];
      unravel(i, rank, pdims, idx);
      bool inside = true;
      for (int k = 0; k < rank; k++) {
        idx[k] -= before[k];
        inside = inside && idx[k] >= 0 && idx[k] < dims[k];
      }
      ref[i] = inside ? clg_test_elem(in[0], ravel(rank, dims, idx)) : cv;
    }
    snprintf(what, sizeof what, "%s rep %d", pc.op, rep);
    check_op(what, pc.nin, in, build_array, &pc, ref, rank, pdims, 0);
    free(ref);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_slice(g, "s", x, 2, (int64_t[]){1, 2}, (int64_t[]){1, 2});
  EXPECT_BUILD_ERROR(g, "Slice 's': Expected begin[1] in [0, 3] and size[1] in [0, 1], but got 2 "
                        "and 2");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_pad(g, "p", x, 2, (int64_t[]){1, -1}, (int64_t[]){0, 0}, NULL);
  EXPECT_BUILD_ERROR(g, "Pad 'p': Paddings must be non-negative: -1 in dimension 1");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_op(g, "Pad", "p", 2, (clg_output[]){{x, 0}, {const_i32(g, 2, (int64_t[]){1, 1}), 0}}, 0,
         NULL);
  EXPECT_BUILD_ERROR(g, "Pad 'p': The first dimension of paddings must be the rank of inputs[2, "
                        "2]: paddings has shape [2]");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_node *cv = clg_placeholder(g, "cv", CLG_FLOAT64, 0, NULL);
  clg_pad(g, "p", x, 2, (int64_t[]){1, 1}, (int64_t[]){0, 0}, cv);
  EXPECT_BUILD_ERROR(g, "PadV2 'p': constant_values is double but input is float");
}

static void test_concat(void)
{
  for (int rep = 0; rep < 12; rep++) {
    clg_dtype dt = pick_dtype(rep);
    int rank = irand(1, 4), nv = irand(2, 4);
    int axis = irand(0, rank - 1);
    int64_t dims[4][4], odims[4];
    for (int k = 0; k < rank; k++)
      odims[k] = irand(1, 4);
    odims[axis] = 0;
    clg_tensor *in[4];
    for (int i = 0; i < nv; i++) {
      memcpy(dims[i], odims, sizeof odims);
      dims[i][axis] = irand(rep == 5 && i == 1 ? 0 : 1, 4); /* an empty value once */
      odims[axis] += dims[i][axis];
      in[i] = rand_tensor(dt, rank, dims[i], -50, 50);
    }
    int64_t given = rep % 3 == 0 ? axis - rank : axis;
    array_case c = {"ConcatV2", nv, 1, {-1}, {{0}}, {{given}}, 0, {{0}}};
    size_t n = clg_test_count(rank, odims);
    double *ref = malloc(sizeof *ref * (n + 1));
    for (size_t i = 0; i < n; i++) {
      int64_t idx[4];
      unravel(i, rank, odims, idx);
      int v = 0;
      while (idx[axis] >= dims[v][axis])
        idx[axis] -= dims[v++][axis];
      ref[i] = clg_test_elem(in[v], ravel(rank, dims[v], idx));
    }
    char what[64];
    snprintf(what, sizeof what, "ConcatV2 of %d on axis %lld rep %d", nv, (long long)given, rep);
    check_op(what, nv, in, build_array, &c, ref, rank, odims, 0);
    free(ref);
    for (int i = 0; i < nv; i++)
      clg_tensor_free(in[i]);
  }
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 2, (int64_t[]){3, 3});
  clg_concat(g, "c", 2, (clg_node *[]){a, b}, 1);
  EXPECT_BUILD_ERROR(g, "ConcatV2 'c': ConcatOp : Dimensions of inputs should match: shape[0] = "
                        "float [2,3] vs. shape[1] = float [3,3]");
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  b = clg_placeholder(g, "b", CLG_FLOAT32, 2, (int64_t[]){3, 3});
  clg_concat(g, "c", 2, (clg_node *[]){a, b}, 2);
  EXPECT_BUILD_ERROR(g, "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but "
                        "got 2");
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_concat(g, "c", 1, (clg_node *[]){a}, 0);
  EXPECT_BUILD_ERROR(g, "ConcatV2 takes N >= 2 values and an axis, not 2 inputs");
}

static clg_node *g_squeeze(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_squeeze(g, NULL, x[0], 0, NULL));
}
static clg_node *g_expand(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_expand_dims(g, NULL, x[0], -1));
}
static clg_node *g_slice(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_slice(g, NULL, x[0], 3, (int64_t[]){1, 0, 1}, (int64_t[]){1, -1, 2});
}
static clg_node *g_pad(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_pad(g, NULL, x[0], 2, (int64_t[]){1, 0}, (int64_t[]){2, 1}, NULL));
}
static clg_node *g_pad_v2(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  clg_node *cv = clg_const_f64(g, NULL, 0, NULL, (double[]){0.5});
  return clg_square(g, NULL, clg_pad(g, NULL, x[0], 2, (int64_t[]){0, 2}, (int64_t[]){1, 0}, cv));
}
static clg_node *g_concat(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_concat(g, NULL, 2, x, -1));
}

static void test_array_grads(void)
{
  const gcase cases[] = {
      {"Squeeze", 1, {3}, {{2, 1, 3}}, g_squeeze, NULL, INIT_UNIFORM},
      {"ExpandDims", 1, {2}, {{2, 3}}, g_expand, NULL, INIT_UNIFORM},
      {"Slice", 1, {3}, {{3, 2, 4}}, g_slice, NULL, INIT_UNIFORM},
      {"Pad", 1, {2}, {{2, 3}}, g_pad, NULL, INIT_UNIFORM},
      {"PadV2", 1, {2}, {{2, 2}}, g_pad_v2, NULL, INIT_UNIFORM},
      {"ConcatV2", 2, {2, 2}, {{2, 3}, {2, 2}}, g_concat, NULL, INIT_UNIFORM},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

/* --- DepthwiseConv2dNative and its gradients --------------------------------------------- */

/* TensorFlow's SAME/VALID sizes for one spatial dim, computed here independently. */
static void window_dim(int64_t in, int64_t k, int64_t d, int64_t s, bool same, int64_t *out,
                       int64_t *pad)
{
  int64_t eff = (k - 1) * d + 1;
  if (same) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + eff - in;
    *pad = total > 0 ? total / 2 : 0;
  } else {
    *out = in >= eff ? (in - eff) / s + 1 : 0;
    *pad = 0;
  }
}

typedef struct dw_case {
  int64_t x[4], f[4], s, d;
  bool same;
  int op; /* 0 forward, 1 backprop input, 2 backprop filter */
} dw_case;

static clg_node *build_dw(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const dw_case *c = ctx;
  int64_t st[4] = {1, c->s, c->s, 1}, dl[4] = {1, c->d, c->d, 1};
  clg_attr at[3] = {clg_attr_int_list("strides", 4, st),
                    clg_attr_string("padding", c->same ? "SAME" : "VALID"),
                    clg_attr_int_list("dilations", 4, dl)};
  if (c->op == 0)
    return clg_op(g, "DepthwiseConv2dNative", NULL, 2, (clg_output[]){{in[0], 0}, {in[1], 0}}, 3,
                  at);
  if (c->op == 1)
    return clg_op(g, "DepthwiseConv2dNativeBackpropInput", NULL, 3,
                  (clg_output[]){{const_i32(g, 4, c->x), 0}, {in[0], 0}, {in[1], 0}}, 3, at);
  return clg_op(g, "DepthwiseConv2dNativeBackpropFilter", NULL, 3,
                (clg_output[]){{in[0], 0}, {const_i32(g, 4, c->f), 0}, {in[1], 0}}, 3, at);
}

static void test_depthwise(void)
{
  for (int rep = 0; rep < 30; rep++) {
    dw_case c;
    c.op = rep % 3;
    c.same = rep % 2;
    c.s = irand(1, 3);
    c.d = rep % 5 == 4 ? 2 : 1;
    int64_t C = irand(1, 5), M = rep % 4 == 0 ? irand(2, 3) : 1;
    int64_t x[4] = {irand(1, 2), irand(1, 8), irand(1, 8), C};
    int64_t f[4] = {irand(1, 4), irand(1, 4), C, M};
    if (!c.same) { /* VALID needs the window inside the input */
      x[1] += (f[0] - 1) * c.d;
      x[2] += (f[1] - 1) * c.d;
    }
    memcpy(c.x, x, sizeof x);
    memcpy(c.f, f, sizeof f);
    int64_t oh, ow, pt, pl;
    window_dim(x[1], f[0], c.d, c.s, c.same, &oh, &pt);
    window_dim(x[2], f[1], c.d, c.s, c.same, &ow, &pl);
    int64_t y[4] = {x[0], oh, ow, C * M};
    clg_dtype dt = rep % 6 == 5 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *xt = rand_tensor(dt, 4, x, -1, 1), *ft = rand_tensor(dt, 4, f, -1, 1);
    clg_tensor *yt = rand_tensor(dt, 4, y, -1, 1);
    size_t nx = clg_test_count(4, x), nf = clg_test_count(4, f), ny = clg_test_count(4, y);
    /* The reference: a scatter over (output, tap), written from the definition. */
    double *ry = calloc(ny, sizeof(double)), *rx = calloc(nx, sizeof(double)),
           *rf = calloc(nf, sizeof(double));
    for (int64_t b = 0; b < x[0]; b++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++)
          for (int64_t a = 0; a < f[0]; a++)
            for (int64_t e = 0; e < f[1]; e++) {
              int64_t ih = i * c.s - pt + a * c.d, iw = j * c.s - pl + e * c.d;
              if (ih < 0 || ih >= x[1] || iw < 0 || iw >= x[2])
                continue;
              for (int64_t ch = 0; ch < C; ch++)
                for (int64_t m = 0; m < M; m++) {
                  size_t yi = (size_t)(((b * oh + i) * ow + j) * C * M + ch * M + m);
                  size_t xi = (size_t)(((b * x[1] + ih) * x[2] + iw) * C + ch);
                  size_t fi = (size_t)(((a * f[1] + e) * C + ch) * M + m);
                  ry[yi] += clg_test_elem(xt, xi) * clg_test_elem(ft, fi);
                  rx[xi] += clg_test_elem(yt, yi) * clg_test_elem(ft, fi);
                  rf[fi] += clg_test_elem(xt, xi) * clg_test_elem(yt, yi);
                }
            }
    char what[128];
    snprintf(what, sizeof what,
             "%s x [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s %lld d %lld %s",
             c.op == 0   ? "Depthwise"
             : c.op == 1 ? "DepthwiseBackpropInput"
                         : "DepthwiseBackpropFilter",
             (long long)x[0], (long long)x[1], (long long)x[2], (long long)x[3], (long long)f[0],
             (long long)f[1], (long long)f[2], (long long)f[3], (long long)c.s, (long long)c.d,
             c.same ? "SAME" : "VALID");
    double tol = dt == CLG_FLOAT32 ? 1e-5 : 1e-12;
    if (c.op == 0)
      check_op(what, 2, (clg_tensor *[]){xt, ft}, build_dw, &c, ry, 4, y, tol);
    else if (c.op == 1)
      check_op(what, 2, (clg_tensor *[]){ft, yt}, build_dw, &c, rx, 4, x, tol);
    else
      check_op(what, 2, (clg_tensor *[]){xt, yt}, build_dw, &c, rf, 4, f, tol * 4);
    free(ry);
    free(rx);
    free(rf);
    clg_tensor_free(xt);
    clg_tensor_free(ft);
    clg_tensor_free(yt);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  clg_node *f = clg_placeholder(g, "f", CLG_FLOAT32, 4, (int64_t[]){3, 3, 2, 1});
  clg_depthwise_conv2d(g, "dw", x, f, (int64_t[]){1, 1, 1, 1}, "SAME", NULL);
  EXPECT_BUILD_ERROR(g, "DepthwiseConv2dNative 'dw': input and filter must have the same depth: 3 "
                        "vs 2");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 2, 5, 3});
  f = clg_placeholder(g, "f", CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 1});
  clg_depthwise_conv2d(g, "dw", x, f, (int64_t[]){1, 1, 1, 1}, "VALID", NULL);
  EXPECT_BUILD_ERROR(g, "Negative dimension size caused by subtracting 3 from 2");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  f = clg_placeholder(g, "f", CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 1});
  clg_depthwise_conv2d(g, "dw", x, f, (int64_t[]){1, 1, 1, 1}, "EXPLICIT", NULL);
  EXPECT_BUILD_ERROR(g, "explicit_paddings must have 8 values under padding EXPLICIT, not 0");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  f = clg_placeholder(g, "f", CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 1});
  clg_depthwise_conv2d(g, "dw", x, f, (int64_t[]){1, 1, 1, 1}, "REFLECT", NULL);
  EXPECT_BUILD_ERROR(g, "padding must be SAME or VALID, not 'REFLECT'");
}

static clg_node *g_dw(clg_graph *g, clg_node *const *x, const void *ctx)
{
  const dw_case *c = ctx;
  int64_t st[4] = {1, c->s, c->s, 1}, dl[4] = {1, c->d, c->d, 1};
  return clg_depthwise_conv2d(g, NULL, x[0], x[1], st, c->same ? "SAME" : "VALID", dl);
}

static void test_depthwise_grads(void)
{
  static const dw_case same1 = {{0}, {0}, 1, 1, true, 0}, valid2 = {{0}, {0}, 2, 1, false, 0},
                       same2d = {{0}, {0}, 2, 2, true, 0};
  const gcase cases[] = {
      {"Depthwise SAME", 2, {4, 4}, {{1, 4, 4, 2}, {3, 3, 2, 1}}, g_dw, &same1, INIT_UNIFORM},
      {"Depthwise VALID stride 2 multiplier 2",
       2,
       {4, 4},
       {{2, 5, 5, 2}, {2, 2, 2, 2}},
       g_dw,
       &valid2,
       INIT_UNIFORM},
      {"Depthwise SAME stride 2 dilated",
       2,
       {4, 4},
       {{1, 5, 4, 3}, {2, 2, 3, 1}},
       g_dw,
       &same2d,
       INIT_UNIFORM},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

/* --- ResizeBilinear and its gradient ----------------------------------------------------- */

typedef struct rs_case {
  int64_t oh, ow;
  bool align, half;
  int op; /* 0 ResizeBilinear, 1 ResizeBilinearGrad, 2 clg_gradients of ResizeBilinear */
} rs_case;

static clg_node *build_rs(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const rs_case *c = ctx;
  clg_attr at[2] = {clg_attr_bool("align_corners", c->align),
                    clg_attr_bool("half_pixel_centers", c->half)};
  if (c->op == 1)
    return clg_op(g, "ResizeBilinearGrad", NULL, 2, (clg_output[]){{in[0], 0}, {in[1], 0}}, 2, at);
  clg_node *y = clg_resize_bilinear(g, NULL, in[0], c->oh, c->ow, c->align, c->half);
  if (c->op == 0)
    return y;
  clg_output ys = clg_out(y, 0), gy = clg_out(in[1], 0), xs = clg_out(in[0], 0), dx;
  clg_gradients(g, 1, &ys, &gy, 1, &xs, NULL, &dx);
  return dx.node;
}

/* TensorFlow's source coordinate, in float as its kernel computes it. */
static void rs_weights(const rs_case *c, int64_t i, int64_t in, int64_t out, int64_t *lo,
                       int64_t *hi, double *lerp)
{
  float scale = c->align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
  float s = c->half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
  *lo = (int64_t)floorf(s) > 0 ? (int64_t)floorf(s) : 0;
  *hi = (int64_t)ceilf(s) < in - 1 ? (int64_t)ceilf(s) : in - 1;
  *lerp = (double)(s - floorf(s));
}

static void test_resize(void)
{
  /* TensorFlow's own test (resize_bilinear_op_test.cc, TestBilinear2x2To3x3). */
  {
    rs_case c = {3, 3, false, false, 0};
    clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 1}, (float[]){1, 2, 3, 4});
    double want[9] = {1, 5.0 / 3, 2, 7.0 / 3, 3, 10.0 / 3, 3, 11.0 / 3, 4};
    check_op("ResizeBilinear 2x2 to 3x3", 1, &x, build_rs, &c, want, 4, (int64_t[]){1, 3, 3, 1},
             1e-6);
    c.align = true; /* TestBilinearAlignCorners2x2To3x3 */
    double want_ac[9] = {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4};
    check_op("ResizeBilinear 2x2 to 3x3 align_corners", 1, &x, build_rs, &c, want_ac, 4,
             (int64_t[]){1, 3, 3, 1}, 1e-6);
    clg_tensor_free(x);
  }
  for (int rep = 0; rep < 36; rep++) {
    rs_case c;
    c.op = rep % 3;
    c.align = rep % 9 >= 3 && rep % 9 < 6;
    c.half = rep % 9 >= 6;
    int64_t x[4] = {irand(1, 2), irand(1, 6), irand(1, 6), irand(1, 4)};
    c.oh = irand(1, 9);
    c.ow = irand(1, 9);
    if (rep % 4 == 0) { /* the same size: TensorFlow's copy */
      c.oh = x[1];
      c.ow = x[2];
    }
    int64_t y[4] = {x[0], c.oh, c.ow, x[3]};
    clg_dtype dt = rep % 5 == 2 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *xt = rand_tensor(dt, 4, x, -2, 2), *dyt = rand_tensor(CLG_FLOAT32, 4, y, -2, 2);
    size_t nx = clg_test_count(4, x), ny = clg_test_count(4, y);
    double *ry = calloc(ny, sizeof(double)), *rx = calloc(nx, sizeof(double));
    for (int64_t b = 0; b < x[0]; b++)
      for (int64_t i = 0; i < c.oh; i++) {
        int64_t ylo, yhi, xlo, xhi;
        double yl, xl;
        rs_weights(&c, i, x[1], c.oh, &ylo, &yhi, &yl);
        for (int64_t j = 0; j < c.ow; j++) {
          rs_weights(&c, j, x[2], c.ow, &xlo, &xhi, &xl);
          for (int64_t ch = 0; ch < x[3]; ch++) {
            int64_t corner[4][2] = {{ylo, xlo}, {ylo, xhi}, {yhi, xlo}, {yhi, xhi}};
            double w[4] = {(1 - yl) * (1 - xl), (1 - yl) * xl, yl * (1 - xl), yl * xl};
            size_t yi = (size_t)(((b * c.oh + i) * c.ow + j) * x[3] + ch);
            for (int k = 0; k < 4; k++) {
              size_t xi = (size_t)(((b * x[1] + corner[k][0]) * x[2] + corner[k][1]) * x[3] + ch);
              ry[yi] += w[k] * clg_test_elem(xt, xi);
              rx[xi] += w[k] * clg_test_elem(dyt, yi);
            }
          }
        }
      }
    char what[160];
    snprintf(what, sizeof what, "%s %s [%lld,%lld,%lld,%lld] to %lldx%lld%s%s",
             c.op == 0   ? "ResizeBilinear"
             : c.op == 1 ? "ResizeBilinearGrad"
                         : "gradient of",
             clg_dtype_name(dt), (long long)x[0], (long long)x[1], (long long)x[2], (long long)x[3],
             (long long)c.oh, (long long)c.ow, c.align ? " align_corners" : "",
             c.half ? " half_pixel_centers" : "");
    if (c.op == 0)
      check_op(what, 1, &xt, build_rs, &c, ry, 4, y, 2e-6);
    else if (c.op == 1)
      check_op(what, 2, (clg_tensor *[]){dyt, xt}, build_rs, &c, rx, 4, x, 1e-5);
    else
      check_op(what, 2, (clg_tensor *[]){xt, dyt}, build_rs, &c, rx, 4, x, 1e-5);
    free(ry);
    free(rx);
    clg_tensor_free(xt);
    clg_tensor_free(dyt);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 1});
  clg_resize_bilinear(g, "r", x, 3, 3, true, true);
  EXPECT_BUILD_ERROR(g, "ResizeBilinear 'r': If half_pixel_centers is True, align_corners must be "
                        "False.");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 1});
  clg_resize_bilinear(g, "r", x, 0, 3, false, false);
  EXPECT_BUILD_ERROR(g, "output dimensions must be positive, not 0 x 3");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 3, (int64_t[]){2, 2, 1});
  clg_resize_bilinear(g, "r", x, 3, 3, false, false);
  EXPECT_BUILD_ERROR(g, "input must be 4-dimensional, not [2,2,1]");
}

/* --- StridedSlice ------------------------------------------------------------------------ */

/* One entry of a Python slice spec: x[a:b:s], x[i], x[tf.newaxis] or x[...]. */
enum { SL_RANGE, SL_INDEX, SL_NEW, SL_ELLIPSIS };
typedef struct sl_entry {
  int kind;
  int64_t b, e, s;
  bool no_b, no_e; /* a:, :b (the masks) */
} sl_entry;

typedef struct sl_case {
  int n;
  sl_entry en[8];
  int64_t begin[8], end[8], strides[8], masks[5];
} sl_case;

/* TensorFlow's Python front end: entries to begin/end/strides and the five masks. */
static void sl_encode(sl_case *c)
{
  memset(c->masks, 0, sizeof c->masks);
  for (int i = 0; i < c->n; i++) {
    const sl_entry *e = &c->en[i];
    c->begin[i] = e->kind == SL_INDEX || e->kind == SL_RANGE ? e->b : 0;
    c->end[i] = e->kind == SL_INDEX ? e->b + 1 : e->kind == SL_RANGE ? e->e : 0;
    c->strides[i] = e->kind == SL_RANGE ? e->s : 1;
    if (e->kind == SL_RANGE && e->no_b)
      c->masks[0] |= 1 << i;
    if (e->kind == SL_RANGE && e->no_e)
      c->masks[1] |= 1 << i;
    if (e->kind == SL_ELLIPSIS)
      c->masks[2] |= 1 << i;
    if (e->kind == SL_NEW)
      c->masks[3] |= 1 << i;
    if (e->kind == SL_INDEX)
      c->masks[4] |= 1 << i;
  }
}

/* Python's slice.indices: the start and count of a[b:e:s] over d. */
static void py_range(const sl_entry *e, int64_t d, int64_t *start, int64_t *count)
{
  int64_t s = e->s, lo = s > 0 ? 0 : -1, hi = s > 0 ? d : d - 1;
  int64_t b = e->no_b ? (s > 0 ? lo : hi) : e->b < 0 ? e->b + d : e->b;
  int64_t en = e->no_e ? (s > 0 ? hi : lo) : e->e < 0 ? e->e + d : e->e;
  b = b < lo ? lo : b > hi ? hi : b;
  en = en < lo ? lo : en > hi ? hi : en;
  *start = b;
  *count = s > 0 ? (en > b ? (en - b + s - 1) / s : 0) : (b > en ? (b - en - s - 1) / -s : 0);
}

/* clg_strided_slice's masks from the five in TensorFlow's attribute order (NULL: none). */
static const clg_strided_slice_masks *sl_masks(const int64_t *m, clg_strided_slice_masks *out)
{
  if (!m)
    return NULL;
  *out = (clg_strided_slice_masks){m[0], m[1], m[2], m[3], m[4]};
  return out;
}

static clg_node *build_sl(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const sl_case *c = ctx;
  clg_strided_slice_masks m;
  return clg_strided_slice(g, NULL, in[0], c->n, c->begin, c->end, c->strides,
                           sl_masks(c->masks, &m));
}

static void test_strided_slice(void)
{
  int64_t seen[5] = {0}; /* which masks the random specs used */
  int negative = 0;
  for (int rep = 0; rep < 40; rep++) {
    clg_dtype dt = pick_dtype(rep);
    int rank = irand(1, 4);
    int64_t dims[4];
    for (int k = 0; k < rank; k++)
      dims[k] = irand(1, 6);
    clg_tensor *x = rand_tensor(dt, rank, dims, -50, 50);
    /* A spec: some real entries (at most rank), new axes anywhere, an ellipsis half the time. */
    sl_case c;
    memset(&c, 0, sizeof c);
    int real = irand(0, rank), ell = rep % 2 ? irand(0, real) : -1, r = 0;
    for (int i = 0; r < real || (ell >= 0 && ell == r && i <= real + 2); i++) {
      if (c.n >= 7)
        break;
      sl_entry *e = &c.en[c.n];
      if (ell == r && !(i > 0 && c.en[c.n - 1].kind == SL_ELLIPSIS)) {
        bool placed = false;
        for (int j = 0; j < c.n; j++)
          placed = placed || c.en[j].kind == SL_ELLIPSIS;
        if (!placed) {
          e->kind = SL_ELLIPSIS;
          c.n++;
          continue;
        }
      }
      if (clg_test_rand() % 5 == 0) {
        e->kind = SL_NEW;
        c.n++;
        continue;
      }
      if (r >= real)
        break;
      c.n++;
      r++;
      e->kind = clg_test_rand() % 4 == 0 ? SL_INDEX : SL_RANGE;
      e->b = irand(-7, 7);
      e->e = irand(-7, 7);
      e->s = clg_test_rand() % 3 == 0 ? -irand(1, 3) : irand(1, 3);
      e->no_b = clg_test_rand() % 3 == 0;
      e->no_e = clg_test_rand() % 3 == 0;
    }
    /* The dims each real entry lands on (an ellipsis, explicit or implicit, takes the rest). */
    int nreal = 0, has_ell = 0;
    for (int i = 0; i < c.n; i++) {
      nreal += c.en[i].kind == SL_RANGE || c.en[i].kind == SL_INDEX;
      has_ell += c.en[i].kind == SL_ELLIPSIS;
    }
    if (!has_ell)
      c.en[c.n++].kind = SL_ELLIPSIS; /* implicit at the end, as TensorFlow's */
    int dim = 0;
    int64_t start[4], step[4], cnt[4], odims[8];
    int ro = 0;
    bool valid = true;
    for (int i = 0; i < c.n; i++) {
      sl_entry *e = &c.en[i];
      if (e->kind == SL_NEW) {
        odims[ro++] = 1;
      } else if (e->kind == SL_ELLIPSIS) {
        for (int k = 0; k < rank - nreal; k++, dim++) {
          start[dim] = 0, step[dim] = 1, cnt[dim] = dims[dim];
          odims[ro++] = dims[dim];
        }
      } else if (e->kind == SL_INDEX) {
        e->b = e->b % dims[dim]; /* in range: -d <= b < d */
        start[dim] = e->b < 0 ? e->b + dims[dim] : e->b, step[dim] = 1, cnt[dim] = 1;
        dim++;
      } else {
        py_range(e, dims[dim], &start[dim], &cnt[dim]);
        step[dim] = e->s;
        odims[ro++] = cnt[dim];
        dim++;
      }
    }
    if (!has_ell)
      c.n--; /* the implicit ellipsis is not part of the spec given */
    sl_encode(&c);
    for (int k = 0; k < 5; k++)
      seen[k] |= c.masks[k];
    for (int i = 0; i < c.n; i++)
      negative += c.en[i].kind == SL_RANGE && c.en[i].s < 0;
    size_t n = clg_test_count(ro, odims);
    double *ref = malloc(sizeof *ref * (n + 1));
    for (size_t i = 0; valid && i < n; i++) {
      /* Output i walks the input dims in order (new axes and indices contribute nothing). */
      size_t rem = i, idx[4] = {0};
      for (int k = rank - 1; k >= 0; k--) {
        size_t q = rem % (size_t)cnt[k];
        rem /= (size_t)cnt[k];
        idx[k] = (size_t)(start[k] + (int64_t)q * step[k]);
      }
      size_t off = 0;
      for (int k = 0; k < rank; k++)
        off = off * (size_t)dims[k] + idx[k];
      ref[i] = clg_test_elem(x, off);
    }
    char what[96];
    snprintf(what, sizeof what, "StridedSlice rep %d (%d entries, masks %lld %lld %lld %lld %lld)",
             rep, c.n, (long long)c.masks[0], (long long)c.masks[1], (long long)c.masks[2],
             (long long)c.masks[3], (long long)c.masks[4]);
    check_op(what, 1, &x, build_sl, &c, ref, ro, odims, 0);
    free(ref);
    clg_tensor_free(x);
  }
  for (int k = 0; k < 5; k++)
    CHECK_MSG(seen[k] != 0, "no random spec used mask %d", k);
  CHECK(negative > 0);
  /* Known results: x[::-1] of [0..4], x[1:-1, 2] of a 3x4, x[..., None, 0] of a 2x3. */
  {
    clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 1, (int64_t[]){5}, (float[]){0, 1, 2, 3, 4});
    sl_case c = {1, {{SL_RANGE, 0, 0, -1, true, true}}, {0}, {0}, {0}, {0}};
    sl_encode(&c);
    check_op("x[::-1]", 1, &x, build_sl, &c, (double[]){4, 3, 2, 1, 0}, 1, (int64_t[]){5}, 0);
    clg_tensor_free(x);
    float v[12];
    for (int i = 0; i < 12; i++)
      v[i] = (float)i;
    x = clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){3, 4}, v);
    sl_case d = {2,   {{SL_RANGE, 1, -1, 1, false, false}, {SL_INDEX, 2, 0, 1, false, false}},
                 {0}, {0},
                 {0}, {0}};
    sl_encode(&d);
    check_op("x[1:-1, 2]", 1, &x, build_sl, &d, (double[]){6}, 1, (int64_t[]){1}, 0);
    clg_tensor_free(x);
    x = clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 3}, v);
    sl_case e = {3,
                 {{SL_ELLIPSIS, 0, 0, 0, false, false},
                  {SL_NEW, 0, 0, 0, false, false},
                  {SL_INDEX, 0, 0, 1, false, false}},
                 {0},
                 {0},
                 {0},
                 {0}};
    sl_encode(&e);
    check_op("x[..., None, 0]", 1, &x, build_sl, &e, (double[]){0, 3}, 2, (int64_t[]){2, 1}, 0);
    clg_tensor_free(x);
  }
  clg_strided_slice_masks m;
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_strided_slice(g, "s", x, 1, (int64_t[]){0}, (int64_t[]){1}, (int64_t[]){0}, NULL);
  EXPECT_BUILD_ERROR(g, "StridedSlice 's': strides[0] must be non-zero");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_strided_slice(g, "s", x, 1, (int64_t[]){5}, (int64_t[]){6}, (int64_t[]){1},
                    sl_masks((int64_t[]){0, 0, 0, 0, 1}, &m));
  EXPECT_BUILD_ERROR(g, "slice index 5 of dimension 0 out of bounds.");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_strided_slice(g, "s", x, 2, (int64_t[]){0, 0}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                    sl_masks((int64_t[]){0, 0, 3, 0, 0}, &m));
  EXPECT_BUILD_ERROR(g, "Multiple ellipses in slice spec not allowed");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_strided_slice(g, "s", x, 1, (int64_t[]){0}, (int64_t[]){1}, (int64_t[]){1},
                    sl_masks((int64_t[]){0, INT64_MIN, 0, 0, 0}, &m));
  EXPECT_BUILD_ERROR(g, "end_mask is -9223372036854775808; it must be an int32 bit mask");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 1, (int64_t[]){2});
  clg_strided_slice(g, "s", x, 2, (int64_t[]){0, 0}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, NULL);
  EXPECT_BUILD_ERROR(g, "Index out of range using input dim 1; input has only 1 dims");
}

/* --- Pack, Shape, DepthToSpace ----------------------------------------------------------- */

static void test_pack_shape_d2s(void)
{
  for (int rep = 0; rep < 12; rep++) {
    clg_dtype dt = pick_dtype(rep);
    int rank = irand(0, 3), nv = irand(1, 4);
    int64_t dims[4];
    for (int k = 0; k < rank; k++)
      dims[k] = irand(1, 4);
    int64_t axis = irand(-rank - 1, rank), pos = axis < 0 ? axis + rank + 1 : axis;
    clg_tensor *in[4];
    for (int i = 0; i < nv; i++)
      in[i] = rand_tensor(dt, rank, dims, -50, 50);
    int64_t od[5];
    for (int k = 0, j = 0; k <= rank; k++)
      od[k] = k == pos ? nv : dims[j++];
    size_t n = clg_test_count(rank + 1, od);
    double *ref = malloc(sizeof *ref * n);
    for (size_t i = 0; i < n; i++) {
      int64_t idx[5], src[4];
      unravel(i, rank + 1, od, idx);
      for (int k = 0, j = 0; k <= rank; k++)
        if (k != pos)
          src[j++] = idx[k];
      ref[i] = clg_test_elem(in[idx[pos]], ravel(rank, dims, src));
    }
    array_case c = {"Pack", nv, 0, {0}, {{0}}, {{0}}, 1, {clg_attr_int("axis", axis)}};
    char what[64];
    snprintf(what, sizeof what, "Pack of %d on axis %lld rep %d", nv, (long long)axis, rep);
    check_op(what, nv, in, build_array, &c, ref, rank + 1, od, 0);
    /* Shape of the first value, int32 and int64. */
    double sref[4];
    for (int k = 0; k < rank; k++)
      sref[k] = (double)dims[k];
    array_case sc = {"Shape", 1,     0,       {0},
                     {{0}},   {{0}}, rep % 2, {clg_attr_dtype("out_type", CLG_INT64)}};
    snprintf(what, sizeof what, "Shape rep %d", rep);
    check_op(what, 1, in, build_array, &sc, sref, 1, (int64_t[]){rank}, 0);
    free(ref);
    for (int i = 0; i < nv; i++)
      clg_tensor_free(in[i]);
    /* DepthToSpace. */
    int64_t b = irand(2, 3), c2 = irand(1, 3);
    int64_t xd[4] = {irand(1, 2), irand(1, 4), irand(1, 4), b * b * c2};
    int64_t yd[4] = {xd[0], xd[1] * b, xd[2] * b, c2};
    clg_tensor *x = rand_tensor(dt, 4, xd, -50, 50);
    size_t ny = clg_test_count(4, yd);
    double *dref = malloc(sizeof *dref * ny);
    for (size_t i = 0; i < ny; i++) {
      int64_t o[4];
      unravel(i, 4, yd, o);
      int64_t src[4] = {o[0], o[1] / b, o[2] / b, ((o[1] % b) * b + o[2] % b) * c2 + o[3]};
      dref[i] = clg_test_elem(x, ravel(4, xd, src));
    }
    array_case dc = {"DepthToSpace", 1, 0, {0}, {{0}}, {{0}}, 1, {clg_attr_int("block_size", b)}};
    snprintf(what, sizeof what, "DepthToSpace block %lld rep %d", (long long)b, rep);
    check_op(what, 1, &x, build_array, &dc, dref, 4, yd, 0);
    free(dref);
    clg_tensor_free(x);
  }
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT32, 1, (int64_t[]){3});
  clg_node *b = clg_placeholder(g, "b", CLG_FLOAT32, 1, (int64_t[]){4});
  clg_pack(g, "p", 2, (clg_output[]){{a, 0}, {b, 0}}, 0);
  EXPECT_BUILD_ERROR(g, "Pack 'p': Shapes of all inputs must match: values[0] is float [3] and "
                        "values[1] is float [4]");
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT32, 1, (int64_t[]){3});
  clg_pack(g, "p", 1, (clg_output[]){{a, 0}}, 2);
  EXPECT_BUILD_ERROR(g, "axis = 2 not in [-2, 2)");
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 6});
  clg_depth_to_space(g, "d", a, 2);
  EXPECT_BUILD_ERROR(g, "DepthToSpace 'd': Input depth dimension 6 should be divisible by: 4");
}

static clg_node *g_pack(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_pack(g, NULL, 2, (clg_output[]){{x[0], 0}, {x[1], 0}}, 1));
}
static clg_node *g_d2s(clg_graph *g, clg_node *const *x, const void *c)
{
  (void)c;
  return clg_square(g, NULL, clg_depth_to_space(g, NULL, x[0], 2));
}

static void test_pack_d2s_grads(void)
{
  const gcase cases[] = {
      {"Pack", 2, {2, 2}, {{2, 3}, {2, 3}}, g_pack, NULL, INIT_UNIFORM},
      {"DepthToSpace", 1, {4}, {{1, 2, 1, 8}}, g_d2s, NULL, INIT_UNIFORM},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

/* --- MirrorPad --------------------------------------------------------------------------- */

static int64_t mirror_ref(int64_t o, int64_t before, int64_t d, bool sym)
{
  /* Walk the mirrored sequence: the input read outward from each edge. */
  int64_t i = o - before;
  while (i < 0 || i >= d) {
    if (i < 0)
      i = sym ? -1 - i : -i;
    else
      i = sym ? 2 * d - 1 - i : 2 * d - 2 - i;
  }
  return i;
}

static void test_mirror_pad(void)
{
  for (int rep = 0; rep < 16; rep++) {
    bool sym = rep % 2;
    clg_dtype dt = rep % 4 == 3 ? CLG_FLOAT64 : CLG_FLOAT32;
    int rank = irand(1, 3);
    int64_t dims[3], before[3], after[3], pd[3];
    for (int k = 0; k < rank; k++) {
      dims[k] = irand(sym ? 1 : 2, 5);
      before[k] = irand(0, (int)(sym ? dims[k] : dims[k] - 1));
      after[k] = irand(0, (int)(sym ? dims[k] : dims[k] - 1));
      pd[k] = dims[k] + before[k] + after[k];
    }
    clg_tensor *x = rand_tensor(dt, rank, dims, -2, 2), *dy = rand_tensor(dt, rank, pd, -2, 2);
    array_case c = {
        "MirrorPad", 1,     1, {2},
        {{rank, 2}}, {{0}}, 1, {clg_attr_string("mode", sym ? "SYMMETRIC" : "REFLECT")}};
    for (int k = 0; k < rank; k++) {
      c.cv[0][2 * k] = before[k];
      c.cv[0][2 * k + 1] = after[k];
    }
    size_t np = clg_test_count(rank, pd), nx = clg_test_count(rank, dims);
    double *ref = malloc(sizeof *ref * np), *gref = calloc(nx, sizeof *gref);
    for (size_t i = 0; i < np; i++) {
      int64_t idx[3];
      unravel(i, rank, pd, idx);
      for (int k = 0; k < rank; k++)
        idx[k] = mirror_ref(idx[k], before[k], dims[k], sym);
      ref[i] = clg_test_elem(x, ravel(rank, dims, idx));
      gref[ravel(rank, dims, idx)] += clg_test_elem(dy, i); /* the adjoint: a scatter */
    }
    char what[64];
    snprintf(what, sizeof what, "MirrorPad %s rep %d", sym ? "SYMMETRIC" : "REFLECT", rep);
    check_op(what, 1, &x, build_array, &c, ref, rank, pd, 0);
    c.op = "MirrorPadGrad";
    snprintf(what, sizeof what, "MirrorPadGrad %s rep %d", sym ? "SYMMETRIC" : "REFLECT", rep);
    check_op(what, 1, &dy, build_array, &c, gref, rank, dims, 1e-5);
    free(ref);
    free(gref);
    clg_tensor_free(x);
    clg_tensor_free(dy);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 1, (int64_t[]){3});
  clg_mirror_pad(g, "m", x, 1, (int64_t[]){3}, (int64_t[]){0}, "REFLECT");
  EXPECT_BUILD_ERROR(g, "MirrorPad 'm': paddings must be no greater than the dimension size: 3, 0 "
                        "greater than 2 (REFLECT) in dimension 0");
  g = clg_graph_new();
  x = clg_placeholder(g, "x", CLG_FLOAT32, 1, (int64_t[]){3});
  clg_mirror_pad(g, "m", x, 1, (int64_t[]){1}, (int64_t[]){0}, "CONSTANT");
  EXPECT_BUILD_ERROR(g, "mode must be REFLECT or SYMMETRIC, not 'CONSTANT'");
}

static clg_node *g_mirror(clg_graph *g, clg_node *const *x, const void *c)
{
  return clg_square(g, NULL,
                    clg_mirror_pad(g, NULL, x[0], 2, (int64_t[]){1, 2}, (int64_t[]){2, 1},
                                   c ? "SYMMETRIC" : "REFLECT"));
}

static void test_mirror_grads(void)
{
  static const int yes = 1;
  const gcase cases[] = {
      {"MirrorPad REFLECT", 1, {2}, {{3, 3}}, g_mirror, NULL, INIT_UNIFORM},
      {"MirrorPad SYMMETRIC", 1, {2}, {{2, 3}}, g_mirror, &yes, INIT_UNIFORM},
  };
  check_grads(cases, sizeof cases / sizeof cases[0]);
}

int main(void)
{
  clg_test_seed(23);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_tf_ops");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  test_activations();
  test_activation_grads();
  test_binary_tf();
  test_floor_div_mod();
  test_int_binary();
  test_binary_tf_grads();
  test_squeeze_expand();
  test_slice_pad();
  test_concat();
  test_array_grads();
  test_depthwise();
  test_depthwise_grads();
  test_resize();
  test_strided_slice();
  test_pack_shape_d2s();
  test_pack_d2s_grads();
  test_mirror_pad();
  test_mirror_grads();
  return clg_test_summary("test_tf_ops");
}
