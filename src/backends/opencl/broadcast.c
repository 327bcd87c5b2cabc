/* Numpy broadcasting, Transpose and fills on OpenCL devices (cl/broadcast.cl). */
#include <string.h>

#include "backends/opencl/opencl.h"

/* The layout of clg_map in cl/broadcast.cl. */
static const clg_cl_text source = {"broadcast", NULL};

void clg_strided_to_cl(const clg_strided *m, clg_cl_map *c)
{
  memset(c, 0, sizeof *c);
  c->rank = (cl_ulong)m->rank;
  for (int k = 0; k < m->rank; k++) {
    c->dims[k] = m->dims[k];
    c->sa[k] = m->sa[k];
    c->sb[k] = m->sb[k];
  }
}

clg_code clg_cl_broadcast(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                          const clg_block *b, const clg_block *out, const clg_strided *m)
{
  static const char *const names[] = {
      "clg_bc_add",      "clg_bc_sub",   "clg_bc_mul",     "clg_bc_div",   "clg_bc_max",
      "clg_bc_equal",    "clg_bc_ge",    "clg_bc_min",     "clg_bc_prelu", "clg_bc_floordiv",
      "clg_bc_floormod", "clg_bc_less",  "clg_bc_greater", "clg_bc_le",    "clg_bc_ne",
      "clg_bc_pow",      "clg_bc_atan2", "clg_bc_and",     "clg_bc_or",    "clg_bc_sqdiff"};
  static const char *const int_names[6][2] = {
      {"clg_bc_equal_i32", "clg_bc_equal_i64"}, {"clg_bc_ge_i32", "clg_bc_ge_i64"},
      {"clg_bc_less_i32", "clg_bc_less_i64"},   {"clg_bc_greater_i32", "clg_bc_greater_i64"},
      {"clg_bc_le_i32", "clg_bc_le_i64"},       {"clg_bc_ne_i32", "clg_bc_ne_i64"}};
  bool compare = op == CLG_BINOP_EQUAL || op == CLG_BINOP_GREATER_EQUAL ||
                 (op >= CLG_BINOP_LESS && op <= CLG_BINOP_NOT_EQUAL);
  bool logical = op == CLG_BINOP_AND || op == CLG_BINOP_OR; /* bytes, as the int compares */
  size_t es = clg_dtype_size(dtype), oes = compare || logical ? 1 : es;
  const char *kernel = names[op];
  clg_dtype prog = logical ? CLG_FLOAT32 : dtype;
  if (compare && (dtype == CLG_INT32 || dtype == CLG_INT64)) {
    int row = op == CLG_BINOP_EQUAL           ? 0
              : op == CLG_BINOP_GREATER_EQUAL ? 1
                                              : 2 + (op - CLG_BINOP_LESS);
    kernel = int_names[row][dtype == CLG_INT64];
    prog = CLG_FLOAT32;
  }
  if (op == CLG_BINOP_SQDIFF && (dtype == CLG_INT32 || dtype == CLG_INT64)) {
    kernel = dtype == CLG_INT64 ? "clg_bc_sqdiff_i64" : "clg_bc_sqdiff_i32";
    prog = CLG_FLOAT32;
  }
  if (compare && dtype == CLG_BOOL) { /* Equal, NotEqual */
    kernel = op == CLG_BINOP_EQUAL ? "clg_bc_equal_u8" : "clg_bc_ne_u8";
    prog = CLG_FLOAT32;
  }
  clg_cl_map cm;
  clg_strided_to_cl(m, &cm);
  cl_ulong ao = a->offset / es, bo = b->offset / es, oo = out->offset / oes,
           n = clg_strided_count(m);
  clg_cl_arg args[] = {{sizeof(cl_mem), &a->mem},
                       {sizeof ao, &ao},
                       {sizeof(cl_mem), &b->mem},
                       {sizeof bo, &bo},
                       {sizeof(cl_mem), &out->mem},
                       {sizeof oo, &oo},
                       {sizeof n, &n},
                       {sizeof cm, &cm}};
  return clg_cl_launch(dev, prog, &source, kernel, args, 8, (size_t)n);
}

clg_code clg_cl_gather(clg_device *dev, size_t es, const clg_block *a, const clg_block *out,
                       const clg_strided *m)
{
  const char *kernel = es == 1   ? "clg_gather1"
                       : es == 2 ? "clg_gather2"
                       : es == 4 ? "clg_gather4"
                                 : "clg_gather8";
  clg_cl_map cm;
  clg_strided_to_cl(m, &cm);
  cl_ulong ao = a->offset / es, oo = out->offset / es, n = clg_strided_count(m);
  clg_cl_arg args[] = {{sizeof(cl_mem), &a->mem}, {sizeof ao, &ao}, {sizeof(cl_mem), &out->mem},
                       {sizeof oo, &oo},          {sizeof n, &n},   {sizeof cm, &cm}};
  return clg_cl_launch(dev, CLG_FLOAT32, &source, kernel, args, 6, (size_t)n);
}

clg_code clg_cl_fill(clg_device *dev, const clg_block *out, const void *pattern, size_t es,
                     size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err = clEnqueueFillBuffer(clg_cl_queue(dev), out->mem, pattern, es, out->offset, bytes, 0,
                                   NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueFillBuffer", " on %s", dev->info.name);
  return CLG_OK;
}
