/* AddV2, Minimum, Prelu, FloorDiv and FloorMod (float; integers run on the host) and
 * SquaredDifference (float and integers) on OpenCL devices: the flat kernel for equal shapes or
 * a scalar operand (AddV2), cl/broadcast.cl's strided kernels otherwise. */
#include "backends/opencl/opencl.h"

static clg_binop binop(const clg_node *n)
{
  return n->def == &clg_op_Minimum             ? CLG_BINOP_MIN
         : n->def == &clg_op_Prelu             ? CLG_BINOP_PRELU
         : n->def == &clg_op_FloorDiv          ? CLG_BINOP_FLOORDIV
         : n->def == &clg_op_FloorMod          ? CLG_BINOP_FLOORMOD
         : n->def == &clg_op_SquaredDifference ? CLG_BINOP_SQDIFF
                                               : CLG_BINOP_ADD;
}

static clg_code binary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1), *o = &n->outs[0];
  size_t count = clg_out_count(o), na = clg_out_count(a), nb = clg_out_count(b);
  if (count == 0)
    return CLG_OK;
  if (binop(n) == CLG_BINOP_ADD && (na == count || na == 1) && (nb == count || nb == 1))
    return clg_cl_binary(c->dev, CLG_BINOP_ADD, o->dtype, &c->in[0], na, &c->in[1], nb, &c->out[0],
                         count);
  clg_strided m;
  clg_strided_broadcast(&m, a->rank, a->dims, b->rank, b->dims, o->rank, o->dims);
  return clg_cl_broadcast(c->dev, binop(n), o->dtype, &c->in[0], &c->in[1], &c->out[0], &m);
}

/* SquaredDifference also on int32 and int64 (cl/broadcast.cl's integer kernels). */
static bool sqdiff_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_or_double(n, dev) || clg_node_all_dtype(n, CLG_INT32) ||
         clg_node_all_dtype(n, CLG_INT64);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_AddV2, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Minimum, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Prelu, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_FloorDiv, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_FloorMod, {CLG_KIND_OPENCL, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_SquaredDifference, {CLG_KIND_OPENCL, sqdiff_supports, binary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_binary_tf, entries);
