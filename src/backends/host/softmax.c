/* Softmax, LogSoftmax, SparseSoftmaxCrossEntropyWithLogits and InTopKV2 on the host: one row
 * at a time, its max and log-sum-exp in double. */
#include <math.h>

#include "backends/host/host.h"

/* The row's max and log-sum-exp, in double. */
#define ROW_STATS(row, k, mx, lse)                                                                 \
  do {                                                                                             \
    mx = -INFINITY;                                                                                \
    for (size_t j = 0; j < k; j++)                                                                 \
      mx = fmax(mx, (double)row[j]);                                                               \
    double sum_ = 0;                                                                               \
    for (size_t j = 0; j < k; j++)                                                                 \
      sum_ += exp((double)row[j] - mx);                                                            \
    lse = mx + log(sum_);                                                                          \
  } while (0)

static int64_t label_at(const void *labels, clg_dtype t, size_t i)
{
  return t == CLG_INT32 ? ((const int32_t *)labels)[i] : ((const int64_t *)labels)[i];
}

/* Input 0 float, or double (labels and targets are integer). */
static bool float_input0(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

/* --- Softmax, LogSoftmax -------------------------------------------------------------------- */

#define SOFTMAX_LOOP(T)                                                                            \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t r = 0; r < rows; r++) {                                                            \
      const T *xr = x + r * k;                                                                     \
      double mx, lse;                                                                              \
      ROW_STATS(xr, k, mx, lse);                                                                   \
      for (size_t j = 0; j < k; j++)                                                               \
        y[r * k + j] = (T)(log_out ? xr[j] - lse : exp(xr[j] - lse));                              \
    }                                                                                              \
  } while (0)

static clg_code softmax_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  size_t k = (size_t)x->dims[x->rank - 1];
  size_t rows = k ? clg_out_count(x) / k : 0;
  bool log_out = c->node->def == &clg_op_LogSoftmax;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    SOFTMAX_LOOP(double);
  else
    SOFTMAX_LOOP(float);
  return CLG_OK;
}

/* --- SparseSoftmaxCrossEntropyWithLogits ---------------------------------------------------- */

#define XENT_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *loss = c->out[0].host, *bp = c->out[1].host;                                                \
    for (size_t r = 0; r < b; r++) {                                                               \
      const T *xr = x + r * k;                                                                     \
      double mx, lse;                                                                              \
      ROW_STATS(xr, k, mx, lse);                                                                   \
      size_t label = (size_t)label_at(c->in[1].host, lt, r);                                       \
      for (size_t j = 0; j < k; j++)                                                               \
        bp[r * k + j] = (T)(exp(xr[j] - lse) - (j == label ? 1.0 : 0.0));                          \
      loss[r] = (T)(lse - xr[label]);                                                              \
    }                                                                                              \
  } while (0)

static clg_code xent_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  size_t b = (size_t)x->dims[0], k = (size_t)x->dims[1];
  clg_dtype lt = clg_node_in(c->node, 1)->dtype;
  clg_code code = clg_xent_check_labels(c->node, c->in[1].host, lt, b, k);
  if (code != CLG_OK)
    return code;
  if (x->dtype == CLG_FLOAT64)
    XENT_LOOP(double);
  else
    XENT_LOOP(float);
  return CLG_OK;
}

/* --- InTopKV2 ------------------------------------------------------------------------------- */

#define INTOPK_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    for (size_t r = 0; r < b; r++) {                                                               \
      const T *xr = x + r * nk;                                                                    \
      int64_t t = label_at(c->in[1].host, tt, r);                                                  \
      bool ok = t >= 0 && (size_t)t < nk;                                                          \
      int64_t more = 0;                                                                            \
      for (size_t j = 0; ok && j < nk; j++) {                                                      \
        ok = isfinite(xr[j]);                                                                      \
        more += xr[j] > xr[t];                                                                     \
      }                                                                                            \
      out[r] = ok && more < k;                                                                     \
    }                                                                                              \
  } while (0)

static clg_code intopk_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *p = clg_node_in(c->node, 0);
  size_t b = (size_t)p->dims[0], nk = (size_t)p->dims[1];
  clg_dtype tt = clg_node_in(c->node, 1)->dtype;
  int64_t k = clg_in_top_k_k(c->node);
  uint8_t *out = c->out[0].host;
  if (p->dtype == CLG_FLOAT64)
    INTOPK_LOOP(double);
  else
    INTOPK_LOOP(float);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Softmax, {CLG_KIND_HOST, clg_kernel_float_or_double, softmax_host, NULL, NULL}},
    {&clg_op_LogSoftmax, {CLG_KIND_HOST, clg_kernel_float_or_double, softmax_host, NULL, NULL}},
    {&clg_op_SparseSoftmaxCrossEntropyWithLogits,
     {CLG_KIND_HOST, float_input0, xent_host, NULL, NULL}},
    {&clg_op_InTopKV2, {CLG_KIND_HOST, float_input0, intopk_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_softmax, entries);
