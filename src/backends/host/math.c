/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg and ops/math_tf.c's ops on the host: libm's
 * functions element-wise. */
#include <float.h>
#include <math.h>

#include "backends/host/host.h"

#define LOOP(T, EXP, LOG, SQRT, FLOOR)                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    switch (clg_unop_of(c->node)) {                                                                \
    case CLG_UNOP_EXP:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = EXP(x[i]);                                                                          \
      break;                                                                                       \
    case CLG_UNOP_LOG:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = LOG(x[i]);                                                                          \
      break;                                                                                       \
    case CLG_UNOP_SQRT:                                                                            \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = SQRT(x[i]);                                                                         \
      break;                                                                                       \
    case CLG_UNOP_SQUARE:                                                                          \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = x[i] * x[i];                                                                        \
      break;                                                                                       \
    case CLG_UNOP_FLOOR:                                                                           \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = FLOOR(x[i]);                                                                        \
      break;                                                                                       \
    case CLG_UNOP_NEG:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = -x[i];                                                                              \
      break;                                                                                       \
    default:                                                                                       \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = (T)1 / SQRT(x[i]);                                                                  \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

/* TensorFlow's softplus: x above -threshold, e^x below threshold (log(eps) + 2: log1p(e^x)
 * rounds to them there), else log1p(e^x). */
static double softplus(double x)
{
  const double th = log(DBL_EPSILON) + 2;
  return x > -th ? x : x < th ? exp(x) : log1p(exp(x));
}

static float softplusf(float x)
{
  const float th = logf(FLT_EPSILON) + 2;
  return x > -th ? x : x < th ? expf(x) : log1pf(expf(x));
}

static double softsign(double x) { return x / (1 + fabs(x)); }
static float softsignf(float x) { return x / (1 + fabsf(x)); }
/* e^x - 1 through expm1 (exact near 0); NaN stays NaN. */
static double elu(double x) { return x < 0 ? expm1(x) : x; }
static float eluf(float x) { return x < 0 ? expm1f(x) : x; }

/* TensorFlow's SELU constants (Klambauer et al.). */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717
static double selu(double x) { return x < 0 ? SELU_SCALE * SELU_ALPHA * expm1(x) : SELU_SCALE * x; }
static float seluf(float x)
{
  return x < 0 ? (float)(SELU_SCALE * SELU_ALPHA) * expm1f(x) : (float)SELU_SCALE * x;
}

static double reciprocal(double x) { return 1 / x; }
static float reciprocalf(float x) { return 1 / x; }

/* ops/math_tf.c's ops: FN##S is libm's double function (S empty) or its float one (S f).
 * Round is rint: the default rounding mode rounds half to even, as TensorFlow's Round. */
#define CASE_TF(OP, FN, S)                                                                         \
  case OP:                                                                                         \
    for (size_t i = begin; i < end; i++)                                                           \
      y[i] = FN##S(x[i]);                                                                          \
    break
#define LOOP_TF(T, S)                                                                              \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    switch (op) {                                                                                  \
      CASE_TF(CLG_UNOP_ERF, erf, S);                                                               \
      CASE_TF(CLG_UNOP_CEIL, ceil, S);                                                             \
      CASE_TF(CLG_UNOP_ROUND, rint, S);                                                            \
      CASE_TF(CLG_UNOP_RECIPROCAL, reciprocal, S);                                                 \
      CASE_TF(CLG_UNOP_SIN, sin, S);                                                               \
      CASE_TF(CLG_UNOP_COS, cos, S);                                                               \
      CASE_TF(CLG_UNOP_TAN, tan, S);                                                               \
      CASE_TF(CLG_UNOP_ASIN, asin, S);                                                             \
      CASE_TF(CLG_UNOP_ACOS, acos, S);                                                             \
      CASE_TF(CLG_UNOP_ATAN, atan, S);                                                             \
      CASE_TF(CLG_UNOP_SINH, sinh, S);                                                             \
      CASE_TF(CLG_UNOP_COSH, cosh, S);                                                             \
      CASE_TF(CLG_UNOP_ASINH, asinh, S);                                                           \
      CASE_TF(CLG_UNOP_ACOSH, acosh, S);                                                           \
      CASE_TF(CLG_UNOP_ATANH, atanh, S);                                                           \
      CASE_TF(CLG_UNOP_SOFTPLUS, softplus, S);                                                     \
      CASE_TF(CLG_UNOP_SOFTSIGN, softsign, S);                                                     \
      CASE_TF(CLG_UNOP_ELU, elu, S);                                                               \
      CASE_TF(CLG_UNOP_SELU, selu, S);                                                             \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

/* Elements [begin, end) of a math_tf.c op (each element read before it is written by the same
 * thread: in place allowed). */
static void math_tf_range(void *ctx, size_t begin, size_t end)
{
  const clg_kernel_ctx *c = ctx;
  clg_unop op = clg_unop_of(c->node);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP_TF(double, );
  else
    LOOP_TF(float, f);
}

static clg_code math_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  /* The transcendental functions cost tens of cycles an element: spread over the cores. */
  if (clg_unop_of(c->node) >= CLG_UNOP_ERF)
    clg_host_parallel_for(count, 1 << 13, math_tf_range, (void *)c);
  else if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double, exp, log, sqrt, floor);
  else
    LOOP(float, expf, logf, sqrtf, floorf);
  return CLG_OK;
}

#define ENTRY(OP)                                                                                  \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL }              \
  }
static const clg_kernel_entry entries[] = {CLG_UNOP_OPS(ENTRY)};
CLG_KERNEL_SET(clg_host_kernels_math, entries);
