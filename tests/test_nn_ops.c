/* The CNN op set (issue 13) on CPU:0 and on the PoCL stand-ins: each op against a naive
 * double-precision reference written here, over random shapes (1x1 filters, strides larger
 * than the filter, odd sizes with SAME padding, batch 1, channels not a multiple of 4), the
 * two device kinds against each other, and bad input per op (clear errors naming the
 * node). Ends with the CIFAR-10 model's forward pass on fixed weights. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
// ctest: small_chunks CLGRAPH_CONV_CHUNK_BYTES=1000
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Sessions grow their device memory (the default reserves all of it per device) and a
 * session kept open for the whole test keeps the process-wide device state alive between
 * cases. */
static clg_session_options session_opt;
static clg_graph *keeper_graph;
static clg_session *keeper;

static void keeper_start(void)
{
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  keeper_graph = clg_graph_new();
  clg_const_f32(keeper_graph, NULL, 0, NULL, (float[]){1});
  CHECK_OK(clg_session_new(keeper_graph, &session_opt, &keeper));
}

static void keeper_stop(void)
{
  clg_session_free(keeper);
  clg_graph_free(keeper_graph);
}

/* --- tensors ---------------------------------------------------------------------------- */

/* Uniform values in [lo, hi). */
static clg_tensor *rand_tensor(clg_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    clg_test_set_elem(t, i, clg_test_uniform(lo, hi));
  return t;
}

static int irand(int lo, int hi) { return lo + (int)(clg_test_rand() % (unsigned)(hi - lo + 1)); }

/* Every element within tol (relative to max(1, |ref|)) of the reference. */
static bool close_to(const clg_tensor *t, const double *ref, size_t n, double tol, const char *what,
                     const char *dev)
{
  if (!t || clg_tensor_count(t) != n) {
    CHECK_MSG(false, "%s on %s: %zu elements, want %zu", what, dev, t ? clg_tensor_count(t) : 0, n);
    return false;
  }
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

/* --- running one op on both device kinds ------------------------------------------------- */

/* Runs and checks both devices against ref; frees the outputs. */
static void run_check(const char *what, int nin, clg_tensor *const *inputs, clg_test_build_fn fn,
                      const void *ctx, int index, const double *ref, size_t n, double tol)
{
  clg_tensor *out[2];
  char err[1024];
  clg_code code =
      clg_test_run_both(&session_opt, nin, inputs, fn, ctx, index, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK) {
    close_to(out[0], ref, n, tol, what, "CPU:0");
    close_to(out[1], ref, n, tol, what, "GPU");
    /* The device kinds agree with each other as well as with the reference. */
    if (out[0] && clg_tensor_count(out[0]) == n) {
      double *cpu = malloc(sizeof(double) * (n ? n : 1));
      for (size_t i = 0; i < n; i++)
        cpu[i] = clg_test_elem(out[0], i);
      close_to(out[1], cpu, n, 2 * tol, what, "GPU vs CPU:0");
      free(cpu);
    }
  }
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
}

/* A build error: the graph's status and text (which names the node itself). */
#define EXPECT_BUILD_ERROR(g, text) clg_test_expect_error(g, "", text, __LINE__)

static clg_node *ph(clg_graph *g, clg_dtype dt, int rank, const int64_t *dims)
{
  return clg_placeholder(g, NULL, dt, rank, dims);
}

/* A generic case: op with nin placeholders and, when ncv >= 0, a Const int32 vector of
 * the ncv values cv inserted as input const_at; attributes as given. */
typedef struct opcase {
  const char *op;
  int nin;
  int const_at, ncv;
  int64_t cv[8];
  int nattrs;
  clg_attr attrs[6];
} opcase;

static clg_node *const_ints(clg_graph *g, int n, const int64_t *v)
{
  int32_t w[8];
  for (int i = 0; i < n; i++)
    w[i] = (int32_t)v[i];
  clg_tensor *t = clg_tensor_new(CLG_INT32, 1, (int64_t[]){n}, w);
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

static clg_node *build_op(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const opcase *c = ctx;
  clg_output io[8];
  int k = 0;
  for (int i = 0; i <= c->nin; i++) {
    if (c->ncv >= 0 && i == c->const_at)
      io[k++] = clg_out(const_ints(g, c->ncv, c->cv), 0);
    if (i < c->nin)
      io[k++] = clg_out(in[i], 0);
  }
  return clg_op(g, c->op, NULL, k, io, c->nattrs, c->attrs);
}

/* --- broadcasting binary ops -------------------------------------------------------------- */

typedef struct binary_case {
  const char *op;
} binary_case;

static clg_node *build_binary(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const binary_case *c = ctx;
  clg_output io[2] = {clg_out(in[0], 0), clg_out(in[1], 0)};
  return clg_op(g, c->op, NULL, 2, io, 0, NULL);
}

static double ref_binary(const char *op, double x, double y)
{
  if (!strcmp(op, "Add"))
    return x + y;
  if (!strcmp(op, "Sub"))
    return x - y;
  if (!strcmp(op, "Mul"))
    return x * y;
  if (!strcmp(op, "RealDiv"))
    return x / y;
  if (!strcmp(op, "Maximum"))
    return x < y ? y : x;
  if (!strcmp(op, "GreaterEqual"))
    return x >= y;
  return x == y;
}

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

static void test_binary(void)
{
  const char *ops[] = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Equal", "GreaterEqual"};
  for (int rep = 0; rep < 12; rep++) {
    int ro = irand(1, 4);
    int64_t dout[4], da[4], db[4];
    for (int k = 0; k < ro; k++)
      dout[k] = irand(1, 5);
    int ra = irand(0, ro), rb = rep % 3 == 0 ? ro : irand(0, ro);
    for (int k = 0; k < ra; k++)
      da[k] = clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - ra];
    for (int k = 0; k < rb; k++)
      db[k] = clg_test_rand() % 3 == 0 ? 1 : dout[k + ro - rb];
    if (rep % 4 == 1) { /* equal shapes */
      ra = rb = ro;
      memcpy(da, dout, sizeof dout);
      memcpy(db, dout, sizeof dout);
    }
    /* The broadcast shape of a and b (a dim that both made 1 stays 1). */
    int r = ra > rb ? ra : rb;
    int64_t dr[4];
    for (int k = 0; k < r; k++) {
      int ka = k - (r - ra), kb = k - (r - rb);
      int64_t x = ka >= 0 ? da[ka] : 1, y = kb >= 0 ? db[kb] : 1;
      dr[k] = x == 1 ? y : x;
    }
    clg_dtype dt = rep == 5   ? CLG_FLOAT64
                   : rep == 7 ? CLG_INT32
                   : rep == 9 ? CLG_INT64
                              : CLG_FLOAT32;
    for (size_t o = 0; o < 7; o++) {
      if ((dt == CLG_INT32 || dt == CLG_INT64) && o < 5)
        continue;
      clg_tensor *in[2] = {rand_tensor(dt, ra, da, -3, 3), rand_tensor(dt, rb, db, 0.5, 2)};
      if (o >= 5 || dt == CLG_INT32) /* small integers: the comparisons see equal values */
        for (int j = 0; j < 2; j++)
          for (size_t i = 0; i < clg_tensor_count(in[j]); i++)
            clg_test_set_elem(in[j], i, (double)(clg_test_rand() % 3));
      size_t n = clg_test_count(r, dr);
      double *ref = malloc(sizeof(double) * (n ? n : 1));
      for (size_t i = 0; i < n; i++)
        ref[i] = ref_binary(ops[o], clg_test_elem(in[0], bcast_index(i, r, dr, ra, da)),
                            clg_test_elem(in[1], bcast_index(i, r, dr, rb, db)));
      binary_case c = {ops[o]};
      char what[128];
      snprintf(what, sizeof what, "%s %s rank %d/%d", ops[o], clg_dtype_name(dt), ra, rb);
      run_check(what, 2, in, build_binary, &c, 0, ref, n, dt == CLG_FLOAT64 ? 1e-12 : 1e-6);
      free(ref);
      clg_tensor_free(in[0]);
      clg_tensor_free(in[1]);
    }
  }
  /* TensorFlow's text for shapes that do not broadcast, naming the node. */
  clg_graph *g = clg_graph_new();
  clg_node *a = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}),
           *b = ph(g, CLG_FLOAT32, 1, (int64_t[]){4});
  CHECK(clg_real_div(g, "div", a, b) == NULL);
  EXPECT_BUILD_ERROR(g, "RealDiv 'div': Incompatible shapes: [2,3] vs. [4]");
  g = clg_graph_new();
  a = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  b = ph(g, CLG_FLOAT32, 2, (int64_t[]){3, 1});
  CHECK(clg_maximum(g, NULL, a, b) == NULL);
  EXPECT_BUILD_ERROR(g, "Maximum 'Maximum': Incompatible shapes: [2,3] vs. [3,1]");
  g = clg_graph_new();
  a = ph(g, CLG_FLOAT32, 1, (int64_t[]){3});
  b = ph(g, CLG_INT32, 1, (int64_t[]){3});
  CHECK(clg_equal(g, "eq", a, b) == NULL);
  EXPECT_BUILD_ERROR(g, "Equal 'eq': dtypes differ: float vs int32");
}

/* Select (tf.where): the chosen element's exact value (infinities and NaN included) for each
 * condition form (t's shape, a scalar, a vector choosing rows) and dtype; bad input named. */
static clg_node *build_select(clg_graph *g, clg_node *const *in, const void *ctx)
{
  (void)ctx;
  return clg_select(g, NULL, in[0], in[1], in[2]);
}

static void test_select(void)
{
  typedef struct {
    clg_dtype dt;
    int rank, crank;
    int64_t dims[3];
  } select_case;
  const select_case cases[] = {{CLG_FLOAT32, 3, 3, {2, 3, 4}}, {CLG_FLOAT64, 2, 0, {3, 2}},
                               {CLG_FLOAT64, 2, 0, {3, 2}},    {CLG_INT32, 3, 1, {3, 2, 2}},
                               {CLG_INT64, 1, 1, {5}},         {CLG_BOOL, 2, 2, {2, 2}},
                               {CLG_FLOAT32, 2, 1, {0, 3}},    {CLG_FLOAT32, 2, 0, {0, 3}}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const select_case *c = &cases[k];
    clg_tensor *in[3] = {rand_tensor(CLG_BOOL, c->crank, c->dims, 0, 2),
                         rand_tensor(c->dt, c->rank, c->dims, -3, 3),
                         rand_tensor(c->dt, c->rank, c->dims, -3, 3)};
    size_t n = clg_tensor_count(in[1]), nc = clg_tensor_count(in[0]);
    for (size_t i = 0; i < nc; i++) /* about half true; of the scalars, one of each */
      clg_test_set_elem(in[0], i, c->crank == 0 ? k == 1 : (double)(clg_test_rand() % 2));
    for (size_t i = 0; c->dt == CLG_BOOL && i < n; i++)
      clg_test_set_elem(in[1], i, (double)(clg_test_rand() % 2)),
          clg_test_set_elem(in[2], i, (double)(clg_test_rand() % 2));
    if (c->dt == CLG_FLOAT32 && n >= 4) {
      clg_test_set_elem(in[1], 0, INFINITY), clg_test_set_elem(in[2], 1, NAN);
      clg_test_set_elem(in[1], 2, NAN), clg_test_set_elem(in[2], 3, -INFINITY);
    }
    double *ref = malloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
      size_t ci = nc == n ? i : c->crank == 0 ? 0 : i / (n / nc);
      ref[i] = clg_test_elem(in[clg_test_elem(in[0], ci) != 0 ? 1 : 2], i);
    }
    char what[64];
    snprintf(what, sizeof what, "Select %s case %zu", clg_dtype_name(c->dt), k);
    run_check(what, 3, in, build_select, NULL, 0, ref, n, 0);
    free(ref);
    for (int i = 0; i < 3; i++)
      clg_tensor_free(in[i]);
  }
  clg_graph *g = clg_graph_new();
  clg_node *t = ph(g, CLG_FLOAT32, 2, (int64_t[]){3, 2});
  CHECK(clg_select(g, "s", ph(g, CLG_FLOAT32, 2, (int64_t[]){3, 2}), t, t) == NULL);
  EXPECT_BUILD_ERROR(g, "Select 's': condition must be bool, not float");
  g = clg_graph_new();
  t = ph(g, CLG_FLOAT32, 2, (int64_t[]){3, 2});
  CHECK(clg_select(g, "s", ph(g, CLG_BOOL, 2, (int64_t[]){3, 2}), t,
                   ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3})) == NULL);
  EXPECT_BUILD_ERROR(g, "Select 's': 'then' (float [3,2]) and 'else' (float [2,3]) must have one "
                        "dtype and shape");
  g = clg_graph_new();
  t = ph(g, CLG_FLOAT32, 2, (int64_t[]){3, 2});
  CHECK(clg_select(g, "s", ph(g, CLG_BOOL, 1, (int64_t[]){2}), t, t) == NULL);
  EXPECT_BUILD_ERROR(g, "Select 's': condition [2] must be a scalar, a vector of the first "
                        "dimension of 'then' [3,2], or of its shape");
  g = clg_graph_new();
  t = ph(g, CLG_FLOAT32, 1, (int64_t[]){3});
  CHECK(clg_greater_equal(g, "ge", t, ph(g, CLG_FLOAT64, 1, (int64_t[]){3})) == NULL);
  EXPECT_BUILD_ERROR(g, "GreaterEqual 'ge': dtypes differ: float vs double");
}

/* --- element-wise unary ops, Cast, Fill, ZerosLike/OnesLike, Reshape, Transpose -------------- */

static void test_unary(void)
{
  const char *ops[] = {"Exp", "Log", "Sqrt", "Rsqrt"};
  for (int o = 0; o < 4; o++)
    for (int d = 0; d < 2; d++) {
      clg_dtype dt = d ? CLG_FLOAT64 : CLG_FLOAT32;
      int64_t dims[3] = {irand(1, 4), irand(1, 5), irand(1, 7)};
      clg_tensor *x = rand_tensor(dt, 3, dims, 0.05, 3);
      size_t n = clg_tensor_count(x);
      double *ref = malloc(sizeof(double) * n);
      for (size_t i = 0; i < n; i++) {
        double v = clg_test_elem(x, i);
        ref[i] = o == 0 ? exp(v) : o == 1 ? log(v) : o == 2 ? sqrt(v) : 1 / sqrt(v);
      }
      opcase c = {ops[o], 1, 0, -1, {0}, 0, {{0}}};
      run_check(ops[o], 1, &x, build_op, &c, 0, ref, n, d ? 1e-12 : 2e-6);
      free(ref);
      clg_tensor_free(x);
    }
  /* The edges: log(0) = -inf, log and sqrt of a negative are NaN. */
  clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 1, (int64_t[]){2}, (float[]){0, -1});
  opcase lg = {"Log", 1, 0, -1, {0}, 0, {{0}}}, sq = {"Sqrt", 1, 0, -1, {0}, 0, {{0}}};
  run_check("Log edges", 1, &x, build_op, &lg, 0, (double[]){-INFINITY, NAN}, 2, 0);
  run_check("Sqrt edges", 1, &x, build_op, &sq, 0, (double[]){0, NAN}, 2, 0);
  clg_tensor_free(x);
}

static void test_cast(void)
{
  static const clg_dtype pairs[][2] = {
      {CLG_FLOAT32, CLG_INT32}, {CLG_INT32, CLG_FLOAT32},   {CLG_FLOAT32, CLG_BOOL},
      {CLG_BOOL, CLG_FLOAT32},  {CLG_INT32, CLG_INT64},     {CLG_INT64, CLG_INT32},
      {CLG_FLOAT32, CLG_INT64}, {CLG_FLOAT32, CLG_FLOAT64}, {CLG_FLOAT64, CLG_FLOAT32},
      {CLG_FLOAT64, CLG_INT32}, {CLG_INT64, CLG_FLOAT64},   {CLG_INT32, CLG_BOOL}};
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    clg_dtype st = pairs[p][0], dt = pairs[p][1];
    int64_t dims[2] = {irand(1, 5), irand(1, 9)};
    clg_tensor *x = rand_tensor(st, 2, dims, -5, 5);
    if (st == CLG_BOOL || st == CLG_INT32 || st == CLG_INT64)
      for (size_t i = 0; i < clg_tensor_count(x); i++)
        clg_test_set_elem(x, i, (double)(int)(clg_test_rand() % 7) - 3);
    size_t n = clg_tensor_count(x);
    double *ref = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
      double v = clg_test_elem(x, i);
      ref[i] = dt == CLG_BOOL                       ? (v != 0)
               : dt == CLG_INT32 || dt == CLG_INT64 ? trunc(v)
               : dt == CLG_FLOAT32                  ? (double)(float)v
                                                    : v;
    }
    opcase c = {"Cast", 1, 0, -1, {0}, 1, {clg_attr_dtype("DstT", dt)}};
    char what[64];
    snprintf(what, sizeof what, "Cast %s to %s", clg_dtype_name(st), clg_dtype_name(dt));
    run_check(what, 1, &x, build_op, &c, 0, ref, n, 0);
    free(ref);
    clg_tensor_free(x);
  }
  clg_graph *g = clg_graph_new();
  CHECK(clg_cast(g, "c", ph(g, CLG_FLOAT32, 0, NULL), (clg_dtype)7) == NULL);
  EXPECT_BUILD_ERROR(g, "Cast 'c': no cast from float to invalid");
}

static void test_fill(void)
{
  for (int d = 0; d < 3; d++) {
    clg_dtype dt = d == 0 ? CLG_FLOAT32 : d == 1 ? CLG_INT64 : CLG_BOOL;
    clg_tensor *v = clg_tensor_new(dt, 0, NULL, NULL);
    clg_test_set_elem(v, 0, d == 2 ? 1 : -7.25 + d);
    opcase c = {"Fill", 1, 0, 3, {2, 3, 5}, 0, {{0}}};
    double ref[30];
    for (int i = 0; i < 30; i++)
      ref[i] = clg_test_elem(v, 0);
    run_check("Fill", 1, &v, build_op, &c, 0, ref, 30, 0);
    clg_tensor_free(v);
    int64_t dims[2] = {3, irand(1, 6)};
    clg_tensor *x = rand_tensor(dt, 2, dims, -2, 2);
    for (int o = 0; o < 2; o++) {
      for (int i = 0; i < 30; i++)
        ref[i] = o;
      opcase l = {o ? "OnesLike" : "ZerosLike", 1, 0, -1, {0}, 0, {{0}}};
      run_check(l.op, 1, &x, build_op, &l, 0, ref, clg_tensor_count(x), 0);
    }
    clg_tensor_free(x);
  }
  clg_graph *g = clg_graph_new();
  CHECK(clg_fill(g, "f", 1, (int64_t[]){3}, ph(g, CLG_FLOAT32, 1, (int64_t[]){2})) == NULL);
  EXPECT_BUILD_ERROR(g, "Fill 'f': value must be a scalar, not shape [2]");
  g = clg_graph_new();
  clg_node *dims = ph(g, CLG_INT32, 1, (int64_t[]){2});
  clg_output in[2] = {clg_out(dims, 0), clg_out(ph(g, CLG_FLOAT32, 0, NULL), 0)};
  CHECK(clg_op(g, "Fill", "f2", 2, in, 0, NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Fill 'f2': dims (input 0) must be a constant");
}

/* ref: x transposed by perm, by the naive index arithmetic. */
static void transpose_ref(const clg_tensor *x, int rank, const int64_t *dims, const int64_t *perm,
                          double *ref)
{
  int64_t od[8], stride[8];
  size_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    stride[k] = (int64_t)s;
    s *= (size_t)dims[k];
  }
  for (int k = 0; k < rank; k++)
    od[k] = dims[perm[k]];
  for (size_t i = 0; i < s; i++) {
    size_t rem = i, src = 0;
    for (int k = rank - 1; k >= 0; k--) {
      src += (rem % (size_t)od[k]) * (size_t)stride[perm[k]];
      rem /= (size_t)od[k];
    }
    ref[i] = clg_test_elem(x, src);
  }
}

/* Transposes that move the input's contiguous dim off the output's last (the host's tiled
 * path: NCHW to NHWC at a model's edge, its inverse's neighbours, batched 2-D), at sizes
 * ragged against its 64 x 16 tiles and its ranges across the threads, elements of 1, 4 and 8
 * bytes. */
static void test_transpose_tiles(void)
{
  static const struct {
    int rank;
    int64_t dims[5], perm[5];
  } cases[] = {
      {4, {1, 3, 37, 41}, {0, 2, 3, 1}},
      {4, {2, 5, 16, 17}, {0, 2, 3, 1}},
      {2, {67, 130}, {1, 0}},
      {3, {3, 129, 65}, {0, 2, 1}},
      {4, {2, 64, 3, 33}, {2, 0, 3, 1}},
      {5, {2, 3, 4, 70, 18}, {0, 1, 4, 2, 3}},
      {4, {1, 1000, 13, 13}, {0, 2, 3, 1}},
      {3, {1, 1, 90}, {2, 1, 0}},
      {4, {1, 3, 224, 224}, {0, 2, 3, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clg_dtype dt = i % 3 == 0 ? CLG_FLOAT32 : i % 3 == 1 ? CLG_FLOAT64 : CLG_BOOL;
    clg_tensor *x = clg_tensor_new(dt, cases[i].rank, cases[i].dims, NULL);
    size_t n = clg_tensor_count(x);
    for (size_t e = 0; e < n; e++) /* distinct values (bool: 0 and 1 at random) */
      clg_test_set_elem(x, e, dt == CLG_BOOL ? (double)(clg_test_rand() % 2) : (double)e + 0.5);
    double *ref = malloc(sizeof(double) * n);
    transpose_ref(x, cases[i].rank, cases[i].dims, cases[i].perm, ref);
    opcase t = {"Transpose", 1, 1, cases[i].rank, {0}, 0, {{0}}};
    memcpy(t.cv, cases[i].perm, sizeof cases[i].perm);
    char what[64];
    snprintf(what, sizeof what, "Transpose tiles case %zu", i);
    run_check(what, 1, &x, build_op, &t, 0, ref, n, 0);
    free(ref);
    clg_tensor_free(x);
  }
}

static void test_reshape_transpose(void)
{
  for (int rep = 0; rep < 8; rep++) {
    int rank = irand(1, 4);
    int64_t dims[4];
    for (int k = 0; k < rank; k++)
      dims[k] = irand(1, 5);
    clg_dtype dt = rep % 3 == 1 ? CLG_INT64 : rep % 3 == 2 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *x = rand_tensor(dt, rank, dims, -9, 9);
    size_t n = clg_tensor_count(x);
    double *ref = malloc(sizeof(double) * n);
    /* Reshape to [-1, last]: the same elements. */
    for (size_t i = 0; i < n; i++)
      ref[i] = clg_test_elem(x, i);
    opcase r = {"Reshape", 1, 1, 2, {-1, dims[rank - 1]}, 0, {{0}}};
    run_check("Reshape", 1, &x, build_op, &r, 0, ref, n, 0);
    /* A random permutation, against the naive index arithmetic. */
    int64_t perm[4];
    for (int k = 0; k < rank; k++)
      perm[k] = k;
    for (int k = rank - 1; k > 0; k--) {
      int j = irand(0, k);
      int64_t t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    transpose_ref(x, rank, dims, perm, ref);
    opcase t = {"Transpose", 1, 1, rank, {0}, 0, {{0}}};
    memcpy(t.cv, perm, sizeof perm);
    run_check("Transpose", 1, &x, build_op, &t, 0, ref, n, 0);
    free(ref);
    clg_tensor_free(x);
  }
  /* TensorFlow's texts. */
  clg_graph *g = clg_graph_new();
  clg_node *x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_reshape(g, "r", x, 1, (int64_t[]){4}) == NULL);
  EXPECT_BUILD_ERROR(
      g, "Reshape 'r': Input to reshape is a tensor with 6 values, but the requested shape has 4");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_reshape(g, "r", x, 2, (int64_t[]){-1, 4}) == NULL);
  EXPECT_BUILD_ERROR(g, "Input to reshape is a tensor with 6 values, but the requested shape "
                        "requires a multiple of 4");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_reshape(g, "r", x, 2, (int64_t[]){-1, -1}) == NULL);
  EXPECT_BUILD_ERROR(g, "Reshape 'r': Only one input size may be -1, not both 0 and 1");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_transpose(g, "t", x, 2, (int64_t[]){0, 0}) == NULL);
  EXPECT_BUILD_ERROR(g, "Transpose 't': perm is not a permutation: 0 appears twice");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_transpose(g, "t", x, 3, (int64_t[]){0, 1, 2}) == NULL);
  EXPECT_BUILD_ERROR(g, "transpose expects a vector of size 2. But input(1) is a vector of size 3");
  /* A Reshape that is its input's last use reuses its buffer: the values still come out. */
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_node *r = clg_reshape(g, NULL, clg_relu(g, NULL, x), 1, (int64_t[]){6});
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &session_opt, &s));
  clg_tensor *xv = clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 3}, (float[]){1, -2, 3, -4, 5, 6});
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_run(s, 1, &x, &xv, 1, &r, &out));
  close_to(out, (double[]){1, 0, 3, 0, 5, 6}, 6, 0, "Reshape in place", "default");
  clg_tensor_free(out);
  clg_tensor_free(xv);
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- reductions, softmax, losses ----------------------------------------------------------- */

static void test_reductions(void)
{
  const char *ops[] = {"Sum", "Mean", "Max"};
  for (int rep = 0; rep < 12; rep++) {
    int rank = irand(1, 4);
    int64_t dims[4];
    for (int k = 0; k < rank; k++)
      dims[k] = irand(1, 6);
    if (rep % 4 == 3)
      dims[irand(0, rank - 1)] = 300; /* more than one work-group's worth */
    clg_dtype dt = rep == 6 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *x = rand_tensor(dt, rank, dims, -1, 1);
    bool red[4] = {false};
    int64_t axes[4];
    int naxes = 0;
    for (int k = 0; k < rank; k++)
      if (clg_test_rand() % 2 || (rep % 5 == 0)) {
        red[k] = true;
        axes[naxes++] = clg_test_rand() % 2 ? k : k - rank; /* negative axes count from the end */
      }
    bool keep = rep % 3 == 0;
    size_t n = clg_tensor_count(x), nout = 1;
    for (int k = 0; k < rank; k++)
      nout *= red[k] ? 1 : (size_t)dims[k];
    for (int o = 0; o < 3; o++) {
      double *ref = calloc(nout, sizeof(double));
      size_t *cnt = calloc(nout, sizeof(size_t));
      for (size_t i = 0; i < n; i++) {
        size_t rem = i, oi = 0, ostride = 1;
        for (int k = rank - 1; k >= 0; k--) {
          size_t d = rem % (size_t)dims[k];
          rem /= (size_t)dims[k];
          if (!red[k]) {
            oi += d * ostride;
            ostride *= (size_t)dims[k];
          }
        }
        double v = clg_test_elem(x, i);
        if (o == 2)
          ref[oi] = cnt[oi] == 0 || v > ref[oi] ? v : ref[oi];
        else
          ref[oi] += v;
        cnt[oi]++;
      }
      if (o == 1)
        for (size_t j = 0; j < nout; j++)
          ref[j] /= (double)cnt[j];
      opcase c = {ops[o], 1, 1, naxes, {0}, 1, {clg_attr_bool("keep_dims", keep)}};
      memcpy(c.cv, axes, sizeof axes);
      char what[96];
      snprintf(what, sizeof what, "%s rank %d over %d axes%s", ops[o], rank, naxes,
               keep ? " (keep_dims)" : "");
      run_check(what, 1, &x, build_op, &c, 0, ref, nout, dt == CLG_FLOAT64 ? 1e-12 : 1e-5);
      free(ref);
      free(cnt);
    }
    /* L2Loss over everything. */
    double l2 = 0;
    for (size_t i = 0; i < n; i++)
      l2 += clg_test_elem(x, i) * clg_test_elem(x, i) / 2;
    opcase c = {"L2Loss", 1, 0, -1, {0}, 0, {{0}}};
    run_check("L2Loss", 1, &x, build_op, &c, 0, &l2, 1, 1e-5);
    /* ArgMax along one axis, with ties (small integers): the first index wins. */
    for (size_t i = 0; i < n; i++)
      clg_test_set_elem(x, i, (double)(clg_test_rand() % 4));
    int axis = irand(0, rank - 1);
    size_t stride = 1;
    for (int k = axis + 1; k < rank; k++)
      stride *= (size_t)dims[k];
    size_t along = (size_t)dims[axis], outer = n / (along * stride);
    double *ref = malloc(sizeof(double) * (n / along));
    for (size_t a = 0; a < outer; a++)
      for (size_t b = 0; b < stride; b++) {
        size_t best = 0;
        for (size_t j = 1; j < along; j++)
          if (clg_test_elem(x, (a * along + j) * stride + b) >
              clg_test_elem(x, (a * along + best) * stride + b))
            best = j;
        ref[a * stride + b] = (double)best;
      }
    opcase am = {"ArgMax", 1, 1, 1, {axis}, 0, {{0}}};
    run_check("ArgMax", 1, &x, build_op, &am, 0, ref, n / along, 0);
    free(ref);
    clg_tensor_free(x);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_sum(g, "s", x, 1, (int64_t[]){2}, false) == NULL);
  EXPECT_BUILD_ERROR(g, "Sum 's': Invalid reduction dimension (2 for input with 2 dimension(s)");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  CHECK(clg_argmax(g, "am", x, -3) == NULL);
  EXPECT_BUILD_ERROR(g, "ArgMax 'am': Expected dimension in the range [-2, 2), but got -3");
}

static void test_softmax(void)
{
  for (int rep = 0; rep < 6; rep++) {
    int64_t dims[3] = {irand(1, 4), irand(1, 3), rep == 2 ? 300 : irand(1, 12)};
    clg_dtype dt = rep == 3 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *x = rand_tensor(dt, 3, dims, -20, 20);
    size_t k = (size_t)dims[2], rows = clg_tensor_count(x) / k;
    double *sm = malloc(sizeof(double) * rows * k), *lsm = malloc(sizeof(double) * rows * k);
    for (size_t r = 0; r < rows; r++) {
      double mx = -INFINITY, sum = 0;
      for (size_t j = 0; j < k; j++)
        mx = fmax(mx, clg_test_elem(x, r * k + j));
      for (size_t j = 0; j < k; j++)
        sum += exp(clg_test_elem(x, r * k + j) - mx);
      for (size_t j = 0; j < k; j++) {
        lsm[r * k + j] = clg_test_elem(x, r * k + j) - mx - log(sum);
        sm[r * k + j] = exp(lsm[r * k + j]);
      }
    }
    double tol = dt == CLG_FLOAT64 ? 1e-12 : 2e-5;
    opcase a = {"Softmax", 1, 0, -1, {0}, 0, {{0}}}, b = {"LogSoftmax", 1, 0, -1, {0}, 0, {{0}}};
    run_check("Softmax", 1, &x, build_op, &a, 0, sm, rows * k, tol);
    run_check("LogSoftmax", 1, &x, build_op, &b, 0, lsm, rows * k, tol);
    free(sm);
    free(lsm);
    clg_tensor_free(x);
  }
}

/* Runs fn's node on one device and expects a run-time error containing text. */
static void expect_run_error(const char *dev, int nin, clg_tensor *const *inputs,
                             clg_test_build_fn fn, const void *ctx, const char *text)
{
  clg_graph *g = clg_graph_new();
  clg_node *p[8];
  for (int i = 0; i < nin; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(inputs[i]); k++)
      dims[k] = clg_tensor_dim(inputs[i], k);
    p[i] = ph(g, clg_tensor_dtype(inputs[i]), clg_tensor_rank(inputs[i]), dims);
  }
  clg_graph_push_device(g, dev);
  clg_node *n = fn(g, p, ctx);
  clg_graph_pop_device(g);
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &session_opt, &s));
  clg_tensor *out = NULL;
  clg_code code = clg_session_run(s, nin, p, inputs, 1, &n, &out);
  CHECK_MSG(code == CLG_INVALID_ARGUMENT, "%s: %s, want INVALID_ARGUMENT", dev,
            clg_code_name(code));
  CHECK_CONTAINS(clg_last_error(), text);
  CHECK(out == NULL);
  clg_session_free(s);
  clg_graph_free(g);
}

static void test_xent(void)
{
  for (int rep = 0; rep < 6; rep++) {
    int64_t b = irand(1, 5), k = rep == 4 ? 300 : irand(1, 12);
    clg_dtype dt = rep == 2 ? CLG_FLOAT64 : CLG_FLOAT32, lt = rep % 2 ? CLG_INT32 : CLG_INT64;
    clg_tensor *in[2] = {rand_tensor(dt, 2, (int64_t[]){b, k}, -5, 5),
                         clg_tensor_new(lt, 1, &b, NULL)};
    for (int64_t i = 0; i < b; i++)
      clg_test_set_elem(in[1], (size_t)i, (double)irand(0, (int)k - 1));
    double *loss = malloc(sizeof(double) * (size_t)b),
           *bp = malloc(sizeof(double) * (size_t)(b * k));
    for (int64_t r = 0; r < b; r++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < k; j++)
        mx = fmax(mx, clg_test_elem(in[0], (size_t)(r * k + j)));
      for (int64_t j = 0; j < k; j++)
        sum += exp(clg_test_elem(in[0], (size_t)(r * k + j)) - mx);
      double lse = mx + log(sum);
      int64_t label = (int64_t)clg_test_elem(in[1], (size_t)r);
      loss[r] = lse - clg_test_elem(in[0], (size_t)(r * k + label));
      for (int64_t j = 0; j < k; j++)
        bp[r * k + j] = exp(clg_test_elem(in[0], (size_t)(r * k + j)) - lse) - (j == label);
    }
    opcase c = {"SparseSoftmaxCrossEntropyWithLogits", 2, 0, -1, {0}, 0, {{0}}};
    double tol = dt == CLG_FLOAT64 ? 1e-12 : 2e-5;
    run_check("xent loss", 2, in, build_op, &c, 0, loss, (size_t)b, tol);
    run_check("xent backprop", 2, in, build_op, &c, 1, bp, (size_t)(b * k), tol);
    free(loss);
    free(bp);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* A label out of range: TensorFlow's INVALID_ARGUMENT on every device kind. */
  clg_tensor *in[2] = {rand_tensor(CLG_FLOAT32, 2, (int64_t[]){3, 10}, -1, 1),
                       clg_tensor_new(CLG_INT32, 1, (int64_t[]){3}, (int32_t[]){1, 10, 2})};
  opcase c = {"SparseSoftmaxCrossEntropyWithLogits", 2, 0, -1, {0}, 0, {{0}}};
  const char *want = "SparseSoftmaxCrossEntropyWithLogits 'SparseSoftmaxCrossEntropyWithLogits': "
                     "Received a label value of 10 which is outside the valid range of [0, 10)";
  expect_run_error("/cpu:0", 2, in, build_op, &c, want);
  expect_run_error("/device:GPU:1", 2, in, build_op, &c, want);
  clg_test_set_elem(in[1], 1, -1);
  expect_run_error("/device:GPU:2", 2, in, build_op, &c, "Received a label value of -1");
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  /* Shapes. */
  clg_graph *g = clg_graph_new();
  clg_node *x = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3});
  clg_node *l = ph(g, CLG_INT32, 1, (int64_t[]){3});
  CHECK(clg_sparse_softmax_cross_entropy_with_logits(g, "xent", x, l) == NULL);
  EXPECT_BUILD_ERROR(g, "xent': logits and labels must have the same first dimension, got logits "
                        "shape [2,3] and labels shape [3]");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 3, (int64_t[]){2, 3, 1});
  l = ph(g, CLG_INT32, 1, (int64_t[]){2});
  CHECK(clg_sparse_softmax_cross_entropy_with_logits(g, "xent", x, l) == NULL);
  EXPECT_BUILD_ERROR(g, "xent': logits must be 2-D, but got shape [2,3,1]");
}

static clg_node *build_in_top_k(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_in_top_k(g, NULL, in[0], in[1], *(const int64_t *)ctx);
}

static void test_in_top_k(void)
{
  for (int rep = 0; rep < 6; rep++) {
    int64_t b = irand(1, 8), k = irand(1, 12), kk = rep == 5 ? k : irand(1, 3);
    clg_dtype tt = rep % 2 ? CLG_INT32 : CLG_INT64;
    clg_tensor *in[2] = {rand_tensor(CLG_FLOAT32, 2, (int64_t[]){b, k}, 0, 1),
                         clg_tensor_new(tt, 1, &b, NULL)};
    for (size_t i = 0; i < clg_tensor_count(in[0]); i++)
      clg_test_set_elem(in[0], i, (double)(clg_test_rand() % 4)); /* ties */
    for (int64_t i = 0; i < b; i++)
      clg_test_set_elem(in[1], (size_t)i, (double)irand(-1, (int)k)); /* -1 and k: out of range */
    if (rep == 3)
      clg_test_set_elem(in[0], 0, INFINITY);
    double *ref = malloc(sizeof(double) * (size_t)b);
    for (int64_t r = 0; r < b; r++) {
      int64_t t = (int64_t)clg_test_elem(in[1], (size_t)r);
      bool ok = t >= 0 && t < k;
      int more = 0;
      for (int64_t j = 0; ok && j < k; j++) {
        ok = isfinite(clg_test_elem(in[0], (size_t)(r * k + j)));
        more +=
            clg_test_elem(in[0], (size_t)(r * k + j)) > clg_test_elem(in[0], (size_t)(r * k + t));
      }
      ref[r] = ok && more < kk;
    }
    run_check("InTopKV2", 2, in, build_in_top_k, &kk, 0, ref, (size_t)b, 0);
    free(ref);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
}

/* --- naive double references of the NHWC ops --------------------------------------------- */

typedef struct geom {
  int64_t n, h, w, c, kh, kw, sh, sw, dh, dw, oh, ow, pt, pl;
} geom;

/* TensorFlow's SAME/VALID arithmetic, written out again here. */
static void ref_dims(geom *g, bool same)
{
  int64_t eh = (g->kh - 1) * g->dh + 1, ew = (g->kw - 1) * g->dw + 1;
  if (same) {
    g->oh = (g->h + g->sh - 1) / g->sh;
    g->ow = (g->w + g->sw - 1) / g->sw;
    int64_t th = (g->oh - 1) * g->sh + eh - g->h, tw = (g->ow - 1) * g->sw + ew - g->w;
    g->pt = th > 0 ? th / 2 : 0;
    g->pl = tw > 0 ? tw / 2 : 0;
  } else {
    g->oh = (g->h - eh) / g->sh + 1;
    g->ow = (g->w - ew) / g->sw + 1;
    g->pt = g->pl = 0;
  }
}

static void ref_conv(const geom *g, const double *x, const double *f, int64_t cout, double *y)
{
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t oh = 0; oh < g->oh; oh++)
      for (int64_t ow = 0; ow < g->ow; ow++)
        for (int64_t co = 0; co < cout; co++) {
          double acc = 0;
          for (int64_t a = 0; a < g->kh; a++)
            for (int64_t b = 0; b < g->kw; b++) {
              int64_t ih = oh * g->sh - g->pt + a * g->dh, iw = ow * g->sw - g->pl + b * g->dw;
              if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
                continue;
              for (int64_t ci = 0; ci < g->c; ci++)
                acc += x[((n * g->h + ih) * g->w + iw) * g->c + ci] *
                       f[((a * g->kw + b) * g->c + ci) * cout + co];
            }
          y[((n * g->oh + oh) * g->ow + ow) * cout + co] = acc;
        }
}

/* Whether input row (or column) i is in the window of kernel k starting at start: a test per
 * input element rather than a walk over the window, so that windows far larger than the input
 * cost nothing here. */
static bool in_window(int64_t i, int64_t start, int64_t k) { return i >= start && i - start < k; }

static void ref_pool(const geom *g, bool avg, const double *x, double *y)
{
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t oh = 0; oh < g->oh; oh++)
      for (int64_t ow = 0; ow < g->ow; ow++)
        for (int64_t c = 0; c < g->c; c++) {
          double acc = avg ? 0 : -INFINITY;
          int cnt = 0;
          for (int64_t ih = 0; ih < g->h; ih++)
            for (int64_t iw = 0; iw < g->w; iw++) {
              if (!in_window(ih, oh * g->sh - g->pt, g->kh) ||
                  !in_window(iw, ow * g->sw - g->pl, g->kw))
                continue;
              double v = x[((n * g->h + ih) * g->w + iw) * g->c + c];
              acc = avg ? acc + v : fmax(acc, v);
              cnt++;
            }
          y[((n * g->oh + oh) * g->ow + ow) * g->c + c] = avg ? acc / cnt : acc;
        }
}

/* MaxPoolGrad (dy to each window's first strictly greater value from -inf in scan order) or
 * AvgPoolGrad (dy over the window's count of unpadded elements) into dx, zeroed first. */
static void ref_pool_grad(const geom *g, bool avg, const double *x, const double *dy, double *dx)
{
  size_t nx = (size_t)(g->n * g->h * g->w * g->c);
  for (size_t i = 0; i < nx; i++)
    dx[i] = 0;
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t oh = 0; oh < g->oh; oh++)
      for (int64_t ow = 0; ow < g->ow; ow++)
        for (int64_t c = 0; c < g->c; c++) {
          double best = -INFINITY, d = dy[((n * g->oh + oh) * g->ow + ow) * g->c + c];
          int64_t at = -1, cnt = 0;
          for (int64_t pass = 0; pass < 2; pass++)
            for (int64_t ih = 0; ih < g->h; ih++)
              for (int64_t iw = 0; iw < g->w; iw++) {
                if (!in_window(ih, oh * g->sh - g->pt, g->kh) ||
                    !in_window(iw, ow * g->sw - g->pl, g->kw))
                  continue;
                int64_t xi = ((n * g->h + ih) * g->w + iw) * g->c + c;
                if (avg && pass == 0)
                  cnt++;
                else if (avg)
                  dx[xi] += d / (double)cnt;
                else if (pass == 0 && x[xi] > best)
                  best = x[xi], at = xi;
              }
          if (!avg && at >= 0)
            dx[at] += d;
        }
}

/* LRN's sum of squares over the channels k with |k - ch| <= r, tested per channel (no
 * arithmetic on r, which may be as large as the op accepts). */
static double ref_lrn_norm(const double *px, int64_t c, int64_t ch, int64_t r, double bias,
                           double alpha)
{
  double sq = 0;
  for (int64_t k = 0; k < c; k++)
    if ((k > ch ? k - ch : ch - k) <= r)
      sq += px[k] * px[k];
  return bias + alpha * sq;
}

static void ref_lrn(size_t count, int64_t c, int64_t r, double bias, double alpha, double beta,
                    const double *x, double *y)
{
  for (size_t i = 0; i < count; i++) {
    int64_t ch = (int64_t)(i % (size_t)c);
    y[i] = x[i] / pow(ref_lrn_norm(x + i - (size_t)ch, c, ch, r, bias, alpha), beta);
  }
}

/* LRNGrad: dx[c] = dy[c] N[c]^-beta - 2 alpha beta x[c] sum over |k - c| <= r of
 * dy[k] y[k] / N[k]. */
static void ref_lrn_grad(size_t count, int64_t c, int64_t r, double bias, double alpha, double beta,
                         const double *dy, const double *x, const double *y, double *dx)
{
  for (size_t i = 0; i < count; i++) {
    int64_t ch = (int64_t)(i % (size_t)c);
    size_t base = i - (size_t)ch;
    double cross = 0;
    for (int64_t k = 0; k < c; k++)
      if ((k > ch ? k - ch : ch - k) <= r)
        cross += dy[base + (size_t)k] * y[base + (size_t)k] /
                 ref_lrn_norm(x + base, c, k, r, bias, alpha);
    dx[i] = dy[i] * pow(ref_lrn_norm(x + base, c, ch, r, bias, alpha), -beta) -
            2 * alpha * beta * x[i] * cross;
  }
}

static double *to_doubles(const clg_tensor *t)
{
  size_t n = clg_tensor_count(t);
  double *d = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++)
    d[i] = clg_test_elem(t, i);
  return d;
}

/* --- Conv2D, BiasAdd, pooling, LRN --------------------------------------------------------- */

static void test_conv2d(void)
{
  /* n, h, w, c, kh, kw, cout, sh, sw, dh, dw, same */
  static const int cases[][12] = {
      {1, 5, 5, 3, 1, 1, 4, 1, 1, 1, 1, 1},   /* 1x1: the input is the patch matrix */
      {2, 7, 6, 5, 3, 3, 6, 1, 1, 1, 1, 1},   /* odd sizes, SAME */
      {1, 9, 8, 3, 2, 2, 5, 3, 3, 1, 1, 1},   /* stride larger than the filter */
      {2, 8, 7, 2, 1, 1, 3, 2, 3, 1, 1, 0},   /* 1x1 with strides, VALID */
      {3, 6, 6, 7, 5, 5, 9, 1, 1, 1, 1, 1},   /* 5x5 SAME, channels not a multiple of 4 */
      {1, 9, 9, 3, 3, 3, 2, 2, 1, 2, 2, 0},   /* dilations, VALID */
      {2, 5, 4, 6, 3, 2, 7, 2, 2, 1, 1, 0},   /* VALID, stride 2 */
      {1, 4, 4, 1, 4, 4, 1, 1, 1, 1, 1, 0},   /* the filter as large as the input */
      {1, 11, 10, 4, 3, 3, 8, 2, 2, 2, 1, 1}, /* SAME with dilations and strides */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[7], k[8], k[9], k[10], 0, 0, 0, 0};
    ref_dims(&g, k[11]);
    int64_t cout = k[6];
    clg_dtype dt = i == 4 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in[2] = {rand_tensor(dt, 4, (int64_t[]){g.n, g.h, g.w, g.c}, -1, 1),
                         rand_tensor(dt, 4, (int64_t[]){g.kh, g.kw, g.c, cout}, -1, 1)};
    double *x = to_doubles(in[0]), *f = to_doubles(in[1]);
    size_t ny = (size_t)(g.n * g.oh * g.ow * cout);
    double *y = malloc(sizeof(double) * ny);
    ref_conv(&g, x, f, cout, y);
    opcase c = {"Conv2D",
                2,
                0,
                -1,
                {0},
                3,
                {clg_attr_int_list("strides", 4, (int64_t[]){1, g.sh, g.sw, 1}),
                 clg_attr_string("padding", k[11] ? "SAME" : "VALID"),
                 clg_attr_int_list("dilations", 4, (int64_t[]){1, g.dh, g.dw, 1})}};
    char what[64];
    snprintf(what, sizeof what, "Conv2D case %zu", i);
    run_check(what, 2, in, build_op, &c, 0, y, ny, dt == CLG_FLOAT64 ? 1e-12 : 1e-5);
    free(x);
    free(f);
    free(y);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* Bad input, each naming the node. */
  int64_t s1[4] = {1, 1, 1, 1};
  clg_graph *g = clg_graph_new();
  clg_node *x = ph(g, CLG_FLOAT32, 3, (int64_t[]){5, 5, 3});
  clg_node *f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 4});
  CHECK(clg_conv2d(g, "conv", x, f, s1, "SAME", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'conv': input must be 4-dimensional, not [5,5,3]");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 4, 4});
  CHECK(clg_conv2d(g, "conv", x, f, s1, "SAME", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'conv': input and filter must have the same depth: 3 vs 4");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 2, 5, 3});
  f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 4});
  CHECK(clg_conv2d(g, "conv", x, f, s1, "VALID", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'conv': Negative dimension size caused by subtracting 3 from 2 for "
                        "'conv' (op: 'Conv2D') with input shapes: [1,2,5,3], [3,3,3,4]");
  for (int bad = 0; bad < 2; bad++) {
    g = clg_graph_new();
    x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
    f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 4});
    CHECK(clg_conv2d(g, "conv", x, f, (int64_t[]){1, bad ? -2 : 0, 1, 1}, "SAME", NULL) == NULL);
    EXPECT_BUILD_ERROR(g, bad ? "Conv2D 'conv': strides must be positive, not [1,-2,1,1]"
                              : "Conv2D 'conv': strides must be positive, not [1,0,1,1]");
  }
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 4});
  CHECK(clg_conv2d(g, "conv", x, f, s1, "FULL", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'conv': padding must be SAME or VALID, not 'FULL'");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 3});
  f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 3, 4});
  CHECK(clg_conv2d(g, "conv", x, f, (int64_t[]){2, 1, 1, 1}, "SAME", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "does not yet support strides in the batch and depth dimensions");
}

/* MaxPoolGrad against a scan of each window: per channel the first strictly greater value
 * from -inf leads (ties: the first in scan order; NaN never; a window of -inf gets nothing),
 * and overlapping windows add. Channels past a vector's width, both dtypes. */
static void test_max_pool_grad_ties(void)
{
  /* n, h, w, c, kh, kw, sh, sw, same */
  static const int cases[][9] = {{2, 7, 6, 19, 3, 3, 2, 2, 1}, {1, 5, 5, 11, 2, 2, 1, 1, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], 1, 1, 0, 0, 0, 0};
    ref_dims(&g, k[8]);
    clg_dtype dt = i == 1 ? CLG_FLOAT64 : CLG_FLOAT32;
    int64_t xd[4] = {g.n, g.h, g.w, g.c}, yd[4] = {g.n, g.oh, g.ow, g.c};
    clg_tensor *in[3] = {clg_tensor_new(dt, 4, xd, NULL), clg_tensor_new(dt, 4, yd, NULL),
                         rand_tensor(dt, 4, yd, -1, 1)};
    size_t nx = clg_tensor_count(in[0]), ny = clg_tensor_count(in[1]);
    for (size_t e = 0; e < nx; e++)
      clg_test_set_elem(in[0], e, (double)(clg_test_rand() % 3)); /* many ties */
    /* The last image's channel 0: rows 0-2, columns 0-2 at -inf (a window entirely), a NaN. */
    for (int64_t h = 0; h < 3; h++)
      for (int64_t w = 0; w < 3; w++)
        clg_test_set_elem(in[0], (size_t)((((g.n - 1) * g.h + h) * g.w + w) * g.c), -INFINITY);
    clg_test_set_elem(in[0], (size_t)(((g.n - 1) * g.h + 3) * g.w * g.c + 1), NAN);
    double *x = to_doubles(in[0]), *dy = to_doubles(in[2]), *y = malloc(sizeof(double) * ny);
    ref_pool(&g, false, x, y);
    for (size_t e = 0; e < ny; e++)
      clg_test_set_elem(in[1], e, y[e]);
    double *dx = malloc(nx * sizeof(double));
    ref_pool_grad(&g, false, x, dy, dx);
    opcase c = {"MaxPoolGrad",
                3,
                0,
                -1,
                {0},
                3,
                {clg_attr_int_list("ksize", 4, (int64_t[]){1, g.kh, g.kw, 1}),
                 clg_attr_int_list("strides", 4, (int64_t[]){1, g.sh, g.sw, 1}),
                 clg_attr_string("padding", k[8] ? "SAME" : "VALID")}};
    run_check("MaxPoolGrad ties", 3, in, build_op, &c, 0, dx, nx, dt == CLG_FLOAT64 ? 1e-12 : 1e-6);
    free(x);
    free(dy);
    free(y);
    free(dx);
    for (int t = 0; t < 3; t++)
      clg_tensor_free(in[t]);
  }
}

/* Windows far larger than the input (issue 21): MaxPool, AvgPool and their gradients with a
 * window of 2^30 rows and/or columns over a few pixels (SAME) finish at once and equal the
 * reference, AvgPool dividing by its count of taps inside the input. The kernels clip each
 * window to the input before walking it; the gradients visit only the windows holding an
 * element, so ordinary geometries follow too (gaps between windows, overlaps, VALID). */
static void test_huge_windows(void)
{
  const int64_t big = (int64_t)1 << 30;
  /* n, h, w, c, kh, kw, sh, sw, same */
  const int64_t cases[][9] = {{2, 3, 4, 5, big, big, 1, 1, 1}, {1, 5, 3, 2, big, 2, 2, 1, 1},
                              {2, 4, 5, 3, 2, big, 1, 3, 1},   {1, 1, 1, 1, big, big, 1, 1, 1},
                              {1, 8, 7, 3, 2, 2, 3, 3, 1},     {2, 9, 8, 2, 2, 3, 4, 3, 0},
                              {1, 7, 9, 2, 4, 3, 1, 2, 1},     {1, 6, 7, 3, 5, 4, 2, 3, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int64_t *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], 1, 1, 0, 0, 0, 0};
    ref_dims(&g, k[8]);
    clg_dtype dt = i % 3 == 1 ? CLG_FLOAT64 : CLG_FLOAT32;
    double tol = dt == CLG_FLOAT64 ? 1e-12 : 1e-6;
    int64_t xd[4] = {g.n, g.h, g.w, g.c}, yd[4] = {g.n, g.oh, g.ow, g.c};
    clg_tensor *x = rand_tensor(dt, 4, xd, -1, 1), *dy = rand_tensor(dt, 4, yd, -1, 1);
    clg_tensor *y = clg_tensor_new(dt, 4, yd, NULL);
    size_t nx = clg_tensor_count(x), ny = clg_tensor_count(y);
    double *xv = to_doubles(x), *dyv = to_doubles(dy), *yv = malloc(ny * sizeof(double)),
           *dx = malloc(nx * sizeof(double));
    clg_attr at[3] = {clg_attr_int_list("ksize", 4, (int64_t[]){1, g.kh, g.kw, 1}),
                      clg_attr_int_list("strides", 4, (int64_t[]){1, g.sh, g.sw, 1}),
                      clg_attr_string("padding", k[8] ? "SAME" : "VALID")};
    char what[64];
    for (int avg = 0; avg < 2; avg++) {
      ref_pool(&g, avg, xv, yv);
      opcase c = {avg ? "AvgPool" : "MaxPool", 1, 0, -1, {0}, 3, {at[0], at[1], at[2]}};
      snprintf(what, sizeof what, "%s, huge window case %zu", c.op, i);
      run_check(what, 1, &x, build_op, &c, 0, yv, ny, tol);
      ref_pool_grad(&g, avg, xv, dyv, dx);
      if (avg) {
        opcase gc = {"AvgPoolGrad", 1, 0, 4, {g.n, g.h, g.w, g.c}, 3, {at[0], at[1], at[2]}};
        snprintf(what, sizeof what, "AvgPoolGrad, huge window case %zu", i);
        run_check(what, 1, &dy, build_op, &gc, 0, dx, nx, tol);
      } else {
        for (size_t e = 0; e < ny; e++)
          clg_test_set_elem(y, e, yv[e]);
        clg_tensor *in[3] = {x, y, dy};
        opcase gc = {"MaxPoolGrad", 3, 0, -1, {0}, 3, {at[0], at[1], at[2]}};
        snprintf(what, sizeof what, "MaxPoolGrad, huge window case %zu", i);
        run_check(what, 3, in, build_op, &gc, 0, dx, nx, tol);
      }
    }
    free(xv);
    free(dyv);
    free(yv);
    free(dx);
    clg_tensor_free(x);
    clg_tensor_free(y);
    clg_tensor_free(dy);
  }
}

/* LRN and LRNGrad with radii up to the largest the op accepts (issue 21: ch + radius overflowed
 * in the OpenCL kernels, which then summed no channel), on both device kinds against the
 * reference: a radius at or beyond the channels sums them all. */
static void test_lrn_huge_radius(void)
{
  const int64_t radii[] = {INT64_MAX, INT64_MAX - 1, (int64_t)1 << 62, INT32_MAX, 7, 6, 3};
  for (size_t i = 0; i < sizeof radii / sizeof radii[0]; i++) {
    clg_dtype dt = i % 2 ? CLG_FLOAT64 : CLG_FLOAT32;
    double tol = dt == CLG_FLOAT64 ? 1e-12 : 1e-5, bias = 1.5, alpha = 0.3, beta = 0.75;
    int64_t dims[4] = {2, 2, 3, 7}, r = radii[i];
    clg_tensor *in[3] = {rand_tensor(dt, 4, dims, -1, 1), rand_tensor(dt, 4, dims, -1, 1),
                         clg_tensor_new(dt, 4, dims, NULL)};
    size_t n = clg_tensor_count(in[0]);
    double *dy = to_doubles(in[0]), *x = to_doubles(in[1]), *y = malloc(n * sizeof(double)),
           *dx = malloc(n * sizeof(double));
    ref_lrn(n, dims[3], r, bias, alpha, beta, x, y);
    for (size_t e = 0; e < n; e++)
      clg_test_set_elem(in[2], e, y[e]);
    clg_attr at[4] = {clg_attr_int("depth_radius", r), clg_attr_float("bias", bias),
                      clg_attr_float("alpha", alpha), clg_attr_float("beta", beta)};
    char what[64];
    opcase l = {"LRN", 1, 0, -1, {0}, 4, {at[0], at[1], at[2], at[3]}};
    snprintf(what, sizeof what, "LRN depth_radius %lld", (long long)r);
    run_check(what, 1, &in[1], build_op, &l, 0, y, n, tol);
    ref_lrn_grad(n, dims[3], r, bias, alpha, beta, dy, x, y, dx);
    opcase lg = {"LRNGrad", 3, 0, -1, {0}, 4, {at[0], at[1], at[2], at[3]}};
    snprintf(what, sizeof what, "LRNGrad depth_radius %lld", (long long)r);
    run_check(what, 3, in, build_op, &lg, 0, dx, n, tol);
    free(dy);
    free(x);
    free(y);
    free(dx);
    for (int t = 0; t < 3; t++)
      clg_tensor_free(in[t]);
  }
}

/* MaxPool with padding EXPLICIT (ONNX's pads and ceil_mode's extra end, with no PadV2 before
 * it): pads that never win a max, windows wholly in the padding (-inf), both device kinds;
 * AvgPool takes no explicit_paddings, and the gradient is not implemented. */
static void test_max_pool_explicit(void)
{
  /* n, h, w, c, kh, kw, sh, sw, top, bottom, left, right */
  static const int cases[][12] = {{1, 9, 9, 5, 3, 3, 2, 2, 0, 1, 0, 1},
                                  {2, 8, 7, 17, 3, 3, 2, 2, 1, 1, 1, 1},
                                  {1, 6, 10, 3, 2, 3, 1, 2, 0, 2, 1, 0},
                                  {1, 4, 5, 33, 2, 2, 1, 1, 3, 3, 2, 2},
                                  {3, 5, 5, 8, 3, 3, 3, 3, 2, 1, 0, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], 1, 1, 0, 0, k[8], k[10]};
    g.oh = (g.h + k[8] + k[9] - g.kh) / g.sh + 1;
    g.ow = (g.w + k[10] + k[11] - g.kw) / g.sw + 1;
    clg_dtype dt = i == 2 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in = rand_tensor(dt, 4, (int64_t[]){g.n, g.h, g.w, g.c}, -1, 1);
    double *x = to_doubles(in);
    size_t ny = (size_t)(g.n * g.oh * g.ow * g.c);
    double *y = malloc(sizeof(double) * ny);
    ref_pool(&g, false, x, y);
    opcase c = {"MaxPool",
                1,
                0,
                -1,
                {0},
                4,
                {clg_attr_int_list("ksize", 4, (int64_t[]){1, g.kh, g.kw, 1}),
                 clg_attr_int_list("strides", 4, (int64_t[]){1, g.sh, g.sw, 1}),
                 clg_attr_string("padding", "EXPLICIT"),
                 clg_attr_int_list("explicit_paddings", 8,
                                   (int64_t[]){0, 0, k[8], k[9], k[10], k[11], 0, 0})}};
    char what[64];
    snprintf(what, sizeof what, "MaxPool EXPLICIT case %zu", i);
    run_check(what, 1, &in, build_op, &c, 0, y, ny, 0);
    free(y);
    free(x);
    clg_tensor_free(in);
  }
  clg_attr at[4] = {clg_attr_int_list("ksize", 4, (int64_t[]){1, 3, 3, 1}),
                    clg_attr_int_list("strides", 4, (int64_t[]){1, 2, 2, 1}),
                    clg_attr_string("padding", "EXPLICIT"),
                    clg_attr_int_list("explicit_paddings", 8, (int64_t[]){0, 0, 1, 1, 1, 1, 0, 0})};
  clg_graph *g = clg_graph_new();
  clg_output x = {ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 6, 6, 2}), 0};
  CHECK(clg_op(g, "MaxPool", "p", 1, &x, 3, at) == NULL);
  EXPECT_BUILD_ERROR(g, "MaxPool 'p': explicit_paddings must have 8 values under padding "
                        "EXPLICIT, not 0");
  g = clg_graph_new();
  x = (clg_output){ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 6, 6, 2}), 0};
  at[3] = clg_attr_int_list("explicit_paddings", 8, (int64_t[]){0, 0, 1, 1, -1, 1, 0, 0});
  CHECK(clg_op(g, "MaxPool", "p", 1, &x, 4, at) == NULL);
  EXPECT_BUILD_ERROR(g, "MaxPool 'p': explicit_paddings[4] is -1");
  g = clg_graph_new();
  x = (clg_output){ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 6, 6, 2}), 0};
  at[2] = clg_attr_string("padding", "SAME");
  at[3] = clg_attr_int_list("explicit_paddings", 8, (int64_t[]){0, 0, 1, 1, 1, 1, 0, 0});
  CHECK(clg_op(g, "MaxPool", "p", 1, &x, 4, at) == NULL);
  EXPECT_BUILD_ERROR(g, "MaxPool 'p': explicit_paddings must be empty under padding SAME");
  g = clg_graph_new();
  x = (clg_output){ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 6, 6, 2}), 0};
  at[2] = clg_attr_string("padding", "EXPLICIT");
  CHECK(clg_op(g, "AvgPool", "p", 1, &x, 4, at) == NULL);
  EXPECT_BUILD_ERROR(g, "AvgPool has no attribute 'explicit_paddings'");
  /* the gradient: not implemented, said so (not a VALID gradient of the wrong shape) */
  g = clg_graph_new();
  x = (clg_output){ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 6, 6, 2}), 0};
  clg_node *p = clg_op(g, "MaxPool", "p", 1, &x, 4, at);
  CHECK(p != NULL);
  clg_output ys = {p, 0}, dx = {0};
  CHECK(clg_gradients(g, 1, &ys, NULL, 1, &x, NULL, &dx) == CLG_UNIMPLEMENTED);
  clg_graph_free(g);
}

/* MaxPool or AvgPool over g's window and strides, padding SAME or VALID: c's list attributes
 * point into ksize and strides, so it is filled in place. */
typedef struct pool_op {
  int64_t ksize[4], strides[4];
  opcase c;
} pool_op;

static void pool_case(pool_op *p, bool avg, const geom *g, bool same)
{
  int64_t ks[4] = {1, g->kh, g->kw, 1}, st[4] = {1, g->sh, g->sw, 1};
  memcpy(p->ksize, ks, sizeof ks);
  memcpy(p->strides, st, sizeof st);
  p->c = (opcase){avg ? "AvgPool" : "MaxPool",
                  1,
                  0,
                  -1,
                  {0},
                  3,
                  {clg_attr_int_list("ksize", 4, p->ksize),
                   clg_attr_int_list("strides", 4, p->strides),
                   clg_attr_string("padding", same ? "SAME" : "VALID")}};
}

/* MaxPool and AvgPool over 64 and 70 channels: the host's AVX2 loop takes 32 channels at a
 * time over the whole window and the channels past the last 32 on their own. NaN (never the
 * maximum) and -inf (a window of them) sit in both parts; the maximum is exact. */
static void test_pool_wide_channels(void)
{
  /* n, h, w, c, kh, kw, sh, sw, same */
  static const int cases[][9] = {{1, 9, 9, 70, 3, 3, 2, 2, 1}, {2, 6, 7, 64, 2, 3, 2, 1, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], 1, 1, 0, 0, 0, 0};
    ref_dims(&g, k[8]);
    clg_tensor *in = rand_tensor(CLG_FLOAT32, 4, (int64_t[]){g.n, g.h, g.w, g.c}, -1, 1);
    for (int64_t h = 0; h < 3; h++) /* rows and columns 0-2 of channels 1 and 40 at -inf */
      for (int64_t w = 0; w < 3; w++)
        for (int64_t c = 1; c < g.c; c += 39)
          clg_test_set_elem(in, (size_t)((h * g.w + w) * g.c + c), -INFINITY);
    for (int64_t c = 3; c < g.c; c += 8) /* a NaN in every register's lanes */
      clg_test_set_elem(in, (size_t)((4 * g.w + 3) * g.c + c), NAN);
    clg_test_set_elem(in, (size_t)((2 * g.w + 4) * g.c + g.c - 1), NAN);
    double *x = to_doubles(in);
    size_t ny = (size_t)(g.n * g.oh * g.ow * g.c);
    double *y = malloc(sizeof(double) * ny);
    for (int avg = 0; avg < 2; avg++) {
      ref_pool(&g, avg, x, y);
      pool_op po;
      pool_case(&po, avg, &g, k[8]);
      const opcase *c = &po.c;
      char what[64];
      snprintf(what, sizeof what, "%s over %d channels", c->op, k[3]);
      run_check(what, 1, &in, build_op, c, 0, y, ny, avg ? 1e-6 : 0);
    }
    free(x);
    free(y);
    clg_tensor_free(in);
  }
}

static void test_pool_lrn_bias(void)
{
  /* n, h, w, c, kh, kw, sh, sw, same */
  static const int cases[][9] = {{2, 7, 7, 3, 3, 3, 2, 2, 1},
                                 {1, 6, 5, 5, 2, 2, 2, 2, 0},
                                 {1, 5, 6, 2, 1, 1, 3, 3, 1},
                                 {3, 4, 9, 6, 3, 2, 1, 2, 1},
                                 {1, 8, 8, 7, 3, 3, 2, 2, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int *k = cases[i];
    geom g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], 1, 1, 0, 0, 0, 0};
    ref_dims(&g, k[8]);
    clg_dtype dt = i == 3 ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in = rand_tensor(dt, 4, (int64_t[]){g.n, g.h, g.w, g.c}, -1, 1);
    double *x = to_doubles(in);
    size_t ny = (size_t)(g.n * g.oh * g.ow * g.c);
    double *y = malloc(sizeof(double) * ny);
    for (int avg = 0; avg < 2; avg++) {
      ref_pool(&g, avg, x, y);
      pool_op po;
      pool_case(&po, avg, &g, k[8]);
      const opcase *c = &po.c;
      run_check(c->op, 1, &in, build_op, c, 0, y, ny, dt == CLG_FLOAT64 ? 1e-12 : 1e-6);
    }
    free(y);
    /* LRN with the model's parameters and others. */
    size_t n = clg_tensor_count(in);
    y = malloc(sizeof(double) * n);
    int64_t radius = (int64_t)i % 3 * 2;
    double bias = 1.0 + 0.5 * (double)i, alpha = 0.001 / 9 * (double)(i + 1) * 50, beta = 0.75;
    ref_lrn(n, g.c, radius, bias, alpha, beta, x, y);
    opcase l = {"LRN",
                1,
                0,
                -1,
                {0},
                4,
                {clg_attr_int("depth_radius", radius), clg_attr_float("bias", bias),
                 clg_attr_float("alpha", alpha), clg_attr_float("beta", beta)}};
    run_check("LRN", 1, &in, build_op, &l, 0, y, n, dt == CLG_FLOAT64 ? 1e-12 : 1e-5);
    /* BiasAdd along the channels. */
    clg_tensor *bin[2] = {in, rand_tensor(dt, 1, &g.c, -1, 1)};
    for (size_t j = 0; j < n; j++)
      y[j] = x[j] + clg_test_elem(bin[1], j % (size_t)g.c);
    opcase b = {"BiasAdd", 2, 0, -1, {0}, 0, {{0}}};
    run_check("BiasAdd", 2, bin, build_op, &b, 0, y, n, 1e-6);
    clg_tensor_free(bin[1]);
    free(y);
    free(x);
    clg_tensor_free(in);
  }
  clg_graph *g = clg_graph_new();
  clg_node *x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 4, 4, 3});
  CHECK(clg_bias_add(g, "b", x, ph(g, CLG_FLOAT32, 1, (int64_t[]){4})) == NULL);
  EXPECT_BUILD_ERROR(g, "BiasAdd 'b': Must provide as many biases as the last dimension of the "
                        "input tensor: [4] vs. [1,4,4,3]");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 3, (int64_t[]){4, 4, 3});
  CHECK(clg_max_pool(g, "p", x, (int64_t[]){1, 2, 2, 1}, (int64_t[]){1, 2, 2, 1}, "SAME") == NULL);
  EXPECT_BUILD_ERROR(g, "MaxPool 'p': input must be 4-dimensional, not [4,4,3]");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 2, 2, 3});
  CHECK(clg_avg_pool(g, "p", x, (int64_t[]){1, 3, 3, 1}, (int64_t[]){1, 1, 1, 1}, "VALID") == NULL);
  EXPECT_BUILD_ERROR(g, "AvgPool 'p': Negative dimension size caused by subtracting 3 from 2");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 4, 4, 3});
  CHECK(clg_max_pool(g, "p", x, (int64_t[]){1, 2, 2, 1}, (int64_t[]){1, 0, 2, 1}, "SAME") == NULL);
  EXPECT_BUILD_ERROR(g, "MaxPool 'p': strides must be positive, not [1,0,2,1]");
  g = clg_graph_new();
  x = ph(g, CLG_FLOAT32, 2, (int64_t[]){4, 3});
  CHECK(clg_lrn(g, "n", x, 2, 1, 1, 0.5) == NULL);
  EXPECT_BUILD_ERROR(g, "LRN 'n': input must be 4-dimensional, not [4,3]");
}

/* --- the CIFAR-10 model's forward pass ------------------------------------------------------ */

typedef struct cifar {
  clg_tensor *w[10]; /* conv1 w, b, conv2 w, b, local3 w, b, local4 w, b, softmax w, b */
  int64_t batch;
} cifar;

static const int64_t cifar_shapes[10][4] = {{5, 5, 3, 64}, {64},  {5, 5, 64, 64}, {64},
                                            {2304, 384},   {384}, {384, 192},     {192},
                                            {192, 10},     {10}};
static const int cifar_ranks[10] = {4, 1, 4, 1, 2, 1, 2, 1, 2, 1};

static clg_node *build_cifar(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const cifar *m = ctx;
  clg_node *w[10];
  for (int i = 0; i < 10; i++)
    w[i] = clg_const(g, NULL, m->w[i]);
  int64_t s1[4] = {1, 1, 1, 1}, k3[4] = {1, 3, 3, 1}, s2[4] = {1, 2, 2, 1};
  double alpha = 0.001 / 9.0; /* default names: the graph holds one copy per device */
  clg_node *h = clg_conv2d(g, NULL, in[0], w[0], s1, "SAME", NULL);
  h = clg_relu(g, NULL, clg_bias_add(g, NULL, h, w[1]));
  h = clg_max_pool(g, NULL, h, k3, s2, "SAME");
  h = clg_lrn(g, NULL, h, 4, 1.0, alpha, 0.75);
  h = clg_conv2d(g, NULL, h, w[2], s1, "SAME", NULL);
  h = clg_relu(g, NULL, clg_bias_add(g, NULL, h, w[3]));
  h = clg_lrn(g, NULL, h, 4, 1.0, alpha, 0.75);
  h = clg_max_pool(g, NULL, h, k3, s2, "SAME");
  h = clg_reshape(g, NULL, h, 2, (int64_t[]){m->batch, -1});
  h = clg_relu(g, NULL, clg_add(g, NULL, clg_matmul(g, NULL, h, w[4], false, false), w[5]));
  h = clg_relu(g, NULL, clg_add(g, NULL, clg_matmul(g, NULL, h, w[6], false, false), w[7]));
  return clg_add(g, NULL, clg_matmul(g, NULL, h, w[8], false, false), w[9]);
}

static void ref_dense(const double *x, const double *w, const double *b, int64_t batch, int64_t n,
                      int64_t k, bool relu, double *y)
{
  for (int64_t i = 0; i < batch; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = b[j];
      for (int64_t t = 0; t < k; t++)
        acc += x[i * k + t] * w[t * n + j];
      y[i * n + j] = relu && acc < 0 ? 0 : acc;
    }
}

static void test_cifar_forward(void)
{
  cifar m = {{NULL}, 2};
  const double sigma[10] = {5e-2, 0, 5e-2, 0.1, 0.04, 0.1, 0.04, 0.1, 1.0 / 192, 0};
  for (int i = 0; i < 10; i++) {
    m.w[i] = clg_tensor_new(CLG_FLOAT32, cifar_ranks[i], cifar_shapes[i], NULL);
    for (size_t j = 0; j < clg_tensor_count(m.w[i]); j++) /* fixed weights: seeded uniform */
      clg_test_set_elem(m.w[i], j,
                        i % 2 ? sigma[i] + clg_test_uniform(-0.05, 0.05)
                              : clg_test_uniform(-2, 2) * sigma[i]);
  }
  clg_tensor *img = rand_tensor(CLG_FLOAT32, 4, (int64_t[]){m.batch, 24, 24, 3}, -2, 2);
  double *w[10];
  for (int i = 0; i < 10; i++)
    w[i] = to_doubles(m.w[i]);
  double *x = to_doubles(img);
  /* conv1 + bias + relu, pool1, norm1 */
  geom g1 = {m.batch, 24, 24, 3, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0};
  ref_dims(&g1, true);
  size_t n1 = (size_t)(m.batch * 24 * 24 * 64);
  double *a = malloc(sizeof(double) * n1), *b = malloc(sizeof(double) * n1);
  ref_conv(&g1, x, w[0], 64, a);
  for (size_t i = 0; i < n1; i++)
    a[i] = fmax(a[i] + w[1][i % 64], 0);
  geom p1 = {m.batch, 24, 24, 64, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0};
  ref_dims(&p1, true);
  ref_pool(&p1, false, a, b);
  size_t n2 = (size_t)(m.batch * 12 * 12 * 64);
  ref_lrn(n2, 64, 4, 1.0, 0.001 / 9.0, 0.75, b, a);
  /* conv2 + bias + relu, norm2, pool2 */
  geom g2 = {m.batch, 12, 12, 64, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0};
  ref_dims(&g2, true);
  ref_conv(&g2, a, w[2], 64, b);
  for (size_t i = 0; i < n2; i++)
    b[i] = fmax(b[i] + w[3][i % 64], 0);
  ref_lrn(n2, 64, 4, 1.0, 0.001 / 9.0, 0.75, b, a);
  geom p2 = {m.batch, 12, 12, 64, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0};
  ref_dims(&p2, true);
  ref_pool(&p2, false, a, b); /* [batch, 6, 6, 64] = [batch, 2304] */
  ref_dense(b, w[4], w[5], m.batch, 384, 2304, true, a);
  ref_dense(a, w[6], w[7], m.batch, 192, 384, true, b);
  double logits[2 * 10];
  ref_dense(b, w[8], w[9], m.batch, 10, 192, false, logits);
  run_check("CIFAR-10 forward", 1, &img, build_cifar, &m, 0, logits, (size_t)(m.batch * 10), 1e-4);
  free(a);
  free(b);
  free(x);
  for (int i = 0; i < 10; i++) {
    free(w[i]);
    clg_tensor_free(m.w[i]);
  }
  clg_tensor_free(img);
}

/* The plan holds Conv2D's scratch (the im2col chunk, and CLBlast's on OpenCL): a
 * steady-state run makes no allocator call, on either device kind. */
static void test_conv_scratch_planned(void)
{
  const char *devs[2] = {"/cpu:0", "/device:GPU:1"};
  for (int d = 0; d < 2; d++) {
    clg_graph *g = clg_graph_new();
    clg_node *x = ph(g, CLG_FLOAT32, 4, (int64_t[]){2, 12, 12, 16});
    clg_tensor *fv = rand_tensor(CLG_FLOAT32, 4, (int64_t[]){5, 5, 16, 8}, -1, 1);
    clg_graph_push_device(g, devs[d]);
    clg_node *c =
        clg_conv2d(g, NULL, x, clg_const(g, NULL, fv), (int64_t[]){1, 1, 1, 1}, "SAME", NULL);
    clg_graph_pop_device(g);
    clg_tensor *xv = rand_tensor(CLG_FLOAT32, 4, (int64_t[]){2, 12, 12, 16}, -1, 1);
    clg_session *s = NULL;
    CHECK_OK(clg_session_new(g, &session_opt, &s));
    clg_memory_stats st0, st1;
    for (int r = 0; r < 4; r++) {
      if (r == 1)
        CHECK_OK(clg_session_memory_stats(s, devs[d], &st0));
      clg_tensor *out = NULL;
      CHECK_OK(clg_session_run(s, 1, &x, &xv, 1, &c, &out));
      clg_tensor_free(out);
    }
    CHECK_OK(clg_session_memory_stats(s, devs[d], &st1));
    CHECK_MSG(st1.num_allocs == st0.num_allocs, "%s: %llu allocator calls in 3 steady runs",
              devs[d], (unsigned long long)(st1.num_allocs - st0.num_allocs));
    clg_tensor_free(xv);
    clg_tensor_free(fv);
    clg_session_free(s);
    clg_graph_free(g);
  }
}

/* Gradients of broadcasting Add/Sub/Mul: an input that was broadcast gets the incoming
 * gradient summed over the broadcast axes, in its own shape. y = sum((a * b) - c) with a
 * [2,3], b [3], c [2,1]: da = b, db = column sums of a, dc = -3 per row. */
static void test_broadcast_gradients(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}),
           *b = ph(g, CLG_FLOAT32, 1, (int64_t[]){3}),
           *c = ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 1});
  clg_node *y = clg_sub(g, NULL, clg_mul(g, NULL, a, b), c);
  clg_output xs[3] = {clg_out(a, 0), clg_out(b, 0), clg_out(c, 0)}, ys = clg_out(y, 0), d[3];
  CHECK_OK(clg_gradients(g, 1, &ys, NULL, 3, xs, NULL, d));
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &session_opt, &s));
  clg_tensor *in[3] = {
      clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}),
      clg_tensor_new(CLG_FLOAT32, 1, (int64_t[]){3}, (float[]){7, 8, 9}),
      clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 1}, (float[]){1, 1})};
  clg_tensor *out[3] = {NULL, NULL, NULL};
  CHECK_OK(clg_session_run_outputs(s, 3, xs, in, 3, d, out, 0, NULL));
  close_to(out[0], (double[]){7, 8, 9, 7, 8, 9}, 6, 0, "d/da", "default");
  close_to(out[1], (double[]){5, 7, 9}, 3, 0, "d/db", "default");
  close_to(out[2], (double[]){-3, -3}, 2, 0, "d/dc", "default");
  CHECK(clg_tensor_rank(out[1]) == 1 && clg_tensor_rank(out[2]) == 2 &&
        clg_tensor_dim(out[2], 1) == 1);
  for (int i = 0; i < 3; i++) {
    clg_tensor_free(in[i]);
    clg_tensor_free(out[i]);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* Bad input for the remaining ops: each a clear error naming the node. */
static void test_more_bad_input(void)
{
  clg_graph *g = clg_graph_new();
  CHECK(clg_softmax(g, "sm", ph(g, CLG_FLOAT32, 0, NULL)) == NULL);
  EXPECT_BUILD_ERROR(g, "Softmax 'sm': logits must have >= 1 dimension");
  g = clg_graph_new();
  clg_node *p = ph(g, CLG_FLOAT32, 2, (int64_t[]){4, 10});
  CHECK(clg_in_top_k(g, "top", p, ph(g, CLG_INT32, 1, (int64_t[]){3}), 1) == NULL);
  EXPECT_BUILD_ERROR(g, "InTopKV2 'top': First dimension of predictions 4 must match length of "
                        "targets 3");
  g = clg_graph_new();
  p = ph(g, CLG_FLOAT32, 2, (int64_t[]){4, 10});
  CHECK(clg_sparse_softmax_cross_entropy_with_logits(
            g, "x", p, ph(g, CLG_FLOAT32, 1, (int64_t[]){4})) == NULL);
  EXPECT_BUILD_ERROR(g, "SparseSoftmaxCrossEntropyWithLogits 'x': labels must be int32 or int64");
  g = clg_graph_new();
  CHECK(clg_conv2d(g, "c", ph(g, CLG_INT32, 4, (int64_t[]){1, 3, 3, 1}),
                   ph(g, CLG_INT32, 4, (int64_t[]){1, 1, 1, 1}), (int64_t[]){1, 1, 1, 1}, "SAME",
                   NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'c': Conv2D takes float or double, not int32");
  /* An element-wise op on int32 has no kernel anywhere: placement says so, naming it. */
  g = clg_graph_new();
  clg_exp(g, "e", ph(g, CLG_INT32, 1, (int64_t[]){3}));
  CHECK_OK(clg_graph_status(g));
  clg_session *s = NULL;
  CHECK_CODE(clg_session_new(g, &session_opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "Operation was Exp and inputs were [int32]");
  CHECK_CONTAINS(clg_last_error(), "[[Node: e]]");
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- issue 21: int64 arguments, window and count overflows, given attributes ------------- */

/* Item 3: the typed builders keep int64 dims, axes, perms and k whole (TensorFlow makes such
 * a Const int64 when a value does not fit in int32); they were cut to 32 bits, so that a
 * shape of 4294967302 became 6. */
static void test_int64_arguments(void)
{
  const int64_t big = 4294967302; /* 2^32 + 6 */
  clg_graph *g = clg_graph_new();
  CHECK(clg_reshape(g, "r", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 1, &big) == NULL);
  EXPECT_BUILD_ERROR(g, "Reshape 'r': Input to reshape is a tensor with 6 values, but the "
                        "requested shape has 4294967302");
  g = clg_graph_new();
  CHECK(clg_reshape(g, "r", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 2,
                    (int64_t[]){-1, 4294967298}) == NULL);
  EXPECT_BUILD_ERROR(g, "Reshape 'r': Input to reshape is a tensor with 6 values, but the "
                        "requested shape requires a multiple of 4294967298");
  g = clg_graph_new();
  clg_node *f = clg_fill(g, "f", 2, (int64_t[]){big, 0}, ph(g, CLG_FLOAT32, 0, NULL));
  CHECK_OK(clg_graph_status(g));
  CHECK(f && clg_node_rank(f) == 2 && clg_node_dim(f, 0) == big && clg_node_dim(f, 1) == 0);
  /* Fill's dims Const is int64 then (TensorFlow's index_type follows it). */
  CHECK(f && clg_node_dtype(clg_node_input(f, 0)) == CLG_INT64);
  clg_node *small = clg_fill(g, "f2", 1, (int64_t[]){3}, ph(g, CLG_FLOAT32, 0, NULL));
  CHECK(small && clg_node_dtype(clg_node_input(small, 0)) == CLG_INT32);
  clg_graph_free(g);
  g = clg_graph_new();
  CHECK(clg_transpose(g, "t", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 2,
                      (int64_t[]){4294967297, 4294967296}) == NULL);
  EXPECT_BUILD_ERROR(g, "Transpose 't': perm[0] = 4294967297 is out of range [0, 2)");
  clg_node *(*reductions[3])(clg_graph *, const char *, clg_node *, int, const int64_t *,
                             bool) = {clg_sum, clg_mean, clg_max};
  const char *names[3] = {"Sum", "Mean", "Max"};
  for (int i = 0; i < 3; i++) {
    g = clg_graph_new();
    CHECK(reductions[i](g, "s", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 1,
                        (int64_t[]){4294967297}, false) == NULL);
    char want[128];
    snprintf(want, sizeof want,
             "%s 's': Invalid reduction dimension (4294967297 for input with 2 dimension(s)",
             names[i]);
    EXPECT_BUILD_ERROR(g, want);
  }
  /* k of 2^32 + 1 is larger than any row: every finite target is in the top k (it was 1). */
  clg_tensor *in[2] = {
      clg_tensor_new(CLG_FLOAT32, 2, (int64_t[]){2, 3}, (float[]){3, 2, 1, 1, 2, 3}),
      clg_tensor_new(CLG_INT32, 1, (int64_t[]){2}, (int32_t[]){2, 0})};
  int64_t k = 4294967297;
  run_check("InTopKV2 with k = 2^32 + 1", 2, in, build_in_top_k, &k, 0, (double[]){1, 1}, 2, 0);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
}

/* Conv2D with strides and dilations [1,d,d,1] on both device kinds. */
typedef struct conv_case {
  int64_t sh, sw, dh, dw;
  const char *padding;
} conv_case;

static clg_node *build_conv(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const conv_case *c = ctx;
  return clg_conv2d(g, NULL, in[0], in[1], (int64_t[]){1, c->sh, c->sw, 1}, c->padding,
                    (int64_t[]){1, c->dh, c->dw, 1});
}

/* The gradient of sum(Conv2D) with respect to the filter: Conv2DBackpropFilter over the same
 * geometry. */
static clg_node *build_conv_filter_grad(clg_graph *g, clg_node *const *in, const void *ctx)
{
  clg_node *y = build_conv(g, in, ctx);
  clg_node *s = clg_sum(g, NULL, y, 4, (int64_t[]){0, 1, 2, 3}, false);
  clg_output grad[1] = {{NULL, 0}};
  clg_gradients(g, 1, (clg_output[]){clg_out(s, 0)}, NULL, 1, (clg_output[]){clg_out(in[1], 0)},
                NULL, grad);
  return grad[0].node;
}

static clg_node *build_max_pool_big_stride(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_max_pool(g, NULL, in[0], (int64_t[]){1, 2, 2, 1},
                      (int64_t[]){1, INT64_MAX, INT64_MAX, 1}, (const char *)ctx);
}

/* The gradient of sum(y) with respect to input 0 for y built by build_conv or
 * build_max_pool_big_stride (ctx then the padding). */
static clg_node *build_input_grad(clg_graph *g, clg_node *const *in, const void *ctx, bool pool)
{
  clg_node *y = pool ? build_max_pool_big_stride(g, in, ctx) : build_conv(g, in, ctx);
  clg_node *s = clg_sum(g, NULL, y, 4, (int64_t[]){0, 1, 2, 3}, false);
  clg_output grad[1] = {{NULL, 0}};
  clg_gradients(g, 1, (clg_output[]){clg_out(s, 0)}, NULL, 1, (clg_output[]){clg_out(in[0], 0)},
                NULL, grad);
  return grad[0].node;
}

static clg_node *build_conv_input_grad(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return build_input_grad(g, in, ctx, false);
}

static clg_node *build_max_pool_grad(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return build_input_grad(g, in, ctx, true);
}

/* Item 4: window geometry and element counts in checked arithmetic. */
static void test_window_overflow(void)
{
  /* SAME with a dilation so large that (k - 1) * d + 1 passes INT64_MAX: only the centre tap
   * of an odd filter can reach the input (the others are a dilation away), so y = x * f[1];
   * with an even filter no tap does, y = 0. The overflow used to put tap 0 on the input. */
  clg_tensor *in[2] = {
      clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){1, 5, 1, 1}, (float[]){1, 2, 3, 4, 5}),
      clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){3, 1, 1, 1}, (float[]){100, 2, 10000})};
  conv_case rows = {1, 1, (int64_t)1 << 62, 1, "SAME"};
  run_check("Conv2D SAME, dilation 2^62, 3 taps", 2, in, build_conv, &rows, 0,
            (double[]){2, 4, 6, 8, 10}, 5, 0);
  /* Its filter's gradient: the centre tap sees every input element, the others none. */
  run_check("Conv2DBackpropFilter SAME, dilation 2^62", 2, in, build_conv_filter_grad, &rows, 0,
            (double[]){0, 15, 0}, 3, 0);
  run_check("Conv2DBackpropInput SAME, dilation 2^62", 2, in, build_conv_input_grad, &rows, 0,
            (double[]){2, 2, 2, 2, 2}, 5, 0);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  in[0] = clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){1, 1, 4, 1}, (float[]){1, 2, 3, 4});
  in[1] = clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){1, 2, 1, 1}, (float[]){7, 9});
  conv_case cols = {1, 2, 1, INT64_MAX, "SAME"};
  run_check("Conv2D SAME, dilation INT64_MAX, 2 taps", 2, in, build_conv, &cols, 0,
            (double[]){0, 0}, 2, 0);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  /* VALID: the error says what was subtracted (it showed a wrapped, negative size). */
  clg_graph *g = clg_graph_new();
  CHECK(clg_conv2d(g, "c", ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 5, 5, 1}),
                   ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 1, 1, 1}), (int64_t[]){1, 1, 1, 1}, "VALID",
                   (int64_t[]){1, (int64_t)1 << 62, 1, 1}) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'c': Negative dimension size caused by subtracting (3 - 1) * "
                        "4611686018427387904 + 1 from 5 for 'c' (op: 'Conv2D') with input shapes: "
                        "[1,5,5,1], [3,1,1,1]");
  /* The same geometry reaches the gradient ops through the one helper. */
  g = clg_graph_new();
  clg_tensor *xs = clg_tensor_new(CLG_INT32, 1, (int64_t[]){4}, (int32_t[]){1, 5, 5, 1});
  clg_output bi[3] = {clg_out(clg_const(g, NULL, xs), 0),
                      clg_out(ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 1, 1, 1}), 0),
                      clg_out(ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 3, 5, 1}), 0)};
  clg_tensor_free(xs);
  clg_attr ba[3] = {clg_attr_int_list("strides", 4, (int64_t[]){1, 1, 1, 1}),
                    clg_attr_string("padding", "VALID"),
                    clg_attr_int_list("dilations", 4, (int64_t[]){1, INT64_MAX, 1, 1})};
  CHECK(clg_op(g, "Conv2DBackpropInput", "bi", 3, bi, 3, ba) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2DBackpropInput 'bi': Negative dimension size caused by subtracting "
                        "(3 - 1) * 9223372036854775807 + 1 from 5");
  /* A filter window whose taps cannot be counted (zero elements through cout = 0). */
  g = clg_graph_new();
  CHECK(clg_conv2d(g, "c", ph(g, CLG_FLOAT32, 4, (int64_t[]){0, 4, 4, (int64_t)1 << 22}),
                   ph(g, CLG_FLOAT32, 4,
                      (int64_t[]){(int64_t)1 << 21, (int64_t)1 << 21, (int64_t)1 << 22, 0}),
                   (int64_t[]){1, 1, 1, 1}, "SAME", NULL) == NULL);
  EXPECT_BUILD_ERROR(g, "Conv2D 'c': the filter [2097152,2097152,4194304,0] has more than "
                        "9223372036854775807 taps per output");
  /* Pooling with a stride of INT64_MAX: one window per dim, the first (it gave 0 rows under
   * SAME, a negative size under VALID). */
  clg_tensor *x =
      clg_tensor_new(CLG_FLOAT32, 4, (int64_t[]){1, 3, 3, 1}, (float[]){1, 5, 2, 4, 3, 9, 8, 7, 6});
  run_check("MaxPool SAME, stride INT64_MAX", 1, &x, build_max_pool_big_stride, "SAME", 0,
            (double[]){5}, 1, 0);
  run_check("MaxPool VALID, stride INT64_MAX", 1, &x, build_max_pool_big_stride, "VALID", 0,
            (double[]){5}, 1, 0);
  run_check("MaxPoolGrad SAME, stride INT64_MAX", 1, &x, build_max_pool_grad, "SAME", 0,
            (double[]){0, 1, 0, 0, 0, 0, 0, 0, 0}, 9, 0);
  clg_tensor_free(x);
  /* Reshape's product: [-1, 2^32, 2^32] wrapped to 0 and a 6-element input was called "an
   * empty tensor"; an empty input does take that shape. */
  g = clg_graph_new();
  CHECK(clg_reshape(g, "r", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 3,
                    (int64_t[]){-1, 4294967296, 4294967296}) == NULL);
  EXPECT_BUILD_ERROR(g, "Reshape 'r': Input to reshape is a tensor with 6 values, but the "
                        "requested shape [-1,4294967296,4294967296] requires a multiple of more "
                        "than 9223372036854775807");
  g = clg_graph_new();
  CHECK(clg_reshape(g, "r", ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 2,
                    (int64_t[]){4294967296, 4294967296}) == NULL);
  EXPECT_BUILD_ERROR(g, "Reshape 'r': Input to reshape is a tensor with 6 values, but the "
                        "requested shape [4294967296,4294967296] has more than "
                        "9223372036854775807");
  g = clg_graph_new();
  clg_node *r = clg_reshape(g, "r", ph(g, CLG_FLOAT32, 2, (int64_t[]){0, 3}), 3,
                            (int64_t[]){-1, 4294967296, 4294967296});
  CHECK_OK(clg_graph_status(g));
  CHECK(r && clg_node_dim(r, 0) == 0 && clg_node_dim(r, 1) == 4294967296);
  clg_graph_free(g);
}

/* Item 20: a given attribute must agree with what the inputs make it (graph.h), for every
 * op: the builder compares each given attribute the op infers with the inferred value. */
static void test_given_attrs_agree(void)
{
  clg_attr t_int = clg_attr_dtype("T", CLG_INT32), t_float = clg_attr_dtype("T", CLG_FLOAT32);
  for (int good = 0; good < 2; good++) {
    clg_attr t = good ? t_float : t_int;
    struct {
      const char *op;
      int nin;
      clg_attr attrs[4];
      int nattrs;
    } cases[5] = {
        {"Conv2D",
         2,
         {clg_attr_int_list("strides", 4, (int64_t[]){1, 1, 1, 1}),
          clg_attr_string("padding", "SAME"), t},
         3},
        {"MaxPool",
         1,
         {clg_attr_int_list("ksize", 4, (int64_t[]){1, 2, 2, 1}),
          clg_attr_int_list("strides", 4, (int64_t[]){1, 2, 2, 1}),
          clg_attr_string("padding", "VALID"), t},
         4},
        {"Reshape", 2, {t}, 1},
        {"Sum", 2, {t}, 1},
        {"BiasAdd", 2, {t}, 1},
    };
    for (int i = 0; i < 5; i++) {
      clg_graph *g = clg_graph_new();
      clg_node *x = ph(g, CLG_FLOAT32, 4, (int64_t[]){1, 4, 4, 2});
      clg_node *f = ph(g, CLG_FLOAT32, 4, (int64_t[]){3, 3, 2, 2});
      clg_node *b = ph(g, CLG_FLOAT32, 1, (int64_t[]){2});
      clg_node *second = !strcmp(cases[i].op, "Conv2D")    ? f
                         : !strcmp(cases[i].op, "BiasAdd") ? b
                         : !strcmp(cases[i].op, "Sum")     ? const_ints(g, 1, (int64_t[]){3})
                                                           : const_ints(g, 1, (int64_t[]){32});
      clg_output io[2] = {clg_out(x, 0), clg_out(second, 0)};
      clg_node *n = clg_op(g, cases[i].op, "n", cases[i].nin, io, cases[i].nattrs, cases[i].attrs);
      if (good) {
        CHECK_MSG(n != NULL, "%s with T=float: %s", cases[i].op, clg_graph_error(g));
        clg_graph_free(g);
      } else {
        CHECK(n == NULL);
        char want[128];
        snprintf(want, sizeof want, "%s 'n': attribute T is int32 but the inputs make it float",
                 cases[i].op);
        EXPECT_BUILD_ERROR(g, want);
      }
    }
  }
  /* The generic case: index dtypes (Tshape, Tidx, Tperm, index_type, Tlabels), N, and an op
   * that takes the given value as is (ArgMax's output_type). */
  struct {
    const char *op, *want;
    clg_attr attr;
  } generic[] = {
      {"Reshape", "attribute Tshape is int64 but the inputs make it int32",
       clg_attr_dtype("Tshape", CLG_INT64)},
      {"Transpose", "attribute Tperm is int64 but the inputs make it int32",
       clg_attr_dtype("Tperm", CLG_INT64)},
      {"Mean", "attribute Tidx is int64 but the inputs make it int32",
       clg_attr_dtype("Tidx", CLG_INT64)},
      {"Fill", "attribute index_type is int64 but the inputs make it int32",
       clg_attr_dtype("index_type", CLG_INT64)},
      {"SparseSoftmaxCrossEntropyWithLogits",
       "attribute Tlabels is int64 but the inputs make it int32",
       clg_attr_dtype("Tlabels", CLG_INT64)},
      {"L2Loss", "attribute T is double but the inputs make it float",
       clg_attr_dtype("T", CLG_FLOAT64)},
      {"BiasAddGrad", "attribute T is bool but the inputs make it float",
       clg_attr_dtype("T", CLG_BOOL)},
  };
  for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++) {
    clg_graph *g = clg_graph_new();
    clg_output io[2];
    int nin = 2;
    if (!strcmp(generic[i].op, "Fill")) {
      io[0] = clg_out(const_ints(g, 2, (int64_t[]){2, 2}), 0);
      io[1] = clg_out(ph(g, CLG_FLOAT32, 0, NULL), 0);
    } else if (!strcmp(generic[i].op, "SparseSoftmaxCrossEntropyWithLogits")) {
      io[0] = clg_out(ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 0);
      io[1] = clg_out(ph(g, CLG_INT32, 1, (int64_t[]){2}), 0);
    } else {
      io[0] = clg_out(ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 0);
      io[1] = clg_out(const_ints(g, 2,
                                 !strcmp(generic[i].op, "Reshape") ? (int64_t[]){3, 2}
                                 : !strcmp(generic[i].op, "Mean")  ? (int64_t[]){0, 1}
                                                                   : (int64_t[]){1, 0}),
                      0);
      nin = strcmp(generic[i].op, "L2Loss") && strcmp(generic[i].op, "BiasAddGrad") ? 2 : 1;
    }
    char want[160];
    snprintf(want, sizeof want, "%s 'n': %s", generic[i].op, generic[i].want);
    CHECK(clg_op(g, generic[i].op, "n", nin, io, 1, &generic[i].attr) == NULL);
    EXPECT_BUILD_ERROR(g, want);
  }
  clg_graph *g = clg_graph_new();
  clg_node *three = ph(g, CLG_FLOAT32, 1, (int64_t[]){3});
  clg_output three3[3] = {clg_out(three, 0), clg_out(three, 0), clg_out(three, 0)};
  CHECK(clg_op(g, "AddN", "n", 3, three3, 1, (clg_attr[]){clg_attr_int("N", 2)}) == NULL);
  EXPECT_BUILD_ERROR(g, "AddN 'n': attributes N and T must match the 3 inputs of dtype float");
  g = clg_graph_new();
  clg_output am[2] = {clg_out(ph(g, CLG_FLOAT32, 2, (int64_t[]){2, 3}), 0),
                      clg_out(const_ints(g, 1, (int64_t[]){1}), 0)};
  clg_node *a = clg_op(
      g, "ArgMax", "a", 2, am, 2,
      (clg_attr[]){clg_attr_dtype("output_type", CLG_INT32), clg_attr_dtype("Tidx", CLG_INT32)});
  CHECK_OK(clg_graph_status(g));
  CHECK(a && clg_node_dtype(a) == CLG_INT32);
  clg_graph_free(g);
}

int main(void)
{
  clg_test_seed(13);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_nn_ops");
  keeper_start();
  test_binary();
  test_select();
  test_unary();
  test_cast();
  test_fill();
  test_reshape_transpose();
  test_transpose_tiles();
  test_reductions();
  test_softmax();
  test_xent();
  test_in_top_k();
  test_conv2d();
  test_pool_lrn_bias();
  test_max_pool_explicit();
  test_pool_wide_channels();
  test_max_pool_grad_ties();
  test_huge_windows();
  test_lrn_huge_radius();
  test_cifar_forward();
  test_more_bad_input();
  test_conv_scratch_planned();
  test_broadcast_gradients();
  test_int64_arguments();
  test_window_overflow();
  test_given_attrs_agree();
  keeper_stop();
  return clg_test_summary("test_nn_ops");
}
