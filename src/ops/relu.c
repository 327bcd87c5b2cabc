/* Relu: max(x, 0), element-wise (tf.nn.relu). NaN stays NaN, as in TensorFlow. Float everywhere,
 * double on the host and on devices with fp64; the output may reuse the input's buffer.
 * Kernels: backends/host/relu.c, backends/opencl/relu.c. */
#include "graph/graph.h"
#include "ops/ops.h"

/* ReluGrad(dy, y): TensorFlow passes the Relu's output, which is 0 wherever x <= 0. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = clg_grad_build(g, &clg_op_ReluGrad, 2, (clg_output[]){dy[0], clg_out(n, 0)}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Relu = {
    .name = "Relu",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = clg_attrs_T,
    .infer = clg_infer_elementwise_unary,
    .inplace = 0,
    .grad = grad,
};

clg_node *clg_relu(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_Relu, name, 1, &in, 0, NULL);
}
