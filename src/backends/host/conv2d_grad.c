/* Conv2DBackpropInput and Conv2DBackpropFilter on the host: GEMM (OpenBLAS or the portable
 * one) over chunks of patch rows in the plan's scratch (host/nn.c). */
#include "backends/host/host.h"

static bool is_filter(const clg_node *n) { return n->def == &clg_op_Conv2DBackpropFilter; }

/* The tensor input the kernel reads besides out_backprop: x for the filter's gradient, the
 * filter for the input's. */
static int tensor_input(const clg_node *n) { return is_filter(n) ? 0 : 1; }

clg_code clg_host_conv2d_grad_node(const clg_node *n, clg_allocator *alloc,
                                   const clg_block *scratch, const void *in, const void *dy,
                                   void *out, const clg_window *g)
{
  clg_dtype dt = n->outs[0].dtype;
  clg_code code = is_filter(n) ? clg_host_conv2d_backprop_filter(alloc, scratch, dt, in, dy, out, g)
                               : clg_host_conv2d_backprop_input(alloc, scratch, dt, in, dy, out, g);
  return code == CLG_OK ? code : clg_error_prefix("%s '%s': ", n->op, n->name);
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_conv2d_grad_geometry(c->node, &g);
  int t = tensor_input(c->node);
  return clg_host_conv2d_grad_node(c->node, c->alloc, c->scratch, c->in[t].host, c->in[2].host,
                                   c->out[0].host, &g);
}

/* Float or double tensors; the sizes input is integer. */
static bool host_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  if (clg_node_in(n, 2)->dtype != t || clg_node_in(n, tensor_input(n))->dtype != t)
    return false;
  return clg_kernel_float_dtype(t, dev);
}

static clg_code host_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  (void)dev;
  clg_window g;
  clg_code code = clg_conv2d_grad_geometry(n, &g);
  *bytes = code == CLG_OK ? clg_host_conv2d_grad_scratch(n->outs[0].dtype, &g, is_filter(n)) : 0;
  return code;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Conv2DBackpropInput, {CLG_KIND_HOST, host_supports, host_run, host_scratch, NULL}},
    {&clg_op_Conv2DBackpropFilter, {CLG_KIND_HOST, host_supports, host_run, host_scratch, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_conv2d_grad, entries);
