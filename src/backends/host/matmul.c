/* MatMul on the host: CBLAS or the portable GEMM, half through float; int32 and int64 by a
 * plain loop (index arithmetic, as a SpatialTransformer's, not a workload). */
#include "backends/host/host.h"

/* c = op(a) x op(b) in wrapping integer arithmetic (unsigned: no signed overflow in C). */
#define INT_MATMUL(T, UT)                                                                          \
  do {                                                                                             \
    const T *x = a, *y = b;                                                                        \
    T *z = c;                                                                                      \
    for (size_t i = 0; i < m; i++)                                                                 \
      for (size_t j = 0; j < nn; j++) {                                                            \
        UT s = 0;                                                                                  \
        for (size_t q = 0; q < k; q++)                                                             \
          s += (UT)x[ta ? q * m + i : i * k + q] * (UT)y[tb ? j * k + q : q * nn + j];             \
        z[i * nn + j] = (T)s;                                                                      \
      }                                                                                            \
  } while (0)

clg_code clg_host_matmul_node(const clg_node *n, const void *a, const void *b, void *c)
{
  size_t m, nn, k;
  bool ta, tb;
  clg_matmul_dims(n, &ta, &tb, &m, &nn, &k);
  if (n->outs[0].dtype == CLG_INT32) {
    INT_MATMUL(int32_t, uint32_t);
    return CLG_OK;
  }
  if (n->outs[0].dtype == CLG_INT64) {
    INT_MATMUL(int64_t, uint64_t);
    return CLG_OK;
  }
  if (n->outs[0].dtype == CLG_FLOAT16) {
    if (clg_host_matmul_half(ta, tb, m, nn, k, a, b, c) != CLG_OK)
      return clg_error_prefix("MatMul '%s': ", n->name);
    return CLG_OK;
  }
  clg_host_matmul(n->outs[0].dtype, ta, tb, m, nn, k, a, b, c);
  return CLG_OK;
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_code code = clg_host_matmul_node(c->node, c->in[0].host, c->in[1].host, c->out[0].host);
  /* fused ops (float32 only, as the planner fuses): one parallel pass over the product */
  if (code == CLG_OK && c->epilogue && c->node->outs[0].dtype == CLG_FLOAT32)
    clg_host_epilogue(c->epilogue, c->out[0].host, 0, (size_t)c->node->outs[0].dims[0]);
  return code;
}

static bool host_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
         clg_node_all_dtype(n, CLG_FLOAT16) || clg_node_all_dtype(n, CLG_INT32) ||
         clg_node_all_dtype(n, CLG_INT64);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_MatMul, {CLG_KIND_HOST, host_supports, host_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_matmul, entries);
