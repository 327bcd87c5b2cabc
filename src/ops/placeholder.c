/* Placeholder: a value fed at run time, with a static shape. Running one unfed is
 * TensorFlow's INVALID_ARGUMENT ("You must feed a value for placeholder tensor ...").
 * Kernels: backends/host/placeholder.c, backends/opencl/placeholder.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_DTYPE, A_SHAPE };

static const clg_attr_def attrs[] = {
    {.name = "dtype", .type = CLG_ATTR_DTYPE},
    {.name = "shape", .type = CLG_ATTR_SHAPE},
};

static clg_code infer(clg_node *n)
{
  const clg_attr_value *s = &n->attrs[A_SHAPE];
  return clg_node_set_output(n, 0, n->attrs[A_DTYPE].dtype, s->n, s->v);
}

const clg_op_def clg_op_Placeholder = {
    .name = "Placeholder",
    .num_inputs = 0,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .flags = CLG_OP_MUST_FEED,
};

clg_node *clg_placeholder(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                          const int64_t *dims)
{
  clg_attr a[2] = {clg_attr_dtype("dtype", dtype), clg_attr_shape("shape", rank, dims)};
  return clg_graph_build(g, &clg_op_Placeholder, name, 0, NULL, 2, a);
}
