/* Sum, Mean, Max, Min, Prod, L2Loss, ArgMax and ArgMin on the host: each output walks its
 * reduced elements, accumulating in double. */
#include <math.h>

#include "backends/host/host.h"

#define REDUCE_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t o = 0; o < nout; o++) {                                                            \
      size_t base = clg_strided_offset(&keep, o);                                                  \
      double acc = op == CLG_REDUCTION_MAX    ? -INFINITY                                          \
                   : op == CLG_REDUCTION_MIN  ? INFINITY                                           \
                   : op == CLG_REDUCTION_PROD ? 1                                                  \
                                              : 0;                                                 \
      for (size_t r = 0; r < nred; r++) {                                                          \
        double v = x[base + clg_strided_offset(&red, r)];                                          \
        if (op == CLG_REDUCTION_MAX)                                                               \
          acc = acc < v ? v : acc;                                                                 \
        else if (op == CLG_REDUCTION_MIN)                                                          \
          acc = v < acc ? v : acc;                                                                 \
        else if (op == CLG_REDUCTION_PROD)                                                         \
          acc *= v;                                                                                \
        else                                                                                       \
          acc += op == CLG_REDUCTION_L2 ? v * v : v;                                               \
      }                                                                                            \
      y[o] = (T)(op == CLG_REDUCTION_MEAN ? acc / (double)nred                                     \
                 : op == CLG_REDUCTION_L2 ? acc / 2                                                \
                                          : acc);                                                  \
    }                                                                                              \
  } while (0)

static clg_code reduce_host(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  clg_reduction op = clg_reduction_of(c->node);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    REDUCE_LOOP(double);
  else
    REDUCE_LOOP(float);
  return CLG_OK;
}

#define ARGMAX_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    for (size_t o = 0; o < nout; o++) {                                                            \
      size_t base = clg_strided_offset(&keep, o), at = 0;                                          \
      for (size_t r = 1; r < nred; r++)                                                            \
        if (min ? x[base + r * red.sa[0]] < x[base + at * red.sa[0]]                               \
                : x[base + r * red.sa[0]] > x[base + at * red.sa[0]])                              \
          at = r;                                                                                  \
      if (c->node->outs[0].dtype == CLG_INT64)                                                     \
        ((int64_t *)c->out[0].host)[o] = (int64_t)at;                                              \
      else                                                                                         \
        ((int32_t *)c->out[0].host)[o] = (int32_t)at;                                              \
    }                                                                                              \
  } while (0)

static clg_code argmax_host(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  bool min = c->node->def == &clg_op_ArgMin;
  if (clg_node_in(c->node, 0)->dtype == CLG_FLOAT64)
    ARGMAX_LOOP(double);
  else
    ARGMAX_LOOP(float);
  return CLG_OK;
}

/* Float inputs (the axes may be int32 or int64). */
static bool float_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Sum, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Mean, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Max, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_L2Loss, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_ArgMax, {CLG_KIND_HOST, float_supports, argmax_host, NULL, NULL}},
    {&clg_op_Min, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Prod, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_ArgMin, {CLG_KIND_HOST, float_supports, argmax_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_reduce, entries);
