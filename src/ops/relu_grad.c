/* ReluGrad(gradients, features): the gradients where features > 0, else 0 (TensorFlow's
 * gradient of Relu, with features the Relu's output: 0 where the input was <= 0). Float
 * everywhere, double on the host and on devices with fp64; the output may reuse the
 * gradients' buffer. */
#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

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

#define LOOP(T)                                                                                    \
  do {                                                                                             \
    const T *g = c->in[0].host, *f = c->in[1].host;                                                \
    T *y = c->out[0].host;                                                                         \
    for (size_t i = begin; i < end; i++) { /* both loaded: a select, not a branch */               \
      T gv = g[i], fv = f[i];                                                                      \
      y[i] = fv > 0 ? gv : 0;                                                                      \
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
  /* Element ranges across the cores (each element written once, by one thread). */
  clg_host_parallel_for(clg_out_count(&c->node->outs[0]), 1 << 15, host_range, (void *)c);
  return CLG_OK;
}

static const clg_cl_text source = {
    "ReluGrad",
    "__kernel void clg_relu_grad(__global const T *g, ulong go, __global const T *f, ulong fo,\n"
    "                            __global T *y, ulong yo, ulong n)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i < n)\n"
    "    y[yo + i] = f[fo + i] > (T)0 ? g[go + i] : (T)0;\n"
    "}\n"};

static clg_code cl_run(const clg_kernel_ctx *c)
{
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  cl_ulong go = c->in[0].offset / es, fo = c->in[1].offset / es, yo = c->out[0].offset / es;
  cl_ulong n = clg_out_count(&c->node->outs[0]);
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof go, &go},
                       {sizeof(cl_mem), &c->in[1].mem},
                       {sizeof fo, &fo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n}};
  return clg_cl_launch(c->dev, c->node->outs[0].dtype, &source, "clg_relu_grad", args, 7,
                       (size_t)n);
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, cl_run, NULL, NULL}};

const clg_op_def clg_op_ReluGrad = {
    .name = "ReluGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = clg_attrs_T,
    .infer = infer,
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = 0,
};

clg_node *clg_relu_grad(clg_graph *g, const char *name, clg_node *gradients, clg_node *features)
{
  clg_output in[2] = {{gradients, 0}, {features, 0}};
  return clg_graph_build(g, &clg_op_ReluGrad, name, 2, in, 0, NULL);
}
