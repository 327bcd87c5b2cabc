/* LogicalAnd, LogicalOr (bool, numpy broadcasting as Add), LogicalNot (bool), and IsNan and
 * IsInf (float in, bool out; tf.math.is_nan, tf.math.is_inf: true for either infinity). None has
 * a gradient, as in TensorFlow. Kernels: backends/host/logical.c, backends/opencl/logical.c. */
#include "graph/graph.h"
#include "ops/ops.h"

static clg_code infer_logical(clg_node *n)
{
  int rank = 0;
  int64_t dims[CLG_MAX_RANK];
  for (int i = 0; i < n->num_inputs; i++)
    if (clg_node_in(n, i)->dtype != CLG_BOOL)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes bool inputs, not %s", n->def->name,
                            clg_dtype_name(clg_node_in(n, i)->dtype));
  const clg_out_desc *a = clg_node_in(n, 0);
  if (n->num_inputs == 1)
    return clg_node_set_output(n, 0, CLG_BOOL, a->rank, a->dims);
  clg_code code = clg_infer_broadcast(n, a, clg_node_in(n, 1), &rank, dims);
  if (code != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, CLG_BOOL, rank, dims);
}

enum { A_T };

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code infer_float_test(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (x->dtype != CLG_FLOAT32 && x->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes a float input, not %s", n->def->name,
                          clg_dtype_name(x->dtype));
  clg_code code = clg_infer_dtype_attr(n, A_T, x->dtype, false);
  return code != CLG_OK ? code : clg_node_set_output(n, 0, CLG_BOOL, x->rank, x->dims);
}

#define LOGICAL_DEF(OP, NIN, NATTRS, ATTRS, INFER)                                                 \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = NIN,                                                                           \
      .num_outputs = 1,                                                                            \
      .num_attrs = NATTRS,                                                                         \
      .attrs = ATTRS,                                                                              \
      .infer = INFER,                                                                              \
      .inplace = -1,                                                                               \
      .grad = NULL,                                                                                \
  };
LOGICAL_DEF(LogicalAnd, 2, 0, NULL, infer_logical)
LOGICAL_DEF(LogicalOr, 2, 0, NULL, infer_logical)
LOGICAL_DEF(LogicalNot, 1, 0, NULL, infer_logical)
LOGICAL_DEF(IsNan, 1, 1, attrs, infer_float_test)
LOGICAL_DEF(IsInf, 1, 1, attrs, infer_float_test)

static clg_node *build(clg_graph *g, const clg_op_def *def, const char *name, int nin, clg_node *a,
                       clg_node *b)
{
  clg_output in[2] = {{a, 0}, {b, 0}};
  return clg_graph_build(g, def, name, nin, in, 0, NULL);
}

clg_node *clg_logical_and(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_LogicalAnd, name, 2, a, b);
}

clg_node *clg_logical_or(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_LogicalOr, name, 2, a, b);
}

clg_node *clg_logical_not(clg_graph *g, const char *name, clg_node *x)
{
  return build(g, &clg_op_LogicalNot, name, 1, x, NULL);
}

clg_node *clg_is_nan(clg_graph *g, const char *name, clg_node *x)
{
  return build(g, &clg_op_IsNan, name, 1, x, NULL);
}

clg_node *clg_is_inf(clg_graph *g, const char *name, clg_node *x)
{
  return build(g, &clg_op_IsInf, name, 1, x, NULL);
}
