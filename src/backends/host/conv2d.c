/* Conv2D on the host: im2col of a chunk of output rows into the plan's scratch, then one
 * GEMM per chunk (host/nn.c). */
#include "backends/host/host.h"

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_conv2d_geometry(c->node, &g);
  return clg_host_conv2d_epi(c->alloc, c->scratch, c->node->outs[0].dtype, c->in[0].host,
                             c->in[1].host, c->out[0].host, &g, c->epilogue);
}

/* The plan holds the im2col chunk for the node's step, so a steady-state run makes no
 * allocator call for it. */
static clg_code host_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  (void)dev;
  clg_window g;
  clg_code code = clg_conv2d_geometry(n, &g);
  *bytes = code == CLG_OK ? clg_host_conv2d_scratch(n->outs[0].dtype, &g) : 0;
  return code;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Conv2D, {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, host_scratch, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_conv2d, entries);
