/* AddN: the sum of one or more inputs of one shape and dtype (tf.add_n), added in input
 * order on every device kind. The output may reuse input 0's buffer.
 * Kernels: backends/host/add_n.c, backends/opencl/add_n.c. */
#include <stdlib.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_N, A_T };

static const clg_attr_def attrs[] = {
    {.name = "N", .type = CLG_ATTR_INT, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code infer(clg_node *n)
{
  const clg_out_desc *first = clg_node_in(n, 0);
  for (int i = 1; i < n->num_inputs; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    if (x->dtype != first->dtype)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "input %d has dtype %s, input 0 has %s", i,
                            clg_dtype_name(x->dtype), clg_dtype_name(first->dtype));
    bool same = x->rank == first->rank;
    for (int d = 0; same && d < x->rank; d++)
      same = x->dims[d] == first->dims[d];
    if (!same) {
      char si[192], s0[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "input %d has shape %s, input 0 has %s", i,
                            clg_out_shape_string(x, si, sizeof si),
                            clg_out_shape_string(first, s0, sizeof s0));
    }
  }
  clg_attr_value *nn = &n->attrs[A_N], *t = &n->attrs[A_T];
  if ((nn->set && nn->i != n->num_inputs) || (t->set && t->dtype != first->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "attributes N and T must match the %d inputs of dtype %s", n->num_inputs,
                          clg_dtype_name(first->dtype));
  nn->set = t->set = true;
  nn->i = n->num_inputs;
  t->dtype = first->dtype;
  return clg_node_set_output(n, 0, first->dtype, first->rank, first->dims);
}

/* Every input gets the output's gradient. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)g;
  for (int i = 0; i < n->num_inputs; i++)
    dx[i] = dy[0];
  return CLG_OK;
}

const clg_op_def clg_op_AddN = {
    .name = "AddN",
    .num_inputs = CLG_OP_VARIADIC,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = attrs,
    .infer = infer,
    .inplace = 0,
    .grad = grad,
};

clg_node *clg_add_n(clg_graph *g, const char *name, int n, clg_node *const *inputs)
{
  clg_output stack[16];
  clg_output *in = stack;
  if (n > 16 && inputs && !(in = malloc(sizeof *in * (size_t)n))) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "AddN: out of memory for %d inputs", n);
    return clg_graph_build(g, &clg_op_AddN, name, 0, NULL, 0, NULL);
  }
  for (int i = 0; inputs && i < n; i++)
    in[i] = clg_out(inputs[i], 0);
  clg_node *node = clg_graph_build(g, &clg_op_AddN, name, n, inputs ? in : NULL, 0, NULL);
  if (in != stack)
    free(in);
  return node;
}
