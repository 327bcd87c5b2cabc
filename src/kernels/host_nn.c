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

/* --- gradients ------------------------------------------------------------------------- */

/* Scatter-adds patch rows [row0, row0 + rows) of p into x (Conv2DBackpropInput): the host
 * walks the chunk once, where a gather would walk the whole input per chunk. */
#define COL2IM_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *ps = p;                                                                               \
    T *xs = x;                                                                                     \
    for (size_t r = row0; r < row0 + rows; r++) {                                                  \
      int64_t ow = (int64_t)(r % (size_t)g->ow), t = (int64_t)(r / (size_t)g->ow);                 \
      int64_t oh = t % g->oh, n = t / g->oh;                                                       \
      const T *pr = ps + (r - row0) * (size_t)g->kdim;                                             \
      for (int64_t a = 0; a < g->kh; a++) {                                                        \
        int64_t ih = oh * g->sh - g->pt + a * g->dh;                                               \
        if (ih < 0 || ih >= g->h)                                                                  \
          continue;                                                                                \
        for (int64_t b = 0; b < g->kw; b++) {                                                      \
          int64_t iw = ow * g->sw - g->pl + b * g->dw;                                             \
          if (iw < 0 || iw >= g->w)                                                                \
            continue;                                                                              \
          T *dst = xs + (size_t)((n * g->h + ih) * g->w + iw) * (size_t)g->c;                      \
          const T *src = pr + (size_t)((a * g->kw + b) * g->c);                                    \
          for (int64_t c = 0; c < g->c; c++)                                                       \
            dst[c] += src[c];                                                                      \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

void clg_host_col2im(clg_dtype dtype, const void *p, void *x, size_t row0, size_t rows,
                     const clg_window *g)
{
  if (dtype == CLG_FLOAT64)
    COL2IM_LOOP(double);
  else
    COL2IM_LOOP(float);
}

size_t clg_host_conv2d_grad_scratch(clg_dtype dtype, const clg_window *g, bool filter)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, es = clg_dtype_size(dtype);
  if (rows == 0 || g->cout == 0 || k == 0 || clg_conv_is_direct(g))
    return 0;
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  return chunk * k * es + (filter && chunk < rows ? k * (size_t)g->cout * es : 0);
}

/* The scratch of a host gradient kernel: the plan's block, else alloc's, else malloc. */
typedef struct host_scratch {
  void *p;
  clg_block blk;
  bool planned, from_alloc;
} host_scratch;

static clg_code scratch_get(clg_allocator *alloc, const clg_block *scratch, size_t bytes,
                            host_scratch *s, const char *what)
{
  memset(s, 0, sizeof *s);
  if (bytes == 0)
    return CLG_OK;
  if (scratch && scratch->host && scratch->size >= bytes) {
    s->p = scratch->host;
    s->planned = true;
  } else if (alloc) {
    if (clg_allocator_alloc(alloc, bytes, &s->blk) != CLG_OK)
      return clg_error_prefix("%s scratch: ", what);
    s->p = s->blk.host;
    s->from_alloc = true;
  } else if (!(s->p = malloc(bytes))) {
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for %s scratch (%zu bytes)", what,
                     bytes);
  }
  return CLG_OK;
}

static void scratch_put(clg_allocator *alloc, host_scratch *s)
{
  if (s->from_alloc)
    clg_allocator_free(alloc, &s->blk, NULL);
  else if (!s->planned)
    free(s->p);
}

clg_code clg_host_conv2d_backprop_input(clg_allocator *alloc, const clg_block *scratch,
                                        clg_dtype dtype, const void *f, const void *dy, void *dx,
                                        const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  memset(dx, 0, (size_t)(g->n * g->h * g->w * g->c) * es);
  if (rows == 0 || k == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g)) { /* dx = dy x f^T */
    clg_host_matmul(dtype, false, true, rows, k, cout, dy, f, dx);
    return CLG_OK;
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, chunk * k * es, &s, "Conv2DBackpropInput");
  if (code != CLG_OK)
    return code;
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    /* The chunk's patch gradients, then each added back where its patch came from. */
    clg_host_matmul(dtype, false, true, nr, k, cout, (const char *)dy + r0 * cout * es, f, s.p);
    clg_host_col2im(dtype, s.p, dx, r0, nr, g);
  }
  scratch_put(alloc, &s);
  return CLG_OK;
}

clg_code clg_host_conv2d_backprop_filter(clg_allocator *alloc, const clg_block *scratch,
                                         clg_dtype dtype, const void *x, const void *dy, void *df,
                                         const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (k == 0 || cout == 0)
    return CLG_OK;
  if (rows == 0) {
    memset(df, 0, k * cout * es);
    return CLG_OK;
  }
  if (clg_conv_is_direct(g)) { /* df = x^T x dy */
    clg_host_matmul(dtype, true, false, k, cout, rows, x, dy, df);
    return CLG_OK;
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  size_t pbytes = chunk * k * es, tbytes = chunk < rows ? k * cout * es : 0;
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, pbytes + tbytes, &s, "Conv2DBackpropFilter");
  if (code != CLG_OK)
    return code;
  void *part = (char *)s.p + pbytes;
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    clg_host_im2col(dtype, x, s.p, r0, nr, g);
    /* The first chunk writes df; later ones add their share (the GEMM has no beta). */
    const char *dyc = (const char *)dy + r0 * cout * es;
    clg_host_matmul(dtype, true, false, k, cout, nr, s.p, dyc, r0 == 0 ? df : part);
    if (r0 > 0)
      clg_host_binary(CLG_BINOP_ADD, dtype, df, k * cout, part, k * cout, df, k * cout);
  }
  scratch_put(alloc, &s);
  return CLG_OK;
}

/* The host walks the output windows once and adds each window's gradient where it goes (a
 * scatter: the OpenCL kernel's gather would rescan every window per input element). */
#define POOL_GRAD_LOOP(T)                                                                          \
  do {                                                                                             \
    const T *xs = x, *gs = dy;                                                                     \
    T *out = dx;                                                                                   \
    memset(out, 0, (size_t)(g->n * g->h * g->w * g->c) * sizeof(T));                               \
    size_t i = 0;                                                                                  \
    for (int64_t n = 0; n < g->n; n++)                                                             \
      for (int64_t oh = 0; oh < g->oh; oh++)                                                       \
        for (int64_t ow = 0; ow < g->ow; ow++)                                                     \
          for (int64_t c = 0; c < g->c; c++, i++) {                                                \
            int64_t h0 = oh * g->sh - g->pt, w0 = ow * g->sw - g->pl;                              \
            int64_t hs = h0 > 0 ? h0 : 0, he = h0 + g->kh < g->h ? h0 + g->kh : g->h;              \
            int64_t ws = w0 > 0 ? w0 : 0, we = w0 + g->kw < g->w ? w0 + g->kw : g->w;              \
            size_t base = (size_t)(n * g->h * g->w) * (size_t)g->c + (size_t)c;                    \
            if (avg) {                                                                             \
              T share = gs[i] / (T)((he - hs) * (we - ws));                                        \
              for (int64_t h2 = hs; h2 < he; h2++)                                                 \
                for (int64_t w2 = ws; w2 < we; w2++)                                               \
                  out[base + (size_t)(h2 * g->w + w2) * (size_t)g->c] += share;                    \
              continue;                                                                            \
            }                                                                                      \
            T best = (T)-INFINITY;                                                                 \
            int64_t at = -1;                                                                       \
            for (int64_t h2 = hs; h2 < he; h2++)                                                   \
              for (int64_t w2 = ws; w2 < we; w2++) {                                               \
                T v = xs[base + (size_t)(h2 * g->w + w2) * (size_t)g->c];                          \
                if (best < v) { /* strict: the first maximum in scan order wins */                 \
                  best = v;                                                                        \
                  at = h2 * g->w + w2;                                                             \
                }                                                                                  \
              }                                                                                    \
            if (at >= 0)                                                                           \
              out[base + (size_t)at * (size_t)g->c] += gs[i];                                      \
          }                                                                                        \
  } while (0)

void clg_host_pool_grad(clg_dtype dtype, bool avg, const void *x, const void *dy, void *dx,
                        const clg_window *g)
{
  if (dtype == CLG_FLOAT64)
    POOL_GRAD_LOOP(double);
  else
    POOL_GRAD_LOOP(float);
}

#define LRN_GRAD_LOOP(T, POW)                                                                      \
  do {                                                                                             \
    const T *gs = dy, *xs = x, *ys = y;                                                            \
    T *out = dx;                                                                                   \
    for (size_t base = 0; base < count; base += (size_t)c)                                         \
      for (int64_t ch = 0; ch < c; ch++) {                                                         \
        int64_t lo = ch - radius < 0 ? 0 : ch - radius;                                            \
        int64_t hi = ch + radius >= c ? c - 1 : ch + radius;                                       \
        T own = 0, cross = 0;                                                                      \
        for (int64_t k = lo; k <= hi; k++) {                                                       \
          int64_t lo2 = k - radius < 0 ? 0 : k - radius;                                           \
          int64_t hi2 = k + radius >= c ? c - 1 : k + radius;                                      \
          T sq = 0;                                                                                \
          for (int64_t j = lo2; j <= hi2; j++)                                                     \
            sq += xs[base + (size_t)j] * xs[base + (size_t)j];                                     \
          T norm = (T)bias + (T)alpha * sq;                                                        \
          if (k == ch)                                                                             \
            own = POW(norm, -(T)beta);                                                             \
          cross += gs[base + (size_t)k] * ys[base + (size_t)k] / norm;                             \
        }                                                                                          \
        size_t i = base + (size_t)ch;                                                              \
        out[i] = gs[i] * own - (T)2 * (T)alpha * (T)beta * xs[i] * cross;                          \
      }                                                                                            \
  } while (0)

/* The same with each channel's norm and dy*y/norm computed once per pixel into buf (2c values):
 * O(radius) per element instead of O(radius^2). */
#define LRN_GRAD_FAST(T, POW)                                                                      \
  do {                                                                                             \
    const T *gs = dy, *xs = x, *ys = y;                                                            \
    T *out = dx, *norm = buf, *t = norm + c;                                                       \
    for (size_t base = 0; base < count; base += (size_t)c) {                                       \
      for (int64_t k = 0; k < c; k++) {                                                            \
        int64_t lo = k - radius < 0 ? 0 : k - radius, hi = k + radius >= c ? c - 1 : k + radius;   \
        T sq = 0;                                                                                  \
        for (int64_t j = lo; j <= hi; j++)                                                         \
          sq += xs[base + (size_t)j] * xs[base + (size_t)j];                                       \
        norm[k] = (T)bias + (T)alpha * sq;                                                         \
        t[k] = gs[base + (size_t)k] * ys[base + (size_t)k] / norm[k];                              \
      }                                                                                            \
      for (int64_t ch = 0; ch < c; ch++) {                                                         \
        int64_t lo = ch - radius < 0 ? 0 : ch - radius;                                            \
        int64_t hi = ch + radius >= c ? c - 1 : ch + radius;                                       \
        T cross = 0;                                                                               \
        for (int64_t k = lo; k <= hi; k++)                                                         \
          cross += t[k];                                                                           \
        size_t i = base + (size_t)ch;                                                              \
        out[i] = gs[i] * POW(norm[ch], -(T)beta) - (T)2 * (T)alpha * (T)beta * xs[i] * cross;      \
      }                                                                                            \
    }                                                                                              \
  } while (0)

void clg_host_lrn_grad(clg_dtype dtype, const void *dy, const void *x, const void *y, void *dx,
                       size_t count, int64_t c, int64_t radius, double bias, double alpha,
                       double beta)
{
  if (c <= 0)
    return;
  /* Without memory for the per-pixel values, the direct loop gives the same result. */
  void *buf = malloc(2 * (size_t)c * clg_dtype_size(dtype));
  if (buf && dtype == CLG_FLOAT64)
    LRN_GRAD_FAST(double, pow);
  else if (buf)
    LRN_GRAD_FAST(float, powf);
  else if (dtype == CLG_FLOAT64)
    LRN_GRAD_LOOP(double, pow);
  else
    LRN_GRAD_LOOP(float, powf);
  free(buf);
}
