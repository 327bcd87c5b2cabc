/* MaxPoolGrad, AvgPoolGrad, LRNGrad and BiasAddGrad on OpenCL devices: one work-item per
 * output element (pooling: a gather over the windows holding it), so no atomics and no
 * dependence on scheduling; BiasAddGrad is Sum's kernel of cl/reduce.cl over the rows. */
#include <string.h>

#include "backends/opencl/opencl.h"

/* Output 0 float, or double with fp64, and inputs first..last of its dtype. */
static bool float_kernel(const clg_node *n, const clg_device *dev, int first, int last)
{
  clg_dtype t = n->outs[0].dtype;
  for (int i = first; i <= last; i++)
    if (clg_node_in(n, i)->dtype != t)
      return false;
  return clg_kernel_float_dtype(t, dev);
}

static bool is_avg(const clg_node *n) { return n->def == &clg_op_AvgPoolGrad; }

static clg_code pool_cl(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_pool_grad_geometry(c->node, &g);
  bool avg = is_avg(c->node);
  return clg_cl_pool_grad(c->dev, c->node->outs[0].dtype, avg, avg ? NULL : &c->in[0],
                          &c->in[avg ? 1 : 2], &c->out[0], &g);
}

static bool pool_supports(const clg_node *n, const clg_device *dev)
{
  return is_avg(n) ? float_kernel(n, dev, 1, 1) : float_kernel(n, dev, 0, 2);
}

static clg_code lrn_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  clg_lrn_params p = clg_lrn_params_of(c->node);
  return clg_cl_lrn_grad(c->dev, x->dtype, &c->in[0], &c->in[1], &c->in[2], &c->out[0],
                         clg_out_count(x), x->dims[3], p.depth_radius, p.bias, p.alpha, p.beta);
}

static const clg_cl_text reduce_source = {"reduce", NULL};

/* Sum's kernel of cl/reduce.cl: one work-group per channel over the rows. */
static clg_code bias_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *in = clg_node_in(c->node, 0);
  size_t k = (size_t)in->dims[in->rank - 1];
  size_t rows = k ? clg_out_count(in) / k : 0;
  if (k == 0)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  clg_strided keep, red;
  memset(&keep, 0, sizeof keep);
  memset(&red, 0, sizeof red);
  keep.rank = red.rank = 1;
  keep.dims[0] = k;
  keep.sa[0] = 1;
  red.dims[0] = rows ? rows : 1;
  red.sa[0] = k;
  clg_cl_map km, rm;
  clg_strided_to_cl(&keep, &km);
  clg_strided_to_cl(&red, &rm);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es, nr = rows;
  cl_uint op = CLG_REDUCTION_SUM;
  clg_cl_arg args[] = {{sizeof x, &x},   {sizeof xo, &xo}, {sizeof y, &y},   {sizeof yo, &yo},
                       {sizeof nr, &nr}, {sizeof km, &km}, {sizeof rm, &rm}, {sizeof op, &op}};
  return clg_cl_launch_groups(c->dev, dt, &reduce_source, "clg_reduce", args, 8, k, rows);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_MaxPoolGrad, {CLG_KIND_OPENCL, pool_supports, pool_cl, NULL, NULL}},
    {&clg_op_AvgPoolGrad, {CLG_KIND_OPENCL, pool_supports, pool_cl, NULL, NULL}},
    {&clg_op_LRNGrad, {CLG_KIND_OPENCL, clg_kernel_float_or_double, lrn_cl, NULL, NULL}},
    {&clg_op_BiasAddGrad, {CLG_KIND_OPENCL, clg_kernel_float_or_double, bias_cl, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_nn_grad, entries);
