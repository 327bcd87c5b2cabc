/* AddV2, Minimum, Prelu, FloorDiv, FloorMod, SquaredDifference, LeftShift and RightShift on
 * the host: flat loops for
 * equal shapes or a scalar operand (AddV2), the strided walk of numpy broadcasting otherwise. */
#include "backends/host/host.h"

static clg_binop binop(const clg_node *n)
{
  return n->def == &clg_op_Minimum             ? CLG_BINOP_MIN
         : n->def == &clg_op_Prelu             ? CLG_BINOP_PRELU
         : n->def == &clg_op_FloorDiv          ? CLG_BINOP_FLOORDIV
         : n->def == &clg_op_FloorMod          ? CLG_BINOP_FLOORMOD
         : n->def == &clg_op_SquaredDifference ? CLG_BINOP_SQDIFF
         : n->def == &clg_op_LeftShift         ? CLG_BINOP_LSHIFT
         : n->def == &clg_op_RightShift        ? CLG_BINOP_RSHIFT
                                               : CLG_BINOP_ADD;
}

/* TensorFlow's integer FloorDiv and FloorMod refuse a zero divisor (a float one gives inf or
 * NaN). */
static bool has_zero(clg_dtype dt, const void *p, size_t count)
{
  for (size_t i = 0; i < count; i++)
    if (clg_uint_load(dt, p, i) == 0)
      return true;
  return false;
}

static clg_code binary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1), *o = &n->outs[0];
  size_t count = clg_out_count(o), na = clg_out_count(a), nb = clg_out_count(b);
  clg_binop op = binop(n);
  if ((op == CLG_BINOP_FLOORDIV || op == CLG_BINOP_FLOORMOD) && clg_dtype_is_integer(b->dtype) &&
      count > 0 && has_zero(b->dtype, c->in[1].host, nb))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Integer division by zero");
  if (op == CLG_BINOP_ADD && (na == count || na == 1) && (nb == count || nb == 1)) {
    clg_host_binary(CLG_BINOP_ADD, o->dtype, c->in[0].host, na, c->in[1].host, nb, c->out[0].host,
                    count);
    return CLG_OK;
  }
  clg_strided m;
  clg_strided_broadcast(&m, a->rank, a->dims, b->rank, b->dims, o->rank, o->dims);
  clg_host_broadcast(op, o->dtype, c->in[0].host, c->in[1].host, c->out[0].host, &m);
  return CLG_OK;
}

static bool shift_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  return clg_device_ops_of(dev)->kind == CLG_KIND_HOST && clg_dtype_is_integer(t) &&
         clg_node_all_dtype(n, t);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_AddV2, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_Minimum, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_Prelu, {CLG_KIND_HOST, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_FloorDiv, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_FloorMod, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_SquaredDifference, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_LeftShift, {CLG_KIND_HOST, shift_supports, binary_run, NULL, NULL}},
    {&clg_op_RightShift, {CLG_KIND_HOST, shift_supports, binary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_binary_tf, entries);
