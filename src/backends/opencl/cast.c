/* Cast on OpenCL devices: cl/cast.cl, built for float, and for double on devices with fp64;
 * half is read and written as storage (vload_half, vstore_half_rte); a cast to the same dtype
 * is a copy. */
#include <stdio.h>

#include "backends/opencl/opencl.h"

static const clg_cl_text cast_source = {"cast", NULL};

/* The kernel's code for a dtype in the program of element type prog. */
static char code_of(clg_dtype t, clg_dtype prog)
{
  switch (t) {
  case CLG_INT32:
    return 'i';
  case CLG_INT64:
    return 'l';
  case CLG_BOOL:
    return 'b';
  case CLG_FLOAT16:
    return 'h';
  case CLG_FLOAT32:
    return prog == CLG_FLOAT64 ? 'f' : 'T';
  default:
    return 'T';
  }
}

static clg_code cast_run(const clg_kernel_ctx *c)
{
  clg_dtype st = clg_node_in(c->node, 0)->dtype, dt = c->node->outs[0].dtype;
  size_t count = clg_out_count(&c->node->outs[0]);
  size_t ses = clg_dtype_size(st), des = clg_dtype_size(dt);
  cl_mem x = clg_cl_mem(&c->in[0]), y = clg_cl_mem(&c->out[0]);
  if (st == dt || count == 0) {
    if (count == 0 || (x == y && c->in[0].offset == c->out[0].offset))
      return CLG_OK;
    return clg_device_copy(c->dev, y, c->out[0].offset, c->dev, x, c->in[0].offset, count * ses,
                           NULL, NULL);
  }
  clg_dtype prog = st == CLG_FLOAT64 || dt == CLG_FLOAT64 ? CLG_FLOAT64 : CLG_FLOAT32;
  char kernel[32];
  char sc = code_of(st, prog), dc = code_of(dt, prog);
  snprintf(kernel, sizeof kernel, "clg_cast_%c_%c", sc, dc);
  cl_ulong xo = c->in[0].offset / ses, yo = c->out[0].offset / des, n = count;
  clg_cl_arg args[] = {
      {sizeof x, &x}, {sizeof xo, &xo}, {sizeof y, &y}, {sizeof yo, &yo}, {sizeof n, &n}};
  return clg_cl_launch(c->dev, prog, &cast_source, kernel, args, 5, count);
}

/* Double only where the device has fp64 (a same-dtype copy needs none). */
static bool cast_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype st = clg_node_in(n, 0)->dtype, dt = n->outs[0].dtype;
  return (st != CLG_FLOAT64 && dt != CLG_FLOAT64) || dev->info.has_fp64 || st == dt;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Cast, {CLG_KIND_OPENCL, cast_supports, cast_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_cast, entries);
