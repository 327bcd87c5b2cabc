/* Array ops of TensorFlow graphs: Squeeze (squeeze_dims), ExpandDims (a Const axis), Slice
 * (Const begin and size, -1 to the end), Pad and PadV2 (Const [rank, 2] paddings, PadV2 with a
 * scalar constant_values input) and ConcatV2 (N values and a Const axis), for any dtype on
 * every device (float, double, int32, int64, bool, half). Their index inputs must be Consts:
 * shapes are static in clgraph. Squeeze and ExpandDims copy (or reuse the input's buffer);
 * gradients as TensorFlow's: Reshape back, Pad for Slice, Slice for Pad and ConcatV2.
 * Kernels: backends/host/array_tf.c, backends/opencl/array_tf.c. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

static const clg_attr_def squeeze_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "squeeze_dims", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* default [] */
};

static const clg_attr_def expand_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tdim", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static const clg_attr_def slice_attrs[] = {
    {.name = "Index", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static const clg_attr_def pad_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tpaddings", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static const clg_attr_def concat_attrs[] = {
    {.name = "N", .type = CLG_ATTR_INT, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
};

/* Sets dtype attribute i to dt, or says that the given one disagrees. */
static clg_code set_dtype(clg_node *n, int i, clg_dtype dt)
{
  clg_attr_value *a = &n->attrs[i];
  if (a->set && a->dtype != dt)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute %s is %s but the inputs make it %s",
                          n->def->attrs[i].name, clg_dtype_name(a->dtype), clg_dtype_name(dt));
  a->set = true;
  a->dtype = dt;
  return CLG_OK;
}

static clg_dtype in_dtype(const clg_node *n, int i) { return clg_node_in(n, i)->dtype; }

/* dy reshaped to input 0's shape (Squeeze's and ExpandDims' gradient). */
static clg_code reshape_back(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_output s = clg_out(clg_const_ints(g, x->rank, x->dims), 0);
  dx[0] = clg_grad_build(g, &clg_op_Reshape, 2, (clg_output[]){dy[0], s}, 0, NULL);
  return clg_graph_status(g);
}

/* --- Squeeze ------------------------------------------------------------------------------ */

static clg_code squeeze_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_attr_value *sd = &n->attrs[1];
  bool drop[CLG_MAX_RANK] = {false};
  if (!sd->set || sd->n == 0) {
    for (int k = 0; k < x->rank; k++)
      drop[k] = x->dims[k] == 1;
  } else {
    for (int i = 0; i < sd->n; i++) {
      int64_t d = sd->v[i];
      if (d < -x->rank || d >= x->rank)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Tried to squeeze dim index %lld for tensor with %d dimensions.",
                              (long long)d, x->rank);
      if (d < 0)
        d += x->rank;
      if (x->dims[d] != 1)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Can not squeeze dim[%lld], expected a dimension of 1, got %lld",
                              (long long)d, (long long)x->dims[d]);
      drop[d] = true;
    }
  }
  if (!sd->set) { /* TensorFlow's default, [] */
    sd->set = true;
    sd->type = CLG_ATTR_INT_LIST;
    sd->n = 0;
  }
  int64_t dims[CLG_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++)
    if (!drop[k])
      dims[r++] = x->dims[k];
  clg_code code = set_dtype(n, 0, x->dtype);
  return code != CLG_OK ? code : clg_node_set_output(n, 0, x->dtype, r, dims);
}

const clg_op_def clg_op_Squeeze = {
    .name = "Squeeze",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = squeeze_attrs,
    .infer = squeeze_infer,
    .inplace = 0,
    .grad = reshape_back,
};

/* --- ExpandDims --------------------------------------------------------------------------- */

static clg_code expand_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t axis[1];
  int count = 0;
  clg_code code = clg_node_const_ints(n, 1, "dim", 1, axis, &count);
  if (code != CLG_OK)
    return code;
  if (count != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "'dim' must be a tensor with a single value, not %d values", count);
  int64_t d = axis[0];
  if (d < -1 - x->rank || d > x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Tried to expand dim index %lld for tensor with %d dimensions.",
                          (long long)d, x->rank);
  if (x->rank >= CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output would have rank %d; at most %d",
                          x->rank + 1, CLG_MAX_RANK);
  if (d < 0)
    d += x->rank + 1;
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0, j = 0; k <= x->rank; k++)
    dims[k] = k == d ? 1 : x->dims[j++];
  if ((code = set_dtype(n, 0, x->dtype)) != CLG_OK ||
      (code = set_dtype(n, 1, in_dtype(n, 1))) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank + 1, dims);
}

const clg_op_def clg_op_ExpandDims = {
    .name = "ExpandDims",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = expand_attrs,
    .infer = expand_infer,
    .inplace = 0,
    .grad = reshape_back,
};

/* --- Slice -------------------------------------------------------------------------------- */

clg_code clg_slice_begin(const clg_node *n, int64_t *begin, int64_t *size)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int nb = 0, ns = 0;
  clg_code code;
  if ((code = clg_node_const_ints(n, 1, "begin", CLG_MAX_RANK, begin, &nb)) != CLG_OK ||
      (code = clg_node_const_ints(n, 2, "size", CLG_MAX_RANK, size, &ns)) != CLG_OK)
    return code;
  if (nb != x->rank || ns != x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected begin and size arguments to be 1-D tensors of size %d, but "
                          "got shapes [%d] and [%d] instead.",
                          x->rank, nb, ns);
  for (int k = 0; k < x->rank; k++) {
    if (size[k] == -1 && begin[k] >= 0 && begin[k] <= x->dims[k])
      size[k] = x->dims[k] - begin[k];
    if (begin[k] < 0 || begin[k] > x->dims[k] || size[k] < 0 || size[k] > x->dims[k] - begin[k])
      return clg_node_error(
          n, CLG_INVALID_ARGUMENT,
          "Expected begin[%d] in [0, %lld] and size[%d] in [0, %lld], but got "
          "%lld and %lld",
          k, (long long)x->dims[k], k,
          (long long)(begin[k] >= 0 && begin[k] <= x->dims[k] ? x->dims[k] - begin[k] : x->dims[k]),
          (long long)begin[k], (long long)size[k]);
  }
  return CLG_OK;
}

static clg_code slice_infer(clg_node *n)
{
  int64_t begin[CLG_MAX_RANK], size[CLG_MAX_RANK];
  clg_code code = clg_slice_begin(n, begin, size);
  if (code == CLG_OK && in_dtype(n, 1) != in_dtype(n, 2))
    code = clg_node_error(n, CLG_INVALID_ARGUMENT, "begin is %s but size is %s",
                          clg_dtype_name(in_dtype(n, 1)), clg_dtype_name(in_dtype(n, 2)));
  if (code != CLG_OK || (code = set_dtype(n, 0, in_dtype(n, 1))) != CLG_OK ||
      (code = set_dtype(n, 1, in_dtype(n, 0))) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, in_dtype(n, 0), clg_node_in(n, 0)->rank, size);
}

/* A Const [rank, 2] of (before, after) pairs. */
static clg_output paddings_const(clg_graph *g, int rank, const int64_t *before,
                                 const int64_t *after)
{
  int64_t v[2 * CLG_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    v[2 * k] = before[k];
    v[2 * k + 1] = after[k];
  }
  clg_tensor *t = clg_tensor_new(CLG_INT64, 2, (int64_t[]){rank, 2}, v);
  clg_node *c = t ? clg_const(g, NULL, t) : NULL;
  clg_tensor_free(t);
  return clg_out(c, 0);
}

/* TensorFlow's _SliceGrad: dy padded back to the input's shape with zeros. */
static clg_code slice_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  int64_t begin[CLG_MAX_RANK], size[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_slice_begin(n, begin, size);
  if (code != CLG_OK)
    return code;
  const clg_out_desc *x = clg_node_in(n, 0);
  for (int k = 0; k < x->rank; k++)
    after[k] = x->dims[k] - begin[k] - size[k];
  clg_output p = paddings_const(g, x->rank, begin, after);
  dx[0] = clg_grad_build(g, &clg_op_Pad, 2, (clg_output[]){dy[0], p}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Slice = {
    .name = "Slice",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = slice_attrs,
    .infer = slice_infer,
    .inplace = -1,
    .grad = slice_grad,
};

/* --- Pad, PadV2 --------------------------------------------------------------------------- */

clg_code clg_pad_paddings(const clg_node *n, int64_t *before, int64_t *after)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  const clg_node *p = n->inputs[1].node;
  const clg_tensor *t = clg_node_value(p);
  if (!(p->def->flags & CLG_OP_CONST) || !t)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "paddings (input 1) must be a constant: shapes are static, but '%s' is "
                          "a %s",
                          p->name, p->op);
  clg_dtype dt = clg_tensor_dtype(t);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "paddings must be int32 or int64, not %s",
                          clg_dtype_name(dt));
  if (clg_tensor_rank(t) != 2 || clg_tensor_dim(t, 0) != x->rank || clg_tensor_dim(t, 1) != 2) {
    char s[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "The first dimension of paddings must be the rank of inputs[%d, 2]: "
                          "paddings has shape %s",
                          x->rank, clg_tensor_shape_string(t, s, sizeof s));
  }
  const void *d = clg_tensor_const_data(t);
  for (int k = 0; k < x->rank; k++) {
    for (int j = 0; j < 2; j++) {
      int64_t v =
          dt == CLG_INT32 ? ((const int32_t *)d)[2 * k + j] : ((const int64_t *)d)[2 * k + j];
      if (v < 0)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Paddings must be non-negative: %lld in dimension %d", (long long)v,
                              k);
      (j ? after : before)[k] = v;
    }
  }
  return CLG_OK;
}

static clg_code pad_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK], dims[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  if (code != CLG_OK)
    return code;
  for (int k = 0; k < x->rank; k++) {
    if (before[k] > INT64_MAX - x->dims[k] || after[k] > INT64_MAX - x->dims[k] - before[k])
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dimension %d padded passes %lld", k,
                            (long long)INT64_MAX);
    dims[k] = x->dims[k] + before[k] + after[k];
  }
  if (n->num_inputs > 2) {
    const clg_out_desc *cv = clg_node_in(n, 2);
    if (cv->rank != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "constant_values must be a scalar, not of rank %d", cv->rank);
    if (cv->dtype != x->dtype)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "constant_values is %s but input is %s",
                            clg_dtype_name(cv->dtype), clg_dtype_name(x->dtype));
  }
  if ((code = set_dtype(n, 0, x->dtype)) != CLG_OK ||
      (code = set_dtype(n, 1, in_dtype(n, 1))) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, dims);
}

/* TensorFlow's _PadGrad: the interior of dy (constant_values gets none). */
static clg_code pad_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  if (code != CLG_OK)
    return code;
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_output b = clg_out(clg_const_ints(g, x->rank, before), 0);
  clg_output s = clg_out(clg_const_ints(g, x->rank, x->dims), 0);
  dx[0] = clg_grad_build(g, &clg_op_Slice, 3, (clg_output[]){dy[0], b, s}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Pad = {
    .name = "Pad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = pad_attrs,
    .infer = pad_infer,
    .inplace = -1,
    .grad = pad_grad,
};

const clg_op_def clg_op_PadV2 = {
    .name = "PadV2",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = pad_attrs,
    .infer = pad_infer,
    .inplace = -1,
    .grad = pad_grad,
};

/* --- ConcatV2 ----------------------------------------------------------------------------- */

clg_code clg_concat_axis(const clg_node *n, int *axis)
{
  int values = n->num_inputs - 1;
  int64_t a[1];
  int count = 0;
  clg_code code = clg_node_const_ints(n, values, "axis", 1, a, &count);
  if (code != CLG_OK)
    return code;
  if (count != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "axis must be a scalar, not %d values", count);
  int rank = clg_node_in(n, 0)->rank;
  if (a[0] < -rank || a[0] >= rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "ConcatOp : Expected concatenating dimensions in the range [%d, %d), "
                          "but got %lld",
                          -rank, rank, (long long)a[0]);
  *axis = (int)(a[0] < 0 ? a[0] + rank : a[0]);
  return CLG_OK;
}

static clg_code concat_infer(clg_node *n)
{
  int values = n->num_inputs - 1;
  if (values < 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "ConcatV2 takes N >= 2 values and an axis, not %d inputs", n->num_inputs);
  const clg_out_desc *x0 = clg_node_in(n, 0);
  if (x0->rank == 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Can't concatenate scalars (use Pack instead)");
  int axis = 0;
  clg_code code = clg_concat_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK];
  memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->rank);
  for (int i = 1; i < values; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    bool ok = x->rank == x0->rank && x->dtype == x0->dtype;
    for (int k = 0; ok && k < x->rank; k++)
      ok = k == axis || x->dims[k] == x0->dims[k];
    if (!ok) {
      char s0[192], si[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "ConcatOp : Dimensions of inputs should match: shape[0] = %s %s vs. "
                            "shape[%d] = %s %s",
                            clg_dtype_name(x0->dtype), clg_out_shape_string(x0, s0, sizeof s0), i,
                            clg_dtype_name(x->dtype), clg_out_shape_string(x, si, sizeof si));
    }
    if (x->dims[axis] > INT64_MAX - dims[axis])
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "the concatenated dimension passes %lld",
                            (long long)INT64_MAX);
    dims[axis] += x->dims[axis];
  }
  clg_attr_value *nn = &n->attrs[0];
  if (nn->set && nn->i != values)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute N is %lld but there are %d values",
                          (long long)nn->i, values);
  nn->set = true;
  nn->i = values;
  if ((code = set_dtype(n, 1, x0->dtype)) != CLG_OK ||
      (code = set_dtype(n, 2, in_dtype(n, values))) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x0->dtype, x0->rank, dims);
}

/* TensorFlow's _ConcatGradV2: each value gets its slice of dy; the axis gets none. */
static clg_code concat_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  int axis = 0;
  clg_code code = clg_concat_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  int64_t offset = 0;
  for (int i = 0; i < n->num_inputs - 1; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    int64_t begin[CLG_MAX_RANK] = {0};
    begin[axis] = offset;
    offset += x->dims[axis];
    clg_output b = clg_out(clg_const_ints(g, x->rank, begin), 0);
    clg_output s = clg_out(clg_const_ints(g, x->rank, x->dims), 0);
    dx[i] = clg_grad_build(g, &clg_op_Slice, 3, (clg_output[]){dy[0], b, s}, 0, NULL);
  }
  return clg_graph_status(g);
}

const clg_op_def clg_op_ConcatV2 = {
    .name = "ConcatV2",
    .num_inputs = CLG_OP_VARIADIC,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = concat_attrs,
    .infer = concat_infer,
    .inplace = -1,
    .grad = concat_grad,
};

/* --- MirrorPad, MirrorPadGrad ---------------------------------------------------------- */

static const clg_attr_def mirror_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tpaddings", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "mode", .type = CLG_ATTR_STRING},
};

bool clg_mirror_symmetric(const clg_node *n) { return strcmp(n->attrs[2].s, "SYMMETRIC") == 0; }

/* MirrorPad: each padding at most dim - 1 (REFLECT) or dim (SYMMETRIC), as TensorFlow's.
 * MirrorPadGrad(input, paddings): input is the padded gradient, the output the unpadded one. */
static clg_code mirror_infer(clg_node *n)
{
  bool grad = n->def == &clg_op_MirrorPadGrad;
  const char *mode = n->attrs[2].s ? n->attrs[2].s : "";
  if (strcmp(mode, "REFLECT") != 0 && strcmp(mode, "SYMMETRIC") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "mode must be REFLECT or SYMMETRIC, not '%s'",
                          mode);
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK], dims[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  if (code != CLG_OK)
    return code;
  int64_t off = mode[0] == 'R' ? 1 : 0;
  for (int k = 0; k < x->rank; k++) {
    int64_t d = grad ? x->dims[k] - before[k] - after[k] : x->dims[k];
    if (grad && (before[k] > x->dims[k] || after[k] > x->dims[k] - before[k]))
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "paddings %lld and %lld pass the input's dimension %d of %lld",
                            (long long)before[k], (long long)after[k], k, (long long)x->dims[k]);
    if (before[k] > d - off || after[k] > d - off)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "paddings must be no greater than the dimension size: %lld, %lld "
                            "greater than %lld (%s) in dimension %d",
                            (long long)before[k], (long long)after[k], (long long)(d - off), mode,
                            k);
    dims[k] = grad ? d : d + before[k] + after[k];
  }
  if ((code = set_dtype(n, 0, x->dtype)) != CLG_OK ||
      (code = set_dtype(n, 1, in_dtype(n, 1))) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, dims);
}

/* TensorFlow's _MirrorPadGrad. */
static clg_code mirror_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr mode = clg_attr_string("mode", n->attrs[2].s);
  dx[0] =
      clg_grad_build(g, &clg_op_MirrorPadGrad, 2, (clg_output[]){dy[0], n->inputs[1]}, 1, &mode);
  return clg_graph_status(g);
}

const clg_op_def clg_op_MirrorPad = {
    .name = "MirrorPad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = mirror_attrs,
    .infer = mirror_infer,
    .inplace = -1,
    .grad = mirror_grad,
};

const clg_op_def clg_op_MirrorPadGrad = {
    .name = "MirrorPadGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = mirror_attrs,
    .infer = mirror_infer,
    .inplace = -1,
};

/* --- typed builders ------------------------------------------------------------------------- */

clg_node *clg_squeeze(clg_graph *g, const char *name, clg_node *x, int ndims, const int64_t *dims)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_int_list("squeeze_dims", ndims, dims);
  return clg_graph_build(g, &clg_op_Squeeze, name, 1, &in, ndims > 0 ? 1 : 0, &a);
}

clg_node *clg_expand_dims(clg_graph *g, const char *name, clg_node *x, int64_t axis)
{
  clg_output in[2] = {{x, 0}, {clg_const_int(g, axis), 0}};
  return clg_graph_build(g, &clg_op_ExpandDims, name, 2, in, 0, NULL);
}

clg_node *clg_slice(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *begin,
                    const int64_t *size)
{
  clg_output in[3] = {
      {x, 0}, {clg_const_ints(g, rank, begin), 0}, {clg_const_ints(g, rank, size), 0}};
  return clg_graph_build(g, &clg_op_Slice, name, 3, in, 0, NULL);
}

clg_node *clg_pad(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *before,
                  const int64_t *after, clg_node *constant_value)
{
  clg_output in[3] = {{x, 0}, paddings_const(g, rank, before, after), {constant_value, 0}};
  return clg_graph_build(g, constant_value ? &clg_op_PadV2 : &clg_op_Pad, name,
                         constant_value ? 3 : 2, in, 0, NULL);
}

clg_node *clg_concat(clg_graph *g, const char *name, int n, clg_node *const *values, int64_t axis)
{
  clg_output stack[9] = {{NULL, 0}};
  clg_output *in = n >= 0 && n < 9 ? stack : calloc((size_t)(n < 0 ? 0 : n) + 1, sizeof *in);
  if (!in)
    return NULL;
  for (int i = 0; i < n; i++)
    in[i] = clg_out(values[i], 0);
  in[n < 0 ? 0 : n] = clg_out(clg_const_int(g, axis), 0);
  clg_node *r = clg_graph_build(g, &clg_op_ConcatV2, name, (n < 0 ? 0 : n) + 1, in, 0, NULL);
  if (in != stack)
    free(in);
  return r;
}

clg_node *clg_mirror_pad(clg_graph *g, const char *name, clg_node *x, int rank,
                         const int64_t *before, const int64_t *after, const char *mode)
{
  clg_output in[2] = {{x, 0}, paddings_const(g, rank, before, after)};
  clg_attr a = clg_attr_string("mode", mode);
  return clg_graph_build(g, &clg_op_MirrorPad, name, 2, in, 1, &a);
}
