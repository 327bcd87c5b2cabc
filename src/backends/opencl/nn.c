/* OpenCL NHWC kernels (cl/nn.cl): pooling, LRN, and Conv2D as im2col into scratch from the
 * device's allocator followed by CLBlast GEMMs, a few large ones per convolution. */
#include <string.h>

#include "backends/opencl/opencl.h"

static const clg_cl_text source = {"nn", NULL};

/* The layout of clg_window in cl/nn.cl. */
typedef struct cl_window {
  cl_long v[16];
} cl_window;

static void to_cl(const clg_window *g, cl_window *c)
{
  const int64_t v[16] = {g->n,  g->h,  g->w,  g->c,  g->oh, g->ow, g->kh,   g->kw,
                         g->sh, g->sw, g->dh, g->dw, g->pt, g->pl, g->cout, g->kdim};
  for (int i = 0; i < 16; i++)
    c->v[i] = v[i];
}

clg_code clg_cl_pool(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                     const clg_block *y, const clg_window *g)
{
  size_t es = clg_dtype_size(dtype);
  cl_ulong xo = x->offset / es, yo = y->offset / es,
           count = (cl_ulong)(g->n * g->oh * g->ow * g->c);
  cl_uint a = avg;
  cl_window w;
  to_cl(g, &w);
  clg_cl_arg args[] = {{sizeof(cl_mem), &x->mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &y->mem},
                       {sizeof yo, &yo},
                       {sizeof count, &count},
                       {sizeof w, &w},
                       {sizeof a, &a}};
  return clg_cl_launch(dev, dtype, &source, "clg_pool", args, 7, (size_t)count);
}

clg_code clg_cl_lrn(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *y,
                    size_t count, int64_t c, int64_t radius, double bias, double alpha, double beta)
{
  size_t es = clg_dtype_size(dtype);
  cl_ulong xo = x->offset / es, yo = y->offset / es, n = count;
  cl_long cc = c, r = radius;
  float ff[3] = {(float)bias, (float)alpha, (float)beta};
  double dd[3] = {bias, alpha, beta};
  bool dbl = dtype == CLG_FLOAT64;
  clg_cl_arg args[] = {
      {sizeof(cl_mem), &x->mem},
      {sizeof xo, &xo},
      {sizeof(cl_mem), &y->mem},
      {sizeof yo, &yo},
      {sizeof n, &n},
      {sizeof cc, &cc},
      {sizeof r, &r},
      {dbl ? sizeof(double) : sizeof(float), dbl ? (void *)&dd[0] : (void *)&ff[0]},
      {dbl ? sizeof(double) : sizeof(float), dbl ? (void *)&dd[1] : (void *)&ff[1]},
      {dbl ? sizeof(double) : sizeof(float), dbl ? (void *)&dd[2] : (void *)&ff[2]}};
  return clg_cl_launch(dev, dtype, &source, "clg_lrn", args, 10, count);
}

clg_code clg_cl_im2col(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *p,
                       size_t row0, size_t rows, const clg_window *g)
{
  size_t es = clg_dtype_size(dtype);
  cl_ulong xo = x->offset / es, po = p->offset / es, r0 = row0,
           count = (cl_ulong)rows * (cl_ulong)g->kdim;
  cl_window w;
  to_cl(g, &w);
  clg_cl_arg args[] = {{sizeof(cl_mem), &x->mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &p->mem},
                       {sizeof po, &po},
                       {sizeof r0, &r0},
                       {sizeof count, &count},
                       {sizeof w, &w}};
  return clg_cl_launch(dev, dtype, &source, "clg_im2col", args, 7, (size_t)count);
}

/* CLBlast copies an operand whose offset is not 0 into a temporary (and the result back),
 * which for Conv2D's tall GEMMs costs as much as a pass over the patches: a block at a nonzero
 * offset is handed over as a sub-buffer of its own (where the offset allows one), which
 * OpenCL keeps alive until the commands using it finish. *sub is released by the caller. */
static clg_block at_zero(const clg_device *dev, const clg_block *b, size_t bytes, cl_mem *sub)
{
  *sub = NULL;
  size_t align = dev->info.base_addr_align ? dev->info.base_addr_align : 1;
  if (b->offset == 0 || b->offset % align != 0 || bytes == 0)
    return *b;
  cl_buffer_region region = {b->offset, bytes};
  cl_int err;
  cl_mem m =
      clCreateSubBuffer(b->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  if (err != CL_SUCCESS)
    return *b; /* CLBlast copes with the offset, only slower */
  *sub = m;
  clg_block r = {.mem = m, .offset = 0, .size = bytes};
  return r;
}

static clg_code gemm_t(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                       const clg_block *a, const clg_block *b, const clg_block *c,
                       const char **why);

static clg_code gemm(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                     clg_dtype dtype, size_t m, size_t n, size_t k, const clg_block *a,
                     const clg_block *b, const clg_block *c, const char **why)
{
  return gemm_t(dev, alloc, scratch, dtype, false, false, m, n, k, a, b, c, why);
}

static clg_code gemm_t(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                       const clg_block *a, const clg_block *b, const clg_block *c, const char **why)
{
  size_t es = clg_dtype_size(dtype);
  cl_mem sub[3];
  clg_block ba = at_zero(dev, a, m * k * es, &sub[0]), bb = at_zero(dev, b, k * n * es, &sub[1]),
            bc = at_zero(dev, c, m * n * es, &sub[2]);
  clg_code code = clg_cl_matmul(dev, alloc, scratch, dtype, ta, tb, m, n, k, &ba, &bb, &bc, why);
  for (int i = 0; i < 3; i++)
    if (sub[i])
      clReleaseMemObject(sub[i]);
  return code;
}

/* Rows per chunk: multiples of 1024 rows keep each output chunk's offset aligned for a
 * sub-buffer. */
static size_t cl_chunk(size_t k, size_t es, size_t rows)
{
  size_t chunk = clg_conv_chunk_rows(true, k, es, rows);
  if (chunk < rows && chunk > 1024)
    chunk -= chunk % 1024;
  return chunk;
}

/* The patches' share of a planned scratch block; CLBlast's scratch follows. */
static size_t patch_bytes(size_t chunk, size_t k, size_t es)
{
  return (chunk * k * es + 4095) / 4096 * 4096;
}

clg_code clg_cl_conv2d_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g, size_t *bytes)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype), gemm_bytes = 0;
  *bytes = 0;
  if (rows == 0 || cout == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g))
    return clg_cl_matmul_scratch(dev, dtype, false, false, rows, cout, k, bytes);
  size_t chunk = cl_chunk(k, es, rows);
  clg_code code = clg_cl_matmul_scratch(dev, dtype, false, false, chunk, cout, k, &gemm_bytes);
  if (code == CLG_OK)
    *bytes = patch_bytes(chunk, k, es) + gemm_bytes;
  return code;
}

clg_code clg_cl_conv2d(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, const clg_block *x, const clg_block *f, const clg_block *y,
                       const clg_window *g, const char **why)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (rows == 0 || cout == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g))
    return gemm(dev, alloc, scratch, dtype, rows, cout, k, x, f, y, why);
  size_t chunk = cl_chunk(k, es, rows), pbytes = patch_bytes(chunk, k, es);
  /* The plan's scratch holds the patches, then CLBlast's scratch (clg_cl_matmul checks its
   * size and asks alloc when it falls short). */
  bool planned = scratch && scratch->mem && scratch->size >= pbytes;
  clg_block tmp, rest = {0};
  clg_code code = CLG_OK;
  if (planned) {
    tmp = *scratch;
    rest = *scratch;
    rest.offset += pbytes;
    rest.size -= pbytes;
  } else if ((code = clg_allocator_alloc(alloc, chunk * k * es, &tmp)) != CLG_OK) {
    return clg_error_prefix("Conv2D im2col scratch: ");
  }
  for (size_t r0 = 0; r0 < rows && code == CLG_OK; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    clg_block pb = tmp, yb = *y;
    pb.size = nr * k * es;
    yb.offset += r0 * cout * es;
    yb.size = nr * cout * es;
    code = clg_cl_im2col(dev, dtype, x, &pb, r0, nr, g);
    if (code == CLG_OK)
      code = gemm(dev, alloc, planned && rest.size ? &rest : NULL, dtype, nr, cout, k, &pb, f, &yb,
                  why);
  }
  if (planned) { /* the plan keeps the block out of reach until the run has finished */
    if (code != CLG_OK)
      clFinish(clg_cl_queue(dev));
    return code;
  }
  /* The scratch is reused only after the last GEMM reading it completes. */
  cl_event ev = NULL;
  cl_int err =
      code == CLG_OK ? clEnqueueMarkerWithWaitList(clg_cl_queue(dev), 0, NULL, &ev) : CL_SUCCESS;
  if (code != CLG_OK || err != CL_SUCCESS) {
    clFinish(clg_cl_queue(dev));
    ev = NULL;
    if (code == CLG_OK)
      code = clg_cl_error(err, "clEnqueueMarkerWithWaitList", " for Conv2D on %s", dev->info.name);
  }
  clg_event *done = clg_cl_event_adopt(dev, ev); /* takes ev's reference */
  clg_allocator_free(alloc, &tmp, done);
  clg_event_release(done);
  return code;
}

/* --- gradients ------------------------------------------------------------------------- */

clg_code clg_cl_col2im(clg_device *dev, clg_dtype dtype, const clg_block *p, const clg_block *x,
                       size_t row0, size_t rows, const clg_window *g)
{
  size_t es = clg_dtype_size(dtype);
  cl_ulong po = p->offset / es, xo = x->offset / es, r0 = row0, nr = rows,
           count = (cl_ulong)(g->n * g->h * g->w * g->c);
  cl_window w;
  to_cl(g, &w);
  clg_cl_arg args[] = {{sizeof(cl_mem), &p->mem}, {sizeof po, &po}, {sizeof(cl_mem), &x->mem},
                       {sizeof xo, &xo},          {sizeof r0, &r0}, {sizeof nr, &nr},
                       {sizeof count, &count},    {sizeof w, &w}};
  return clg_cl_launch(dev, dtype, &source, "clg_col2im", args, 8, (size_t)count);
}

clg_code clg_cl_pool_grad(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                          const clg_block *dy, const clg_block *dx, const clg_window *g)
{
  size_t es = clg_dtype_size(dtype);
  cl_ulong count = (cl_ulong)(g->n * g->h * g->w * g->c);
  if (count == 0)
    return CLG_OK;
  /* AvgPoolGrad has no x: any buffer stands in, the kernel does not read it. */
  const clg_block *xb = x ? x : dy;
  cl_ulong xo = xb->offset / es, dyo = dy->offset / es, dxo = dx->offset / es;
  cl_uint a = avg;
  cl_window w;
  to_cl(g, &w);
  clg_cl_arg args[] = {{sizeof(cl_mem), &xb->mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &dy->mem},
                       {sizeof dyo, &dyo},
                       {sizeof(cl_mem), &dx->mem},
                       {sizeof dxo, &dxo},
                       {sizeof count, &count},
                       {sizeof w, &w},
                       {sizeof a, &a}};
  return clg_cl_launch(dev, dtype, &source, "clg_pool_grad", args, 9, (size_t)count);
}

clg_code clg_cl_lrn_grad(clg_device *dev, clg_dtype dtype, const clg_block *dy, const clg_block *x,
                         const clg_block *y, const clg_block *dx, size_t count, int64_t c,
                         int64_t radius, double bias, double alpha, double beta)
{
  if (count == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(dtype);
  cl_ulong dyo = dy->offset / es, xo = x->offset / es, yo = y->offset / es, dxo = dx->offset / es,
           n = count;
  cl_long cc = c, r = radius;
  float ff[3] = {(float)bias, (float)alpha, (float)beta};
  double dd[3] = {bias, alpha, beta};
  bool dbl = dtype == CLG_FLOAT64;
  size_t fs = dbl ? sizeof(double) : sizeof(float);
  clg_cl_arg args[] = {{sizeof(cl_mem), &dy->mem},
                       {sizeof dyo, &dyo},
                       {sizeof(cl_mem), &x->mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &y->mem},
                       {sizeof yo, &yo},
                       {sizeof(cl_mem), &dx->mem},
                       {sizeof dxo, &dxo},
                       {sizeof n, &n},
                       {sizeof cc, &cc},
                       {sizeof r, &r},
                       {fs, dbl ? (void *)&dd[0] : (void *)&ff[0]},
                       {fs, dbl ? (void *)&dd[1] : (void *)&ff[1]},
                       {fs, dbl ? (void *)&dd[2] : (void *)&ff[2]}};
  return clg_cl_launch(dev, dtype, &source, "clg_lrn_grad", args, 14, count);
}

/* The layout of a gradient kernel's planned scratch: the patches (or their gradients) of
 * one chunk, for the filter's gradient a partial sum of it, then CLBlast's GEMM scratch. */
typedef struct grad_layout {
  size_t chunk, pbytes, tbytes, gemm_bytes;
} grad_layout;

static clg_code grad_layout_of(clg_device *dev, clg_dtype dtype, const clg_window *g, bool filter,
                               grad_layout *l)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  memset(l, 0, sizeof *l);
  if (rows == 0 || cout == 0 || k == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g))
    return filter ? clg_cl_matmul_scratch(dev, dtype, true, false, k, cout, rows, &l->gemm_bytes)
                  : clg_cl_matmul_scratch(dev, dtype, false, true, rows, k, cout, &l->gemm_bytes);
  l->chunk = cl_chunk(k, es, rows);
  l->pbytes = patch_bytes(l->chunk, k, es);
  l->tbytes = filter && l->chunk < rows ? patch_bytes(k, cout, es) : 0;
  return filter ? clg_cl_matmul_scratch(dev, dtype, true, false, k, cout, l->chunk, &l->gemm_bytes)
                : clg_cl_matmul_scratch(dev, dtype, false, true, l->chunk, k, cout, &l->gemm_bytes);
}

clg_code clg_cl_conv2d_grad_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g,
                                    bool filter, size_t *bytes)
{
  grad_layout l;
  clg_code code = grad_layout_of(dev, dtype, g, filter, &l);
  *bytes = code == CLG_OK ? l.pbytes + l.tbytes + l.gemm_bytes : 0;
  return code;
}

/* Releases a scratch block taken from alloc once the queue's work so far completes. */
static clg_code release_after(clg_device *dev, clg_allocator *alloc, clg_block *tmp, clg_code code,
                              const char *what)
{
  cl_event ev = NULL;
  cl_int err =
      code == CLG_OK ? clEnqueueMarkerWithWaitList(clg_cl_queue(dev), 0, NULL, &ev) : CL_SUCCESS;
  if (code != CLG_OK || err != CL_SUCCESS) {
    clFinish(clg_cl_queue(dev));
    ev = NULL;
    if (code == CLG_OK)
      code =
          clg_cl_error(err, "clEnqueueMarkerWithWaitList", " for %s on %s", what, dev->info.name);
  }
  clg_event *done = clg_cl_event_adopt(dev, ev); /* takes ev's reference */
  clg_allocator_free(alloc, tmp, done);
  clg_event_release(done);
  return code;
}

clg_code clg_cl_conv2d_backprop(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                                clg_dtype dtype, bool filter, const clg_block *in,
                                const clg_block *dy, const clg_block *out, const clg_window *g,
                                const char **why)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  const char *what = filter ? "Conv2DBackpropFilter" : "Conv2DBackpropInput";
  size_t out_bytes = (filter ? k * cout : (size_t)(g->n * g->h * g->w * g->c)) * es;
  static const double zero = 0;
  if (rows == 0 || cout == 0 || k == 0)
    return clg_cl_fill(dev, out, &zero, es, out_bytes);
  grad_layout l;
  clg_code code = grad_layout_of(dev, dtype, g, filter, &l);
  if (code != CLG_OK)
    return code;
  if (clg_conv_is_direct(g))
    return filter
               ? gemm_t(dev, alloc, scratch, dtype, true, false, k, cout, rows, in, dy, out, why)
               : gemm_t(dev, alloc, scratch, dtype, false, true, rows, k, cout, dy, in, out, why);
  bool planned = scratch && scratch->mem && scratch->size >= l.pbytes + l.tbytes;
  clg_block tmp = {0}, rest = {0};
  if (planned) {
    tmp = *scratch;
    rest = *scratch;
    rest.offset += l.pbytes + l.tbytes;
    rest.size -= l.pbytes + l.tbytes;
  } else if (clg_allocator_alloc(alloc, l.pbytes + l.tbytes, &tmp) != CLG_OK) {
    return clg_error_prefix("%s scratch: ", what);
  }
  if (!filter)
    code = clg_cl_fill(dev, out, &zero, es, out_bytes);
  for (size_t r0 = 0; r0 < rows && code == CLG_OK; r0 += l.chunk) {
    size_t nr = rows - r0 < l.chunk ? rows - r0 : l.chunk;
    clg_block pb = tmp, dyb = *dy, part = tmp;
    pb.size = nr * k * es;
    dyb.offset += r0 * cout * es;
    dyb.size = nr * cout * es;
    part.offset += l.pbytes;
    part.size = k * cout * es;
    const clg_block *gs = planned && rest.size ? &rest : NULL;
    if (filter) {
      /* The first chunk writes out; later ones add a partial sum (the GEMM has no beta). */
      code = clg_cl_im2col(dev, dtype, in, &pb, r0, nr, g);
      if (code == CLG_OK)
        code = gemm_t(dev, alloc, gs, dtype, true, false, k, cout, nr, &pb, &dyb,
                      r0 == 0 ? out : &part, why);
      if (code == CLG_OK && r0 > 0)
        code =
            clg_cl_binary(dev, CLG_BINOP_ADD, dtype, out, k * cout, &part, k * cout, out, k * cout);
    } else {
      code = gemm_t(dev, alloc, gs, dtype, false, true, nr, k, cout, &dyb, in, &pb, why);
      if (code == CLG_OK)
        code = clg_cl_col2im(dev, dtype, &pb, out, r0, nr, g);
    }
  }
  if (planned) { /* the plan keeps the block out of reach until the run has finished */
    if (code != CLG_OK)
      clFinish(clg_cl_queue(dev));
    return code;
  }
  return release_after(dev, alloc, &tmp, code, what);
}
