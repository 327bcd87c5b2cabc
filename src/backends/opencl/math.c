/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg on OpenCL devices: OpenCL C's built-ins
 * element-wise, one program per op. */
#include "backends/opencl/opencl.h"

/* Indexed by clg_unop. */
static const clg_cl_text sources[7] = {
    {"Exp", "T clg_op(T x) { return exp(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Log", "T clg_op(T x) { return log(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Sqrt", "T clg_op(T x) { return sqrt(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Rsqrt", "T clg_op(T x) { return (T)1 / sqrt(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Square", "T clg_op(T x) { return x * x; }\n" CLG_CL_UNARY_TEMPLATE},
    {"Floor", "T clg_op(T x) { return floor(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Neg", "T clg_op(T x) { return -x; }\n" CLG_CL_UNARY_TEMPLATE}};

static clg_code math_run(const clg_kernel_ctx *c)
{
  return clg_cl_unary(c->dev, &sources[clg_unop_of(c->node)], c->node->outs[0].dtype, &c->in[0],
                      &c->out[0], clg_out_count(&c->node->outs[0]));
}


static const clg_kernel_entry entries[] = {
    {&clg_op_Exp, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Log, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Sqrt, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Rsqrt, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Square, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Floor, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Neg, {CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_math, entries);
