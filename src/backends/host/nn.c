/* Host NHWC kernels: pooling and LRN, forward and gradients (Conv2D is in conv_gemm.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

/* Loops over channels compiled twice on x86-64 (GCC, clang): for the baseline and for AVX2,
 * picked at run time, since the baseline's SSE2 has no blend and leaves selects as branches. */
#if defined(__GNUC__) || defined(__clang__)
#define PG_INLINE __attribute__((always_inline)) /* into each ISA variant */
#else
#define PG_INLINE
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define ISA_VARIANTS(name)                                                                         \
  static void name##_base(void *ctx, size_t a, size_t b) { name##_body(ctx, a, b); }               \
  __attribute__((target("avx2,fma"))) static void name##_avx2(void *ctx, size_t a, size_t b)       \
  {                                                                                                \
    name##_body(ctx, a, b);                                                                        \
  }                                                                                                \
  static void name(void *ctx, size_t a, size_t b)                                                  \
  {                                                                                                \
    if (clg_host_avx2())                                                                           \
      name##_avx2(ctx, a, b);                                                                      \
    else                                                                                           \
      name##_base(ctx, a, b);                                                                      \
  }
#else
#define ISA_VARIANTS(name)                                                                         \
  static void name(void *ctx, size_t a, size_t b) { name##_body(ctx, a, b); }
#endif

/* Each output pixel's channels at once (the channel is the contiguous axis): the window's
 * taps in scan order, accumulated in the output row itself. Output rows (n, oh) are split
 * across the cores. */
typedef struct pool_job {
  bool avg;
  const void *x;
  void *y;
  const clg_window *g;
} pool_job;

#define POOL_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *xs = j->x;                                                                            \
    for (size_t row = r0; row < r1; row++) {                                                       \
      int64_t n = (int64_t)row / g->oh, oh = (int64_t)row % g->oh;                                 \
      int64_t hs, he, ws, we;                                                                      \
      clg_window_clip(oh * g->sh - g->pt, g->kh, g->h, &hs, &he);                                  \
      for (int64_t ow = 0; ow < g->ow; ow++) {                                                     \
        T *ys = (T *)j->y + (row * (size_t)g->ow + (size_t)ow) * (size_t)g->c;                     \
        clg_window_clip(ow * g->sw - g->pl, g->kw, g->w, &ws, &we);                                \
        for (int64_t c = 0; c < g->c; c++)                                                         \
          ys[c] = j->avg ? (T)0 : (T)-INFINITY;                                                    \
        for (int64_t ih = hs; ih < he; ih++)                                                       \
          for (int64_t iw = ws; iw < we; iw++) {                                                   \
            const T *v = xs + (size_t)((n * g->h + ih) * g->w + iw) * (size_t)g->c;                \
            if (j->avg)                                                                            \
              for (int64_t c = 0; c < g->c; c++)                                                   \
                ys[c] += v[c];                                                                     \
            else                                                                                   \
              for (int64_t c = 0; c < g->c; c++)                                                   \
                ys[c] = ys[c] < v[c] ? v[c] : ys[c];                                               \
          }                                                                                        \
        if (j->avg) {                                                                              \
          T valid = (T)((he - hs) * (we - ws));                                                    \
          for (int64_t c = 0; c < g->c; c++)                                                       \
            ys[c] /= valid;                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static inline PG_INLINE void pool_f32_body(void *ctx, size_t r0, size_t r1)
{
  const pool_job *j = ctx;
  const clg_window *g = j->g;
  POOL_LOOP(float);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

/* Float on AVX2: 32 channels at a time in four registers over all of the window's taps, stored
 * once (the loop above loads and stores the output row once per tap, 9 times for 3x3). The
 * same values: max_ps(v, acc) is acc < v ? v : acc, NaN and signed zeros included, and the
 * sums add the taps in the same order. The channels past the last 32 as above. */
__attribute__((target("avx2,fma"))) static void pool_f32_avx2(void *ctx, size_t r0, size_t r1)
{
  const pool_job *j = ctx;
  const clg_window *g = j->g;
  const float *xs = j->x;
  int64_t cb = g->c / 32 * 32;
  for (size_t row = r0; row < r1; row++) {
    int64_t n = (int64_t)row / g->oh, oh = (int64_t)row % g->oh;
    int64_t hs, he, ws, we;
    clg_window_clip(oh * g->sh - g->pt, g->kh, g->h, &hs, &he);
    for (int64_t ow = 0; ow < g->ow; ow++) {
      float *ys = (float *)j->y + (row * (size_t)g->ow + (size_t)ow) * (size_t)g->c;
      clg_window_clip(ow * g->sw - g->pl, g->kw, g->w, &ws, &we);
      const float *x0 = xs + (size_t)(n * g->h * g->w) * (size_t)g->c;
      float valid = (float)((he - hs) * (we - ws));
      for (int64_t c0 = 0; c0 < cb; c0 += 32) {
        __m256 a0 = _mm256_set1_ps(j->avg ? 0.0f : -INFINITY), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t ih = hs; ih < he; ih++)
          for (int64_t iw = ws; iw < we; iw++) {
            const float *v = x0 + (size_t)(ih * g->w + iw) * (size_t)g->c + c0;
            __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
            __m256 v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
            if (j->avg) {
              a0 = _mm256_add_ps(a0, v0), a1 = _mm256_add_ps(a1, v1);
              a2 = _mm256_add_ps(a2, v2), a3 = _mm256_add_ps(a3, v3);
            } else {
              a0 = _mm256_max_ps(v0, a0), a1 = _mm256_max_ps(v1, a1);
              a2 = _mm256_max_ps(v2, a2), a3 = _mm256_max_ps(v3, a3);
            }
          }
        if (j->avg) {
          __m256 d = _mm256_set1_ps(valid);
          a0 = _mm256_div_ps(a0, d), a1 = _mm256_div_ps(a1, d);
          a2 = _mm256_div_ps(a2, d), a3 = _mm256_div_ps(a3, d);
        }
        _mm256_storeu_ps(ys + c0, a0), _mm256_storeu_ps(ys + c0 + 8, a1);
        _mm256_storeu_ps(ys + c0 + 16, a2), _mm256_storeu_ps(ys + c0 + 24, a3);
      }
      if (cb == g->c)
        continue;
      for (int64_t c = cb; c < g->c; c++)
        ys[c] = j->avg ? 0.0f : -INFINITY;
      for (int64_t ih = hs; ih < he; ih++)
        for (int64_t iw = ws; iw < we; iw++) {
          const float *v = x0 + (size_t)(ih * g->w + iw) * (size_t)g->c;
          for (int64_t c = cb; c < g->c; c++)
            ys[c] = j->avg ? ys[c] + v[c] : ys[c] < v[c] ? v[c] : ys[c];
        }
      if (j->avg)
        for (int64_t c = cb; c < g->c; c++)
          ys[c] /= valid;
    }
  }
}

static void pool_f32(void *ctx, size_t a, size_t b)
{
  if (clg_host_avx2())
    pool_f32_avx2(ctx, a, b);
  else
    pool_f32_body(ctx, a, b);
}
#else
static void pool_f32(void *ctx, size_t a, size_t b) { pool_f32_body(ctx, a, b); }
#endif

static void pool_f64(void *ctx, size_t r0, size_t r1)
{
  const pool_job *j = ctx;
  const clg_window *g = j->g;
  POOL_LOOP(double);
}

/* Rows per task such that a task has some 64 KiB of output at least. */
static size_t grain_rows(size_t row_bytes)
{
  return row_bytes >= ((size_t)64 << 10) ? 1 : ((size_t)64 << 10) / (row_bytes ? row_bytes : 1);
}

void clg_host_pool(clg_dtype dtype, bool avg, const void *x, void *y, const clg_window *g)
{
  pool_job j = {avg, x, y, g};
  size_t rows = (size_t)(g->n * g->oh), es = clg_dtype_size(dtype);
  size_t grain = grain_rows((size_t)(g->ow * g->c) * es);
  clg_host_parallel_for(rows, grain, dtype == CLG_FLOAT64 ? pool_f64 : pool_f32, &j);
}

/* acc[ch] += src[ch + q] for q = 0 .. w-1 in that order, three taps per pass over the channels
 * (the same sums, a third of the stores). */
#define WINDOW_SUM(acc, src, w, c)                                                                 \
  do {                                                                                             \
    int64_t q_ = 0;                                                                                \
    for (; q_ + 3 <= (w); q_ += 3)                                                                 \
      for (int64_t ch_ = 0; ch_ < (c); ch_++)                                                      \
        (acc)[ch_] = (((acc)[ch_] + (src)[ch_ + q_]) + (src)[ch_ + q_ + 1]) + (src)[ch_ + q_ + 2]; \
    for (; q_ < (w); q_++)                                                                         \
      for (int64_t ch_ = 0; ch_ < (c); ch_++)                                                      \
        (acc)[ch_] += (src)[ch_ + q_];                                                             \
  } while (0)

/* LRN per pixel: the squares in a buffer padded with radius zeros on each side, so each
 * channel's window sum is a fixed-length loop (adding the zeros first changes no sum); beta
 * 0.75 (the CIFAR-10 model's) as sqrt(v) * sqrt(sqrt(v)) rather than pow. Pixels are split
 * across the cores. */
typedef struct lrn_job {
  const void *x, *dy, *y;
  void *out;
  int64_t c, radius;
  double bias, alpha, beta;
} lrn_job;

static inline float sqrt_float(float v) { return sqrtf(v); }
static inline double sqrt_double(double v) { return sqrt(v); }

#define LRN_FAST(T, POW)                                                                           \
  do {                                                                                             \
    const T *xs = j->x;                                                                            \
    T *ys = j->out, *sq = buf, *sum = buf + j->c + 2 * j->radius, bias = (T)j->bias;               \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                                      \
    bool b075 = beta == (T)0.75;                                                                   \
    int64_t c = j->c, r = j->radius, w = 2 * r + 1;                                                \
    for (int64_t i = 0; i < r; i++)                                                                \
      sq[i] = sq[c + r + i] = 0;                                                                   \
    for (size_t px = p0; px < p1; px++) {                                                          \
      const T *xp = xs + px * (size_t)c;                                                           \
      T *yp = ys + px * (size_t)c;                                                                 \
      for (int64_t ch = 0; ch < c; ch++)                                                           \
        sq[r + ch] = xp[ch] * xp[ch], sum[ch] = 0;                                                 \
      WINDOW_SUM(sum, sq, w, c); /* per channel the same order, k ascending */                     \
      if (b075)                  /* the test out of the loop, which then vectorises */             \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
          T v = bias + alpha * sum[ch];                                                            \
          yp[ch] = xp[ch] / (sqrt_##T(v) * sqrt_##T(sqrt_##T(v)));                                 \
        }                                                                                          \
      else                                                                                         \
        for (int64_t ch = 0; ch < c; ch++)                                                         \
          yp[ch] = xp[ch] / POW(bias + alpha * sum[ch], beta);                                     \
    }                                                                                              \
  } while (0)

#define LRN_LOOP(T, POW)                                                                           \
  do {                                                                                             \
    const T *xs = j->x;                                                                            \
    T *ys = j->out;                                                                                \
    int64_t c = j->c, radius = j->radius;                                                          \
    for (size_t base = p0 * (size_t)c; base < p1 * (size_t)c; base += (size_t)c)                   \
      for (int64_t ch = 0; ch < c; ch++) {                                                         \
        int64_t lo = ch - radius < 0 ? 0 : ch - radius;                                            \
        int64_t hi = ch + radius >= c ? c - 1 : ch + radius;                                       \
        T sq = 0;                                                                                  \
        for (int64_t k = lo; k <= hi; k++)                                                         \
          sq += xs[base + (size_t)k] * xs[base + (size_t)k];                                       \
        ys[base + (size_t)ch] =                                                                    \
            xs[base + (size_t)ch] / POW((T)j->bias + (T)j->alpha * sq, (T)j->beta);                \
      }                                                                                            \
  } while (0)

static inline PG_INLINE void lrn_f32_body(void *ctx, size_t p0, size_t p1)
{
  const lrn_job *j = ctx;
  float *buf = malloc((size_t)(2 * j->c + 2 * j->radius) * sizeof(float));
  if (buf)
    LRN_FAST(float, powf);
  else
    LRN_LOOP(float, powf);
  free(buf);
}
ISA_VARIANTS(lrn_f32)

static void lrn_f64(void *ctx, size_t p0, size_t p1)
{
  const lrn_job *j = ctx;
  double *buf = malloc((size_t)(2 * j->c + 2 * j->radius) * sizeof(double));
  if (buf)
    LRN_FAST(double, pow);
  else
    LRN_LOOP(double, pow);
  free(buf);
}

void clg_host_lrn(clg_dtype dtype, const void *x, void *y, size_t count, int64_t c, int64_t radius,
                  double bias, double alpha, double beta)
{
  if (c <= 0)
    return;
  /* A radius beyond the channels sums them all: clamp it so the padded buffer stays small. */
  lrn_job j = {x, NULL, NULL, y, c, radius < c ? radius : c, bias, alpha, beta};
  size_t pixels = count / (size_t)c;
  clg_host_parallel_for(pixels, grain_rows((size_t)c * clg_dtype_size(dtype)),
                        dtype == CLG_FLOAT64 ? lrn_f64 : lrn_f32, &j);
}

/* The host walks the output windows once and adds each window's gradient where it goes (a
 * scatter: the OpenCL kernel's gather would rescan every window per input element), all
 * channels of a window at once; images are split across the cores (a window adds only into
 * its own image). */
typedef struct pool_grad_job {
  bool avg;
  const void *x, *dy;
  void *dx;
  const clg_window *g;
} pool_grad_job;

/* One tap's channels against the running maximum (strictly greater leads: NaN never does). */
#define PG_MAX(T)                                                                                  \
  static inline PG_INLINE void pg_max_##T(int64_t ce, const T *restrict v, T *restrict best)       \
  {                                                                                                \
    for (int64_t c = 0; c < ce; c++)                                                               \
      best[c] = best[c] < v[c] ? v[c] : best[c];                                                   \
  }
PG_MAX(float)
PG_MAX(double)

#define PG_ROUTE(T, sfx, attr)                                                                     \
  /* The gradient into the tap where a channel equals its window's maximum, then that              \
   * maximum made NaN so that no later tap matches (one select per loop: GCC if-converts one       \
   * compare feeding two selects only without -ftrapping-math, the default). Not inlined:          \
   * inlined into the window loop, GCC leaves these loops scalar. */                               \
  attr static __attribute__((noinline)) void pg_route_##T##sfx(                                    \
      int64_t ce, const T *restrict v, T *restrict d, const T *restrict gp, T *restrict best)      \
  {                                                                                                \
    for (int64_t c = 0; c < ce; c++) /* + 0 elsewhere: an add that is never conditional */         \
      d[c] += v[c] == best[c] ? gp[c] : (T)0;                                                      \
    for (int64_t c = 0; c < ce; c++)                                                               \
      best[c] = v[c] == best[c] ? (T)NAN : best[c];                                                \
  }

PG_ROUTE(float, _base, )
PG_ROUTE(double, _base, )
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
PG_ROUTE(float, _avx2, __attribute__((target("avx2,fma"))))
PG_ROUTE(double, _avx2, __attribute__((target("avx2,fma"))))
#endif

#define POOL_GRAD_LOOP(T, sfx)                                                                     \
  do {                                                                                             \
    const T *xs = j->x, *gs = j->dy;                                                               \
    T *out = j->dx, best[PG_BLOCK];                                                                \
    size_t img = (size_t)(g->h * g->w * g->c);                                                     \
    for (int64_t n = (int64_t)n0; n < (int64_t)n1; n++) {                                          \
      /* an image's gradient cleared just before its windows add into it: still in cache */        \
      memset(out + (size_t)n * img, 0, img * sizeof(T));                                           \
      for (int64_t oh = 0; oh < g->oh; oh++)                                                       \
        for (int64_t ow = 0; ow < g->ow; ow++) {                                                   \
          const T *gp = gs + (size_t)((n * g->oh + oh) * g->ow + ow) * (size_t)g->c;               \
          int64_t hs, he, ws, we;                                                                  \
          clg_window_clip(oh * g->sh - g->pt, g->kh, g->h, &hs, &he);                              \
          clg_window_clip(ow * g->sw - g->pl, g->kw, g->w, &ws, &we);                              \
          T *base = out + (size_t)n * img;                                                         \
          if (j->avg) {                                                                            \
            T cnt = (T)((he - hs) * (we - ws));                                                    \
            for (int64_t h2 = hs; h2 < he; h2++)                                                   \
              for (int64_t w2 = ws; w2 < we; w2++) {                                               \
                T *d = base + (size_t)(h2 * g->w + w2) * (size_t)g->c;                             \
                for (int64_t c = 0; c < g->c; c++)                                                 \
                  d[c] += gp[c] / cnt;                                                             \
              }                                                                                    \
            continue;                                                                              \
          }                                                                                        \
          /* Per channel the first maximum in scan order (strict <: NaN never leads, an all        \
           * -inf window gives nothing): the maximum, then the tap that first equals it. */        \
          const T *xb = xs + (size_t)n * img;                                                      \
          for (int64_t c0 = 0; c0 < g->c; c0 += PG_BLOCK) {                                        \
            int64_t ce = g->c - c0 < PG_BLOCK ? g->c - c0 : PG_BLOCK;                              \
            for (int64_t c = 0; c < ce; c++)                                                       \
              best[c] = (T)-INFINITY;                                                              \
            for (int64_t h2 = hs; h2 < he; h2++)                                                   \
              for (int64_t w2 = ws; w2 < we; w2++)                                                 \
                pg_max_##T(ce, xb + (h2 * g->w + w2) * g->c + c0, best);                           \
            for (int64_t c = 0; c < ce; c++) /* -inf: no tap led */                                \
              best[c] = best[c] == (T)-INFINITY ? (T)NAN : best[c];                                \
            for (int64_t h2 = hs; h2 < he; h2++)                                                   \
              for (int64_t w2 = ws; w2 < we; w2++) {                                               \
                int64_t off = (h2 * g->w + w2) * g->c + c0;                                        \
                pg_route_##T##sfx(ce, xb + off, base + off, gp + c0, best);                        \
              }                                                                                    \
          }                                                                                        \
        }                                                                                          \
    }                                                                                              \
  } while (0)

#define PG_BLOCK 256 /* channels per pass over a window */

/* Compiled twice on x86-64: for the baseline, and for AVX2, where the window scans become
 * vector selects (the baseline's SSE2 has no blend, so they stay branches). */
#define POOL_GRAD_TASK(name, attr, sfx)                                                            \
  attr static void name(void *ctx, size_t n0, size_t n1, bool f64)                                 \
  {                                                                                                \
    const pool_grad_job *j = ctx;                                                                  \
    const clg_window *g = j->g;                                                                    \
    if (f64)                                                                                       \
      POOL_GRAD_LOOP(double, sfx);                                                                 \
    else                                                                                           \
      POOL_GRAD_LOOP(float, sfx);                                                                  \
  }

POOL_GRAD_TASK(pool_grad_base, , _base)
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
POOL_GRAD_TASK(pool_grad_avx2, __attribute__((target("avx2,fma"))), _avx2)
#else
#define pool_grad_avx2 pool_grad_base
#endif

static void pool_grad_task(void *ctx, size_t n0, size_t n1, bool f64)
{
  /* "avx2" or wider: the CPU runs AVX2 and FMA (within CLGRAPH_HOST_GEMM_ISA's limit). */
  if (clg_host_avx2())
    pool_grad_avx2(ctx, n0, n1, f64);
  else
    pool_grad_base(ctx, n0, n1, f64);
}

static void pool_grad_f32(void *ctx, size_t n0, size_t n1) { pool_grad_task(ctx, n0, n1, false); }
static void pool_grad_f64(void *ctx, size_t n0, size_t n1) { pool_grad_task(ctx, n0, n1, true); }

void clg_host_pool_grad(clg_dtype dtype, bool avg, const void *x, const void *dy, void *dx,
                        const clg_window *g)
{
  pool_grad_job j = {avg, x, dy, dx, g};
  size_t img = (size_t)(g->h * g->w * g->c) * clg_dtype_size(dtype);
  clg_host_parallel_for((size_t)g->n, grain_rows(img),
                        dtype == CLG_FLOAT64 ? pool_grad_f64 : pool_grad_f32, &j);
}

#define LRN_GRAD_LOOP(T, POW)                                                                      \
  do {                                                                                             \
    const T *gs = j->dy, *xs = j->x, *ys = j->y;                                                   \
    T *out = j->out;                                                                               \
    int64_t c = j->c, radius = j->radius;                                                          \
    T alpha = (T)j->alpha, beta = (T)j->beta;                                                      \
    for (size_t base = p0 * (size_t)c; base < p1 * (size_t)c; base += (size_t)c)                   \
      for (int64_t ch = 0; ch < c; ch++) {                                                         \
        int64_t lo = ch - radius < 0 ? 0 : ch - radius;                                            \
        int64_t hi = ch + radius >= c ? c - 1 : ch + radius;                                       \
        T own = 0, cross = 0;                                                                      \
        for (int64_t k = lo; k <= hi; k++) {                                                       \
          int64_t lo2 = k - radius < 0 ? 0 : k - radius;                                           \
          int64_t hi2 = k + radius >= c ? c - 1 : k + radius;                                      \
          T sq = 0;                                                                                \
          for (int64_t jj = lo2; jj <= hi2; jj++)                                                  \
            sq += xs[base + (size_t)jj] * xs[base + (size_t)jj];                                   \
          T norm = (T)j->bias + alpha * sq;                                                        \
          if (k == ch)                                                                             \
            own = POW(norm, -beta);                                                                \
          cross += gs[base + (size_t)k] * ys[base + (size_t)k] / norm;                             \
        }                                                                                          \
        size_t i = base + (size_t)ch;                                                              \
        out[i] = gs[i] * own - (T)2 * alpha * beta * xs[i] * cross;                                \
      }                                                                                            \
  } while (0)

/* The same with each channel's norm and dy*y/norm computed once per pixel, in buffers padded
 * with radius zeros on each side: O(radius) per element, fixed-length window loops. */
#define LRN_GRAD_FAST(T, POW)                                                                      \
  do {                                                                                             \
    const T *gs = j->dy, *xs = j->x, *ys = j->y;                                                   \
    T *out = j->out, bias = (T)j->bias, alpha = (T)j->alpha, beta = (T)j->beta;                    \
    bool b075 = beta == (T)0.75;                                                                   \
    int64_t c = j->c, r = j->radius, w = 2 * r + 1;                                                \
    T *sq = buf, *t = sq + c + 2 * r, *norm = t + c + 2 * r, *cross = norm + c;                    \
    for (int64_t i = 0; i < r; i++)                                                                \
      sq[i] = sq[c + r + i] = t[i] = t[c + r + i] = 0;                                             \
    for (size_t px = p0; px < p1; px++) {                                                          \
      size_t base = px * (size_t)c;                                                                \
      for (int64_t k = 0; k < c; k++)                                                              \
        sq[r + k] = xs[base + (size_t)k] * xs[base + (size_t)k], norm[k] = 0, cross[k] = 0;        \
      WINDOW_SUM(norm, sq, w, c); /* per channel the same order, q ascending */                    \
      for (int64_t k = 0; k < c; k++) {                                                            \
        norm[k] = bias + alpha * norm[k];                                                          \
        t[r + k] = gs[base + (size_t)k] * ys[base + (size_t)k] / norm[k];                          \
      }                                                                                            \
      WINDOW_SUM(cross, t, w, c);                                                                  \
      if (b075) /* the test out of the loop, which then vectorises */                              \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
          size_t i = base + (size_t)ch;                                                            \
          T v = norm[ch], own = (T)1 / (sqrt_##T(v) * sqrt_##T(sqrt_##T(v)));                      \
          out[i] = gs[i] * own - (T)2 * alpha * beta * xs[i] * cross[ch];                          \
        }                                                                                          \
      else                                                                                         \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
          size_t i = base + (size_t)ch;                                                            \
          T own = (T)1 / POW(norm[ch], beta);                                                      \
          out[i] = gs[i] * own - (T)2 * alpha * beta * xs[i] * cross[ch];                          \
        }                                                                                          \
    }                                                                                              \
  } while (0)

static inline PG_INLINE void lrn_grad_f32_body(void *ctx, size_t p0, size_t p1)
{
  const lrn_job *j = ctx;
  float *buf = malloc((size_t)(4 * j->c + 4 * j->radius) * sizeof(float));
  if (buf)
    LRN_GRAD_FAST(float, powf);
  else
    LRN_GRAD_LOOP(float, powf);
  free(buf);
}
ISA_VARIANTS(lrn_grad_f32)

static void lrn_grad_f64(void *ctx, size_t p0, size_t p1)
{
  const lrn_job *j = ctx;
  double *buf = malloc((size_t)(4 * j->c + 4 * j->radius) * sizeof(double));
  if (buf)
    LRN_GRAD_FAST(double, pow);
  else
    LRN_GRAD_LOOP(double, pow);
  free(buf);
}

void clg_host_lrn_grad(clg_dtype dtype, const void *dy, const void *x, const void *y, void *dx,
                       size_t count, int64_t c, int64_t radius, double bias, double alpha,
                       double beta)
{
  if (c <= 0)
    return;
  lrn_job j = {x, dy, y, dx, c, radius < c ? radius : c, bias, alpha, beta};
  size_t pixels = count / (size_t)c;
  clg_host_parallel_for(pixels, grain_rows((size_t)c * clg_dtype_size(dtype)),
                        dtype == CLG_FLOAT64 ? lrn_grad_f64 : lrn_grad_f32, &j);
}
