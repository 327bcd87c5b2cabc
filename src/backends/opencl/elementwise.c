/* OpenCL element-wise kernels (cl/elementwise.cl): Add, Sub, Mul with a broadcast scalar
 * operand, and AddN eight inputs at a time. The program comes from the backend's one cache
 * (program.c): one per (context, dtype), built for every device of the context that
 * supports the dtype; cl/elementwise.cl defines T itself from -DCLG_DOUBLE.
 */
#include <stdio.h>

#include "backends/opencl/opencl.h"

static const clg_cl_text source = {"elementwise", NULL};

static clg_code check_device(const clg_device *dev, clg_dtype dtype, const char *what)
{
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: dev is NULL", what);
  if (dev->is_host || !clg_cl_context(dev) || !clg_cl_queue(dev) || !clg_cl_device_id(dev))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: device %s is not an OpenCL device", what,
                     dev->info.name ? dev->info.name : "(unnamed)");
  if (dtype != CLG_FLOAT32 && dtype != CLG_FLOAT64)
    return clg_error(CLG_UNIMPLEMENTED, "%s: no OpenCL kernel for dtype %d on %s", what, (int)dtype,
                     dev->info.name);
  if (dtype == CLG_FLOAT64 && !dev->info.has_fp64)
    return clg_error(CLG_UNIMPLEMENTED, "%s: %s has no double precision (cl_khr_fp64)", what,
                     dev->info.name);
  return CLG_OK;
}

/* Checks that block b holds elems elements of es bytes at an element-aligned offset. */
static clg_code check_block(const clg_block *b, const char *arg, size_t es, size_t elems,
                            const char *what)
{
  if (!b)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s is NULL", what, arg);
  if (!b->mem)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s has no cl_mem (a host block?)", what, arg);
  if (b->offset % es != 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s offset %zu is not a multiple of the element size %zu", what, arg,
                     b->offset, es);
  if (elems > b->size / es)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s holds %zu bytes, fewer than the %zu elements of %zu bytes needed",
                     what, arg, b->size, elems, es);
  return CLG_OK;
}

clg_code clg_cl_prepare(clg_device *dev)
{
  clg_code code = check_device(dev, CLG_FLOAT32, "clg_cl_prepare");
  if (code != CLG_OK)
    return code;
  if ((code = clg_cl_program_prepare(dev, CLG_FLOAT32, &source, CLG_CL_OWN_T)) != CLG_OK)
    return code;
  if (dev->info.has_fp64 &&
      (code = clg_cl_program_prepare(dev, CLG_FLOAT64, &source, CLG_CL_OWN_T)) != CLG_OK)
    return code;
  return CLG_OK;
}

clg_code clg_cl_binary(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                       size_t na, const clg_block *b, size_t nb, const clg_block *out, size_t count)
{
  static const char *what = "clg_cl_binary";
  clg_code code = check_device(dev, dtype, what);
  if (code != CLG_OK)
    return code;
  if (op != CLG_BINOP_ADD && op != CLG_BINOP_SUB && op != CLG_BINOP_MUL)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: op %d is not a clg_binop", what, (int)op);
  if (count == 0)
    return CLG_OK;
  if (na != count && na != 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: na is %zu; want 1 or count (%zu)", what, na, count);
  if (nb != count && nb != 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: nb is %zu; want 1 or count (%zu)", what, nb, count);
  size_t es = clg_dtype_size(dtype);
  if ((code = check_block(a, "a", es, na, what)) != CLG_OK ||
      (code = check_block(b, "b", es, nb, what)) != CLG_OK ||
      (code = check_block(out, "out", es, count, what)) != CLG_OK)
    return code;
  cl_ulong a_off = a->offset / es, b_off = b->offset / es, o_off = out->offset / es;
  cl_ulong a_step = na == 1 ? 0 : 1, b_step = nb == 1 ? 0 : 1, n = count;
  clg_cl_arg args[] = {
      {sizeof(cl_mem), &a->mem},   {sizeof a_off, &a_off}, {sizeof a_step, &a_step},
      {sizeof(cl_mem), &b->mem},   {sizeof b_off, &b_off}, {sizeof b_step, &b_step},
      {sizeof(cl_mem), &out->mem}, {sizeof o_off, &o_off}, {sizeof n, &n}};
  const char *k = op == CLG_BINOP_ADD ? "clg_add" : op == CLG_BINOP_SUB ? "clg_sub" : "clg_mul";
  return clg_cl_launch_own(dev, dtype, &source, k, args, (int)(sizeof args / sizeof args[0]),
                           count);
}

clg_code clg_cl_addn(clg_device *dev, clg_dtype dtype, const clg_block *inputs, int n,
                     const clg_block *out, size_t count)
{
  static const char *what = "clg_cl_addn";
  clg_code code = check_device(dev, dtype, what);
  if (code != CLG_OK)
    return code;
  if (n < 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: n is %d; want at least 1 input", what, n);
  if (!inputs)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: inputs is NULL", what);
  if (count == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(dtype);
  for (int i = 0; i < n; i++) {
    char arg[32];
    snprintf(arg, sizeof arg, "inputs[%d]", i);
    if ((code = check_block(&inputs[i], arg, es, count, what)) != CLG_OK)
      return code;
  }
  if ((code = check_block(out, "out", es, count, what)) != CLG_OK)
    return code;

  /* Up to 8 inputs per launch; later launches add up to 7 more to the running sum in out,
   * so the order of additions is the host's: ((x0 + x1) + x2) + ... */
  cl_ulong o_off = out->offset / es, cnt = count;
  int done = 0;
  while (done < n) {
    const clg_block *blk[8];
    int used = 0;
    if (done > 0)
      blk[used++] = out;
    while (used < 8 && done < n)
      blk[used++] = &inputs[done++];
    cl_uint nin = (cl_uint)used;
    cl_ulong offs[8];
    clg_cl_arg args[4 + 16];
    args[0] = (clg_cl_arg){sizeof(cl_mem), &out->mem};
    args[1] = (clg_cl_arg){sizeof o_off, &o_off};
    args[2] = (clg_cl_arg){sizeof cnt, &cnt};
    args[3] = (clg_cl_arg){sizeof nin, &nin};
    for (int i = 0; i < 8; i++) {
      const clg_block *x = blk[i < used ? i : 0];
      offs[i] = x->offset / es;
      args[4 + 2 * i] = (clg_cl_arg){sizeof(cl_mem), &x->mem};
      args[5 + 2 * i] = (clg_cl_arg){sizeof offs[i], &offs[i]};
    }
    if ((code = clg_cl_launch_own(dev, dtype, &source, "clg_addn8", args, 20, count)) != CLG_OK)
      return code;
  }
  return CLG_OK;
}
