/* Add, Sub, Mul, RealDiv, Maximum, the comparisons (Equal, GreaterEqual, Less, Greater,
 * LessEqual, NotEqual), Pow and Atan2 on the host: the flat loops for equal shapes or a scalar
 * operand, else the broadcast walk; the arithmetic also on int32 and int64 (shape arithmetic the
 * importer folds), RealDiv, Pow and Atan2 float only. */
#include "backends/host/host.h"

static clg_code binary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t na, nb;
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  if (clg_binop_flat(n, &na, &nb)) {
    clg_host_binary(clg_binop_of(n), dt, c->in[0].host, na, c->in[1].host, nb, c->out[0].host,
                    clg_out_count(&n->outs[0]));
    return CLG_OK;
  }
  clg_strided m;
  clg_binop_map(n, &m);
  clg_host_broadcast(clg_binop_of(n), dt, c->in[0].host, c->in[1].host, c->out[0].host, &m);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Add, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_Sub, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_Mul, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_RealDiv, {CLG_KIND_HOST, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Maximum, {CLG_KIND_HOST, clg_binop_int_supports, binary_run, NULL, NULL}},
    {&clg_op_Equal, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_GreaterEqual, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Less, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Greater, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_LessEqual, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_NotEqual, {CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL}},
    {&clg_op_Pow, {CLG_KIND_HOST, clg_kernel_float_or_double, binary_run, NULL, NULL}},
    {&clg_op_Atan2, {CLG_KIND_HOST, clg_kernel_float_or_double, binary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_binary, entries);
