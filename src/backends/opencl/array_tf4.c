/* Size on OpenCL devices: one fill of the element count. SparseToDense has no OpenCL kernel:
 * its index checks (TensorFlow's errors) read the indices on the host, and where graphs use it
 * (nanodet) every input is a Const that the importer folds, so soft placement takes a GPU one
 * to CPU:0. */
#include "backends/opencl/opencl.h"

static clg_code size_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(clg_node_in(c->node, 0));
  int32_t v32 = (int32_t)count;
  int64_t v64 = (int64_t)count;
  bool i32 = c->node->outs[0].dtype == CLG_INT32;
  return clg_cl_fill(c->dev, &c->out[0], i32 ? (const void *)&v32 : (const void *)&v64, i32 ? 4 : 8,
                     i32 ? 4 : 8);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Size, {CLG_KIND_OPENCL, NULL, size_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_array_tf4, entries);
