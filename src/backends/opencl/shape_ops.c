/* Reshape and Transpose on OpenCL devices, for any dtype: Reshape copies on the device's
 * queue unless its output reuses the input's buffer; Transpose gathers through its strided
 * map. */
#include "backends/opencl/opencl.h"

static clg_code reshape_cl(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  if (!bytes || (y == x && c->out[0].offset == c->in[0].offset))
    return CLG_OK;
  return clg_device_copy(c->dev, y, c->out[0].offset, c->dev, x, c->in[0].offset, bytes, NULL,
                         NULL);
}

static clg_code transpose_cl(const clg_kernel_ctx *c)
{
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  clg_strided m;
  clg_transpose_map(c->node, &m);
  return clg_cl_gather(c->dev, clg_dtype_size(c->node->outs[0].dtype), &c->in[0], &c->out[0], &m);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Reshape, {CLG_KIND_OPENCL, NULL, reshape_cl, NULL, NULL}},
    {&clg_op_Transpose, {CLG_KIND_OPENCL, NULL, transpose_cl, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_shape_ops, entries);
