/* Identity on OpenCL devices: a copy on the device's queue, or nothing when the output
 * reuses the input's buffer. */
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

static const clg_kernel_entry entries[] = {
    {&clg_op_Identity, {CLG_KIND_OPENCL, NULL, identity_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_identity, entries);
