/* Conv2D on OpenCL devices: im2col into the plan's scratch and CLBlast's GEMM (opencl/nn.c);
 * a device CLBlast cannot serve (no fp64, a compiler error) runs the host path on its data,
 * warned once per device and reason. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"

/* The host path on the device's data, for what CLBlast cannot run. */
static clg_code cl_on_host(const clg_kernel_ctx *c, const clg_window *g)
{
  const clg_node *n = c->node;
  size_t xb = clg_node_out_bytes(n->inputs[0].node, n->inputs[0].index);
  size_t fb = clg_node_out_bytes(n->inputs[1].node, n->inputs[1].index);
  size_t yb = clg_node_out_bytes(n, 0);
  void *x = malloc(xb ? xb : 1), *f = malloc(fb ? fb : 1), *y = malloc(yb ? yb : 1);
  clg_code code = CLG_OK;
  if (!x || !f || !y)
    code =
        clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host path of '%s'", n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[0]), c->in[0].offset, x, xb);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[1]), c->in[1].offset, f, fb);
  if (code == CLG_OK)
    code = clg_host_conv2d(NULL, NULL, n->outs[0].dtype, x, f, y, g);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, clg_cl_mem(&c->out[0]), c->out[0].offset, y, yb);
  free(x);
  free(f);
  free(y);
  return code;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_conv2d_geometry(c->node, &g);
  const char *why = NULL;
  clg_code code = clg_cl_conv2d(c->dev, c->alloc, c->scratch, c->node->outs[0].dtype, &c->in[0],
                                &c->in[1], &c->out[0], &g, &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  char msg[1024];
  snprintf(msg, sizeof msg, "Conv2D on %s runs on the host instead: %s", c->dev->info.full_name,
           clg_last_error());
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c, &g);
}

static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_or_double(n, dev) && clg_kernels_have_clblast();
}

/* The plan holds the im2col chunk and CLBlast's scratch for the node's step, so a
 * steady-state run makes no allocator call for them. */
static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  clg_window g;
  clg_code code = clg_conv2d_geometry(n, &g);
  *bytes = 0;
  return code == CLG_OK ? clg_cl_conv2d_scratch(dev, n->outs[0].dtype, &g, bytes) : code;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Conv2D, {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_conv2d, entries);
