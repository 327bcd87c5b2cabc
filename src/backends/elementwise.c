/* What the host's and the OpenCL kernels of the element-wise families read off a node alike:
 * which unop or binop, flat or broadcast, Select's span, a fill element. */
#include <string.h>

#include "backends/backend.h"

/* The ops of ops/math_tf.c, in clg_unop's order from CLG_UNOP_ERF. */
static clg_unop unop_tf(const clg_op_def *d)
{
  const clg_op_def *const tf[] = {
      &clg_op_Erf,      &clg_op_Ceil,     &clg_op_Round, &clg_op_Reciprocal, &clg_op_Sin,
      &clg_op_Cos,      &clg_op_Tan,      &clg_op_Asin,  &clg_op_Acos,       &clg_op_Atan,
      &clg_op_Sinh,     &clg_op_Cosh,     &clg_op_Asinh, &clg_op_Acosh,      &clg_op_Atanh,
      &clg_op_Softplus, &clg_op_Softsign, &clg_op_Elu,   &clg_op_Selu};
  int i = 0;
  while (i < (int)(sizeof tf / sizeof tf[0]) - 1 && tf[i] != d)
    i++;
  return (clg_unop)(CLG_UNOP_ERF + i);
}

clg_unop clg_unop_of(const clg_node *n)
{
  const clg_op_def *d = n->def;
  return d == &clg_op_Exp      ? CLG_UNOP_EXP
         : d == &clg_op_Log    ? CLG_UNOP_LOG
         : d == &clg_op_Sqrt   ? CLG_UNOP_SQRT
         : d == &clg_op_Square ? CLG_UNOP_SQUARE
         : d == &clg_op_Floor  ? CLG_UNOP_FLOOR
         : d == &clg_op_Neg    ? CLG_UNOP_NEG
         : d == &clg_op_Rsqrt  ? CLG_UNOP_RSQRT
                               : unop_tf(d);
}

clg_binop clg_binop_of(const clg_node *n)
{
  const clg_op_def *d = n->def;
  return d == &clg_op_Add          ? CLG_BINOP_ADD
         : d == &clg_op_Sub        ? CLG_BINOP_SUB
         : d == &clg_op_Mul        ? CLG_BINOP_MUL
         : d == &clg_op_RealDiv    ? CLG_BINOP_DIV
         : d == &clg_op_Maximum    ? CLG_BINOP_MAX
         : d == &clg_op_Equal      ? CLG_BINOP_EQUAL
         : d == &clg_op_Less       ? CLG_BINOP_LESS
         : d == &clg_op_Greater    ? CLG_BINOP_GREATER
         : d == &clg_op_LessEqual  ? CLG_BINOP_LESS_EQUAL
         : d == &clg_op_NotEqual   ? CLG_BINOP_NOT_EQUAL
         : d == &clg_op_Pow        ? CLG_BINOP_POW
         : d == &clg_op_Atan2      ? CLG_BINOP_ATAN2
         : d == &clg_op_LogicalAnd ? CLG_BINOP_AND
         : d == &clg_op_LogicalOr  ? CLG_BINOP_OR
                                   : CLG_BINOP_GREATER_EQUAL;
}

bool clg_binop_flat(const clg_node *n, size_t *na, size_t *nb)
{
  clg_binop op = clg_binop_of(n);
  size_t count = clg_out_count(&n->outs[0]);
  *na = clg_out_count(clg_node_in(n, 0));
  *nb = clg_out_count(clg_node_in(n, 1));
  return op <= CLG_BINOP_MUL && (*na == count || *na == 1) && (*nb == count || *nb == 1);
}

void clg_binop_map(const clg_node *n, clg_strided *m)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1), *o = &n->outs[0];
  clg_strided_broadcast(m, a->rank, a->dims, b->rank, b->dims, o->rank, o->dims);
}

bool clg_binop_compare_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = clg_node_in(n, 0)->dtype;
  if (clg_node_in(n, 1)->dtype != t || n->outs[0].dtype != CLG_BOOL)
    return false;
  if (t == CLG_FLOAT64)
    return clg_device_ops_of(dev)->kind == CLG_KIND_HOST || dev->info.has_fp64;
  /* Equal and NotEqual of bools: ONNX's Xor imports as NotEqual. */
  if (t == CLG_BOOL)
    return n->def == &clg_op_Equal || n->def == &clg_op_NotEqual;
  return t == CLG_FLOAT32 || clg_dtype_is_integer(t);
}

bool clg_binop_int_supports(const clg_node *n, const clg_device *dev)
{
  if (clg_kernel_float_or_double(n, dev))
    return true;
  /* Integers on the host only: TensorFlow keeps int32 arithmetic in host memory, and the
   * importer folds shape arithmetic (Shape * 2, ...) there. */
  clg_dtype t = n->outs[0].dtype;
  return clg_device_ops_of(dev)->kind == CLG_KIND_HOST && clg_dtype_is_integer(t) &&
         clg_node_all_dtype(n, t);
}

bool clg_logical_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return clg_node_all_dtype(n, CLG_BOOL);
}

bool clg_float_test_supports(const clg_node *n, const clg_device *dev)
{
  return n->outs[0].dtype == CLG_BOOL && clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

void clg_select_v2_map(const clg_node *n, clg_select_map *m)
{
  const clg_out_desc *o = &n->outs[0];
  clg_select_map full;
  memset(&full, 0, sizeof full);
  full.rank = o->rank;
  for (int k = 0; k < o->rank; k++)
    full.dims[k] = (size_t)o->dims[k];
  for (int i = 0; i < 3; i++) { /* each input aligned right, stride 0 where it has 1 */
    const clg_out_desc *in = clg_node_in(n, i);
    size_t stride = 1;
    for (int k = o->rank - 1, ki = in->rank - 1; k >= 0 && ki >= 0; k--, ki--) {
      full.s[i][k] = in->dims[ki] == 1 ? 0 : stride;
      stride *= (size_t)in->dims[ki];
    }
  }
  /* Dims of one element dropped, neighbours merged where every stride continues. */
  memset(m, 0, sizeof *m);
  for (int k = 0; k < full.rank; k++) {
    if (full.dims[k] == 1)
      continue;
    int j = m->rank - 1;
    bool merge = j >= 0;
    for (int i = 0; merge && i < 3; i++)
      merge = m->s[i][j] == full.s[i][k] * full.dims[k];
    if (merge) {
      m->dims[j] *= full.dims[k];
      for (int i = 0; i < 3; i++)
        m->s[i][j] = full.s[i][k];
      continue;
    }
    m->dims[m->rank] = full.dims[k];
    for (int i = 0; i < 3; i++)
      m->s[i][m->rank] = full.s[i][k];
    m->rank++;
  }
  if (m->rank == 0) {
    m->rank = 1;
    m->dims[0] = 1;
  }
}

size_t clg_select_span(const clg_node *n)
{
  const clg_out_desc *c = clg_node_in(n, 0);
  size_t count = clg_out_count(&n->outs[0]), nc = clg_out_count(c);
  return nc == count ? 1 : c->rank == 0 ? count : count / nc;
}

bool clg_select_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  size_t es = clg_dtype_size(n->outs[0].dtype);
  return es == 1 || es == 2 || es == 4 || es == 8;
}

void clg_fill_element(clg_dtype t, bool one, void *buf)
{
  memset(buf, 0, 8);
  if (!one)
    return;
  switch (t) {
  case CLG_FLOAT32:
    *(float *)buf = 1.0f;
    break;
  case CLG_FLOAT64:
    *(double *)buf = 1.0;
    break;
  case CLG_INT32:
    *(int32_t *)buf = 1;
    break;
  case CLG_INT64:
    *(int64_t *)buf = 1;
    break;
  default: /* bool and the other integers: 1 in the low byte (little-endian hosts and devices) */
    *(uint8_t *)buf = 1;
    break;
  }
}
