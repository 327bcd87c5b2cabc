/* The index and order ops of ONNX import and tfjs graphs (issues 23, 24), with TensorFlow's
 * attributes, defaults, checks and semantics: GatherNd, ScatterNd, OneHot, ReverseV2, Cumsum
 * and TopKV2. Inputs that fix a shape or an axis (ScatterNd's shape, OneHot's depth,
 * ReverseV2's axes, Cumsum's axis, TopKV2's k) must be Consts: shapes are static here. Index
 * tuples that are Consts are checked at build, others when the host kernel reads them (the
 * OpenCL kernels give zeros for them, as TensorFlow's GPU kernels do). Kernels:
 * backends/host/array_tf3.c, backends/opencl/array_tf3.c. */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

static bool is_index(clg_dtype t) { return t == CLG_INT32 || t == CLG_INT64; }

static bool is_number(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || t == CLG_INT32 || t == CLG_INT64;
}

/* A scalar Const int input (k, depth, axis). */
static clg_code const_scalar(const clg_node *n, int i, const char *what, int64_t *v)
{
  int count = 0;
  clg_code code = clg_node_const_ints(n, i, what, 1, v, &count);
  if (code != CLG_OK)
    return code;
  char s[192];
  if (count != 1 || clg_node_in(n, i)->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", what,
                          clg_out_shape_string(clg_node_in(n, i), s, sizeof s));
  return CLG_OK;
}

/* "[2, 0]": the index tuple t of q values. */
static void tuple_string(const clg_tensor *t, size_t at, int q, char *buf, size_t size)
{
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < q && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "",
                            (long long)clg_tensor_element_double(t, at + (size_t)d));
  if (len < size)
    snprintf(buf + len, size - len, "]");
}

/* --- GatherNd and ScatterNd's index tuples ------------------------------------------------ */

void clg_nd_index_of(const clg_node *n, clg_nd_index *ix)
{
  bool gather = n->def == &clg_op_GatherNd;
  const clg_out_desc *idx = clg_node_in(n, gather ? 1 : 0);
  const clg_out_desc *space = gather ? clg_node_in(n, 0) : &n->outs[0];
  memset(ix, 0, sizeof *ix);
  ix->q = (int)idx->dims[idx->rank - 1];
  ix->count = 1;
  for (int k = 0; k < idx->rank - 1; k++)
    ix->count *= (size_t)idx->dims[k];
  ix->slice = 1;
  for (int k = ix->q; k < space->rank; k++)
    ix->slice *= (size_t)space->dims[k];
  for (int k = 0; k < ix->q; k++)
    ix->dims[k] = space->dims[k];
}

/* Const tuples of input i inside `space`'s first q dims. */
static clg_code check_const_tuples(const clg_node *n, int i, int q, const clg_out_desc *space,
                                   const char *what)
{
  const clg_node *src = n->inputs[i].node;
  const clg_tensor *t = (src->def->flags & CLG_OP_CONST) ? clg_node_value(src) : NULL;
  size_t count = t && q ? clg_tensor_count(t) / (size_t)q : 0;
  for (size_t j = 0; j < count; j++)
    for (int d = 0; d < q; d++) {
      int64_t v = (int64_t)clg_tensor_element_double(t, j * (size_t)q + (size_t)d);
      if (v < 0 || v >= space->dims[d]) {
        char tup[256], s[192];
        tuple_string(t, j * (size_t)q, q, tup, sizeof tup);
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "indices[%zu] = %s does not index into %s %s", j, tup, what,
                              clg_out_shape_string(space, s, sizeof s));
      }
    }
  return CLG_OK;
}

/* --- GatherNd ----------------------------------------------------------------------------- */

static const clg_attr_def gather_nd_attrs[] = {
    {.name = "Tindices", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tparams", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code gather_nd_infer(clg_node *n)
{
  const clg_out_desc *p = clg_node_in(n, 0), *ix = clg_node_in(n, 1);
  char s[192];
  if (p->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "params must be at least a vector, not %s",
                          clg_out_shape_string(p, s, sizeof s));
  if (ix->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices must be at least a vector, not %s",
                          clg_out_shape_string(ix, s, sizeof s));
  if (!is_index(ix->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices must be int32 or int64, not %s",
                          clg_dtype_name(ix->dtype));
  int64_t q = ix->dims[ix->rank - 1];
  if (q > p->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "index innermost dimension length must be <= params rank; saw: %lld vs. "
                          "%d",
                          (long long)q, p->rank);
  int rank = ix->rank - 1 + p->rank - (int)q;
  if (rank > CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output would have %d dims; at most %d",
                          rank, CLG_MAX_RANK);
  clg_code code = clg_infer_dtype_attr(n, 0, ix->dtype, false);
  if (code != CLG_OK || (code = clg_infer_dtype_attr(n, 1, p->dtype, false)) != CLG_OK ||
      (code = check_const_tuples(n, 1, (int)q, p, "param shape")) != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK];
  int r = 0;
  for (int k = 0; k < ix->rank - 1; k++)
    dims[r++] = ix->dims[k];
  for (int k = (int)q; k < p->rank; k++)
    dims[r++] = p->dims[k];
  return clg_node_set_output(n, 0, p->dtype, rank, dims);
}

const clg_op_def clg_op_GatherNd = {
    .name = "GatherNd",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = gather_nd_attrs,
    .infer = gather_nd_infer,
    .inplace = -1,
};

/* --- ScatterNd ---------------------------------------------------------------------------- */

static const clg_attr_def scatter_nd_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tindices", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code scatter_nd_infer(clg_node *n)
{
  const clg_out_desc *ix = clg_node_in(n, 0), *u = clg_node_in(n, 1);
  char s[192], s2[192];
  int64_t shape[CLG_MAX_RANK];
  int rank = 0;
  clg_code code = clg_node_const_ints(n, 2, "shape", CLG_MAX_RANK, shape, &rank);
  if (code != CLG_OK)
    return code;
  if (clg_node_in(n, 2)->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape must be a vector");
  for (int k = 0; k < rank; k++)
    if (shape[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape[%d] = %lld must be non-negative", k,
                            (long long)shape[k]);
  if (ix->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Indices shape must have rank at least one.");
  if (!is_index(ix->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices must be int32 or int64, not %s",
                          clg_dtype_name(ix->dtype));
  if (!is_number(u->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "updates must be float32, float64, int32 or int64, not %s",
                          clg_dtype_name(u->dtype));
  int64_t q = ix->dims[ix->rank - 1];
  if (q > rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "index innermost dimension length must be <= shape rank; saw: %lld vs. "
                          "%d",
                          (long long)q, rank);
  /* updates.shape must be indices.shape[:-1] + shape[q:]. */
  clg_out_desc want = {u->dtype, 0, {0}};
  for (int k = 0; k < ix->rank - 1; k++)
    want.dims[want.rank++] = ix->dims[k];
  for (int k = (int)q; k < rank && want.rank < CLG_MAX_RANK; k++)
    want.dims[want.rank++] = shape[k];
  bool same = want.rank == u->rank && ix->rank - 1 + rank - q <= CLG_MAX_RANK;
  for (int k = 0; same && k < u->rank; k++)
    same = want.dims[k] == u->dims[k];
  if (!same)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "updates must have shape indices.shape[:-1] + shape[%lld:] = %s, not %s",
                          (long long)q, clg_out_shape_string(&want, s, sizeof s),
                          clg_out_shape_string(u, s2, sizeof s2));
  if ((code = clg_infer_dtype_attr(n, 0, u->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, ix->dtype, false)) != CLG_OK)
    return code;
  clg_out_desc out = {u->dtype, rank, {0}};
  memcpy(out.dims, shape, sizeof(int64_t) * (size_t)rank);
  if ((code = check_const_tuples(n, 0, (int)q, &out, "shape")) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, u->dtype, rank, shape);
}

const clg_op_def clg_op_ScatterNd = {
    .name = "ScatterNd",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = scatter_nd_attrs,
    .infer = scatter_nd_infer,
    .inplace = -1,
};

/* --- OneHot ------------------------------------------------------------------------------- */

enum { OH_T, OH_TI, OH_AXIS };

static const clg_attr_def one_hot_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "TI", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "axis", .type = CLG_ATTR_INT, .has_default = true, .def_i = -1},
};

int clg_one_hot_axis(const clg_node *n)
{
  int64_t axis = n->attrs[OH_AXIS].i;
  return (int)(axis == -1 ? clg_node_in(n, 0)->rank : axis);
}

static clg_code one_hot_infer(clg_node *n)
{
  const clg_out_desc *ix = clg_node_in(n, 0), *on = clg_node_in(n, 2), *off = clg_node_in(n, 3);
  char s[192];
  if (!is_index(ix->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices must be int32 or int64, not %s",
                          clg_dtype_name(ix->dtype));
  int64_t axis = n->attrs[OH_AXIS].i, depth;
  if (axis < -1 || axis > ix->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected axis to be -1 or between [0, %d).  But received: %lld",
                          ix->rank + 1, (long long)axis);
  if (ix->rank + 1 > CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output would have %d dims; at most %d",
                          ix->rank + 1, CLG_MAX_RANK);
  clg_code code = const_scalar(n, 1, "depth", &depth);
  if (code != CLG_OK)
    return code;
  if (depth < 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "depth must be non-negative, got: %lld",
                          (long long)depth);
  if (on->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "on_value must be a scalar, but got: %s",
                          clg_out_shape_string(on, s, sizeof s));
  if (off->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "off_value must be a scalar, but got: %s",
                          clg_out_shape_string(off, s, sizeof s));
  if (on->dtype != off->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "on_value is %s but off_value is %s",
                          clg_dtype_name(on->dtype), clg_dtype_name(off->dtype));
  if ((code = clg_infer_dtype_attr(n, OH_T, on->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, OH_TI, ix->dtype, false)) != CLG_OK)
    return code;
  int a = clg_one_hot_axis(n);
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0, j = 0; k <= ix->rank; k++)
    dims[k] = k == a ? depth : ix->dims[j++];
  return clg_node_set_output(n, 0, on->dtype, ix->rank + 1, dims);
}

const clg_op_def clg_op_OneHot = {
    .name = "OneHot",
    .num_inputs = 4,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = one_hot_attrs,
    .infer = one_hot_infer,
    .inplace = -1,
};

/* --- ReverseV2 ---------------------------------------------------------------------------- */

static const clg_attr_def reverse_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
};

clg_code clg_reverse_axes(const clg_node *n, bool *rev)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t axes[CLG_MAX_RANK + 1];
  int count = 0;
  memset(rev, 0, sizeof(bool) * CLG_MAX_RANK);
  clg_code code = clg_node_const_ints(n, 1, "axis", CLG_MAX_RANK + 1, axes, &count);
  if (code != CLG_OK)
    return code;
  if (clg_node_in(n, 1)->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "'dims' must be 1-dimension, not %d",
                          clg_node_in(n, 1)->rank);
  for (int i = 0; i < count; i++) {
    int64_t a = axes[i];
    if (a < -x->rank || a >= x->rank)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "'axis'[%d] = %lld is out of valid range [%d, %d)", i, (long long)a,
                            -x->rank, x->rank);
    int k = (int)(a < 0 ? a + x->rank : a);
    if (rev[k])
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "axis %d specified more than once", k);
    rev[k] = true;
  }
  return CLG_OK;
}

static clg_code reverse_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  bool rev[CLG_MAX_RANK];
  clg_code code = clg_reverse_axes(n, rev);
  if (code != CLG_OK || (code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
}

const clg_op_def clg_op_ReverseV2 = {
    .name = "ReverseV2",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = reverse_attrs,
    .infer = reverse_infer,
    .inplace = -1,
};

/* --- Cumsum ------------------------------------------------------------------------------- */

enum { CS_T, CS_TIDX, CS_EXCLUSIVE, CS_REVERSE };

static const clg_attr_def cumsum_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "exclusive", .type = CLG_ATTR_BOOL, .has_default = true},
    {.name = "reverse", .type = CLG_ATTR_BOOL, .has_default = true},
};

clg_code clg_cumsum_params(const clg_node *n, int *axis, bool *exclusive, bool *reverse)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t a;
  clg_code code = const_scalar(n, 1, "axis", &a);
  if (code != CLG_OK)
    return code;
  if (a < -x->rank || a >= x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "ScanOp: Expected scan axis in the range [%d, %d), but got %lld",
                          -x->rank, x->rank, (long long)a);
  *axis = (int)(a < 0 ? a + x->rank : a);
  *exclusive = n->attrs[CS_EXCLUSIVE].b;
  *reverse = n->attrs[CS_REVERSE].b;
  return CLG_OK;
}

static clg_code cumsum_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (!is_number(x->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Cumsum takes float32, float64, int32 or int64, not %s",
                          clg_dtype_name(x->dtype));
  int axis;
  bool ex, rev;
  clg_code code = clg_cumsum_params(n, &axis, &ex, &rev);
  if (code != CLG_OK || (code = clg_infer_dtype_attr(n, CS_T, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, CS_TIDX, clg_node_in(n, 1)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
}

const clg_op_def clg_op_Cumsum = {
    .name = "Cumsum",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 4,
    .attrs = cumsum_attrs,
    .infer = cumsum_infer,
    .inplace = -1,
};

/* --- TopKV2 ------------------------------------------------------------------------------- */

enum { TK_T, TK_INDEX_TYPE, TK_SORTED };

static const clg_attr_def top_k_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    /* TensorFlow's default int32: optional here, filled by inference */
    {.name = "index_type", .type = CLG_ATTR_DTYPE, .inferred = true},
    /* false lets TensorFlow return any order; clgraph's is always sorted */
    {.name = "sorted", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};

int64_t clg_top_k_k(const clg_node *n) { return n->outs[0].dims[n->outs[0].rank - 1]; }

static clg_code top_k_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  char s[192];
  if (!is_number(x->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "TopKV2 takes float32, float64, int32 or int64, not %s",
                          clg_dtype_name(x->dtype));
  if (x->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input must be >= 1-D, got shape %s",
                          clg_out_shape_string(x, s, sizeof s));
  int64_t k;
  clg_code code = const_scalar(n, 1, "k", &k);
  if (code != CLG_OK)
    return code;
  if (k < 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
  if (x->dims[x->rank - 1] < k)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "input must have at least k columns. Had %lld, needed %lld",
                          (long long)x->dims[x->rank - 1], (long long)k);
  clg_attr_value *it = &n->attrs[TK_INDEX_TYPE];
  if (!it->set) {
    it->set = true;
    it->dtype = CLG_INT32;
  }
  if (!is_index(it->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "index_type must be int32 or int64, not %s",
                          clg_dtype_name(it->dtype));
  if (it->dtype == CLG_INT32 && x->dims[x->rank - 1] > INT32_MAX)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the last dim %lld does not fit int32 indices",
                          (long long)x->dims[x->rank - 1]);
  if ((code = clg_infer_dtype_attr(n, TK_T, x->dtype, false)) != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[x->rank - 1] = k;
  if ((code = clg_node_set_output(n, 0, x->dtype, x->rank, dims)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 1, it->dtype, x->rank, dims);
}

const clg_op_def clg_op_TopKV2 = {
    .name = "TopKV2",
    .num_inputs = 2,
    .num_outputs = 2,
    .num_attrs = 3,
    .attrs = top_k_attrs,
    .infer = top_k_infer,
    .inplace = -1,
};
