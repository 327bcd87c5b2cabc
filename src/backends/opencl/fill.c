/* Fill, ZerosLike and OnesLike on OpenCL devices: Fill gathers element 0 of its value into
 * every element; the others fill a pattern. */
#include "backends/opencl/opencl.h"

static clg_code fill_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (count == 0)
    return CLG_OK;
  clg_strided m = {1, {count}, {0}, {0}}; /* every element reads element 0 of the value */
  return clg_cl_gather(c->dev, clg_dtype_size(c->node->outs[0].dtype), &c->in[1], &c->out[0], &m);
}

static clg_code like_run(const clg_kernel_ctx *c)
{
  clg_dtype t = c->node->outs[0].dtype;
  uint64_t elem[1];
  clg_fill_element(t, c->node->def == &clg_op_OnesLike, elem);
  return clg_cl_fill(c->dev, &c->out[0], elem, clg_dtype_size(t), clg_node_out_bytes(c->node, 0));
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Fill, {CLG_KIND_OPENCL, NULL, fill_run, NULL, NULL}},
    {&clg_op_ZerosLike, {CLG_KIND_OPENCL, NULL, like_run, NULL, NULL}},
    {&clg_op_OnesLike, {CLG_KIND_OPENCL, NULL, like_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_fill, entries);
