/* ReluGrad on the host: the gradients where features > 0, else 0; in place allowed. */
#include "backends/host/host.h"

#define LOOP(T)                                                                                    \
  do {                                                                                             \
    const T *g = c->in[0].host, *f = c->in[1].host;                                                \
    T *y = c->out[0].host;                                                                         \
    for (size_t i = begin; i < end; i++) { /* both loaded: a select, not a branch */               \
      T gv = g[i], fv = f[i];                                                                      \
      y[i] = fv > 0 ? gv : 0;                                                                      \
    }                                                                                              \
  } while (0)

static void relu_grad_range(void *ctx, size_t begin, size_t end)
{
  const clg_kernel_ctx *c = ctx;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double);
  else
    LOOP(float);
}

static clg_code relu_grad_run(const clg_kernel_ctx *c)
{
  /* Element ranges across the cores (each element written once, by one thread). */
  clg_host_parallel_for(clg_out_count(&c->node->outs[0]), 1 << 15, relu_grad_range, (void *)c);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_ReluGrad, {CLG_KIND_HOST, clg_kernel_float_or_double, relu_grad_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_relu_grad, entries);
