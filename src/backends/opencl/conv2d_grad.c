/* Conv2DBackpropInput and Conv2DBackpropFilter on OpenCL devices: CLBlast's GEMM over chunks
 * of patch rows in the plan's scratch (opencl/nn.c); a device CLBlast cannot serve runs the
 * host path on its data, warned once per device and reason. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"

static bool is_filter(const clg_node *n) { return n->def == &clg_op_Conv2DBackpropFilter; }

/* The tensor input the kernel reads besides out_backprop: x for the filter's gradient, the
 * filter for the input's. */
static int tensor_input(const clg_node *n) { return is_filter(n) ? 0 : 1; }

/* The host path on the device's data, for what CLBlast cannot run. */
static clg_code cl_on_host(const clg_kernel_ctx *c, const clg_window *g)
{
  const clg_node *n = c->node;
  int t = tensor_input(n);
  size_t ib = clg_node_out_bytes(n->inputs[t].node, n->inputs[t].index);
  size_t db = clg_node_out_bytes(n->inputs[2].node, n->inputs[2].index);
  size_t ob = clg_node_out_bytes(n, 0);
  void *in = malloc(ib ? ib : 1), *dy = malloc(db ? db : 1), *out = malloc(ob ? ob : 1);
  clg_code code = CLG_OK;
  if (!in || !dy || !out)
    code =
        clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host path of '%s'", n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[t]), c->in[t].offset, in, ib);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[2]), c->in[2].offset, dy, db);
  if (code == CLG_OK)
    code = clg_host_conv2d_grad_node(n, NULL, NULL, in, dy, out, g);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, clg_cl_mem(&c->out[0]), c->out[0].offset, out, ob);
  free(in);
  free(dy);
  free(out);
  return code;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_conv2d_grad_geometry(c->node, &g);
  const char *why = NULL;
  int t = tensor_input(c->node);
  clg_code code =
      clg_cl_conv2d_backprop(c->dev, c->alloc, c->scratch, c->node->outs[0].dtype,
                             is_filter(c->node), &c->in[t], &c->in[2], &c->out[0], &g, &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s on %s runs on the host instead: %s", c->node->op,
           c->dev->info.full_name, clg_last_error());
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c, &g);
}

/* Float, or double with fp64, tensors; the sizes input is integer. CLBlast in the build. */
static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  if (clg_node_in(n, 2)->dtype != t || clg_node_in(n, tensor_input(n))->dtype != t)
    return false;
  return clg_kernel_float_dtype(t, dev) && clg_kernels_have_clblast();
}

static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  clg_window g;
  clg_code code = clg_conv2d_grad_geometry(n, &g);
  *bytes = 0;
  return code == CLG_OK ? clg_cl_conv2d_grad_scratch(dev, n->outs[0].dtype, &g, is_filter(n), bytes)
                        : code;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Conv2DBackpropInput, {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, NULL}},
    {&clg_op_Conv2DBackpropFilter, {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_conv2d_grad, entries);
