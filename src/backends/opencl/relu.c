/* Relu on OpenCL devices: max(x, 0) element-wise, NaN kept, in place allowed. */
#include "backends/opencl/opencl.h"

static const clg_cl_text relu_source = {
    "Relu",
    "T clg_op(T x) { return x > (T)0 ? x : (isnan(x) ? x : (T)0); }\n" CLG_CL_UNARY_TEMPLATE};

static clg_code relu_run(const clg_kernel_ctx *c)
{
  return clg_cl_unary(c->dev, &relu_source, c->node->outs[0].dtype, &c->in[0], &c->out[0],
                      clg_out_count(&c->node->outs[0]));
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Relu, {CLG_KIND_OPENCL, clg_kernel_float_or_double, relu_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_relu, entries);
