/* Host NHWC kernels: pooling, LRN, and Conv2D as im2col + GEMM over chunks of output rows
 * (the chunk's patches stay in cache while the GEMM reads them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

/* Scratch per chunk of patch rows: host chunks stay near the last-level cache; OpenCL
 * chunks are large, so a convolution is a few large GEMMs. */
#define HOST_CHUNK_BYTES ((size_t)4 << 20)
#define CL_CHUNK_BYTES ((size_t)64 << 20)

size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows)
{
  size_t budget = opencl ? CL_CHUNK_BYTES : HOST_CHUNK_BYTES;
  /* CLGRAPH_CONV_CHUNK_BYTES (tests): smaller chunks, so that small shapes take many. */
  const char *env = getenv("CLGRAPH_CONV_CHUNK_BYTES");
  if (env && atol(env) > 0)
    budget = (size_t)atol(env);
  size_t per = kdim * es, chunk = budget / (per > 0 ? per : 1);
  if (chunk < 1)
    chunk = 1;
  return chunk < rows ? chunk : rows;
}

#define POOL_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    size_t i = 0;                                                                                  \
    for (int64_t n = 0; n < g->n; n++)                                                             \
      for (int64_t oh = 0; oh < g->oh; oh++)                                                       \
        for (int64_t ow = 0; ow < g->ow; ow++)                                                     \
          for (int64_t c = 0; c < g->c; c++, i++) {                                                \
            int64_t h0 = oh * g->sh - g->pt, w0 = ow * g->sw - g->pl, valid = 0;                   \
            T acc = avg ? (T)0 : (T)-INFINITY;                                                     \
            for (int64_t a = 0; a < g->kh; a++) {                                                  \
              int64_t ih = h0 + a;                                                                 \
              if (ih < 0 || ih >= g->h)                                                            \
                continue;                                                                          \
              for (int64_t b = 0; b < g->kw; b++) {                                                \
                int64_t iw = w0 + b;                                                               \
                if (iw < 0 || iw >= g->w)                                                          \
                  continue;                                                                        \
                T v = xs[((n * g->h + ih) * g->w + iw) * g->c + c];                                \
                if (avg)                                                                           \
                  acc += v;                                                                        \
                else                                                                               \
                  acc = acc < v ? v : acc;                                                         \
                valid++;                                                                           \
              }                                                                                    \
            }                                                                                      \
            ys[i] = avg ? acc / (T)valid : acc;                                                    \
          }                                                                                        \
  } while (0)

void clg_host_pool(clg_dtype dtype, bool avg, const void *x, void *y, const clg_window *g)
{
  if (dtype == CLG_FLOAT64)
    POOL_LOOP(double);
  else
    POOL_LOOP(float);
}

#define LRN_LOOP(T, POW)                                                                           \
  do {                                                                                             \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    for (size_t base = 0; base < count; base += (size_t)c)                                         \
      for (int64_t ch = 0; ch < c; ch++) {                                                         \
        int64_t lo = ch - radius < 0 ? 0 : ch - radius;                                            \
        int64_t hi = ch + radius >= c ? c - 1 : ch + radius;                                       \
        T sq = 0;                                                                                  \
        for (int64_t k = lo; k <= hi; k++)                                                         \
          sq += xs[base + (size_t)k] * xs[base + (size_t)k];                                       \
        ys[base + (size_t)ch] = xs[base + (size_t)ch] / POW((T)bias + (T)alpha * sq, (T)beta);     \
      }                                                                                            \
  } while (0)

void clg_host_lrn(clg_dtype dtype, const void *x, void *y, size_t count, int64_t c, int64_t radius,
                  double bias, double alpha, double beta)
{
  if (c <= 0)
    return;
  if (dtype == CLG_FLOAT64)
    LRN_LOOP(double, pow);
  else
    LRN_LOOP(float, powf);
}

void clg_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                     const clg_window *g)
{
  size_t es = clg_dtype_size(dtype), cb = (size_t)g->c * es;
  const char *xs = x;
  char *dst = p;
  for (size_t r = row0; r < row0 + rows; r++) {
    int64_t ow = (int64_t)(r % (size_t)g->ow), t = (int64_t)(r / (size_t)g->ow);
    int64_t oh = t % g->oh, n = t / g->oh;
    int64_t iw0 = ow * g->sw - g->pl, iw_last = iw0 + (g->kw - 1) * g->dw;
    for (int64_t a = 0; a < g->kh; a++) {
      int64_t ih = oh * g->sh - g->pt + a * g->dh;
      if (g->dw == 1 && ih >= 0 && ih < g->h && iw0 >= 0 && iw_last < g->w) {
        /* The whole filter row is inside the input: one contiguous run of kw * c. */
        memcpy(dst, xs + (size_t)((n * g->h + ih) * g->w + iw0) * cb, (size_t)g->kw * cb);
        dst += (size_t)g->kw * cb;
        continue;
      }
      for (int64_t b = 0; b < g->kw; b++, dst += cb) {
        int64_t iw = ow * g->sw - g->pl + b * g->dw;
        if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
          memset(dst, 0, cb);
        else
          memcpy(dst, xs + (size_t)((n * g->h + ih) * g->w + iw) * cb, cb);
      }
    }
  }
}

/* Whether the input itself is the patch matrix (1x1, stride 1, no padding). */
bool clg_conv_is_direct(const clg_window *g)
{
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
         g->oh == g->h && g->ow == g->w;
}

size_t clg_host_conv2d_scratch(clg_dtype dtype, const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, es = clg_dtype_size(dtype);
  if (rows == 0 || g->cout == 0 || k == 0 || clg_conv_is_direct(g))
    return 0;
  return clg_conv_chunk_rows(false, k, es, rows) * k * es;
}

clg_code clg_host_conv2d(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                         const void *x, const void *f, void *y, const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (rows == 0 || cout == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g) || k == 0) {
    clg_host_matmul(dtype, false, false, rows, cout, k, x, f, y);
    return CLG_OK;
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  clg_block blk = {0};
  void *p = NULL;
  bool planned = scratch && scratch->host && scratch->size >= chunk * k * es;
  if (planned) {
    p = scratch->host;
  } else if (alloc) {
    clg_code code = clg_allocator_alloc(alloc, chunk * k * es, &blk);
    if (code != CLG_OK)
      return clg_error_prefix("Conv2D scratch: ");
    p = blk.host;
  } else if (!(p = malloc(chunk * k * es))) {
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for Conv2D scratch (%zu bytes)",
                     chunk * k * es);
  }
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    clg_host_im2col(dtype, x, p, r0, nr, g);
    clg_host_matmul(dtype, false, false, nr, cout, k, p, f, (char *)y + r0 * cout * es);
  }
  if (planned)
    return CLG_OK;
  if (alloc)
    clg_allocator_free(alloc, &blk, NULL);
  else
    free(p);
  return CLG_OK;
}
