/* The op builders: argument checks, then dtype and shape inference. Every error names the
 * op and the node, e.g. "MatMul 'MatMul_1': inner dimensions differ: [2,3] x [2,2]". */
#include <string.h>

#include "graph/graph.h"

#define SHAPE_TEXT_MAX 192 /* 8 dims of up to 20 digits, commas, brackets */

/* Element counts stay below this so that byte sizes of every dtype fit in int64. */
#define MAX_ELEMENTS (INT64_MAX / 8)

static bool same_shape(const clg_node *a, const clg_node *b)
{
  return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

static void copy_shape(clg_node *n, const clg_node *from)
{
  n->rank = from->rank;
  memcpy(n->dims, from->dims, sizeof n->dims);
}

/* Checks a caller's shape and stores it in n; on failure the error is set (not recorded). */
static clg_code set_shape(clg_node *n, int rank, const int64_t *dims)
{
  if (rank < 0 || rank > CLG_MAX_RANK)
    return clg_error(CLG_INVALID_ARGUMENT, "%s '%s': rank %d is out of range [0, %d]", n->op,
                     n->name, rank, CLG_MAX_RANK);
  if (rank > 0 && !dims)
    return clg_error(CLG_INVALID_ARGUMENT, "%s '%s': dims is NULL for rank %d", n->op, n->name,
                     rank);
  int64_t count = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return clg_error(CLG_INVALID_ARGUMENT, "%s '%s': dims[%d] is %lld; dimensions must be >= 0",
                       n->op, n->name, i, (long long)dims[i]);
    n->dims[i] = dims[i];
    if (dims[i] > 0 && count > MAX_ELEMENTS / dims[i])
      count = MAX_ELEMENTS + 1; /* keep going: a later 0 makes it empty */
    else
      count *= dims[i];
  }
  n->rank = rank;
  if (count > MAX_ELEMENTS) {
    char s[SHAPE_TEXT_MAX];
    return clg_error(CLG_INVALID_ARGUMENT, "%s '%s': shape %s has too many elements", n->op,
                     n->name, clg_node_shape_string(n, s, sizeof s));
  }
  return CLG_OK;
}

/* Finishes a Const: checks the shape, copies the values into the node's own tensor. */
static clg_node *const_finish(clg_node *n, clg_dtype dtype, int rank, const int64_t *dims,
                              const void *values)
{
  if (set_shape(n, rank, dims) != CLG_OK)
    return clg_graph_node_abandon(n);
  if (!values && clg_node_count(n) > 0)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "Const '%s': values is NULL", n->name);
  n->dtype = dtype;
  n->value = clg_tensor_new(dtype, rank, n->dims, values);
  if (!n->value) {
    clg_error_prefix("Const '%s': ", n->name);
    return clg_graph_node_abandon(n);
  }
  return clg_graph_node_add(n);
}

clg_node *clg_const(clg_graph *g, const char *name, const clg_tensor *value)
{
  clg_node *n = clg_graph_node_begin(g, "Const", name, 0, NULL);
  if (!n)
    return NULL;
  if (!value)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "Const '%s': value is NULL", n->name);
  int rank = clg_tensor_rank(value);
  int64_t dims[CLG_MAX_RANK];
  for (int i = 0; i < rank && i < CLG_MAX_RANK; i++)
    dims[i] = clg_tensor_dim(value, i);
  return const_finish(n, clg_tensor_dtype(value), rank, dims, clg_tensor_const_data(value));
}

clg_node *clg_const_f32(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *values)
{
  clg_node *n = clg_graph_node_begin(g, "Const", name, 0, NULL);
  return n ? const_finish(n, CLG_FLOAT32, rank, dims, values) : NULL;
}

clg_node *clg_const_f64(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const double *values)
{
  clg_node *n = clg_graph_node_begin(g, "Const", name, 0, NULL);
  return n ? const_finish(n, CLG_FLOAT64, rank, dims, values) : NULL;
}

clg_node *clg_placeholder(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                          const int64_t *dims)
{
  clg_node *n = clg_graph_node_begin(g, "Placeholder", name, 0, NULL);
  if (!n)
    return NULL;
  if (clg_dtype_size(dtype) == 0)
    return clg_graph_node_fail(
        n, CLG_INVALID_ARGUMENT,
        "Placeholder '%s': dtype %d is not float (1), double (2) or half (19)", n->name,
        (int)dtype);
  if (set_shape(n, rank, dims) != CLG_OK)
    return clg_graph_node_abandon(n);
  n->dtype = dtype;
  return clg_graph_node_add(n);
}

static clg_node *fail_dtypes(clg_node *n, const clg_node *a, const clg_node *b)
{
  return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': dtypes differ: %s vs %s", n->op,
                             n->name, clg_dtype_name(a->dtype), clg_dtype_name(b->dtype));
}

clg_node *clg_matmul(clg_graph *g, const char *name, clg_node *a, clg_node *b, bool transpose_a,
                     bool transpose_b)
{
  clg_node *in[2] = {a, b};
  clg_node *n = clg_graph_node_begin(g, "MatMul", name, 2, in);
  if (!n)
    return NULL;
  char sa[SHAPE_TEXT_MAX], sb[SHAPE_TEXT_MAX];
  for (int i = 0; i < 2; i++) {
    if (in[i]->rank != 2)
      return clg_graph_node_fail(
          n, CLG_INVALID_ARGUMENT, "MatMul '%s': input '%s' is rank %d %s; MatMul needs rank 2",
          n->name, in[i]->name, in[i]->rank, clg_node_shape_string(in[i], sa, sizeof sa));
  }
  if (a->dtype != b->dtype)
    return fail_dtypes(n, a, b);
  /* The shapes as stored; the transposes only choose which dimension is inner. */
  int64_t k_a = a->dims[transpose_a ? 0 : 1], k_b = b->dims[transpose_b ? 1 : 0];
  if (k_a != k_b)
    return clg_graph_node_fail(
        n, CLG_INVALID_ARGUMENT, "MatMul '%s': inner dimensions differ: %s%s x %s%s", n->name,
        clg_node_shape_string(a, sa, sizeof sa), transpose_a ? " (transposed)" : "",
        clg_node_shape_string(b, sb, sizeof sb), transpose_b ? " (transposed)" : "");
  n->dtype = a->dtype;
  n->rank = 2;
  n->dims[0] = a->dims[transpose_a ? 1 : 0];
  n->dims[1] = b->dims[transpose_b ? 0 : 1];
  n->transpose_a = transpose_a;
  n->transpose_b = transpose_b;
  return clg_graph_node_add(n);
}

/* Add, Sub, Mul: equal shapes, or a scalar against a tensor in either order. */
static clg_node *binary(clg_graph *g, const char *op, const char *name, clg_node *a, clg_node *b)
{
  clg_node *in[2] = {a, b};
  clg_node *n = clg_graph_node_begin(g, op, name, 2, in);
  if (!n)
    return NULL;
  if (a->dtype != b->dtype)
    return fail_dtypes(n, a, b);
  const clg_node *shape = a->rank == 0 ? b : a;
  if (!same_shape(a, b) && a->rank != 0 && b->rank != 0) {
    char sa[SHAPE_TEXT_MAX], sb[SHAPE_TEXT_MAX];
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': shapes differ: %s vs %s", op,
                               n->name, clg_node_shape_string(a, sa, sizeof sa),
                               clg_node_shape_string(b, sb, sizeof sb));
  }
  n->dtype = a->dtype;
  copy_shape(n, shape);
  return clg_graph_node_add(n);
}

clg_node *clg_add(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return binary(g, "Add", name, a, b);
}

clg_node *clg_sub(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return binary(g, "Sub", name, a, b);
}

clg_node *clg_mul(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return binary(g, "Mul", name, a, b);
}

clg_node *clg_add_n(clg_graph *g, const char *name, int n_in, clg_node *const *inputs)
{
  bool usable = n_in >= 1 && inputs;
  clg_node *n = clg_graph_node_begin(g, "AddN", name, usable ? n_in : 0, usable ? inputs : NULL);
  if (!n)
    return NULL;
  if (n_in < 1)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "AddN '%s': needs at least 1 input, got %d",
                               n->name, n_in);
  if (!inputs)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "AddN '%s': inputs is NULL", n->name);
  const clg_node *first = inputs[0];
  for (int i = 1; i < n_in; i++) {
    if (inputs[i]->dtype != first->dtype)
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                                 "AddN '%s': input %d has dtype %s, input 0 has %s", n->name, i,
                                 clg_dtype_name(inputs[i]->dtype), clg_dtype_name(first->dtype));
    if (!same_shape(inputs[i], first)) {
      char si[SHAPE_TEXT_MAX], s0[SHAPE_TEXT_MAX];
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                                 "AddN '%s': input %d has shape %s, input 0 has %s", n->name, i,
                                 clg_node_shape_string(inputs[i], si, sizeof si),
                                 clg_node_shape_string(first, s0, sizeof s0));
    }
  }
  n->dtype = first->dtype;
  copy_shape(n, first);
  return clg_graph_node_add(n);
}

clg_node *clg_identity(clg_graph *g, const char *name, clg_node *x)
{
  clg_node *n = clg_graph_node_begin(g, "Identity", name, 1, &x);
  if (!n)
    return NULL;
  n->dtype = x->dtype;
  copy_shape(n, x);
  return clg_graph_node_add(n);
}
