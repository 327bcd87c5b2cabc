/* The ops ONNX import (issue 24) and tfjs graphs (issue 23) add: comparisons, logical ops, Pow
 * and Atan2, the element-wise math of tf.math and tf.nn, IsNan and IsInf, SelectV2 and
 * BroadcastTo. Each runs built by its TensorFlow name (as the importers build it) on CPU:0 and on
 * a PoCL stand-in GPU, in float32 and float64 (and int32/int64/bool where the op takes them),
 * against naive double-precision references written here (libm's functions, broadcasting by
 * explicit index arithmetic, TensorFlow's documented edge cases: Round(2.5) = 2,
 * Round(-0.5) = -0, NaN compares false but != is true, a negative base with an integral
 * exponent); gradients against central finite differences in float64 on both kinds; bad input
 * refused with errors naming the node. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static clg_session_options session_opt;

/* --- tensors and references ------------------------------------------------------------- */

/* The offset in an input of rank ri (dims di, aligned at the right) of output element i. */
static size_t bcast_offset(int ro, const int64_t *dout, size_t i, int ri, const int64_t *di)
{
  size_t off = 0, stride = 1;
  for (int k = ro - 1; k >= 0; k--) {
    size_t idx = i % (size_t)dout[k];
    i /= (size_t)dout[k];
    int ki = k - (ro - ri);
    if (ki < 0)
      continue;
    if (di[ki] != 1)
      off += idx * stride;
    stride *= (size_t)di[ki];
  }
  return off;
}

/* What an output must be: dtype, shape, values; tolerance |got - want| <= abs + rel * |want|
 * (NaN must be NaN, infinities exact); signed_zero: a zero's sign must match too. */
typedef struct want {
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  const double *v;
  double abs, rel;
  bool signed_zero;
} want;

static void check_out(const clg_tensor *t, const want *w, const char *what, const char *dev)
{
  clg_test_check_values(t, w->dtype, w->rank, w->dims, w->v, w->abs, w->rel, w->signed_zero, what,
                        dev);
}

typedef clg_test_build_fn build_fn;

/* The op named ctx on every input, built through the registry by name (as the importers do). */
static clg_node *build_by_name(clg_graph *g, clg_node *const *in, const void *ctx)
{
  clg_output io[3];
  int n = 0;
  for (; n < 3 && in[n]; n++)
    io[n] = clg_out(in[n], 0);
  return clg_op(g, (const char *)ctx, NULL, n, io, 0, NULL);
}

/* Builds fn's node on CPU:0 and on a stand-in GPU from placeholders fed `in`, runs both in
 * one session and checks both outputs against w. */
static void run_case(const char *what, int nin, clg_tensor *const *in, build_fn fn, const void *ctx,
                     const want *w)
{
  clg_tensor *out[2];
  char err[1024];
  clg_code code = clg_test_run_both(&session_opt, nin, in, fn, ctx, 0, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK) {
    check_out(out[0], w, what, "CPU:0");
    check_out(out[1], w, what, "GPU");
  }
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
}

#define EXPECT_ERROR(g, node, text) clg_test_expect_error(g, node, text, __LINE__)

/* The value an element of dtype holds after the round trip through the tensor. */
static double as_stored(clg_dtype dt, double v) { return dt == CLG_FLOAT32 ? (double)(float)v : v; }

/* Float tolerances: a few ulp of the output type (OpenCL's built-ins allow up to 16 for erf). */
static void float_tol(clg_dtype dt, want *w)
{
  w->abs = dt == CLG_FLOAT32 ? 1e-37 : 1e-300;
  w->rel = dt == CLG_FLOAT32 ? 4e-6 : 1e-13;
}

/* --- element-wise math ------------------------------------------------------------------ */

/* TensorFlow's Round: half to even, the sign of a zero kept (written out, not rint). */
static double ref_round(double x)
{
  if (isnan(x) || isinf(x))
    return x;
  double f = floor(x), d = x - f, r;
  if (d < 0.5)
    r = f;
  else if (d > 0.5)
    r = f + 1;
  else
    r = fmod(f, 2) == 0 ? f : f + 1;
  return r == 0 ? copysign(0.0, x) : r;
}

static double ref_ceil(double x)
{
  double r = ceil(x);
  return r == 0 ? copysign(0.0, x) : r;
}

static double ref_reciprocal(double x) { return 1 / x; }
static double ref_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }
static double ref_softsign(double x) { return x / (1 + fabs(x)); }
static double ref_elu(double x) { return x > 0 || isnan(x) ? x : expm1(x); }
static double ref_selu(double x)
{
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  return x > 0 || isnan(x) ? scale * x : scale * alpha * expm1(x);
}

static const struct {
  const char *op;
  double (*ref)(double);
  bool signed_zero;
} unary_ops[] = {
    {"Erf", erf, false},
    {"Ceil", ref_ceil, true},
    {"Round", ref_round, true},
    {"Reciprocal", ref_reciprocal, true},
    {"Sin", sin, false},
    {"Cos", cos, false},
    {"Tan", tan, false},
    {"Asin", asin, false},
    {"Acos", acos, false},
    {"Atan", atan, false},
    {"Sinh", sinh, false},
    {"Cosh", cosh, false},
    {"Asinh", asinh, false},
    {"Acosh", acosh, false},
    {"Atanh", atanh, false},
    {"Softplus", ref_softplus, false},
    {"Softsign", ref_softsign, false},
    {"Elu", ref_elu, false},
    {"Selu", ref_selu, false},
};

static void test_unary_math(void)
{
  /* Edges of every domain: +-0, +-0.5 and +-2.5 (Round's ties), +-1 (Atanh's poles, the ends
   * of Asin's and Acos's domain), beyond them (NaN), large magnitudes, infinities and NaN. */
  const double base[] = {-3.7,   -2.5, -1.5, -1,       -0.75,     -0.5, -0.25, -0.0, 0.0,
                         0.25,   0.5,  0.75, 1,        1.5,       2.5,  3.5,   4.5,  -1.25,
                         1.25,   10,   -10,  20,       -20,       0.1,  -0.1,  1e-3, -1e-3,
                         2.4999, 7.5,  -7.5, INFINITY, -INFINITY, NAN,  0.7071};
  enum { N = sizeof base / sizeof base[0] };
  double ref[N];
  const clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (size_t o = 0; o < sizeof unary_ops / sizeof unary_ops[0]; o++)
    for (int d = 0; d < 2; d++) {
      clg_dtype dt = dts[d];
      int64_t dims[2] = {2, N / 2};
      clg_tensor *x = clg_test_tensor(dt, 2, dims, base);
      for (int i = 0; i < N; i++)
        ref[i] = as_stored(dt, unary_ops[o].ref(as_stored(dt, base[i])));
      want w = {dt, 2, {2, N / 2}, ref, 0, 0, unary_ops[o].signed_zero};
      float_tol(dt, &w);
      char what[64];
      snprintf(what, sizeof what, "%s %s", unary_ops[o].op, clg_dtype_name(dt));
      run_case(what, 1, &x, build_by_name, unary_ops[o].op, &w);
      clg_tensor_free(x);
    }

  /* TensorFlow's documented values, written out (not from a reference function). */
  {
    const double xs[] = {2.5, -0.5, 0.5, 1.5, -1.5, -2.5, 3.5, -0.0};
    const double rs[] = {2, -0.0, 0, 2, -2, -2, 4, -0.0};
    clg_tensor *x = clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){8}, xs);
    want w = {CLG_FLOAT32, 1, {8}, rs, 0, 0, true};
    run_case("Round's ties to even", 1, &x, build_by_name, "Round", &w);
    clg_tensor_free(x);
  }
  /* Softplus beyond TensorFlow's thresholds (x and e^x), and inside them. */
  {
    const double xs[] = {-40, -16, -13, 0, 13, 16, 40, 88};
    double rs[8];
    for (int i = 0; i < 8; i++)
      rs[i] = (double)(float)log1p(exp(xs[i]));
    clg_tensor *x = clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){8}, xs);
    want w = {CLG_FLOAT32, 1, {8}, rs, 1e-37, 4e-6, false};
    run_case("Softplus at its thresholds", 1, &x, build_by_name, "Softplus", &w);
    clg_tensor_free(x);
  }
  /* 50000 elements: the host cuts them across its threads (ranges of at least 8192). */
  {
    enum { BIG = 50000 };
    double *xs = malloc(sizeof(double) * BIG), *rs = malloc(sizeof(double) * BIG);
    for (int i = 0; i < BIG; i++)
      xs[i] = (double)(float)clg_test_uniform(-6, 6);
    const char *ops[2] = {"Erf", "Elu"};
    for (int o = 0; o < 2; o++) {
      for (int i = 0; i < BIG; i++)
        rs[i] = (double)(float)(o ? ref_elu(xs[i]) : erf(xs[i]));
      clg_tensor *x = clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){BIG}, xs);
      want w = {CLG_FLOAT32, 1, {BIG}, rs, 1e-37, 4e-6, false};
      run_case(ops[o], 1, &x, build_by_name, ops[o], &w);
      clg_tensor_free(x);
    }
    free(xs);
    free(rs);
  }
  /* Bad input: an int32 tensor has no kernel; T must agree. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_attr t = clg_attr_dtype("T", CLG_FLOAT64);
    clg_op(g, "Sin", "s", 1, (clg_output[]){{p, 0}}, 1, &t);
    EXPECT_ERROR(g, "'s'", "attribute T is double but the input is float");
  }
}

/* --- binary ops with broadcasting ------------------------------------------------------- */

enum { CMP_LESS, CMP_GREATER, CMP_LE, CMP_NE };

static double ref_compare(int op, double a, double b)
{
  switch (op) {
  case CMP_LESS:
    return a < b;
  case CMP_GREATER:
    return a > b;
  case CMP_LE:
    return a <= b;
  default:
    return a != b;
  }
}

/* out = f(a, b) over the broadcast of shapes da (ra) and db (rb) into dout (ro). */
static void ref_binary(double (*f)(int, double, double), int op, const double *a, int ra,
                       const int64_t *da, const double *b, int rb, const int64_t *db, int ro,
                       const int64_t *dout, double *out)
{
  for (size_t i = 0; i < clg_test_count(ro, dout); i++)
    out[i] = f(op, a[bcast_offset(ro, dout, i, ra, da)], b[bcast_offset(ro, dout, i, rb, db)]);
}

static void test_comparisons(void)
{
  static const char *const ops[4] = {"Less", "Greater", "LessEqual", "NotEqual"};
  /* a [2,3,1] against b [4]: [2,3,4], equal values, NaN in both. */
  const double fa[6] = {-1, 0, 2.5, NAN, 3, -7};
  const double fb[4] = {0, 2.5, -1, NAN};
  const double ia[6] = {-1, 0, 2147483647, -2147483648.0, 3, -7};
  const double ib[4] = {0, 3, -1, 2147483647};
  const clg_dtype dts[4] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64};
  double ref[24];
  for (int op = 0; op < 4; op++)
    for (int d = 0; d < 4; d++) {
      bool fl = d < 2;
      clg_tensor *in[2] = {clg_test_tensor(dts[d], 3, (int64_t[]){2, 3, 1}, fl ? fa : ia),
                           clg_test_tensor(dts[d], 1, (int64_t[]){4}, fl ? fb : ib)};
      ref_binary(ref_compare, op, fl ? fa : ia, 3, (int64_t[]){2, 3, 1}, fl ? fb : ib, 1,
                 (int64_t[]){4}, 3, (int64_t[]){2, 3, 4}, ref);
      want w = {CLG_BOOL, 3, {2, 3, 4}, ref, 0, 0, false};
      char what[64];
      snprintf(what, sizeof what, "%s %s", ops[op], clg_dtype_name(dts[d]));
      run_case(what, 2, in, build_by_name, ops[op], &w);
      clg_tensor_free(in[0]);
      clg_tensor_free(in[1]);
    }
  /* NaN: every comparison false, NotEqual true (TensorFlow's, IEEE's). */
  {
    clg_tensor *in[2] = {clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){2}, (const double[]){NAN, 1}),
                         clg_test_tensor(CLG_FLOAT32, 0, NULL, (const double[]){NAN})};
    const double f2[2] = {0, 0}, t2[2] = {1, 1};
    for (int op = 0; op < 4; op++) {
      want w = {CLG_BOOL, 1, {2}, op == CMP_NE ? t2 : f2, 0, 0, false};
      run_case(ops[op], 2, in, build_by_name, ops[op], &w);
    }
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* Equal and NotEqual of bools (ONNX's Xor is NotEqual), broadcast [2,1] against [2]. */
  {
    clg_tensor *in[2] = {clg_test_tensor(CLG_BOOL, 2, (int64_t[]){2, 1}, (const double[]){0, 1}),
                         clg_test_tensor(CLG_BOOL, 1, (int64_t[]){2}, (const double[]){0, 1})};
    want ne = {CLG_BOOL, 2, {2, 2}, (const double[]){0, 1, 1, 0}, 0, 0, false};
    want eq = {CLG_BOOL, 2, {2, 2}, (const double[]){1, 0, 0, 1}, 0, 0, false};
    run_case("NotEqual bool", 2, in, build_by_name, "NotEqual", &ne);
    run_case("Equal bool", 2, in, build_by_name, "Equal", &eq);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* Bad input: dtypes that differ, shapes that do not broadcast. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *a = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_node *b = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_less(g, "lt", a, b);
    EXPECT_ERROR(g, "Less 'lt'", "dtypes differ: float vs int32");
    g = clg_graph_new();
    a = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    b = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){4});
    clg_not_equal(g, "ne", a, b);
    EXPECT_ERROR(g, "NotEqual 'ne'", "Incompatible shapes: [3] vs. [4]");
  }
}

static double ref_pow(int op, double a, double b)
{
  (void)op;
  return pow(a, b);
}

static double ref_atan2(int op, double y, double x)
{
  (void)op;
  return atan2(y, x);
}

static void test_pow_atan2(void)
{
  /* Pow: a [2,3] against b [3]: negative bases with integral exponents (-2^3 = -8, (-0.5)^2),
   * a fractional exponent of a negative base (NaN), 0^-1 = inf, x^0 = 1 (also 0^0 and NaN^0). */
  const double a[6] = {-2, -0.5, -3, 0, 2, NAN};
  const double b[3] = {3, 2, 0.5};
  const double a2[6] = {0, 1.5, -1, 0, 4, 9};
  const double b2[3] = {-1, 0, -2};
  const clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  double ref[6];
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = dts[d];
    clg_tensor *in[2] = {clg_test_tensor(dt, 2, (int64_t[]){2, 3}, a),
                         clg_test_tensor(dt, 1, (int64_t[]){3}, b)};
    ref_binary(ref_pow, 0, a, 2, (int64_t[]){2, 3}, b, 1, (int64_t[]){3}, 2, (int64_t[]){2, 3},
               ref);
    CHECK(ref[0] == -8 && ref[1] == 0.25 && isnan(ref[2])); /* the reference is TensorFlow's */
    want w = {dt, 2, {2, 3}, ref, 0, 0, true};
    float_tol(dt, &w);
    run_case("Pow", 2, in, build_by_name, "Pow", &w);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    in[0] = clg_test_tensor(dt, 2, (int64_t[]){2, 3}, a2);
    in[1] = clg_test_tensor(dt, 1, (int64_t[]){3}, b2);
    ref_binary(ref_pow, 0, a2, 2, (int64_t[]){2, 3}, b2, 1, (int64_t[]){3}, 2, (int64_t[]){2, 3},
               ref);
    CHECK(isinf(ref[0]) && ref[1] == 1 && ref[2] == 1 && ref[4] == 1);
    run_case("Pow at 0 and 1", 2, in, build_by_name, "Pow", &w);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    /* A scalar base against a [2,2] exponent: broadcast the other way. */
    in[0] = clg_test_tensor(dt, 0, NULL, (const double[]){-1.5});
    in[1] = clg_test_tensor(dt, 2, (int64_t[]){2, 2}, (const double[]){1, 2, 3, -2});
    ref_binary(ref_pow, 0, (const double[]){-1.5}, 0, NULL, (const double[]){1, 2, 3, -2}, 2,
               (int64_t[]){2, 2}, 2, (int64_t[]){2, 2}, ref);
    want w2 = {dt, 2, {2, 2}, ref, 0, 0, false};
    float_tol(dt, &w2);
    run_case("Pow scalar base", 2, in, build_by_name, "Pow", &w2);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  /* Atan2(y [3,1], x [4]): every quadrant, the axes, signed zeros (atan2(+-0, -1) = +-pi). */
  {
    const double y[3] = {1, -0.0, -2};
    const double x[4] = {-1, 0, 3, -0.0};
    double r[12];
    for (int d = 0; d < 2; d++) {
      clg_dtype dt = dts[d];
      clg_tensor *in[2] = {clg_test_tensor(dt, 2, (int64_t[]){3, 1}, y),
                           clg_test_tensor(dt, 1, (int64_t[]){4}, x)};
      ref_binary(ref_atan2, 0, y, 2, (int64_t[]){3, 1}, x, 1, (int64_t[]){4}, 2, (int64_t[]){3, 4},
                 r);
      for (int i = 0; i < 12; i++)
        r[i] = as_stored(dt, r[i]);
      want w = {dt, 2, {3, 4}, r, 0, 0, true};
      float_tol(dt, &w);
      run_case("Atan2", 2, in, build_by_name, "Atan2", &w);
      clg_tensor_free(in[0]);
      clg_tensor_free(in[1]);
    }
  }
  /* Bad input: Pow and Atan2 are float only here. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_pow(g, "pw", p, p);
    EXPECT_ERROR(g, "Pow 'pw'", "Pow takes float32 or float64, not int32");
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_INT64, 1, (int64_t[]){3});
    clg_atan2(g, "at", p, p);
    EXPECT_ERROR(g, "Atan2 'at'", "Atan2 takes float32 or float64, not int64");
  }
}

/* --- logical ops, IsNan, IsInf ---------------------------------------------------------- */

static double ref_and(int op, double a, double b)
{
  return op ? (a != 0 || b != 0) : (a != 0 && b != 0);
}

static void test_logical(void)
{
  const double a[2] = {0, 1};
  const double b[3] = {1, 0, 1};
  double ref[6];
  static const char *const ops[2] = {"LogicalAnd", "LogicalOr"};
  for (int op = 0; op < 2; op++) {
    clg_tensor *in[2] = {clg_test_tensor(CLG_BOOL, 2, (int64_t[]){2, 1}, a),
                         clg_test_tensor(CLG_BOOL, 1, (int64_t[]){3}, b)};
    ref_binary(ref_and, op, a, 2, (int64_t[]){2, 1}, b, 1, (int64_t[]){3}, 2, (int64_t[]){2, 3},
               ref);
    want w = {CLG_BOOL, 2, {2, 3}, ref, 0, 0, false};
    run_case(ops[op], 2, in, build_by_name, ops[op], &w);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
  {
    clg_tensor *x = clg_test_tensor(CLG_BOOL, 1, (int64_t[]){4}, (const double[]){1, 0, 0, 1});
    want w = {CLG_BOOL, 1, {4}, (const double[]){0, 1, 1, 0}, 0, 0, false};
    run_case("LogicalNot", 1, &x, build_by_name, "LogicalNot", &w);
    clg_tensor_free(x);
  }
  /* IsNan, IsInf: NaN, both infinities, the largest finite values, zeros, a subnormal. */
  const double v[9] = {0, -0.0, 1, NAN, INFINITY, -INFINITY, 3.4028234663852886e38, 1e-40, -NAN};
  const double v64[9] = {0,        1e300, -1e300, NAN, INFINITY, -INFINITY, 1.7976931348623157e308,
                         4.9e-324, 2};
  double rn[9], ri[9];
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = d ? CLG_FLOAT64 : CLG_FLOAT32;
    const double *vals = d ? v64 : v;
    for (int i = 0; i < 9; i++) {
      rn[i] = isnan(as_stored(dt, vals[i])) ? 1 : 0;
      ri[i] = isinf(as_stored(dt, vals[i])) ? 1 : 0; /* glibc's isinf(-inf) is -1 */
    }
    CHECK(rn[3] == 1 && ri[4] == 1 && ri[5] == 1 && ri[6] == 0 && rn[6] == 0);
    clg_tensor *x = clg_test_tensor(dt, 2, (int64_t[]){3, 3}, vals);
    want wn = {CLG_BOOL, 2, {3, 3}, rn, 0, 0, false}, wi = {CLG_BOOL, 2, {3, 3}, ri, 0, 0, false};
    run_case("IsNan", 1, &x, build_by_name, "IsNan", &wn);
    run_case("IsInf", 1, &x, build_by_name, "IsInf", &wi);
    clg_tensor_free(x);
  }
  /* Bad input: a float to a logical op, an integer to IsNan. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_node *q = clg_placeholder(g, NULL, CLG_BOOL, 1, (int64_t[]){3});
    clg_logical_and(g, "and", q, p);
    EXPECT_ERROR(g, "LogicalAnd 'and'", "LogicalAnd takes bool inputs, not float");
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_is_nan(g, "nan", p);
    EXPECT_ERROR(g, "IsNan 'nan'", "IsNan takes a float input, not int32");
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_BOOL, 1, (int64_t[]){3});
    q = clg_placeholder(g, NULL, CLG_BOOL, 1, (int64_t[]){2});
    clg_logical_or(g, "or", p, q);
    EXPECT_ERROR(g, "LogicalOr 'or'", "Incompatible shapes: [3] vs. [2]");
  }
}

/* --- SelectV2, BroadcastTo -------------------------------------------------------------- */

typedef struct sel_case {
  int rank[3];
  int64_t dims[3][CLG_MAX_RANK];
  int ro;
  int64_t dout[CLG_MAX_RANK];
} sel_case;

static void test_select_v2(void)
{
  const sel_case cases[] = {
      {{1, 2, 0}, {{3}, {2, 3}, {0}}, 2, {2, 3}},          /* a row, a scalar else */
      {{2, 2, 2}, {{2, 1}, {1, 3}, {2, 3}}, 2, {2, 3}},    /* all three broadcast */
      {{0, 2, 2}, {{0}, {2, 2}, {2, 2}}, 2, {2, 2}},       /* a scalar condition */
      {{1, 1, 1}, {{5}, {5}, {5}}, 1, {5}},                /* one shape */
      {{3, 1, 2}, {{2, 1, 4}, {4}, {3, 1}}, 3, {2, 3, 4}}, /* ranks 3, 1, 2 */
      {{2, 3, 1}, {{1, 4}, {2, 1, 1}, {1}}, 3, {2, 1, 4}}, /* ones everywhere */
  };
  const clg_dtype dts[5] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64, CLG_BOOL};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int d = 0; d < 5; d++) {
      const sel_case *c = &cases[ci];
      double v[3][32], ref[32];
      size_t n[3];
      clg_tensor *in[3];
      for (int i = 0; i < 3; i++) {
        n[i] = clg_test_count(c->rank[i], c->dims[i]);
        for (size_t k = 0; k < n[i]; k++)
          v[i][k] = i == 0 ? (double)(clg_test_rand() % 2)
                    : dts[d] == CLG_BOOL
                        ? (double)(i == 1)
                        : (double)(i == 1 ? 100 + k : -1 - (double)k) * (d == 0 ? 0.5 : 1);
        in[i] = clg_test_tensor(i == 0 ? CLG_BOOL : dts[d], c->rank[i], c->dims[i], v[i]);
      }
      for (size_t k = 0; k < clg_test_count(c->ro, c->dout); k++) {
        bool cond = v[0][bcast_offset(c->ro, c->dout, k, c->rank[0], c->dims[0])] != 0;
        int src = cond ? 1 : 2;
        ref[k] = v[src][bcast_offset(c->ro, c->dout, k, c->rank[src], c->dims[src])];
      }
      want w = {dts[d], c->ro, {0}, ref, 0, 0, false};
      for (int k = 0; k < c->ro; k++)
        w.dims[k] = c->dout[k];
      char what[64];
      snprintf(what, sizeof what, "SelectV2 case %zu %s", ci, clg_dtype_name(dts[d]));
      run_case(what, 3, in, build_by_name, "SelectV2", &w);
      for (int i = 0; i < 3; i++)
        clg_tensor_free(in[i]);
    }
  /* A NaN or infinity in the branch not chosen stays out of the output. */
  {
    clg_tensor *in[3] = {
        clg_test_tensor(CLG_BOOL, 1, (int64_t[]){3}, (const double[]){1, 0, 1}),
        clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){3}, (const double[]){1, NAN, 3}),
        clg_test_tensor(CLG_FLOAT32, 0, NULL, (const double[]){INFINITY})};
    want w = {CLG_FLOAT32, 1, {3}, (const double[]){1, INFINITY, 3}, 0, 0, false};
    run_case("SelectV2 NaN not chosen", 3, in, build_by_name, "SelectV2", &w);
    for (int i = 0; i < 3; i++)
      clg_tensor_free(in[i]);
  }
  /* Bad input. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *c = clg_placeholder(g, NULL, CLG_BOOL, 1, (int64_t[]){2});
    clg_node *t = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_select_v2(g, "w", c, t, t);
    EXPECT_ERROR(g, "SelectV2 'w'", "Incompatible shapes: [2] vs. [3]");
    g = clg_graph_new();
    c = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    t = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_select_v2(g, "w", c, t, t);
    EXPECT_ERROR(g, "SelectV2 'w'", "condition must be bool, not float");
    g = clg_graph_new();
    c = clg_placeholder(g, NULL, CLG_BOOL, 0, NULL);
    t = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_node *e = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_select_v2(g, "w", c, t, e);
    EXPECT_ERROR(g, "SelectV2 'w'", "'then' is float but 'else' is int32");
  }
}

typedef struct bto_case {
  int n;
  int64_t shape[CLG_MAX_RANK];
} bto_case;

static clg_node *build_broadcast_to(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const bto_case *c = ctx;
  return clg_broadcast_to(g, NULL, in[0], c->n, c->shape);
}

static void test_broadcast_to(void)
{
  const struct {
    int rank;
    int64_t dims[CLG_MAX_RANK];
    bto_case to;
  } cases[] = {
      {1, {3}, {2, {2, 3}}},          {2, {2, 1}, {3, {2, 2, 3}}}, {0, {0}, {2, {2, 2}}},
      {3, {1, 3, 1}, {3, {2, 3, 2}}}, {1, {1}, {1, {5}}},          {2, {2, 3}, {2, {2, 3}}},
      {1, {3}, {2, {0, 3}}},
  };
  const clg_dtype dts[5] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64, CLG_BOOL};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int d = 0; d < 5; d++) {
      double v[8], ref[16];
      size_t n = clg_test_count(cases[ci].rank, cases[ci].dims);
      for (size_t k = 0; k < n; k++)
        v[k] = dts[d] == CLG_BOOL ? (double)(k % 2) : 10.0 + (double)k;
      clg_tensor *x = clg_test_tensor(dts[d], cases[ci].rank, cases[ci].dims, v);
      const bto_case *to = &cases[ci].to;
      for (size_t k = 0; k < clg_test_count(to->n, to->shape); k++)
        ref[k] = v[bcast_offset(to->n, to->shape, k, cases[ci].rank, cases[ci].dims)];
      want w = {dts[d], to->n, {0}, ref, 0, 0, false};
      for (int k = 0; k < to->n; k++)
        w.dims[k] = to->shape[k];
      char what[64];
      snprintf(what, sizeof what, "BroadcastTo case %zu %s", ci, clg_dtype_name(dts[d]));
      run_case(what, 1, &x, build_broadcast_to, to, &w);
      clg_tensor_free(x);
    }
  /* Bad input: a dim that is neither equal nor 1, a rank too large, a shape not a Const. */
  {
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    clg_broadcast_to(g, "bt", x, 2, (int64_t[]){3, 3});
    EXPECT_ERROR(g, "BroadcastTo 'bt'",
                 "Unable to broadcast tensor of shape [2,3] to tensor of "
                 "shape [3,3]");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    clg_broadcast_to(g, "bt", x, 1, (int64_t[]){3});
    EXPECT_ERROR(g, "BroadcastTo 'bt'",
                 "Unable to broadcast tensor of shape [2,3] to tensor of "
                 "shape [3]");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_broadcast_to(g, "bt", x, 2, (int64_t[]){-1, 3});
    EXPECT_ERROR(g, "BroadcastTo 'bt'", "shape[0] = -1 must be >= 0");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_node *s = clg_placeholder(g, "s", CLG_INT32, 1, (int64_t[]){2});
    clg_op(g, "BroadcastTo", "bt", 2, (clg_output[]){{x, 0}, {s, 0}}, 0, NULL);
    EXPECT_ERROR(g, "BroadcastTo 'bt'", "shape (input 1) must be a constant");
  }
}

/* --- gradients against finite differences ----------------------------------------------- */

typedef struct gcase {
  const char *op;
  int nx;
  int rank[2];
  int64_t dims[2][2];
  double lo[2], hi[2]; /* the inputs' range (away from kinks and poles) */
} gcase;

/* d sum(w * op(x...)) / dx for random weights w fed as grad_ys, against central differences of
 * the same sum, in float64 on device: the largest relative error must stay under 1e-6. */
static void check_grad(const gcase *c, const char *device)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, device));
  clg_node *x[3] = {NULL, NULL, NULL}; /* NULL-terminated for build_by_name */
  for (int i = 0; i < c->nx; i++)
    x[i] = clg_placeholder(g, NULL, CLG_FLOAT64, c->rank[i], c->dims[i]);
  clg_node *y = build_by_name(g, x, c->op);
  int64_t yd[CLG_MAX_RANK] = {0};
  int yr = y ? clg_node_rank(y) : 0;
  for (int k = 0; k < yr; k++)
    yd[k] = clg_node_dim(y, k);
  clg_node *gy = clg_placeholder(g, "gy", CLG_FLOAT64, yr, yd);
  clg_output ys = clg_out(y, 0), gys = clg_out(gy, 0), xs[2], dx[2] = {{NULL, 0}, {NULL, 0}};
  for (int i = 0; i < c->nx; i++)
    xs[i] = clg_out(x[i], 0);
  CHECK_OK(clg_gradients(g, 1, &ys, &gys, c->nx, xs, NULL, dx));
  CHECK_OK(clg_graph_pop_device(g));
  clg_session *s = NULL;
  if (clg_graph_status(g) != CLG_OK || clg_session_new(g, &session_opt, &s) != CLG_OK) {
    CHECK_MSG(false, "d %s on %s: %s", c->op, device, clg_last_error());
    clg_graph_free(g);
    return;
  }
  clg_tensor *xv[2] = {NULL, NULL};
  for (int i = 0; i < c->nx; i++) {
    xv[i] = clg_tensor_new(CLG_FLOAT64, c->rank[i], c->dims[i], NULL);
    double *p = clg_tensor_data(xv[i]);
    for (size_t k = 0; k < clg_tensor_count(xv[i]); k++)
      p[k] = clg_test_uniform(c->lo[i], c->hi[i]);
  }
  clg_tensor *wv = clg_tensor_new(CLG_FLOAT64, yr, yd, NULL);
  double *w = clg_tensor_data(wv);
  size_t ny = clg_tensor_count(wv);
  for (size_t j = 0; j < ny; j++)
    w[j] = clg_test_uniform(0.5, 1.5);
  clg_output feeds[3] = {clg_out(x[0], 0), clg_out(c->nx > 1 ? x[1] : gy, 0), clg_out(gy, 0)};
  clg_tensor *fv[3] = {xv[0], c->nx > 1 ? xv[1] : wv, wv};
  double worst = 0;
  for (int i = 0; i < c->nx; i++) {
    clg_tensor *ana = NULL;
    CHECK_OK(clg_session_run_outputs(s, c->nx + 1, feeds, fv, 1, &dx[i], &ana, 0, NULL));
    size_t n = clg_tensor_count(xv[i]);
    if (!ana || clg_tensor_count(ana) != n) {
      CHECK_MSG(false, "d %s on %s: dx%d missing or of the wrong size", c->op, device, i);
      clg_tensor_free(ana);
      continue;
    }
    double *p = clg_tensor_data(xv[i]);
    for (size_t k = 0; k < n; k++) {
      const double h = 1e-6, keep = p[k];
      double sum[2] = {0, 0};
      for (int side = 0; side < 2; side++) {
        p[k] = keep + (side ? -h : h);
        clg_tensor *yv = NULL;
        CHECK_OK(clg_session_run_outputs(s, c->nx, feeds, fv, 1, &ys, &yv, 0, NULL));
        for (size_t j = 0; yv && j < ny; j++)
          sum[side] += w[j] * clg_test_elem(yv, j);
        clg_tensor_free(yv);
      }
      p[k] = keep;
      double num = (sum[0] - sum[1]) / (2 * h), got = clg_test_elem(ana, k);
      worst = fmax(worst, fabs(got - num) / fmax(1.0, fabs(num)));
    }
    clg_tensor_free(ana);
  }
  CHECK_MSG(worst < 1e-6, "d %s on %s: worst relative error %g", c->op, device, worst);
  for (int i = 0; i < c->nx; i++)
    clg_tensor_free(xv[i]);
  clg_tensor_free(wv);
  clg_session_free(s);
  clg_graph_free(g);
}

static void test_gradients(void)
{
  const gcase cases[] = {
      {"Sin", 1, {2, 0}, {{2, 3}, {0}}, {-3, 0}, {3, 0}},
      {"Cos", 1, {2, 0}, {{2, 3}, {0}}, {-3, 0}, {3, 0}},
      {"Reciprocal", 1, {1, 0}, {{5}, {0}}, {0.5, 0}, {3, 0}},
      {"Softplus", 1, {2, 0}, {{2, 3}, {0}}, {-4, 0}, {4, 0}},
      {"Elu", 1, {1, 0}, {{6}, {0}}, {-3, 0}, {-0.1, 0}},
      {"Elu", 1, {1, 0}, {{6}, {0}}, {0.1, 0}, {3, 0}},
      /* Pow: a [2,3] against b [3] (b's gradient summed over the broadcast rows). */
      {"Pow", 2, {2, 1}, {{2, 3}, {3}}, {0.5, -2}, {2, 2}},
      {"Pow", 2, {1, 2}, {{3}, {2, 3}}, {0.5, -1}, {1.5, 3}},
  };
  const char *devices[2] = {"/cpu:0", "/device:GPU:1"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 2; d++)
      check_grad(&cases[i], devices[d]);
  /* Pow's exponent gradient is 0 where the base is not positive (TensorFlow's select), and the
   * base's is b * a^(b-1): at a = -2, b = 3 that is 12. */
  {
    clg_graph *g = clg_graph_new();
    clg_tensor *av = clg_test_tensor(CLG_FLOAT64, 1, (int64_t[]){2}, (const double[]){-2, 0});
    clg_tensor *bv = clg_test_tensor(CLG_FLOAT64, 1, (int64_t[]){2}, (const double[]){3, 2});
    clg_node *a = clg_const(g, NULL, av), *b = clg_const(g, NULL, bv);
    clg_node *y = clg_pow(g, "p", a, b);
    clg_output ys = clg_out(y, 0), xs[2] = {clg_out(a, 0), clg_out(b, 0)}, dx[2];
    CHECK_OK(clg_gradients(g, 1, &ys, NULL, 2, xs, NULL, dx));
    clg_session *s = NULL;
    CHECK_OK(clg_session_new(g, &session_opt, &s));
    clg_tensor *out[2] = {NULL, NULL};
    if (s)
      CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 2, dx, out, 0, NULL));
    CHECK(out[0] && clg_test_elem(out[0], 0) == 12 && clg_test_elem(out[0], 1) == 0);
    CHECK(out[1] && clg_test_elem(out[1], 0) == 0 && clg_test_elem(out[1], 1) == 0);
    clg_tensor_free(out[0]);
    clg_tensor_free(out[1]);
    clg_tensor_free(av);
    clg_tensor_free(bv);
    clg_session_free(s);
    clg_graph_free(g);
  }
}

int main(void)
{
  clg_test_seed(24);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_tf_ops3");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  session_opt.allow_soft_placement = 0; /* a GPU node without an OpenCL kernel fails */
  test_unary_math();
  test_comparisons();
  test_pow_atan2();
  test_logical();
  test_select_v2();
  test_broadcast_to();
  test_gradients();
  return clg_test_summary("test_tf_ops3");
}
