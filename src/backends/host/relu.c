/* Relu on the host: max(x, 0) element-wise, NaN kept, in place allowed. */
#include "backends/host/host.h"

/* !(x <= 0) holds for x > 0 and for NaN: one compare and a select, no branch, so the loop
 * vectorises (a branch on the sign mispredicts half the time on activations). */
#define LOOP(T)                                                                                    \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t i = begin; i < end; i++) {                                                         \
      T v = x[i];                                                                                  \
      y[i] = !(v <= 0) ? v : 0;                                                                    \
    }                                                                                              \
  } while (0)

static void relu_range(void *ctx, size_t begin, size_t end)
{
  const clg_kernel_ctx *c = ctx;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double);
  else
    LOOP(float);
}

static clg_code relu_run(const clg_kernel_ctx *c)
{
  /* Element ranges across the cores (each element written once, by one thread; in place is
   * fine: each element is read before it is written, by the same thread). */
  clg_host_parallel_for(clg_out_count(&c->node->outs[0]), 1 << 15, relu_range, (void *)c);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Relu, {CLG_KIND_HOST, clg_kernel_float_or_double, relu_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_relu, entries);
