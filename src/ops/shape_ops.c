/* Reshape (at most one -1 inferred from the element count) and Transpose (a permutation of
 * the dims), for any dtype on every device. Their shape and perm inputs must be Consts:
 * shapes are static in clgraph. Reshape's output reuses its input's buffer when the plan
 * allows (then it copies nothing); Transpose gathers through a strided map. Kernels:
 * backends/host/shape_ops.c, backends/opencl/shape_ops.c. */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_TINDEX };

static const clg_attr_def reshape_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tshape", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static const clg_attr_def transpose_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tperm", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static void set_types(clg_node *n)
{
  n->attrs[A_T].set = n->attrs[A_TINDEX].set = true;
  n->attrs[A_T].dtype = clg_node_in(n, 0)->dtype;
  n->attrs[A_TINDEX].dtype = clg_node_in(n, 1)->dtype;
}

/* --- Reshape ------------------------------------------------------------------------------ */

static clg_code reshape_infer(clg_node *n)
{
  int64_t dims[CLG_MAX_RANK];
  int rank = 0;
  clg_code code = clg_node_const_ints(n, 1, "shape", CLG_MAX_RANK, dims, &rank);
  if (code != CLG_OK)
    return code;
  size_t have = clg_out_count(clg_node_in(n, 0));
  int unknown = -1;
  int64_t known[CLG_MAX_RANK]; /* dims with the -1 as 1 */
  for (int k = 0; k < rank; k++) {
    if (dims[k] == -1) {
      if (unknown >= 0)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Only one input size may be -1, not both %d and %d", unknown, k);
      unknown = k;
    } else if (dims[k] < 0) {
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", k,
                            (long long)dims[k]);
    }
    known[k] = dims[k] == -1 ? 1 : dims[k];
  }
  int64_t product;
  bool fits = clg_dims_product(rank, known, &product);
  if (!fits && !(unknown >= 0 && have == 0)) {
    /* Beyond INT64_MAX: more values than any input has, and so are its multiples but 0. */
    char s[192];
    clg_out_desc d = {CLG_FLOAT32, rank, {0}};
    memcpy(d.dims, dims, sizeof(int64_t) * (size_t)rank);
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Input to reshape is a tensor with %zu values, but the requested shape "
                          "%s %s more than %lld",
                          have, clg_out_shape_string(&d, s, sizeof s),
                          unknown >= 0 ? "requires a multiple of" : "has", (long long)INT64_MAX);
  }
  if (!fits) {
    dims[unknown] = 0; /* an empty input: 0 is a multiple of any product */
  } else if (unknown >= 0) {
    if (product == 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Reshape cannot infer the missing input size for an empty tensor "
                            "unless all specified input sizes are non-zero");
    if (have % (size_t)product != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Input to reshape is a tensor with %zu values, but the requested "
                            "shape requires a multiple of %lld",
                            have, (long long)product);
    dims[unknown] = (int64_t)(have / (size_t)product);
  } else if ((size_t)product != have) {
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Input to reshape is a tensor with %zu values, but the requested shape "
                          "has %lld",
                          have, (long long)product);
  }
  set_types(n);
  return clg_node_set_output(n, 0, clg_node_in(n, 0)->dtype, rank, dims);
}

/* dy reshaped to the input's shape; the shape input gets none. */
static clg_code reshape_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_output s = clg_out(clg_const_ints(g, x->rank, x->dims), 0);
  dx[0] = clg_grad_build(g, &clg_op_Reshape, 2, (clg_output[]){dy[0], s}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Reshape = {
    .name = "Reshape",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = reshape_attrs,
    .infer = reshape_infer,
    .inplace = 0,
    .grad = reshape_grad,
};

/* --- Transpose ---------------------------------------------------------------------------- */

static clg_code transpose_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t perm[CLG_MAX_RANK];
  int count = 0;
  clg_code code = clg_node_const_ints(n, 1, "perm", CLG_MAX_RANK, perm, &count);
  if (code != CLG_OK)
    return code;
  if (count != x->rank)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "transpose expects a vector of size %d. But input(1) is a vector of "
                          "size %d",
                          x->rank, count);
  bool seen[CLG_MAX_RANK] = {false};
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < count; k++) {
    if (perm[k] < 0 || perm[k] >= x->rank)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "perm[%d] = %lld is out of range [0, %d)", k,
                            (long long)perm[k], x->rank);
    if (seen[perm[k]])
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "perm is not a permutation: %lld appears twice", (long long)perm[k]);
    seen[perm[k]] = true;
    dims[k] = x->dims[perm[k]];
  }
  set_types(n);
  return clg_node_set_output(n, 0, x->dtype, count, dims);
}

/* dy transposed by the inverse permutation; the perm input gets none. */
static clg_code transpose_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  int64_t perm[CLG_MAX_RANK], inv[CLG_MAX_RANK];
  int count = 0;
  clg_code code = clg_node_const_ints(n, 1, "perm", CLG_MAX_RANK, perm, &count);
  if (code != CLG_OK)
    return code;
  for (int k = 0; k < count; k++)
    inv[perm[k]] = k;
  clg_output p = clg_out(clg_const_ints(g, count, inv), 0);
  dx[0] = clg_grad_build(g, &clg_op_Transpose, 2, (clg_output[]){dy[0], p}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Transpose = {
    .name = "Transpose",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = transpose_attrs,
    .infer = transpose_infer,
    .inplace = -1,
    .grad = transpose_grad,
};

clg_node *clg_reshape(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *shape)
{
  clg_node *s = clg_const_ints(g, rank, shape);
  clg_output in[2] = {{x, 0}, {s, 0}};
  return clg_graph_build(g, &clg_op_Reshape, name, 2, in, 0, NULL);
}

clg_node *clg_transpose(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *perm)
{
  clg_node *p = clg_const_ints(g, n, perm);
  clg_output in[2] = {{x, 0}, {p, 0}};
  return clg_graph_build(g, &clg_op_Transpose, name, 2, in, 0, NULL);
}
