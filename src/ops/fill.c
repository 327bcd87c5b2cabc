/* Fill (tf.fill: a shape from a constant dims vector, every element the scalar value),
 * ZerosLike and OnesLike (the input's shape and dtype). Any of float, double, int32, int64
 * and bool, on every device: these only write bytes. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

static bool fillable(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || t == CLG_INT32 || t == CLG_INT64 || t == CLG_BOOL;
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

static void replicate(void *out, const void *elem, size_t es, size_t count)
{
  for (size_t i = 0; i < count; i++)
    memcpy((char *)out + i * es, elem, es);
}

static clg_code fill_host(const clg_kernel_ctx *c)
{
  replicate(c->out[0].host, c->in[1].host, clg_dtype_size(c->node->outs[0].dtype),
            clg_out_count(&c->node->outs[0]));
  return CLG_OK;
}

static clg_code fill_cl(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (count == 0)
    return CLG_OK;
  clg_strided m = {1, {count}, {0}, {0}}; /* every element reads element 0 of the value */
  return clg_cl_gather(c->dev, clg_dtype_size(c->node->outs[0].dtype), &c->in[1], &c->out[0], &m);
}

static const clg_kernel_def fill_kernels[] = {{CLG_KIND_HOST, NULL, fill_host, NULL, NULL},
                                              {CLG_KIND_OPENCL, NULL, fill_cl, NULL, NULL}};

const clg_op_def clg_op_Fill = {
    .name = "Fill",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = fill_attrs,
    .infer = fill_infer,
    .kernels = fill_kernels,
    .num_kernels = 2,
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

/* One element of value 0 or 1 in dtype t, into buf (8 bytes). */
static void one_element(clg_dtype t, bool one, void *buf)
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
  default:
    *(uint8_t *)buf = 1;
    break;
  }
}

static clg_code like_host(const clg_kernel_ctx *c)
{
  clg_dtype t = c->node->outs[0].dtype;
  uint64_t elem[1];
  one_element(t, c->node->def == &clg_op_OnesLike, elem);
  replicate(c->out[0].host, elem, clg_dtype_size(t), clg_out_count(&c->node->outs[0]));
  return CLG_OK;
}

static clg_code like_cl(const clg_kernel_ctx *c)
{
  clg_dtype t = c->node->outs[0].dtype;
  uint64_t elem[1];
  one_element(t, c->node->def == &clg_op_OnesLike, elem);
  return clg_cl_fill(c->dev, &c->out[0], elem, clg_dtype_size(t), clg_node_out_bytes(c->node, 0));
}

static const clg_kernel_def like_kernels[] = {{CLG_KIND_HOST, NULL, like_host, NULL, NULL},
                                              {CLG_KIND_OPENCL, NULL, like_cl, NULL, NULL}};

#define LIKE_DEF(OP)                                                                               \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 1,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = clg_attrs_T,                                                                        \
      .infer = like_infer,                                                                         \
      .kernels = like_kernels,                                                                     \
      .num_kernels = 2,                                                                            \
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
