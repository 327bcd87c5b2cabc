/* AddN: the sum of one or more inputs of one shape and dtype (tf.add_n), added in input
 * order on every device kind. The output may reuse input 0's buffer. */
#include <stdlib.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

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

static clg_code host_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const void *stack[16];
  const void **ptrs = n->num_inputs <= 16 ? stack : malloc(sizeof *ptrs * (size_t)n->num_inputs);
  if (!ptrs)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  for (int i = 0; i < n->num_inputs; i++)
    ptrs[i] = c->in[i].host;
  clg_host_addn(n->outs[0].dtype, ptrs, n->num_inputs, c->out[0].host, clg_out_count(&n->outs[0]));
  if (ptrs != stack)
    free(ptrs);
  return CLG_OK;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  return clg_cl_addn(c->dev, n->outs[0].dtype, c->in, n->num_inputs, &c->out[0],
                     clg_out_count(&n->outs[0]));
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, cl_run, NULL, NULL}};

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
    .kernels = kernels,
    .num_kernels = 2,
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
