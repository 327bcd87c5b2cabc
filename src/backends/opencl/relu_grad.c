/* ReluGrad on OpenCL devices: the gradients where features > 0, else 0; in place allowed. */
#include "backends/opencl/opencl.h"

static const clg_cl_text relu_grad_source = {
    "ReluGrad",
    "__kernel void clg_relu_grad(__global const T *g, ulong go, __global const T *f, ulong fo,\n"
    "                            __global T *y, ulong yo, ulong n)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i < n)\n"
    "    y[yo + i] = f[fo + i] > (T)0 ? g[go + i] : (T)0;\n"
    "}\n"};

static clg_code relu_grad_run(const clg_kernel_ctx *c)
{
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  cl_ulong go = c->in[0].offset / es, fo = c->in[1].offset / es, yo = c->out[0].offset / es;
  cl_ulong n = clg_out_count(&c->node->outs[0]);
  cl_mem g = clg_cl_mem(&c->in[0]), f = clg_cl_mem(&c->in[1]), y = clg_cl_mem(&c->out[0]);
  clg_cl_arg args[] = {{sizeof g, &g}, {sizeof go, &go}, {sizeof f, &f}, {sizeof fo, &fo},
                       {sizeof y, &y}, {sizeof yo, &yo}, {sizeof n, &n}};
  return clg_cl_launch(c->dev, c->node->outs[0].dtype, &relu_grad_source, "clg_relu_grad", args, 7,
                       (size_t)n);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_ReluGrad, {CLG_KIND_OPENCL, clg_kernel_float_or_double, relu_grad_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_relu_grad, entries);
