/* Identity: its input, any dtype. Placed with its input when unconstrained (TensorFlow's
 * heuristic); reuses the input's buffer when it is the input's last use, and otherwise
 * copies. Kernels: backends/host/identity.c, backends/opencl/identity.c. */
#include "graph/graph.h"
#include "ops/ops.h"

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)g, (void)n;
  dx[0] = dy[0];
  return CLG_OK;
}

const clg_op_def clg_op_Identity = {
    .name = "Identity",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = attrs,
    .infer = clg_infer_elementwise_unary,
    .inplace = 0,
    .flags = CLG_OP_FOLLOWS_INPUT,
    .grad = grad,
};

clg_node *clg_identity(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_Identity, name, 1, &in, 0, NULL);
}
