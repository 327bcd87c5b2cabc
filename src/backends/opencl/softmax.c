/* Softmax, LogSoftmax, SparseSoftmaxCrossEntropyWithLogits and InTopKV2 on OpenCL devices:
 * one work-group per row, its max and sum folded as trees in local memory (cl/reduce.cl). */
#include <stdlib.h>

#include "backends/opencl/opencl.h"

static const clg_cl_text source = {"reduce", NULL};

/* Input 0 float, or double with fp64 (labels and targets are integer). */
static bool float_input0(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

static clg_code softmax_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *in = clg_node_in(c->node, 0);
  size_t k = (size_t)in->dims[in->rank - 1];
  size_t rows = k ? clg_out_count(in) / k : 0;
  if (rows == 0)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es, n = k;
  cl_uint log_out = c->node->def == &clg_op_LogSoftmax;
  clg_cl_arg args[] = {{sizeof x, &x},   {sizeof xo, &xo}, {sizeof y, &y},
                       {sizeof yo, &yo}, {sizeof n, &n},   {sizeof log_out, &log_out}};
  return clg_cl_launch_groups(c->dev, dt, &source, "clg_softmax", args, 6, rows, k);
}

static clg_code xent_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  size_t b = (size_t)x->dims[0], k = (size_t)x->dims[1];
  if (b == 0)
    return CLG_OK;
  clg_dtype lt = clg_node_in(c->node, 1)->dtype;
  size_t lbytes = b * clg_dtype_size(lt);
  cl_mem xm = clg_cl_mem(&c->in[0]), lm = clg_cl_mem(&c->in[1]), sm = clg_cl_mem(&c->out[0]),
         bm = clg_cl_mem(&c->out[1]);
  /* The labels are checked on the host (a small read that waits for their producer): a
   * kernel cannot raise TensorFlow's error. */
  void *labels = malloc(lbytes);
  if (!labels)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the labels of '%s'",
                     c->node->name);
  clg_code code = clg_device_download(c->dev, lm, c->in[1].offset, labels, lbytes);
  if (code == CLG_OK)
    code = clg_xent_check_labels(c->node, labels, lt, b, k);
  free(labels);
  if (code != CLG_OK)
    return code;
  size_t es = clg_dtype_size(x->dtype);
  cl_ulong xo = c->in[0].offset / es, lo = c->in[1].offset / clg_dtype_size(lt),
           so = c->out[0].offset / es, bo = c->out[1].offset / es, n = k;
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo}, {sizeof lm, &lm},
                       {sizeof lo, &lo}, {sizeof sm, &sm}, {sizeof so, &so},
                       {sizeof bm, &bm}, {sizeof bo, &bo}, {sizeof n, &n}};
  return clg_cl_launch_groups(c->dev, x->dtype, &source,
                              lt == CLG_INT32 ? "clg_xent_i32" : "clg_xent_i64", args, 9, b, k);
}

static clg_code intopk_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *p = clg_node_in(c->node, 0);
  size_t b = (size_t)p->dims[0], nk = (size_t)p->dims[1];
  if (b == 0)
    return CLG_OK;
  clg_dtype tt = clg_node_in(c->node, 1)->dtype;
  cl_long k = clg_in_top_k_k(c->node);
  cl_mem xm = clg_cl_mem(&c->in[0]), tm = clg_cl_mem(&c->in[1]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / clg_dtype_size(p->dtype),
           to = c->in[1].offset / clg_dtype_size(tt), yo = c->out[0].offset, n = nk;
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo}, {sizeof tm, &tm}, {sizeof to, &to},
                       {sizeof ym, &ym}, {sizeof yo, &yo}, {sizeof n, &n},   {sizeof k, &k}};
  return clg_cl_launch_groups(c->dev, p->dtype, &source,
                              tt == CLG_INT32 ? "clg_intopk_i32" : "clg_intopk_i64", args, 8, b,
                              nk);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Softmax, {CLG_KIND_OPENCL, clg_kernel_float_or_double, softmax_cl, NULL, NULL}},
    {&clg_op_LogSoftmax, {CLG_KIND_OPENCL, clg_kernel_float_or_double, softmax_cl, NULL, NULL}},
    {&clg_op_SparseSoftmaxCrossEntropyWithLogits,
     {CLG_KIND_OPENCL, float_input0, xent_cl, NULL, NULL}},
    {&clg_op_InTopKV2, {CLG_KIND_OPENCL, float_input0, intopk_cl, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_softmax, entries);
