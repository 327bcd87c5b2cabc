/* Select(condition, t, e), TensorFlow 1.x's tf.where with three arguments: t where condition
 * is true, else e. t and e have one dtype and shape; condition is bool, of t's shape, a
 * scalar, or a vector along t's first dimension. Any dtype (a copy of the chosen element's
 * bytes), so an infinite or NaN element reaches the output only where it is chosen.
 * Kernels: backends/host/select.c, backends/opencl/select.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T };

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static bool same_shape(const clg_out_desc *a, const clg_out_desc *b)
{
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return false;
  return true;
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *c = clg_node_in(n, 0), *t = clg_node_in(n, 1), *e = clg_node_in(n, 2);
  char sc[192], st[192], se[192];
  clg_out_shape_string(c, sc, sizeof sc);
  clg_out_shape_string(t, st, sizeof st);
  clg_out_shape_string(e, se, sizeof se);
  if (c->dtype != CLG_BOOL)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "condition must be bool, not %s",
                          clg_dtype_name(c->dtype));
  if (t->dtype != e->dtype || !same_shape(t, e))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "'then' (%s %s) and 'else' (%s %s) must have one dtype and shape",
                          clg_dtype_name(t->dtype), st, clg_dtype_name(e->dtype), se);
  if (!same_shape(c, t) && c->rank != 0 &&
      !(c->rank == 1 && t->rank >= 1 && c->dims[0] == t->dims[0]))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "condition %s must be a scalar, a vector of the first dimension of "
                          "'then' %s, or of its shape",
                          sc, st);
  clg_attr_value *a = &n->attrs[A_T];
  if (a->set && a->dtype != t->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but 'then' is %s",
                          clg_dtype_name(a->dtype), clg_dtype_name(t->dtype));
  a->set = true;
  a->dtype = t->dtype;
  return clg_node_set_output(n, 0, t->dtype, t->rank, t->dims);
}

/* TensorFlow's _SelectGrad: none for the condition, dy where it chose t (else 0) for t, and
 * the rest for e. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output cond = n->inputs[0];
  clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &dy[0], 0, NULL);
  dx[1] = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){cond, dy[0], zeros}, 0, NULL);
  dx[2] = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){cond, zeros, dy[0]}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Select = {
    .name = "Select",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

clg_node *clg_select(clg_graph *g, const char *name, clg_node *condition, clg_node *t, clg_node *e)
{
  clg_output in[3] = {{condition, 0}, {t, 0}, {e, 0}};
  return clg_graph_build(g, &clg_op_Select, name, 3, in, 0, NULL);
}
