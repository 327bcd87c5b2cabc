/* Sum, Mean, Max, Min, Prod, L2Loss, ArgMax and ArgMin on OpenCL devices: one work-group per output
 * folds its elements as a tree in local memory (cl/reduce.cl). */
#include "backends/opencl/opencl.h"

static const clg_cl_text source = {"reduce", NULL};

static clg_code reduce_cl(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  if (nout == 0)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  clg_cl_map km, rm;
  clg_strided_to_cl(&keep, &km);
  clg_strided_to_cl(&red, &rm);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es, nr = nred;
  cl_uint op = (cl_uint)clg_reduction_of(c->node);
  clg_cl_arg args[] = {{sizeof x, &x},   {sizeof xo, &xo}, {sizeof y, &y},   {sizeof yo, &yo},
                       {sizeof nr, &nr}, {sizeof km, &km}, {sizeof rm, &rm}, {sizeof op, &op}};
  return clg_cl_launch_groups(c->dev, dt, &source, "clg_reduce", args, 8, nout, nred);
}

static clg_code argmax_cl(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  if (nout == 0)
    return CLG_OK;
  clg_dtype dt = clg_node_in(c->node, 0)->dtype, ot = c->node->outs[0].dtype;
  clg_cl_map km, rm;
  clg_strided_to_cl(&keep, &km);
  clg_strided_to_cl(&red, &rm);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / clg_dtype_size(dt), yo = c->out[0].offset / clg_dtype_size(ot),
           nr = nred;
  clg_cl_arg args[] = {{sizeof x, &x},   {sizeof xo, &xo}, {sizeof y, &y},  {sizeof yo, &yo},
                       {sizeof nr, &nr}, {sizeof km, &km}, {sizeof rm, &rm}};
  bool min = c->node->def == &clg_op_ArgMin;
  const char *kernel = min ? (ot == CLG_INT64 ? "clg_argmin_i64" : "clg_argmin_i32")
                           : (ot == CLG_INT64 ? "clg_argmax_i64" : "clg_argmax_i32");
  return clg_cl_launch_groups(c->dev, dt, &source, kernel, args, 7, nout, nred);
}

/* Float inputs (the axes may be int32 or int64), double with fp64. */
static bool float_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Sum, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_Mean, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_Max, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_L2Loss, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_ArgMax, {CLG_KIND_OPENCL, float_supports, argmax_cl, NULL, NULL}},
    {&clg_op_Min, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_Prod, {CLG_KIND_OPENCL, float_supports, reduce_cl, NULL, NULL}},
    {&clg_op_ArgMin, {CLG_KIND_OPENCL, float_supports, argmax_cl, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_reduce, entries);
