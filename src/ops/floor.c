/* Floor: the largest integer not above x, element-wise (tf.floor). Float everywhere, double
 * on the host and on devices with fp64; the output may reuse the input's buffer. Its
 * gradient is None, as TensorFlow registers it (0 almost everywhere). */
#include <math.h>

#include "graph/graph.h"
#include "kernels/kernels.h"
#include "memory/memory.h"

#define LOOP(T)                                                                                    \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t i = 0; i < count; i++)                                                             \
      y[i] = floor(x[i]);                                                                          \
  } while (0)

static clg_code host_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double);
  else
    LOOP(float);
  return CLG_OK;
}

static const clg_cl_text source = {"Floor",
                                   "T clg_op(T x) { return floor(x); }\n" CLG_CL_UNARY_TEMPLATE};

static clg_code cl_run(const clg_kernel_ctx *c)
{
  return clg_cl_unary(c->dev, &source, c->node->outs[0].dtype, &c->in[0], &c->out[0],
                      clg_out_count(&c->node->outs[0]));
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, cl_run, NULL, NULL}};

static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)g, (void)n, (void)dy;
  dx[0] = clg_out(NULL, 0);
  return CLG_OK;
}

const clg_op_def clg_op_Floor = {
    .name = "Floor",
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

clg_node *clg_floor(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_Floor, name, 1, &in, 0, NULL);
}
