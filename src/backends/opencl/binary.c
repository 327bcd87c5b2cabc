/* Add, Sub, Mul, RealDiv, Maximum, the comparisons (Equal, GreaterEqual, Less, Greater,
 * LessEqual, NotEqual), Pow and Atan2 on OpenCL devices: the flat kernels for equal shapes or a
 * scalar operand, else cl/broadcast.cl. */
#include "backends/opencl/opencl.h"

static clg_code binary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t na, nb, count = clg_out_count(&n->outs[0]);
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  if (count == 0)
    return CLG_OK;
  if (clg_binop_flat(n, &na, &nb))
    return clg_cl_binary(c->dev, clg_binop_of(n), dt, &c->in[0], na, &c->in[1], nb, &c->out[0],
                         count);
  clg_strided m;
  clg_binop_map(n, &m);
  return clg_cl_broadcast(c->dev, clg_binop_of(n), dt, &c->in[0], &c->in[1], &c->out[0], &m);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Add, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Sub, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Mul, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_RealDiv, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Maximum, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Equal, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_GreaterEqual, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Less, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Greater, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_LessEqual, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_NotEqual, {CLG_KIND_OPENCL, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Pow, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Atan2, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_binary, entries);
