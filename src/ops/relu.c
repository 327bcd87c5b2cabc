/* Relu: max(x, 0), element-wise (tf.nn.relu). NaN stays NaN, as in TensorFlow. Float everywhere,
 * double on the host and on devices with fp64; the output may reuse the input's buffer. */
#include "graph/graph.h"
#include "kernels/kernels.h"
#include "memory/memory.h"

/* !(x <= 0) holds for x > 0 and for NaN: one compare and a select, no branch, so the loop
 * vectorises (a branch on the sign mispredicts half the time on activations). */
#define LOOP(T)                                                                                    \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t i = begin; i < end; i++) {                                                         \
      T v = x[i];                                                                                  \
      y[i] = !(v <= 0) ? v : 0;                                                                    \
    }                                                                                              \
  } while (0)

static void host_range(void *ctx, size_t begin, size_t end)
{
  const clg_kernel_ctx *c = ctx;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double);
  else
    LOOP(float);
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  /* Element ranges across the cores (each element written once, by one thread; in place is
   * fine: each element is read before it is written, by the same thread). */
  clg_host_parallel_for(clg_out_count(&c->node->outs[0]), 1 << 15, host_range, (void *)c);
  return CLG_OK;
}

static const clg_cl_text source = {
    "Relu",
    "T clg_op(T x) { return x > (T)0 ? x : (isnan(x) ? x : (T)0); }\n" CLG_CL_UNARY_TEMPLATE};

static clg_code cl_run(const clg_kernel_ctx *c)
{
  return clg_cl_unary(c->dev, &source, c->node->outs[0].dtype, &c->in[0], &c->out[0],
                      clg_out_count(&c->node->outs[0]));
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, cl_run, NULL, NULL}};

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
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = 0,
    .grad = grad,
};

clg_node *clg_relu(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_Relu, name, 1, &in, 0, NULL);
}
