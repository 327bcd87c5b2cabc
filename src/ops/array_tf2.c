/* More of the ops TensorFlow graphs use (issue 23): Pack, Shape, DepthToSpace, GatherV2,
 * Range and Tile (tfjs's Prelu is binary_tf.c's), with TensorFlow's attributes, defaults and
 * checks. Index-like inputs (Tile's multiples, GatherV2's axis, Range's start/limit/delta)
 * must be Consts: shapes are static here. Kernels: backends/host/array_tf2.c,
 * backends/opencl/array_tf2.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* --- Pack -------------------------------------------------------------------------------- */

static const clg_attr_def pack_attrs[] = {
    {.name = "N", .type = CLG_ATTR_INT, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "axis", .type = CLG_ATTR_INT, .has_default = true},
};

static clg_code pack_infer(clg_node *n)
{
  const clg_out_desc *first = clg_node_in(n, 0);
  for (int i = 1; i < n->num_inputs; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    bool same = x->rank == first->rank && x->dtype == first->dtype;
    for (int d = 0; same && d < x->rank; d++)
      same = x->dims[d] == first->dims[d];
    if (!same) {
      char si[192], s0[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Shapes of all inputs must match: values[0] is %s %s and values[%d] "
                            "is %s %s",
                            clg_dtype_name(first->dtype),
                            clg_out_shape_string(first, s0, sizeof s0), i, clg_dtype_name(x->dtype),
                            clg_out_shape_string(x, si, sizeof si));
    }
  }
  clg_attr_value *nn = &n->attrs[0];
  if (nn->set && nn->i != n->num_inputs)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute N is %lld but there are %d inputs",
                          (long long)nn->i, n->num_inputs);
  nn->set = true;
  nn->i = n->num_inputs;
  clg_code code = clg_infer_dtype_attr(n, 1, first->dtype, false);
  if (code != CLG_OK)
    return code;
  int64_t axis = n->attrs[2].i, r = first->rank + 1;
  if (axis < -r || axis >= r)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "axis = %lld not in [%lld, %lld)",
                          (long long)axis, (long long)-r, (long long)r);
  if (axis < 0)
    axis += r;
  int64_t dims[CLG_MAX_RANK + 1];
  for (int k = 0, j = 0; k < r; k++)
    dims[k] = k == axis ? n->num_inputs : first->dims[j++];
  return clg_node_set_output(n, 0, first->dtype, (int)r, dims);
}

static clg_code pack_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);

const clg_op_def clg_op_Pack = {
    .name = "Pack",
    .num_inputs = CLG_OP_VARIADIC,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = pack_attrs,
    .infer = pack_infer,
    .inplace = -1,
    .grad = pack_grad,
};

clg_node *clg_pack(clg_graph *g, const char *name, int n, const clg_output *values, int64_t axis)
{
  clg_attr a = clg_attr_int("axis", axis);
  return clg_graph_build(g, &clg_op_Pack, name, n, values, 1, &a);
}

/* --- Shape ------------------------------------------------------------------------------- */

static const clg_attr_def shape_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    /* TensorFlow's default int32: optional here, filled by inference */
    {.name = "out_type", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code shape_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_code code = clg_infer_dtype_attr(n, 0, x->dtype, false);
  if (code != CLG_OK)
    return code;
  clg_attr_value *o = &n->attrs[1];
  if (!o->set) {
    o->set = true;
    o->dtype = CLG_INT32;
  }
  if (o->dtype != CLG_INT32 && o->dtype != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "out_type must be int32 or int64, not %s",
                          clg_dtype_name(o->dtype));
  for (int k = 0; k < x->rank; k++)
    if (o->dtype == CLG_INT32 && x->dims[k] > INT32_MAX)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Shape output type is 32-bit but dim %d is %lld", k,
                            (long long)x->dims[k]);
  int64_t r = x->rank;
  return clg_node_set_output(n, 0, o->dtype, 1, &r);
}

/* Shape's output changes with no input value: it stays in the graph for the kernels. */
const clg_op_def clg_op_Shape = {
    .name = "Shape",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = shape_attrs,
    .infer = shape_infer,
    .inplace = -1,
};

clg_node *clg_shape(clg_graph *g, const char *name, clg_node *x, clg_dtype out_type)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_dtype("out_type", out_type);
  return clg_graph_build(g, &clg_op_Shape, name, 1, &in, 1, &a);
}

/* --- DepthToSpace ------------------------------------------------------------------------ */

static const clg_attr_def d2s_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "block_size", .type = CLG_ATTR_INT},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
};

static clg_code d2s_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t b = n->attrs[1].i;
  clg_code code = clg_infer_dtype_attr(n, 0, x->dtype, false);
  if (code != CLG_OK)
    return code;
  if (strcmp(n->attrs[2].s, "NHWC") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "data_format \"%s\" is not supported: clgraph's DepthToSpace takes "
                          "NHWC",
                          n->attrs[2].s);
  if (b < 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Value for attr 'block_size' of %lld must be at least minimum 2",
                          (long long)b);
  if (x->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input rank should be 4 instead of %d", x->rank);
  int64_t bb, h, w;
  if (!clg_checked_mul(b, b, &bb) || x->dims[3] % bb != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Input depth dimension %lld should be divisible by: %lld",
                          (long long)x->dims[3], (long long)(b > 3037000499 ? 0 : bb));
  if (!clg_checked_mul(x->dims[1], b, &h) || !clg_checked_mul(x->dims[2], b, &w))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output is too large");
  int64_t dims[4] = {x->dims[0], h, w, x->dims[3] / bb};
  return clg_node_set_output(n, 0, x->dtype, 4, dims);
}

/* TensorFlow's _DepthToSpaceGrad is SpaceToDepth of dy: the inverse permutation, here as
 * Reshape [N,H,b,W,b,C'], Transpose to [N,H,W,b,b,C'] and Reshape back to x's shape. */
static clg_code d2s_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t b = n->attrs[1].i, c = x->dims[3] / (b * b);
  int64_t six[6] = {x->dims[0], x->dims[1], b, x->dims[2], b, c};
  clg_output r = clg_grad_build(
      g, &clg_op_Reshape, 2, (clg_output[]){dy[0], clg_out(clg_const_ints(g, 6, six), 0)}, 0, NULL);
  clg_output t = clg_grad_build(
      g, &clg_op_Transpose, 2,
      (clg_output[]){r, clg_out(clg_const_ints(g, 6, (int64_t[]){0, 1, 3, 2, 4, 5}), 0)}, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Reshape, 2,
                         (clg_output[]){t, clg_out(clg_const_ints(g, 4, x->dims), 0)}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_DepthToSpace = {
    .name = "DepthToSpace",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = d2s_attrs,
    .infer = d2s_infer,
    .inplace = -1,
    .grad = d2s_grad,
};

clg_node *clg_depth_to_space(clg_graph *g, const char *name, clg_node *x, int64_t block_size)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_int("block_size", block_size);
  return clg_graph_build(g, &clg_op_DepthToSpace, name, 1, &in, 1, &a);
}

/* --- GatherV2 ---------------------------------------------------------------------------- */

static const clg_attr_def gather_attrs[] = {
    {.name = "Taxis", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tindices", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tparams", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "batch_dims", .type = CLG_ATTR_INT, .has_default = true},
};

clg_code clg_gather_axis(const clg_node *n, int *axis)
{
  const clg_out_desc *p = clg_node_in(n, 0);
  int64_t v[1];
  int count = 0;
  clg_code code = clg_node_const_ints(n, 2, "axis", 1, v, &count);
  if (code != CLG_OK)
    return code;
  if (count != 1 || clg_node_in(n, 2)->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "axis must be a scalar");
  if (v[0] < -p->rank || v[0] >= p->rank || p->rank == 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected axis in the range [%d, %d), but got %lld", -p->rank, p->rank,
                          (long long)v[0]);
  *axis = (int)(v[0] < 0 ? v[0] + p->rank : v[0]);
  return CLG_OK;
}

static clg_code gather_infer(clg_node *n)
{
  const clg_out_desc *p = clg_node_in(n, 0), *ix = clg_node_in(n, 1);
  if (n->attrs[3].i != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "batch_dims %lld is not supported: clgraph's GatherV2 takes 0",
                          (long long)n->attrs[3].i);
  if (ix->dtype != CLG_INT32 && ix->dtype != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices must be int32 or int64, not %s",
                          clg_dtype_name(ix->dtype));
  int axis;
  clg_code code = clg_gather_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  if ((code = clg_infer_dtype_attr(n, 0, clg_node_in(n, 2)->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, ix->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 2, p->dtype, false)) != CLG_OK)
    return code;
  int rank = p->rank - 1 + ix->rank;
  if (rank > CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output would have %d dims; at most %d",
                          rank, CLG_MAX_RANK);
  /* Const indices are checked now; others when the kernel reads them. */
  const clg_node *src = n->inputs[1].node;
  const clg_tensor *t = (src->def->flags & CLG_OP_CONST) ? clg_node_value(src) : NULL;
  for (size_t i = 0; t && i < clg_tensor_count(t); i++) {
    int64_t v = (int64_t)clg_tensor_element_double(t, i);
    if (v < 0 || v >= p->dims[axis])
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices[%zu] = %lld is not in [0, %lld)", i,
                            (long long)v, (long long)p->dims[axis]);
  }
  int64_t dims[CLG_MAX_RANK];
  int r = 0;
  for (int k = 0; k < axis; k++)
    dims[r++] = p->dims[k];
  for (int k = 0; k < ix->rank; k++)
    dims[r++] = ix->dims[k];
  for (int k = axis + 1; k < p->rank; k++)
    dims[r++] = p->dims[k];
  return clg_node_set_output(n, 0, p->dtype, rank, dims);
}

const clg_op_def clg_op_GatherV2 = {
    .name = "GatherV2",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 4,
    .attrs = gather_attrs,
    .infer = gather_infer,
    .inplace = -1,
};

clg_node *clg_gather(clg_graph *g, const char *name, clg_node *params, clg_node *indices,
                     int64_t axis)
{
  clg_output in[3] = {{params, 0}, {indices, 0}, {clg_const_int(g, axis), 0}};
  return clg_graph_build(g, &clg_op_GatherV2, name, 3, in, 0, NULL);
}

/* --- Range ------------------------------------------------------------------------------- */

static const clg_attr_def range_attrs[] = {
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
};

clg_code clg_range_values(const clg_node *n, double *start, double *delta, int64_t *count)
{
  static const char *const what[3] = {"start", "limit", "delta"};
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  double v[3];
  for (int i = 0; i < 3; i++) {
    const clg_node *p = n->inputs[i].node;
    const clg_tensor *t = (p->def->flags & CLG_OP_CONST) ? clg_node_value(p) : NULL;
    if (!t)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "%s (input %d) must be a constant: shapes are static, but '%s' is a "
                            "%s",
                            what[i], i, p->name, p->op);
    if (clg_tensor_rank(t) != 0 || clg_tensor_dtype(t) != dt)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be a scalar of %s", what[i],
                            clg_dtype_name(dt));
    v[i] = clg_tensor_element_double(t, 0);
  }
  if (v[2] == 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Requires delta != 0: %g", v[2]);
  if (v[2] > 0 && v[0] > v[1])
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %g/%g",
                          v[0], v[1]);
  if (v[2] < 0 && v[0] < v[1])
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %g/%g",
                          v[0], v[1]);
  /* TensorFlow's size: integers (|limit - start| + |delta| - 1) / |delta|, floats
   * ceil(|(limit - start) / delta|). */
  double size = dt == CLG_INT32 || dt == CLG_INT64
                    ? floor((fabs(v[1] - v[0]) + fabs(v[2]) - 1) / fabs(v[2]))
                    : ceil(fabs((v[1] - v[0]) / v[2]));
  if (!(size < 9.0e15))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= %lld",
                          (long long)INT64_MAX);
  *start = v[0];
  *delta = v[2];
  *count = (int64_t)size;
  return CLG_OK;
}

static clg_code range_infer(clg_node *n)
{
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  if (dt != CLG_FLOAT32 && dt != CLG_FLOAT64 && dt != CLG_INT32 && dt != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Range takes float32, float64, int32 or int64, not %s",
                          clg_dtype_name(dt));
  double start, delta;
  int64_t count;
  clg_code code = clg_range_values(n, &start, &delta, &count);
  if (code != CLG_OK || (code = clg_infer_dtype_attr(n, 0, dt, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, dt, 1, &count);
}

const clg_op_def clg_op_Range = {
    .name = "Range",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = range_attrs,
    .infer = range_infer,
    .inplace = -1,
};

static clg_node *scalar(clg_graph *g, clg_dtype dtype, double v)
{
  clg_tensor *t = clg_tensor_new(dtype, 0, NULL, NULL);
  if (!t)
    return NULL;
  void *p = clg_tensor_data(t);
  switch (dtype) {
  case CLG_FLOAT64:
    *(double *)p = v;
    break;
  case CLG_INT32:
    *(int32_t *)p = (int32_t)v;
    break;
  case CLG_INT64:
    *(int64_t *)p = (int64_t)v;
    break;
  default:
    *(float *)p = (float)v;
    break;
  }
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

clg_node *clg_range(clg_graph *g, const char *name, clg_dtype dtype, double start, double limit,
                    double delta)
{
  clg_output in[3] = {
      {scalar(g, dtype, start), 0}, {scalar(g, dtype, limit), 0}, {scalar(g, dtype, delta), 0}};
  return clg_graph_build(g, &clg_op_Range, name, 3, in, 0, NULL);
}

/* --- Tile -------------------------------------------------------------------------------- */

static const clg_attr_def tile_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tmultiples", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code tile_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t m[CLG_MAX_RANK];
  int count = 0;
  clg_code code = clg_node_const_ints(n, 1, "multiples", CLG_MAX_RANK, m, &count);
  if (code != CLG_OK)
    return code;
  if (clg_node_in(n, 1)->rank != 1 || count != x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected multiples argument to be a vector of length %d but got "
                          "length %d",
                          x->rank, count);
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < count; k++) {
    if (m[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", k,
                            (long long)m[k]);
    if (!clg_checked_mul(x->dims[k], m[k], &dims[k]))
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dim %d: %lld x %lld is too large", k,
                            (long long)x->dims[k], (long long)m[k]);
  }
  if ((code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, dims);
}

const clg_op_def clg_op_Tile = {
    .name = "Tile",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = tile_attrs,
    .infer = tile_infer,
    .inplace = -1,
};

clg_node *clg_tile(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *multiples)
{
  clg_output in[2] = {{x, 0}, {clg_const_ints(g, n, multiples), 0}};
  return clg_graph_build(g, &clg_op_Tile, name, 2, in, 0, NULL);
}

/* --- Unpack, Split, SplitV --------------------------------------------------------------- */

static const clg_attr_def unpack_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "axis", .type = CLG_ATTR_INT, .has_default = true},
    {.name = "num", .type = CLG_ATTR_INT},
};

static const clg_attr_def split_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "num_split", .type = CLG_ATTR_INT},
};

static const clg_attr_def splitv_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tlen", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "num_split", .type = CLG_ATTR_INT},
};

/* The split value: input 0 of Unpack and SplitV, input 1 of Split. */
static int value_input(const clg_node *n) { return n->def == &clg_op_Split ? 1 : 0; }

clg_code clg_split_axis(const clg_node *n, int *axis)
{
  const clg_out_desc *x = clg_node_in(n, value_input(n));
  int64_t a;
  if (n->def == &clg_op_Unpack) {
    a = n->attrs[1].i;
  } else {
    int at = n->def == &clg_op_Split ? 0 : 2, count = 0;
    clg_code code = clg_node_const_ints(n, at, "split_dim", 1, &a, &count);
    if (code != CLG_OK)
      return code;
    if (count != 1 || clg_node_in(n, at)->rank != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "split_dim must be a scalar");
  }
  if (a < -x->rank || a >= x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)a,
                          -x->rank, x->rank);
  *axis = (int)(a < 0 ? a + x->rank : a);
  return CLG_OK;
}

static clg_code split_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, value_input(n));
  int axis;
  clg_code code = clg_split_axis(n, &axis);
  if (code != CLG_OK || (code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK)
    return code;
  int num = n->num_outputs;
  int64_t dims[CLG_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  if (n->def == &clg_op_Unpack) {
    if (x->dims[axis] != num)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "num = %d but the input's dim %d (the axis) is %lld", num, axis,
                            (long long)x->dims[axis]);
    for (int k = axis; k < x->rank - 1; k++)
      dims[k] = x->dims[k + 1];
    for (int i = 0; i < num; i++)
      if ((code = clg_node_set_output(n, i, x->dtype, x->rank - 1, dims)) != CLG_OK)
        return code;
    return CLG_OK;
  }
  if (n->def == &clg_op_Split) {
    if (x->dims[axis] % num != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Number of ways to split should evenly divide the split dimension, "
                            "but got split_dim %d (size = %lld) and num_split %d",
                            axis, (long long)x->dims[axis], num);
    dims[axis] = x->dims[axis] / num;
    for (int i = 0; i < num; i++)
      if ((code = clg_node_set_output(n, i, x->dtype, x->rank, dims)) != CLG_OK)
        return code;
    return CLG_OK;
  }
  /* SplitV: sizes with at most one -1, which takes the rest. */
  int64_t *sizes = calloc((size_t)num, sizeof *sizes);
  if (!sizes)
    return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of memory");
  int count = 0, unknown = -1;
  code = clg_node_const_ints(n, 1, "size_splits", num, sizes, &count);
  if (code == CLG_OK && (clg_node_in(n, 1)->rank != 1 || count != num))
    code =
        clg_node_error(n, CLG_INVALID_ARGUMENT,
                       "size_splits must be a vector of num_split = %d values, not %d", num, count);
  int64_t total = 0;
  for (int i = 0; code == CLG_OK && i < num; i++) {
    if (sizes[i] == -1) {
      if (unknown >= 0)
        code = clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Only one dimensions can have a value of -1. Second one found at "
                              "dimension %d",
                              i);
      unknown = i;
    } else if (sizes[i] < 0) {
      code = clg_node_error(n, CLG_INVALID_ARGUMENT, "size_splits[%d] is %lld; sizes are >= 0", i,
                            (long long)sizes[i]);
    } else if (sizes[i] > x->dims[axis] - total) {
      code = clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "the sizes add up to more than the split dim's %lld",
                            (long long)x->dims[axis]);
    } else {
      total += sizes[i];
    }
  }
  if (code == CLG_OK && (unknown >= 0 ? total > x->dims[axis] : total != x->dims[axis]))
    code = clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Determined shape must either match input shape along split_dim "
                          "exactly if fully specified, or be less than the size of the input "
                          "along split_dim if not fully specified.  Got: %lld",
                          (long long)total);
  if (code == CLG_OK && unknown >= 0)
    sizes[unknown] = x->dims[axis] - total;
  if (code == CLG_OK)
    code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false);
  for (int i = 0; code == CLG_OK && i < num; i++) {
    dims[axis] = sizes[i];
    code = clg_node_set_output(n, i, x->dtype, x->rank, dims);
  }
  free(sizes);
  return code;
}

/* Unpack's gradient is the Pack of its outputs' gradients (zeros where one has none); Pack's
 * the Unpack of its own. */
static clg_code unpack_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output *v = malloc(sizeof *v * (size_t)n->num_outputs);
  if (!v)
    return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n->num_outputs; i++)
    v[i] = dy[i].node
               ? dy[i]
               : clg_grad_build(g, &clg_op_ZerosLike, 1, (clg_output[]){clg_out(n, i)}, 0, NULL);
  clg_attr a = clg_attr_int("axis", n->attrs[1].i);
  dx[0] = clg_grad_build(g, &clg_op_Pack, n->num_outputs, v, 1, &a);
  free(v);
  return clg_graph_status(g);
}

static clg_code pack_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr a[2] = {clg_attr_int("axis", n->attrs[2].i), clg_attr_int("num", n->num_inputs)};
  clg_output u = clg_grad_build(g, &clg_op_Unpack, 1, dy, 2, a);
  for (int i = 0; u.node && i < n->num_inputs; i++)
    dx[i] = (clg_output){u.node, i};
  return clg_graph_status(g);
}

const clg_op_def clg_op_Unpack = {
    .name = "Unpack",
    .num_inputs = 1,
    .num_outputs = CLG_OP_VARIADIC,
    .outputs_attr = "num",
    .num_attrs = 3,
    .attrs = unpack_attrs,
    .infer = split_infer,
    .inplace = -1,
    .grad = unpack_grad,
};

const clg_op_def clg_op_Split = {
    .name = "Split",
    .num_inputs = 2,
    .num_outputs = CLG_OP_VARIADIC,
    .outputs_attr = "num_split",
    .num_attrs = 2,
    .attrs = split_attrs,
    .infer = split_infer,
    .inplace = -1,
};

const clg_op_def clg_op_SplitV = {
    .name = "SplitV",
    .num_inputs = 3,
    .num_outputs = CLG_OP_VARIADIC,
    .outputs_attr = "num_split",
    .num_attrs = 3,
    .attrs = splitv_attrs,
    .infer = split_infer,
    .inplace = -1,
};

clg_node *clg_unpack(clg_graph *g, const char *name, clg_node *x, int64_t num, int64_t axis)
{
  clg_output in = {x, 0};
  clg_attr a[2] = {clg_attr_int("num", num), clg_attr_int("axis", axis)};
  return clg_graph_build(g, &clg_op_Unpack, name, 1, &in, 2, a);
}

clg_node *clg_split(clg_graph *g, const char *name, clg_node *x, int64_t axis, int64_t num_split)
{
  clg_output in[2] = {{clg_const_int(g, axis), 0}, {x, 0}};
  clg_attr a = clg_attr_int("num_split", num_split);
  return clg_graph_build(g, &clg_op_Split, name, 2, in, 1, &a);
}

clg_node *clg_split_v(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *sizes,
                      int64_t axis)
{
  clg_output in[3] = {{x, 0}, {clg_const_ints(g, n, sizes), 0}, {clg_const_int(g, axis), 0}};
  clg_attr a = clg_attr_int("num_split", n);
  return clg_graph_build(g, &clg_op_SplitV, name, 3, in, 1, &a);
}
