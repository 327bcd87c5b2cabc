/* The op registry: the list of op definitions, lookups, the by-name builder, and the helpers
 * every op file uses (the one checked path for output shapes, inference helpers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "graph/graph.h"
#include "ops/ops.h"

/* Every op, in op_list.h's order. */
static const clg_op_def *const registry[] = {
#define CLG_OP(name) &clg_op_##name,
#include "ops/op_list.h"
#undef CLG_OP
};

#define NUM_OPS ((int)(sizeof registry / sizeof registry[0]))

int clg_op_count(void) { return NUM_OPS; }

const clg_op_def *clg_op_at(int i) { return i >= 0 && i < NUM_OPS ? registry[i] : NULL; }

const clg_op_def *clg_op_find(const char *name)
{
  for (int i = 0; name && i < NUM_OPS; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}

/* The by-name builder (the public clg_op): the registry's op, built through the graph. */
clg_node *clg_op(clg_graph *g, const char *op, const char *name, int num_inputs,
                 const clg_output *inputs, int num_attrs, const clg_attr *attrs)
{
  const clg_op_def *def = op ? clg_op_find(op) : NULL;
  if (g && clg_graph_status(g) == CLG_OK && !def) {
    clg_error(CLG_INVALID_ARGUMENT,
              "Op type not registered '%s' in binary running clgraph (node '%s')",
              op ? op : "(NULL)", name ? name : "(default name)");
    clg_graph_record_error(g);
    return NULL;
  }
  return clg_graph_build(g, def, name, num_inputs, inputs, num_attrs, attrs);
}

static clg_device_kind kind_of(const clg_device *dev) { return clg_device_ops_of(dev)->kind; }

/* --- helpers for op files ---------------------------------------------------------------- */

/* Element counts stay below this so that byte sizes of every dtype fit in int64. */
#define MAX_ELEMENTS (INT64_MAX / 8)

clg_code clg_node_set_output(clg_node *n, int i, clg_dtype dtype, int rank, const int64_t *dims)
{
  if (i < 0 || i >= n->num_outputs)
    return clg_node_error(n, CLG_INTERNAL, "output %d of %d", i, n->num_outputs);
  if (clg_dtype_size(dtype) == 0)
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT,
        "dtype %d is not float (1), double (2), int32 (3), int64 (9), bool (10) or "
        "half (19)",
        (int)dtype);
  if (rank < 0 || rank > CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "rank %d is out of range [0, %d]", rank,
                          CLG_MAX_RANK);
  if (rank > 0 && !dims)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dims is NULL for rank %d", rank);
  clg_out_desc d = {dtype, rank, {0}};
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dims[%d] is %lld; dimensions must be >= 0", k,
                            (long long)dims[k]);
    d.dims[k] = dims[k];
  }
  int64_t count;
  if (!clg_dims_product(rank, d.dims, &count) || count > MAX_ELEMENTS) {
    char s[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape %s has too many elements",
                          clg_out_shape_string(&d, s, sizeof s));
  }
  n->outs[i] = d;
  return CLG_OK;
}

const clg_out_desc *clg_node_in(const clg_node *n, int i)
{
  return &n->inputs[i].node->outs[n->inputs[i].index];
}

const clg_out_desc *clg_node_out(const clg_node *n, int i) { return &n->outs[i]; }

const clg_attr_value *clg_node_attr(const clg_node *n, int i) { return &n->attrs[i]; }

clg_attr_value *clg_node_attr_mut(clg_node *n, int i) { return &n->attrs[i]; }

bool clg_node_all_dtype(const clg_node *n, clg_dtype dtype)
{
  for (int i = 0; i < n->num_inputs; i++)
    if (clg_node_in(n, i)->dtype != dtype)
      return false;
  for (int i = 0; i < n->num_outputs; i++)
    if (n->outs[i].dtype != dtype)
      return false;
  return true;
}

bool clg_kernel_float_or_double(const clg_node *n, const clg_device *dev)
{
  return clg_node_all_dtype(n, CLG_FLOAT32) ||
         (clg_node_all_dtype(n, CLG_FLOAT64) &&
          (kind_of(dev) == CLG_KIND_HOST || dev->info.has_fp64));
}

clg_code clg_node_const_int_tensor(const clg_node *n, int i, const char *what,
                                   const clg_tensor **out)
{
  const clg_node *p = n->inputs[i].node;
  const clg_tensor *t = clg_node_value(p);
  if (!(p->def->flags & CLG_OP_CONST) || !t)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "%s (input %d) must be a constant: shapes are static, but '%s' is a %s",
                          what, i, p->name, p->op);
  clg_dtype dt = clg_tensor_dtype(t);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) must be int32 or int64, not %s",
                          what, i, clg_dtype_name(dt));
  *out = t;
  return CLG_OK;
}

clg_code clg_node_const_ints(const clg_node *n, int i, const char *what, int max, int64_t *vals,
                             int *count)
{
  const clg_tensor *t = NULL;
  clg_code code = clg_node_const_int_tensor(n, i, what, &t);
  if (code != CLG_OK)
    return code;
  clg_dtype dt = clg_tensor_dtype(t);
  char s[192];
  if (clg_tensor_rank(t) > 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) must be a vector, not shape %s",
                          what, i, clg_tensor_shape_string(t, s, sizeof s));
  size_t c = clg_tensor_count(t);
  if (c > (size_t)max)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) has %zu values; at most %d", what,
                          i, c, max);
  const void *d = clg_tensor_const_data(t);
  for (size_t k = 0; k < c; k++)
    vals[k] = dt == CLG_INT32 ? ((const int32_t *)d)[k] : ((const int64_t *)d)[k];
  *count = (int)c;
  return CLG_OK;
}

clg_code clg_infer_dtype_attr(clg_node *n, int at, clg_dtype dtype, bool inputs)
{
  clg_attr_value *t = &n->attrs[at];
  if (t->set && t->dtype != dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute %s is %s but the %s %s",
                          n->def->attrs[at].name, clg_dtype_name(t->dtype),
                          inputs ? "inputs are" : "input is", clg_dtype_name(dtype));
  t->set = true;
  t->dtype = dtype;
  return CLG_OK;
}

clg_code clg_infer_elementwise_unary(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_code code = clg_infer_dtype_attr(n, 0, x->dtype, false);
  return code != CLG_OK ? code : clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
}

const clg_attr_def clg_attrs_T[1] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

/* --- helpers for gradient functions ---------------------------------------------------- */

clg_output clg_grad_build(clg_graph *g, const clg_op_def *def, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs)
{
  return clg_out(clg_graph_build(g, def, NULL, num_inputs, inputs, num_attrs, attrs), 0);
}

clg_output clg_grad_scalar(clg_graph *g, clg_dtype dtype, double value)
{
  clg_tensor *t = clg_tensor_new(dtype, 0, NULL, NULL);
  if (t && dtype == CLG_FLOAT32)
    *(float *)clg_tensor_data(t) = (float)value;
  else if (t && dtype == CLG_FLOAT64)
    *(double *)clg_tensor_data(t) = value;
  else if (t && dtype == CLG_FLOAT16)
    *(uint16_t *)clg_tensor_data(t) = clg_half_from_double(value);
  clg_output o = clg_out(t ? clg_const(g, NULL, t) : NULL, 0);
  clg_tensor_free(t);
  return o;
}
