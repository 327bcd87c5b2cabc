/* AllReduce: the sum or the mean of a tensor over all tasks of the cluster (TensorFlow's
 * collective reduce, Horovod's allreduce), for data-parallel training: every task runs its
 * own copy (its spec names no task), and each copy's output is the reduction of every copy's
 * input. Outside a cluster (one task) the output is the input. float32, float64, int32 and
 * int64; the mean of integers truncates. Every task must run its AllReduce nodes in the same
 * order (the same graph and runs do). */
#include <string.h>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_REDUCTION };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "reduction", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "sum"},
};

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (!clg_cluster_reduce_dtype_ok(x->dtype))
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT,
        "dtype %s is not reduced; AllReduce takes float32, float64, int32 or int64",
        clg_dtype_name(x->dtype));
  const char *r = n->attrs[A_REDUCTION].s;
  if (!r || (strcmp(r, "sum") != 0 && strcmp(r, "mean") != 0))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "reduction is \"%s\"; expected \"sum\" or \"mean\"", r ? r : "(null)");
  return clg_infer_elementwise_unary(n); /* T first: the output is the input's */
}

/* Each task's input contributes to every task's output with weight 1 (sum) or 1/P (mean):
 * the gradient is the same reduction of the output gradients. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr at = clg_attr_string("reduction", n->attrs[A_REDUCTION].s);
  dx[0] = clg_grad_build(g, n->def, 1, dy, 1, &at);
  return dx[0].node ? CLG_OK : clg_graph_status(g);
}

const clg_op_def clg_op_AllReduce = {
    .name = "AllReduce",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = attrs,
    .infer = infer,
    .inplace = 0,
    .grad = grad,
};

clg_node *clg_all_reduce(clg_graph *g, const char *name, clg_node *x, const char *reduction)
{
  clg_output in[1] = {{x, 0}};
  clg_attr at = clg_attr_string("reduction", reduction);
  return clg_graph_build(g, &clg_op_AllReduce, name, 1, x ? in : NULL, reduction ? 1 : 0, &at);
}
