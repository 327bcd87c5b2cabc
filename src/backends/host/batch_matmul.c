/* BatchMatMulV2 on the host: one GEMM of MatMul's path (CBLAS or the portable GEMM, half
 * through float) per output batch, on the batch's matrices of x and y. */
#include "backends/host/host.h"

clg_code clg_host_batch_matmul_node(const clg_node *n, const void *x, const void *y, void *out)
{
  clg_batch_matmul g;
  clg_batch_matmul_geometry(n, &g);
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt), xm = g.m * g.k * es, ym = g.k * g.n * es, om = g.m * g.n * es;
  if (om == 0)
    return CLG_OK;
  for (size_t b = 0; b < g.batches; b++) {
    size_t bx, by;
    clg_batch_matmul_batch(&g, b, &bx, &by);
    const char *xb = (const char *)x + bx * xm, *yb = (const char *)y + by * ym;
    char *ob = (char *)out + b * om;
    if (dt != CLG_FLOAT16) {
      clg_host_matmul(dt, g.ta, g.tb, g.m, g.n, g.k, xb, yb, ob);
      continue;
    }
    if (clg_host_matmul_half(g.ta, g.tb, g.m, g.n, g.k, (const uint16_t *)(const void *)xb,
                             (const uint16_t *)(const void *)yb, (uint16_t *)(void *)ob) != CLG_OK)
      return clg_error_prefix("BatchMatMulV2 '%s': ", n->name);
  }
  return CLG_OK;
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  return clg_host_batch_matmul_node(c->node, c->in[0].host, c->in[1].host, c->out[0].host);
}

static bool host_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
         clg_node_all_dtype(n, CLG_FLOAT16);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_BatchMatMulV2, {CLG_KIND_HOST, host_supports, host_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_batch_matmul, entries);
