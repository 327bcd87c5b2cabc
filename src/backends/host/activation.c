/* Sigmoid, Tanh, Relu6, LeakyRelu, Abs, Sign and their gradient ops on the host: element-wise
 * loops over ranges of the output, spread over the cores. In place allowed (each element is
 * read before it is written, by the same thread). */
#include <math.h>

#include "backends/host/host.h"

enum { SIGMOID, TANH, RELU6, LEAKY, ABS, SIGN, SIGMOID_G, TANH_G, RELU6_G, LEAKY_G };

static int which(const clg_node *n)
{
  const clg_op_def *d = n->def;
  return d == &clg_op_Sigmoid       ? SIGMOID
         : d == &clg_op_Tanh        ? TANH
         : d == &clg_op_Relu6       ? RELU6
         : d == &clg_op_LeakyRelu   ? LEAKY
         : d == &clg_op_Abs         ? ABS
         : d == &clg_op_Sign        ? SIGN
         : d == &clg_op_SigmoidGrad ? SIGMOID_G
         : d == &clg_op_TanhGrad    ? TANH_G
         : d == &clg_op_Relu6Grad   ? RELU6_G
                                    : LEAKY_G;
}

/* Selects, not branches, so that the loops vectorise; NaN falls through every compare to
 * itself (Relu6: neither < 0 nor > 6; LeakyRelu: not > 0, and alpha * NaN is NaN). */
#define LOOPS(T, EXP, TANHF, FABS)                                                                 \
  do {                                                                                             \
    const T *a = c->in[0].host, *b = c->node->num_inputs > 1 ? c->in[1].host : NULL;               \
    T *y = c->out[0].host;                                                                         \
    T alpha = (T)(op == LEAKY || op == LEAKY_G ? clg_node_attr(c->node, 1)->f : 0);                \
    switch (op) {                                                                                  \
    case SIGMOID:                                                                                  \
      for (size_t i = begin; i < end; i++)                                                         \
        y[i] = (T)1 / ((T)1 + EXP(-a[i]));                                                         \
      break;                                                                                       \
    case TANH:                                                                                     \
      for (size_t i = begin; i < end; i++)                                                         \
        y[i] = TANHF(a[i]);                                                                        \
      break;                                                                                       \
    case RELU6:                                                                                    \
      for (size_t i = begin; i < end; i++) {                                                       \
        T v = a[i];                                                                                \
        y[i] = v < 0 ? (T)0 : v > 6 ? (T)6 : v;                                                    \
      }                                                                                            \
      break;                                                                                       \
    case LEAKY:                                                                                    \
      for (size_t i = begin; i < end; i++) {                                                       \
        T v = a[i];                                                                                \
        y[i] = v > 0 ? v : v * alpha;                                                              \
      }                                                                                            \
      break;                                                                                       \
    case ABS:                                                                                      \
      for (size_t i = begin; i < end; i++)                                                         \
        y[i] = FABS(a[i]);                                                                         \
      break;                                                                                       \
    case SIGN:                                                                                     \
      for (size_t i = begin; i < end; i++) {                                                       \
        T v = a[i];                                                                                \
        y[i] = v > 0 ? (T)1 : v < 0 ? (T)-1 : v; /* 0 stays 0, NaN stays NaN */                    \
      }                                                                                            \
      break;                                                                                       \
    case SIGMOID_G: /* (y, dy) */                                                                  \
      for (size_t i = begin; i < end; i++) {                                                       \
        T s = a[i];                                                                                \
        y[i] = b[i] * (s * ((T)1 - s));                                                            \
      }                                                                                            \
      break;                                                                                       \
    case TANH_G: /* (y, dy) */                                                                     \
      for (size_t i = begin; i < end; i++) {                                                       \
        T t = a[i];                                                                                \
        y[i] = b[i] * ((T)1 - t * t);                                                              \
      }                                                                                            \
      break;                                                                                       \
    case RELU6_G: /* (gradients, features) */                                                      \
      for (size_t i = begin; i < end; i++) {                                                       \
        T gv = a[i], f = b[i];                                                                     \
        y[i] = f > 0 && f < 6 ? gv : (T)0;                                                         \
      }                                                                                            \
      break;                                                                                       \
    default: /* LeakyReluGrad (gradients, features) */                                             \
      for (size_t i = begin; i < end; i++) {                                                       \
        T gv = a[i], f = b[i];                                                                     \
        y[i] = f > 0 ? gv : gv * alpha;                                                            \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

static void act_range(void *ctx, size_t begin, size_t end)
{
  const clg_kernel_ctx *c = ctx;
  int op = which(c->node);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOPS(double, exp, tanh, fabs);
  else
    LOOPS(float, expf, tanhf, fabsf);
}

static clg_code act_run(const clg_kernel_ctx *c)
{
  clg_host_parallel_for(clg_out_count(&c->node->outs[0]), 1 << 14, act_range, (void *)c);
  return CLG_OK;
}

#define ENTRY(OP)                                                                                  \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_HOST, clg_kernel_float_or_double, act_run, NULL, NULL }               \
  }
static const clg_kernel_entry entries[] = {
    ENTRY(Sigmoid), ENTRY(Tanh),        ENTRY(Relu6),    ENTRY(LeakyRelu), ENTRY(Abs),
    ENTRY(Sign),    ENTRY(SigmoidGrad), ENTRY(TanhGrad), ENTRY(Relu6Grad), ENTRY(LeakyReluGrad),
};
CLG_KERNEL_SET(clg_host_kernels_activation, entries);
