/* Size and SparseToDense (issue 23: movenet-multipose, nanodet), with TensorFlow 1.x's
 * attributes, checks and error texts. Size is the element count of its input as a scalar of
 * out_type (the importer folds it to a Const, as Shape, once shapes are bound). SparseToDense
 * builds a dense tensor of default_value with sparse_values written at sparse_indices; its
 * output_shape must be a Const (shapes are static). Indices that are a Const are checked at
 * build, others when the host kernel reads them. Kernels: backends/host/array_tf4.c (both),
 * backends/opencl/array_tf4.c (Size, and SparseToDense with Const indices). */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* --- Size -------------------------------------------------------------------------------- */

static const clg_attr_def size_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    /* TensorFlow's default int32: optional here, filled by inference */
    {.name = "out_type", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code size_infer(clg_node *n)
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
  if (o->dtype == CLG_INT32 && clg_out_count(x) > INT32_MAX)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Number of elements was larger than representable by 32-bit output "
                          "type (%zu elements)",
                          clg_out_count(x));
  return clg_node_set_output(n, 0, o->dtype, 0, NULL);
}

/* Size's output changes with no input value: it stays in the graph for the kernels. */
const clg_op_def clg_op_Size = {
    .name = "Size",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = size_attrs,
    .infer = size_infer,
    .inplace = -1,
};

/* --- SparseToDense ----------------------------------------------------------------------- */

enum { SD_VALIDATE, SD_T, SD_TINDICES };

static const clg_attr_def sparse_to_dense_attrs[] = {
    {.name = "validate_indices", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tindices", .type = CLG_ATTR_DTYPE, .inferred = true},
};

void clg_sparse_to_dense_dims(const clg_node *n, size_t *num_elems, int *num_dims)
{
  const clg_out_desc *ix = clg_node_in(n, 0);
  *num_elems = ix->rank > 0 ? (size_t)ix->dims[0] : 1;
  *num_dims = ix->rank > 1 ? (int)ix->dims[1] : 1;
}

/* "[2,0]": index j of the indices (num_dims values each). */
static void index_string(const void *ix, bool i64, size_t j, int num_dims, char *buf, size_t size)
{
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < num_dims && len < size; d++) {
    size_t at = j * (size_t)num_dims + (size_t)d;
    long long v = i64 ? (long long)((const int64_t *)ix)[at] : ((const int32_t *)ix)[at];
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "," : "", v);
  }
  if (len < size)
    snprintf(buf + len, size - len, "]");
}

clg_code clg_sparse_to_dense_offsets(const clg_node *n, const void *ix, size_t *offsets)
{
  const clg_out_desc *o = &n->outs[0];
  bool i64 = clg_node_in(n, 0)->dtype == CLG_INT64;
  bool validate = n->attrs[SD_VALIDATE].b;
  size_t num_elems;
  int num_dims;
  clg_sparse_to_dense_dims(n, &num_elems, &num_dims);
  for (size_t j = 0; j < num_elems; j++) {
    bool valid = true, different = j == 0, increasing = true;
    size_t off = 0;
    for (int d = 0; d < num_dims; d++) {
      size_t at = j * (size_t)num_dims + (size_t)d;
      int64_t v = i64 ? ((const int64_t *)ix)[at] : ((const int32_t *)ix)[at];
      if (v < 0 || v >= o->dims[d])
        valid = false;
      else
        off = off * (size_t)o->dims[d] + (size_t)v;
      if (j > 0) { /* TensorFlow's IndicesValid: lexicographic order against index j - 1 */
        int64_t p = i64 ? ((const int64_t *)ix)[at - (size_t)num_dims]
                        : ((const int32_t *)ix)[at - (size_t)num_dims];
        if (v > p)
          different = true;
        if (!different && v < p)
          increasing = false;
      }
    }
    char s[192], idx[256];
    if (!valid && !validate)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Indices are not valid (out of bounds).  Shape: %s",
                            clg_out_shape_string(o, s, sizeof s));
    if (validate && (!valid || !increasing || !different)) {
      index_string(ix, i64, j, num_dims, idx, sizeof idx);
      if (!valid) {
        /* TensorFlow's "need 0 <= index < [2,3]": the shape without spaces */
        clg_out_shape_string(o, s, sizeof s);
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "indices[%zu] = %s is out of bounds: need 0 <= index < %s", j, idx,
                              s);
      }
      if (!increasing)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "indices[%zu] = %s is out of order. Many sparse ops require sorted "
                              "indices.",
                              j, idx);
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices[%zu] = %s is repeated", j, idx);
    }
    if (offsets)
      offsets[j] = off;
  }
  return CLG_OK;
}

static clg_code sparse_to_dense_infer(clg_node *n)
{
  const clg_out_desc *ix = clg_node_in(n, 0), *os = clg_node_in(n, 1);
  const clg_out_desc *vals = clg_node_in(n, 2), *def = clg_node_in(n, 3);
  char s[192];
  if (ix->rank > 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "sparse_indices should be a scalar, vector, or matrix, got shape %s",
                          clg_out_shape_string(ix, s, sizeof s));
  if (ix->dtype != CLG_INT32 && ix->dtype != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "sparse_indices must be int32 or int64, not %s",
                          clg_dtype_name(ix->dtype));
  if (os->dtype != ix->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "output_shape is %s but sparse_indices is %s (Tindices is one type)",
                          clg_dtype_name(os->dtype), clg_dtype_name(ix->dtype));
  if (os->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "output_shape should be a vector, got shape %s",
                          clg_out_shape_string(os, s, sizeof s));
  int64_t shape[CLG_MAX_RANK];
  int rank = 0;
  clg_code code = clg_node_const_ints(n, 1, "output_shape", CLG_MAX_RANK, shape, &rank);
  if (code != CLG_OK)
    return code;
  size_t num_elems;
  int num_dims;
  clg_sparse_to_dense_dims(n, &num_elems, &num_dims);
  if (rank != num_dims)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "output_shape has incorrect number of elements: %d should be: %d", rank,
                          num_dims);
  for (int k = 0; k < rank; k++)
    if (shape[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "output_shape[%d] = %lld must be >= 0", k,
                            (long long)shape[k]);
  if (vals->rank != 0 && (vals->rank != 1 || (size_t)vals->dims[0] != num_elems))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "sparse_values has incorrect shape %s, should be [] or [%zu]",
                          clg_out_shape_string(vals, s, sizeof s), num_elems);
  if (def->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "default_value should be a scalar.");
  if (def->dtype != vals->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "default_value is %s but sparse_values is %s (T is one type)",
                          clg_dtype_name(def->dtype), clg_dtype_name(vals->dtype));
  size_t es = clg_dtype_size(vals->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "sparse_values of dtype %s are not supported",
                          clg_dtype_name(vals->dtype));
  if ((code = clg_infer_dtype_attr(n, SD_T, vals->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, SD_TINDICES, ix->dtype, false)) != CLG_OK ||
      (code = clg_node_set_output(n, 0, vals->dtype, rank, shape)) != CLG_OK)
    return code;
  /* Const indices: TensorFlow's run-time checks, here at build. */
  const clg_node *src = n->inputs[0].node;
  const clg_tensor *t = (src->def->flags & CLG_OP_CONST) ? clg_node_value(src) : NULL;
  return t ? clg_sparse_to_dense_offsets(n, clg_tensor_const_data(t), NULL) : CLG_OK;
}

const clg_op_def clg_op_SparseToDense = {
    .name = "SparseToDense",
    .num_inputs = 4,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = sparse_to_dense_attrs,
    .infer = sparse_to_dense_infer,
    .inplace = -1,
};
