/* Fill (tf.fill: a shape from a constant dims vector, every element the scalar value),
 * ZerosLike and OnesLike (the input's shape and dtype). Any of float, double, the integers
 * and bool, on every device (int8, int16 and the unsigned ones on the host only): these only
 * write bytes.
 * Kernels: backends/host/fill.c, backends/opencl/fill.c. */
#include "graph/graph.h"
#include "ops/ops.h"

static bool fillable(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || clg_dtype_is_integer(t) || t == CLG_BOOL;
}

/* --- Fill ------------------------------------------------------------------------------ */

enum { F_T, F_INDEX_TYPE };

static const clg_attr_def fill_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "index_type", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code fill_infer(clg_node *n)
{
  int64_t dims[CLG_MAX_RANK];
  int rank = 0;
  clg_code code = clg_node_const_ints(n, 0, "dims", CLG_MAX_RANK, dims, &rank);
  if (code != CLG_OK)
    return code;
  const clg_out_desc *v = clg_node_in(n, 1);
  char s[192];
  if (v->rank != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "value must be a scalar, not shape %s",
                          clg_out_shape_string(v, s, sizeof s));
  if (!fillable(v->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "no Fill for dtype %s",
                          clg_dtype_name(v->dtype));
  n->attrs[F_T].set = true;
  n->attrs[F_T].dtype = v->dtype;
  n->attrs[F_INDEX_TYPE].set = true;
  n->attrs[F_INDEX_TYPE].dtype = clg_node_in(n, 0)->dtype;
  return clg_node_set_output(n, 0, v->dtype, rank, dims);
}

const clg_op_def clg_op_Fill = {
    .name = "Fill",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = fill_attrs,
    .infer = fill_infer,
    .inplace = -1,
};

/* --- ZerosLike, OnesLike ------------------------------------------------------------------ */

static clg_code like_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (!fillable(x->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "no %s for dtype %s", n->op,
                          clg_dtype_name(x->dtype));
  return clg_infer_elementwise_unary(n);
}

#define LIKE_DEF(OP)                                                                               \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 1,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = clg_attrs_T,                                                                        \
      .infer = like_infer,                                                                         \
      .inplace = 0,                                                                                \
  };
LIKE_DEF(ZerosLike)
LIKE_DEF(OnesLike)

/* --- builders ------------------------------------------------------------------------------ */

/* A Const of the n values v (shapes, axes, perms, k) for the typed builders: int32, as
 * TensorFlow converts Python ints, or int64 when a value does not fit in int32 (cutting it
 * would turn a dim of 2^32 + 6 into 6). A vector, or a scalar when scalar (n is 1). NULL on
 * error (sticky). */
static clg_node *const_ints(clg_graph *g, bool scalar, int n, const int64_t *v)
{
  int64_t dims[1] = {n};
  if (n < 0 || (n > 0 && !v)) /* the Const reports the bad length or the NULL values */
    return clg_const_f32(g, NULL, 1, dims, NULL);
  bool wide = false;
  for (int i = 0; i < n; i++)
    wide = wide || v[i] < INT32_MIN || v[i] > INT32_MAX;
  clg_tensor *t = clg_tensor_new(wide ? CLG_INT64 : CLG_INT32, scalar ? 0 : 1, dims, NULL);
  for (int i = 0; t && i < n; i++) {
    if (wide)
      ((int64_t *)clg_tensor_data(t))[i] = v[i];
    else
      ((int32_t *)clg_tensor_data(t))[i] = (int32_t)v[i];
  }
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

clg_node *clg_const_ints(clg_graph *g, int n, const int64_t *v)
{
  return const_ints(g, false, n, v);
}

clg_node *clg_const_int(clg_graph *g, int64_t v) { return const_ints(g, true, 1, &v); }

clg_node *clg_fill(clg_graph *g, const char *name, int rank, const int64_t *dims, clg_node *value)
{
  clg_node *d = clg_const_ints(g, rank, dims);
  clg_output in[2] = {{d, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_Fill, name, 2, in, 0, NULL);
}

clg_node *clg_zeros_like(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_ZerosLike, name, 1, &in, 0, NULL);
}

clg_node *clg_ones_like(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_OnesLike, name, 1, &in, 0, NULL);
}
