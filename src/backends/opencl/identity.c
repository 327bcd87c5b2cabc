/* Identity on OpenCL devices: a copy on the device's queue, or nothing when the output
 * reuses the input's buffer. Switch and Merge (ops/control.c): the same copy to the live
 * output, from the first live input; Switch reads its predicate back (a blocking read of one
 * byte: the runner must know which output is live before the next step). */
#include "backends/opencl/opencl.h"

static clg_code identity_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  if (!bytes || (y == x && c->out[0].offset == c->in[0].offset))
    return CLG_OK;
  return clg_device_copy(c->dev, y, c->out[0].offset, c->dev, x, c->in[0].offset, bytes, NULL,
                         NULL);
}

static clg_code copy_block(const clg_kernel_ctx *c, const clg_block *from, const clg_block *to)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (!bytes)
    return CLG_OK;
  return clg_device_copy(c->dev, clg_cl_mem(to), to->offset, c->dev, clg_cl_mem(from), from->offset,
                         bytes, NULL, NULL);
}

static clg_code switch_run(const clg_kernel_ctx *c)
{
  uint8_t pred = 0;
  clg_code code = clg_device_download(c->dev, clg_cl_mem(&c->in[1]), c->in[1].offset, &pred, 1);
  if (code != CLG_OK)
    return code;
  int taken = pred != 0;
  *c->dead = 1u << (1 - taken);
  return copy_block(c, &c->in[0], &c->out[taken]);
}

static clg_code merge_run(const clg_kernel_ctx *c)
{
  int32_t i = 0;
  while (*c->dead >> i & 1u) /* the runner runs a Merge with a live input only */
    i++;
  clg_code code = copy_block(c, &c->in[i], &c->out[0]);
  return code != CLG_OK ? code : clg_cl_fill(c->dev, &c->out[1], &i, 4, 4);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Identity, {CLG_KIND_OPENCL, NULL, identity_run, NULL, NULL}},
    {&clg_op_Switch, {CLG_KIND_OPENCL, NULL, switch_run, NULL, NULL}},
    {&clg_op_Merge, {CLG_KIND_OPENCL, NULL, merge_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_identity, entries);
