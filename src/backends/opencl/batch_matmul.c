/* BatchMatMulV2 on OpenCL devices: one CLBlast GEMM per output batch on blocks cut out of
 * the inputs' and output's, in order on the device's queue (so the plan's scratch serves
 * each in turn); where CLBlast cannot serve the device (no fp64/fp16, a compiler error) the
 * host path runs on the device's data, warned once per device and reason, as MatMul's. */

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"

/* The matrix i of `bytes` bytes in block b. */
static clg_block part(const clg_block *b, size_t i, size_t bytes)
{
  clg_block p = *b;
  p.offset += i * bytes;
  p.size = bytes;
  return p;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_batch_matmul g;
  clg_batch_matmul_geometry(n, &g);
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt), xm = g.m * g.k * es, ym = g.k * g.n * es, om = g.m * g.n * es;
  const char *why = NULL;
  clg_code code = CLG_OK;
  for (size_t b = 0; b < g.batches && om != 0 && code == CLG_OK; b++) {
    size_t bx, by;
    clg_batch_matmul_batch(&g, b, &bx, &by);
    clg_block xp = part(&c->in[0], bx, xm), yp = part(&c->in[1], by, ym);
    clg_block op = part(&c->out[0], b, om);
    code = clg_cl_matmul(c->dev, c->alloc, c->scratch, dt, g.ta, g.tb, g.m, g.n, g.k, &xp, &yp, &op,
                         &why);
  }
  if (code != CLG_UNIMPLEMENTED)
    return code;
  return clg_cl_gemm_fallback(c, "BatchMatMulV2", why, clg_host_batch_matmul_node);
}

/* As MatMul's: CLBlast decides at run time, the host path covers what it cannot. */
static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return (clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
          clg_node_all_dtype(n, CLG_FLOAT16)) &&
         clg_kernels_have_clblast();
}

static clg_code cl_warm(const clg_node *n, clg_device *dev)
{
  clg_code code = clg_cl_warm_matmul(dev, n->outs[0].dtype);
  return code == CLG_UNIMPLEMENTED ? CLG_OK : code;
}

/* One batch's GEMM scratch: the batches run one after another on the queue. */
static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  clg_batch_matmul g;
  clg_batch_matmul_geometry(n, &g);
  return clg_cl_matmul_scratch(dev, n->outs[0].dtype, g.ta, g.tb, g.m, g.n, g.k, bytes);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_BatchMatMulV2, {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, cl_warm}},
};
CLG_KERNEL_SET(clg_opencl_kernels_batch_matmul, entries);
