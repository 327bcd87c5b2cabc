/* ONNX reductions (axes from the attribute, or ReduceSum's input from opset 13; keepdims;
 * noop_with_empty_axes), the composite ones (L1, L2, LogSum, LogSumExp, SumSquare), Softmax
 * and LogSoftmax with each opset's axis rule, ArgMax/ArgMin, Cast and TopK. */
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

/* The reduced axes (normalised, sorted by mark) of input 0: *all when none are given. */
static clg_code reduce_axes(clg_onnx *c, const clg_imp_node *n, int rank, int64_t *axes, int *k)
{
  *k = -1;
  clg_code code = CLG_OK;
  if (strcmp(n->op, "ReduceSum") == 0 && c->m->opset >= 13) {
    if (clg_onnx_has(n, 1))
      code = clg_onnx_in_ints(c, n, 1, axes, CLG_MAX_RANK, k);
  } else
    *k = clg_onnx_attr_ints(n, "axes", axes, CLG_MAX_RANK);
  if (code != CLG_OK)
    return code;
  if (*k > rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d axes for rank %d", *k, rank);
  for (int i = 0; i < *k; i++) {
    if (axes[i] < 0)
      axes[i] += rank;
    if (axes[i] < 0 || axes[i] >= rank)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  }
  return CLG_OK;
}

/* op over axes of x (all when k < 0), dims kept or dropped. */
static clg_code reduce_with(clg_onnx *c, const char *op, clg_output x, const int64_t *axes, int k,
                            bool keep, clg_output *y)
{
  int rank = clg_onnx_rank(x);
  int64_t all[CLG_MAX_RANK];
  if (k < 0) {
    for (int i = 0; i < rank; i++)
      all[i] = i;
    axes = all;
    k = rank;
  }
  clg_output ax = {0};
  clg_code code = clg_onnx_const_i32(c, k, axes, &ax);
  clg_attr kd = clg_attr_bool("keep_dims", keep);
  clg_output ins[2] = {x, ax};
  return code == CLG_OK ? clg_onnx_op(c, op, 2, ins, 1, &kd, y) : code;
}

static clg_code reduce(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axes[CLG_MAX_RANK];
  int k;
  clg_code code = reduce_axes(c, n, rank, axes, &k);
  if (code != CLG_OK)
    return code;
  bool keep = clg_onnx_attr_i(n, "keepdims", 1) != 0;
  clg_output x = {0}, y = {0};
  if ((code = clg_onnx_in(c, n, 0, &x)) != CLG_OK)
    return code;
  if (k <= 0 && clg_onnx_attr_i(n, "noop_with_empty_axes", 0)) {
    code = clg_onnx_op(c, "Identity", 1, &x, 0, NULL, &y);
    return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
  }
  if (k == 0)
    k = -1;
  const char *op = r->tf;
  const char *name = n->op + 6; /* after "Reduce" */
  if (strcmp(name, "L1") == 0)
    code = clg_onnx_op(c, "Abs", 1, &x, 0, NULL, &x);
  else if (strcmp(name, "L2") == 0 || strcmp(name, "SumSquare") == 0)
    code = clg_onnx_op(c, "Square", 1, &x, 0, NULL, &x);
  else if (strcmp(name, "LogSumExp") == 0) {
    /* max + log(sum(exp(x - max))): no overflow for large x */
    clg_output m = {0}, d = {0};
    code = reduce_with(c, "Max", x, axes, k, true, &m);
    clg_output ins[2] = {x, m};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Sub", 2, ins, 0, NULL, &d);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Exp", 1, &d, 0, NULL, &d);
    if (code == CLG_OK)
      code = reduce_with(c, "Sum", d, axes, k, keep, &y);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Log", 1, &y, 0, NULL, &y);
    if (code == CLG_OK && !keep)
      code = reduce_with(c, "Max", x, axes, k, false, &m);
    ins[0] = y;
    ins[1] = m;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Add", 2, ins, 0, NULL, &y);
    return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
  }
  if (code == CLG_OK)
    code = reduce_with(c, op, x, axes, k, keep, &y);
  if (code == CLG_OK && strcmp(name, "L2") == 0)
    code = clg_onnx_op(c, "Sqrt", 1, &y, 0, NULL, &y);
  if (code == CLG_OK && strcmp(name, "LogSum") == 0)
    code = clg_onnx_op(c, "Log", 1, &y, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Softmax, LogSoftmax: before opset 13 over the input flattened to 2-D at axis (default 1),
 * from 13 along axis (default -1); clgraph's ops work on the last axis. */
static clg_code softmax(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  int rank = clg_onnx_in_rank(c, n, 0);
  bool legacy = c->m->opset < 13;
  int64_t axis = clg_onnx_attr_i(n, "axis", legacy ? 1 : -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || (rank > 0 && axis >= rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK];
  for (int i = 0; i < rank; i++)
    dims[i] = clg_onnx_dim(x, i);
  if (legacy) {
    int64_t d2[2] = {1, 1};
    for (int i = 0; i < rank; i++)
      d2[i >= axis] *= dims[i];
    code = clg_onnx_reshape(c, x, 2, d2, &x);
    if (code == CLG_OK)
      code = clg_onnx_op(c, r->tf, 1, &x, 0, NULL, &y);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, y, rank, dims, &y);
  } else if (axis == rank - 1) {
    code = clg_onnx_op(c, r->tf, 1, &x, 0, NULL, &y);
  } else { /* the axis swapped with the last and back */
    int64_t perm[CLG_MAX_RANK];
    for (int i = 0; i < rank; i++)
      perm[i] = i;
    perm[axis] = rank - 1;
    perm[rank - 1] = axis;
    code = clg_onnx_transpose(c, x, rank, perm, &x);
    if (code == CLG_OK)
      code = clg_onnx_op(c, r->tf, 1, &x, 0, NULL, &y);
    if (code == CLG_OK)
      code = clg_onnx_transpose(c, y, rank, perm, &y);
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* x reversed along axis: a Gather of constant indices dim-1 .. 0. */
static clg_code reverse_axis(clg_onnx *c, clg_output x, int64_t axis, clg_output *y)
{
  int64_t dim = clg_onnx_dim(x, (int)axis);
  int64_t d[1] = {dim};
  clg_tensor *t = clg_tensor_new(CLG_INT64, 1, d, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < dim; i++)
    ((int64_t *)clg_tensor_data(t))[i] = dim - 1 - i;
  clg_output ins[3] = {x};
  clg_code code = clg_onnx_const(c, t, &ins[1]);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, (double)axis, &ins[2]);
  return code == CLG_OK ? clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, y) : code;
}

/* ArgMax, ArgMin: int64 indices of the first of equals, or with select_last_index of the last
 * (the first in the reversed input, counted back). */
static clg_code arg_reduce(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  bool last = clg_onnx_attr_i(n, "select_last_index", 0) != 0;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  clg_output x = {0}, ax = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  clg_output src = x;
  if (code == CLG_OK && last)
    code = reverse_axis(c, x, axis, &src);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, (double)axis, &ax);
  clg_attr ot = clg_attr_dtype("output_type", CLG_INT64);
  clg_output ins[2] = {src, ax};
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 2, ins, 1, &ot, &y);
  if (code == CLG_OK && last) { /* index in x = dim - 1 - index in the reversed x */
    clg_output k = {0}, p[2] = {0};
    code = clg_onnx_const_scalar(c, CLG_INT64, (double)(clg_onnx_dim(x, (int)axis) - 1), &k);
    p[0] = k;
    p[1] = y;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Sub", 2, p, 0, NULL, &y);
  }
  if (code == CLG_OK && clg_onnx_attr_i(n, "keepdims", 1)) {
    int64_t dims[CLG_MAX_RANK];
    for (int i = 0; i < rank; i++)
      dims[i] = i == axis ? 1 : clg_onnx_dim(x, i);
    code = clg_onnx_reshape(c, y, rank, dims, &y);
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code cast(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t to = clg_onnx_attr_i(n, "to", 0);
  clg_dtype dt;
  if (!clg_onnx_dtype_of(to, &dt))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a cast to ONNX type %lld, which clgraph lacks",
                         (long long)to);
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code != CLG_OK)
    return code;
  if (clg_onnx_dtype(x) == dt)
    return clg_onnx_out_alias(c, n, 0, 0);
  clg_attr a = clg_attr_dtype("DstT", dt);
  code = clg_onnx_op(c, "Cast", 1, &x, 1, &a, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* x's order reversed exactly: -x for floats, -1 - x for integers (no overflow at the most
 * negative value); its own inverse. */
static clg_code flip_order(clg_onnx *c, clg_output x, clg_output *y)
{
  clg_dtype dt = clg_onnx_dtype(x);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_onnx_op(c, "Neg", 1, &x, 0, NULL, y);
  clg_output m1 = {0};
  clg_code code = clg_onnx_const_scalar(c, dt, -1, &m1);
  clg_output ins[2] = {m1, x};
  return code == CLG_OK ? clg_onnx_op(c, "Sub", 2, ins, 0, NULL, y) : code;
}

/* TopK along the last axis (others through a transpose); largest 0: the largest of the order
 * flipped (TopKV2 breaks ties by the lower index, as ONNX does for either), values flipped
 * back. */
static clg_code topk(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  bool smallest = !clg_onnx_attr_i(n, "largest", 1);
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  int64_t k = 0;
  clg_code code = CLG_OK;
  if (c->m->opset < 10)
    k = clg_onnx_attr_i(n, "k", 0);
  else {
    int cnt;
    code = clg_onnx_in_ints(c, n, 1, &k, 1, &cnt);
  }
  if (code != CLG_OK)
    return code;
  int64_t perm[CLG_MAX_RANK];
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  perm[axis] = rank - 1;
  perm[rank - 1] = axis;
  clg_output x = {0}, kk = {0}, outs[2] = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_transpose(c, x, rank, perm, &x);
  if (code == CLG_OK && smallest)
    code = flip_order(c, x, &x);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, (double)k, &kk);
  clg_attr sorted = clg_attr_bool("sorted", 1);
  clg_output ins[2] = {x, kk};
  if (code == CLG_OK)
    code = clg_onnx_op_n(c, r->tf, 2, ins, 1, &sorted, 2, outs);
  if (code == CLG_OK && smallest)
    code = flip_order(c, outs[0], &outs[0]);
  for (int i = 0; i < 2 && code == CLG_OK; i++)
    code = clg_onnx_transpose(c, outs[i], rank, perm, &outs[i]);
  if (code == CLG_OK && clg_onnx_dtype(outs[1]) != CLG_INT64) {
    clg_attr a = clg_attr_dtype("DstT", CLG_INT64);
    code = clg_onnx_op(c, "Cast", 1, &outs[1], 1, &a, &outs[1]);
  }
  for (int i = 0; i < 2 && code == CLG_OK; i++)
    code = clg_onnx_out(c, n, i, outs[i]);
  return code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_reduce, {"ReduceSum", 1, reduce, "Sum"},
                  {"ReduceMean", 1, reduce, "Mean"}, {"ReduceMax", 1, reduce, "Max"},
                  {"ReduceMin", 1, reduce, "Min"}, {"ReduceProd", 1, reduce, "Prod"},
                  {"ReduceL1", 1, reduce, "Sum"}, {"ReduceL2", 1, reduce, "Sum"},
                  {"ReduceSumSquare", 1, reduce, "Sum"}, {"ReduceLogSum", 1, reduce, "Sum"},
                  {"ReduceLogSumExp", 1, reduce, "Sum"}, {"Softmax", 1, softmax, "Softmax"},
                  {"LogSoftmax", 1, softmax, "LogSoftmax"}, {"ArgMax", 1, arg_reduce, "ArgMax"},
                  {"ArgMin", 1, arg_reduce, "ArgMin"}, {"Cast", 1, cast, "Cast"},
                  {"TopK", 1, topk, "TopKV2"});
