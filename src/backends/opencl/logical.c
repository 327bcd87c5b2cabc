/* LogicalAnd and LogicalOr (cl/broadcast.cl's byte kernels), LogicalNot, IsNan and IsInf on
 * OpenCL devices. */
#include "backends/opencl/opencl.h"

/* Built for the input's dtype (IsNan, IsInf) or as the float program (LogicalNot: T unused). */
static const clg_cl_text source = {
    "logical",
    "__kernel void clg_logical_not(__global const uchar *x, ulong xo, __global uchar *y, ulong "
    "yo,\n"
    "                              ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = x[xo + i] ? 0 : 1; }\n"
    "__kernel void clg_is_nan(__global const T *x, ulong xo, __global uchar *y, ulong yo, ulong "
    "n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = isnan(x[xo + i]) ? 1 : 0; }\n"
    "__kernel void clg_is_inf(__global const T *x, ulong xo, __global uchar *y, ulong yo, ulong "
    "n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = isinf(x[xo + i]) ? 1 : 0; }\n"};

static clg_code logical_binary_run(const clg_kernel_ctx *c)
{
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  clg_strided m;
  clg_binop_map(c->node, &m);
  return clg_cl_broadcast(c->dev, clg_binop_of(c->node), CLG_BOOL, &c->in[0], &c->in[1], &c->out[0],
                          &m);
}

static clg_code logical_unary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  bool lnot = n->def == &clg_op_LogicalNot;
  size_t es = clg_dtype_size(dt);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset, count = clg_out_count(&n->outs[0]);
  cl_mem xm = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  clg_cl_arg args[] = {{sizeof xm, &xm},
                       {sizeof xo, &xo},
                       {sizeof ym, &ym},
                       {sizeof yo, &yo},
                       {sizeof count, &count}};
  const char *k = lnot ? "clg_logical_not" : n->def == &clg_op_IsNan ? "clg_is_nan" : "clg_is_inf";
  return clg_cl_launch(c->dev, lnot ? CLG_FLOAT32 : dt, &source, k, args, 5, (size_t)count);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_LogicalAnd, {CLG_KIND_OPENCL, clg_logical_supports, logical_binary_run, NULL, NULL}},
    {&clg_op_LogicalOr, {CLG_KIND_OPENCL, clg_logical_supports, logical_binary_run, NULL, NULL}},
    {&clg_op_LogicalNot, {CLG_KIND_OPENCL, clg_logical_supports, logical_unary_run, NULL, NULL}},
    {&clg_op_IsNan, {CLG_KIND_OPENCL, clg_float_test_supports, logical_unary_run, NULL, NULL}},
    {&clg_op_IsInf, {CLG_KIND_OPENCL, clg_float_test_supports, logical_unary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_logical, entries);
