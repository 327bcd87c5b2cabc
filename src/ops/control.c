/* Switch and Merge (issue 23: tf.cond with a predicate known only at run time), with
 * TensorFlow's dead-tensor semantics, which the runner keeps per run (runtime/runner.c):
 * Switch(data, pred) forwards data to output 1 (output_true) if pred else to output 0
 * (output_false), and the other output is dead; a node with a dead input is dead (not run,
 * its outputs dead), except Merge, which forwards its first live input (output 0) and that
 * input's index (output 1, int32). Fetching a dead tensor is an error. A cond whose predicate
 * is a Const at import never gets here (import/cond.c). Kernels: backends/host/control.c,
 * backends/opencl/control.c; they learn and report deadness through clg_kernel_ctx.dead. */
#include "graph/graph.h"
#include "ops/ops.h"

static const clg_attr_def switch_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static const clg_attr_def merge_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "N", .type = CLG_ATTR_INT, .inferred = true},
};

static clg_code switch_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0), *p = clg_node_in(n, 1);
  if (p->dtype != CLG_BOOL || p->rank != 0) {
    char s[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "pred must be a bool scalar, not %s of shape %s",
                          clg_dtype_name(p->dtype), clg_out_shape_string(p, s, sizeof s));
  }
  clg_code code = clg_infer_dtype_attr(n, 0, x->dtype, false);
  if (code == CLG_OK)
    code = clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
  if (code == CLG_OK)
    code = clg_node_set_output(n, 1, x->dtype, x->rank, x->dims);
  return code;
}

static clg_code merge_infer(clg_node *n)
{
  const clg_out_desc *first = clg_node_in(n, 0);
  if (n->num_inputs > CLG_MERGE_MAX_INPUTS)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Merge takes at most %d inputs, not %d",
                          CLG_MERGE_MAX_INPUTS, n->num_inputs);
  for (int i = 1; i < n->num_inputs; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    bool same = x->dtype == first->dtype && x->rank == first->rank;
    for (int d = 0; same && d < x->rank; d++)
      same = x->dims[d] == first->dims[d];
    if (!same) { /* shapes are static: every branch must agree */
      char si[192], s0[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "input %d is %s %s, input 0 is %s %s", i,
                            clg_dtype_name(x->dtype), clg_out_shape_string(x, si, sizeof si),
                            clg_dtype_name(first->dtype),
                            clg_out_shape_string(first, s0, sizeof s0));
    }
  }
  clg_attr_value *nn = &n->attrs[1];
  if (nn->set && nn->i != n->num_inputs)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute N is %lld but there are %d inputs",
                          (long long)nn->i, n->num_inputs);
  nn->set = true;
  nn->i = n->num_inputs;
  clg_code code = clg_infer_dtype_attr(n, 0, first->dtype, true);
  if (code == CLG_OK)
    code = clg_node_set_output(n, 0, first->dtype, first->rank, first->dims);
  if (code == CLG_OK)
    code = clg_node_set_output(n, 1, CLG_INT32, 0, NULL);
  return code;
}

const clg_op_def clg_op_Switch = {
    .name = "Switch",
    .num_inputs = 2,
    .num_outputs = 2,
    .num_attrs = 1,
    .attrs = switch_attrs,
    .infer = switch_infer,
    .inplace = -1,
};

const clg_op_def clg_op_Merge = {
    .name = "Merge",
    .num_inputs = CLG_OP_VARIADIC,
    .num_outputs = 2,
    .num_attrs = 2,
    .attrs = merge_attrs,
    .infer = merge_infer,
    .inplace = -1,
};

clg_node *clg_switch(clg_graph *g, const char *name, clg_node *data, clg_node *pred)
{
  clg_output in[2] = {{data, 0}, {pred, 0}};
  return clg_graph_build(g, &clg_op_Switch, name, 2, in, 0, NULL);
}

clg_node *clg_merge(clg_graph *g, const char *name, int n, const clg_output *inputs)
{
  return clg_graph_build(g, &clg_op_Merge, name, n, inputs, 0, NULL);
}
