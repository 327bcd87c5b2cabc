/* BiasAdd (a broadcast add), MaxPool, AvgPool and LRN on OpenCL devices (the launchers in
 * nn.c and broadcast.c). */
#include "backends/opencl/opencl.h"

/* [rows, C] + [C] as a broadcast. */
static void bias_map(const clg_node *n, clg_strided *m)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  size_t c = (size_t)x->dims[x->rank - 1];
  int64_t dx[2] = {(int64_t)(c ? clg_out_count(x) / c : 0), (int64_t)c}, db[1] = {(int64_t)c};
  clg_strided_broadcast(m, 2, dx, 1, db, 2, dx);
}

static clg_code bias_cl(const clg_kernel_ctx *c)
{
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  clg_strided m;
  bias_map(c->node, &m);
  return clg_cl_broadcast(c->dev, CLG_BINOP_ADD, c->node->outs[0].dtype, &c->in[0], &c->in[1],
                          &c->out[0], &m);
}

static clg_code pool_cl(const clg_kernel_ctx *c)
{
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  clg_window g;
  clg_pool_geometry(c->node, &g);
  return clg_cl_pool(c->dev, c->node->outs[0].dtype, c->node->def == &clg_op_AvgPool, &c->in[0],
                     &c->out[0], &g);
}

static clg_code lrn_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  clg_lrn_params p = clg_lrn_params_of(c->node);
  return clg_cl_lrn(c->dev, x->dtype, &c->in[0], &c->out[0], clg_out_count(x), x->dims[3],
                    p.depth_radius, p.bias, p.alpha, p.beta);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_BiasAdd, {CLG_KIND_OPENCL, clg_kernel_float_or_double, bias_cl, NULL, NULL}},
    {&clg_op_MaxPool, {CLG_KIND_OPENCL, clg_kernel_float_or_double, pool_cl, NULL, NULL}},
    {&clg_op_AvgPool, {CLG_KIND_OPENCL, clg_kernel_float_or_double, pool_cl, NULL, NULL}},
    {&clg_op_LRN, {CLG_KIND_OPENCL, clg_kernel_float_or_double, lrn_cl, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_nn, entries);
