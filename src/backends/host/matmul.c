/* MatMul on the host: CBLAS or the portable GEMM, half through float. */
#include "backends/host/host.h"

clg_code clg_host_matmul_node(const clg_node *n, const void *a, const void *b, void *c)
{
  size_t m, nn, k;
  bool ta, tb;
  clg_matmul_dims(n, &ta, &tb, &m, &nn, &k);
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
  return clg_host_matmul_node(c->node, c->in[0].host, c->in[1].host, c->out[0].host);
}

static bool host_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
         clg_node_all_dtype(n, CLG_FLOAT16);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_MatMul, {CLG_KIND_HOST, host_supports, host_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_matmul, entries);
