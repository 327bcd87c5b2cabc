/* ReluGrad(gradients, features): the gradients where features > 0, else 0 (TensorFlow's
 * gradient of Relu, with features the Relu's output: 0 where the input was <= 0). Float
 * everywhere, double on the host and on devices with fp64; the output may reuse the
 * gradients' buffer. Kernels: backends/host/relu_grad.c, backends/opencl/relu_grad.c. */
#include "graph/graph.h"
#include "ops/ops.h"

static clg_code infer(clg_node *n)
{
  const clg_out_desc *g = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  bool same = g->dtype == f->dtype && g->rank == f->rank;
  for (int i = 0; same && i < g->rank; i++)
    same = g->dims[i] == f->dims[i];
  if (!same) {
    char sg[192], sf[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "gradients (%s %s) and features (%s %s) must have one dtype and shape",
                          clg_dtype_name(g->dtype), clg_out_shape_string(g, sg, sizeof sg),
                          clg_dtype_name(f->dtype), clg_out_shape_string(f, sf, sizeof sf));
  }
  return clg_infer_elementwise_unary(n);
}

const clg_op_def clg_op_ReluGrad = {
    .name = "ReluGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = clg_attrs_T,
    .infer = infer,
    .inplace = 0,
};

clg_node *clg_relu_grad(clg_graph *g, const char *name, clg_node *gradients, clg_node *features)
{
  clg_output in[2] = {{gradients, 0}, {features, 0}};
  return clg_graph_build(g, &clg_op_ReluGrad, name, 2, in, 0, NULL);
}
