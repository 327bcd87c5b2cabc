/* AddN on OpenCL devices: the inputs added in input order (clg_cl_addn). */
#include "backends/opencl/opencl.h"

static clg_code add_n_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  return clg_cl_addn(c->dev, n->outs[0].dtype, c->in, n->num_inputs, &c->out[0],
                     clg_out_count(&n->outs[0]));
}

static const clg_kernel_entry entries[] = {
    {&clg_op_AddN, {CLG_KIND_OPENCL, clg_kernel_float_or_double, add_n_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_add_n, entries);
