/* DepthwiseConv2dNative and its gradients on the host: direct loops over the taps, each an
 * inner loop over the channels (contiguous in NHWC, so it vectorises); rows of the output
 * spread over the cores, each written by one thread. */
#include <string.h>

#include "backends/host/host.h"

typedef struct dw_job {
  const clg_kernel_ctx *c;
  clg_window g;
  int64_t m; /* channel multiplier */
  int isa;   /* 2: the CPU runs AVX-512, 1: AVX2 (within CLGRAPH_HOST_GEMM_ISA's limit), 0 */
  size_t rows;
  int tasks; /* the forward pass: rows cut into this many contiguous pieces */
} dw_job;

/* Output rows (b, oh) [begin, end): y[b,oh,ow,c*M+k] = sum of x[b,ih,iw,c] * f[a,e,c,k]. */
#define FORWARD(T)                                                                                 \
  do {                                                                                             \
    const T *x = j->c->in[0].host, *f = j->c->in[1].host;                                          \
    T *y = j->c->out[0].host;                                                                      \
    int64_t C = g->c, M = j->m, CM = g->cout;                                                      \
    for (size_t r = begin; r < end; r++) {                                                         \
      int64_t b = (int64_t)r / g->oh, oh = (int64_t)r % g->oh;                                     \
      for (int64_t ow = 0; ow < g->ow; ow++) {                                                     \
        T *out = y + ((size_t)r * (size_t)g->ow + (size_t)ow) * (size_t)CM;                        \
        for (int64_t q = 0; q < CM; q++)                                                           \
          out[q] = 0;                                                                              \
        for (int64_t a = 0; a < g->kh; a++) {                                                      \
          int64_t ih = oh * g->sh - g->pt + a * g->dh;                                             \
          if (ih < 0 || ih >= g->h)                                                                \
            continue;                                                                              \
          for (int64_t e = 0; e < g->kw; e++) {                                                    \
            int64_t iw = ow * g->sw - g->pl + e * g->dw;                                           \
            if (iw < 0 || iw >= g->w)                                                              \
              continue;                                                                            \
            const T *xr =                                                                          \
                x +                                                                                \
                (((size_t)b * (size_t)g->h + (size_t)ih) * (size_t)g->w + (size_t)iw) * (size_t)C; \
            const T *fr = f + ((size_t)a * (size_t)g->kw + (size_t)e) * (size_t)CM;                \
            if (M == 1) {                                                                          \
              for (int64_t q = 0; q < C; q++)                                                      \
                out[q] += xr[q] * fr[q];                                                           \
            } else {                                                                               \
              for (int64_t ch = 0; ch < C; ch++)                                                   \
                for (int64_t k = 0; k < M; k++)                                                    \
                  out[ch * M + k] += xr[ch] * fr[ch * M + k];                                      \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* Input rows (b, ih) [begin, end): dx[b,ih,iw,c] = sum over the outputs whose window tap (a, e)
 * lands on (ih, iw) of sum_k dy[b,oh,ow,c*M+k] * f[a,e,c,k]: a gather, so no two threads add
 * into one element. */
#define BACKPROP_INPUT(T)                                                                          \
  do {                                                                                             \
    const T *f = j->c->in[1].host, *dy = j->c->in[2].host;                                         \
    T *dx = j->c->out[0].host;                                                                     \
    int64_t C = g->c, M = j->m, CM = g->cout;                                                      \
    for (size_t r = begin; r < end; r++) {                                                         \
      int64_t b = (int64_t)r / g->h, ih = (int64_t)r % g->h;                                       \
      for (int64_t iw = 0; iw < g->w; iw++) {                                                      \
        T *out = dx + ((size_t)r * (size_t)g->w + (size_t)iw) * (size_t)C;                         \
        for (int64_t q = 0; q < C; q++)                                                            \
          out[q] = 0;                                                                              \
        for (int64_t a = 0; a < g->kh; a++) {                                                      \
          int64_t t = ih + g->pt - a * g->dh;                                                      \
          if (t < 0 || t % g->sh != 0 || t / g->sh >= g->oh)                                       \
            continue;                                                                              \
          int64_t oh = t / g->sh;                                                                  \
          for (int64_t e = 0; e < g->kw; e++) {                                                    \
            int64_t u = iw + g->pl - e * g->dw;                                                    \
            if (u < 0 || u % g->sw != 0 || u / g->sw >= g->ow)                                     \
              continue;                                                                            \
            int64_t ow = u / g->sw;                                                                \
            const T *dr =                                                                          \
                dy + (((size_t)b * (size_t)g->oh + (size_t)oh) * (size_t)g->ow + (size_t)ow) *     \
                         (size_t)CM;                                                               \
            const T *fr = f + ((size_t)a * (size_t)g->kw + (size_t)e) * (size_t)CM;                \
            if (M == 1) {                                                                          \
              for (int64_t q = 0; q < C; q++)                                                      \
                out[q] += dr[q] * fr[q];                                                           \
            } else {                                                                               \
              for (int64_t ch = 0; ch < C; ch++) {                                                 \
                T s = 0;                                                                           \
                for (int64_t k = 0; k < M; k++)                                                    \
                  s += dr[ch * M + k] * fr[ch * M + k];                                            \
                out[ch] += s;                                                                      \
              }                                                                                    \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* Filter taps (a, e) [begin, end): df[a,e,c,k] = sum over (b, oh, ow) of x[b,ih,iw,c] *
 * dy[b,oh,ow,c*M+k], each tap's row of C*M summed by one thread. */
#define BACKPROP_FILTER(T)                                                                         \
  do {                                                                                             \
    const T *x = j->c->in[0].host, *dy = j->c->in[2].host;                                         \
    T *df = j->c->out[0].host;                                                                     \
    int64_t C = g->c, M = j->m, CM = g->cout;                                                      \
    for (size_t r = begin; r < end; r++) {                                                         \
      int64_t a = (int64_t)r / g->kw, e = (int64_t)r % g->kw;                                      \
      T *out = df + r * (size_t)CM;                                                                \
      for (int64_t q = 0; q < CM; q++)                                                             \
        out[q] = 0;                                                                                \
      for (int64_t b = 0; b < g->n; b++)                                                           \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                                   \
          int64_t ih = oh * g->sh - g->pt + a * g->dh;                                             \
          if (ih < 0 || ih >= g->h)                                                                \
            continue;                                                                              \
          for (int64_t ow = 0; ow < g->ow; ow++) {                                                 \
            int64_t iw = ow * g->sw - g->pl + e * g->dw;                                           \
            if (iw < 0 || iw >= g->w)                                                              \
              continue;                                                                            \
            const T *xr =                                                                          \
                x +                                                                                \
                (((size_t)b * (size_t)g->h + (size_t)ih) * (size_t)g->w + (size_t)iw) * (size_t)C; \
            const T *dr =                                                                          \
                dy + (((size_t)b * (size_t)g->oh + (size_t)oh) * (size_t)g->ow + (size_t)ow) *     \
                         (size_t)CM;                                                               \
            if (M == 1) {                                                                          \
              for (int64_t q = 0; q < C; q++)                                                      \
                out[q] += xr[q] * dr[q];                                                           \
            } else {                                                                               \
              for (int64_t ch = 0; ch < C; ch++)                                                   \
                for (int64_t k = 0; k < M; k++)                                                    \
                  out[ch * M + k] += xr[ch] * dr[ch * M + k];                                      \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
    }                                                                                              \
  } while (0)

/* Float, multiplier 1: depthwise_tmpl.h on AVX-512 (blocks of 64 channels) and on AVX2 and
 * FMA (blocks of 16); both contract into fused multiply-adds. Windows 3 wide with column
 * stride 1 or 2 (MobileNet's) take its rows3 kernel instead, fused epilogue included. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

static __attribute__((target("avx512f"))) __mmask16 dw_mask512(int64_t left)
{
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

#define DW_SFX(name) name##_avx512
#define DW_TGT __attribute__((target("avx512f")))
#define DW_V __m512
#define DW_M __mmask16
#define DW_W 16
#define DW_NV 4
#define DW_ZERO _mm512_setzero_ps()
#define DW_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define DW_MASK(left) dw_mask512(left)
#define DW_LOAD(p, m, full) ((full) ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p))
#define DW_STORE(p, m, full, v) ((full) ? _mm512_storeu_ps(p, v) : _mm512_mask_storeu_ps(p, m, v))
#define DW_ADD(a, b) _mm512_add_ps(a, b)
#define DW_SET1(s) _mm512_set1_ps(s)
#define DW_MAX(a, b) _mm512_max_ps(a, b)
#define DW_MIN(a, b) _mm512_min_ps(a, b)
#define DW_RELU(v)                                                                                 \
  _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ), _mm512_setzero_ps())
#include "backends/host/depthwise_tmpl.h"

/* AVX2's masked moves take a vector whose lanes' sign bits select */
static __attribute__((target("avx2"))) __m256i dw_mask256(int64_t left)
{
  int l = left >= 8 ? 8 : left <= 0 ? 0 : (int)left;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define DW_SFX(name) name##_avx2
#define DW_TGT __attribute__((target("avx2,fma")))
#define DW_V __m256
#define DW_M __m256i
#define DW_W 8
#define DW_NV 2
#define DW_ZERO _mm256_setzero_ps()
#define DW_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define DW_MASK(left) dw_mask256(left)
#define DW_LOAD(p, m, full) ((full) ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m))
#define DW_STORE(p, m, full, v) ((full) ? _mm256_storeu_ps(p, v) : _mm256_maskstore_ps(p, m, v))
#define DW_ADD(a, b) _mm256_add_ps(a, b)
#define DW_SET1(s) _mm256_set1_ps(s)
#define DW_MAX(a, b) _mm256_max_ps(a, b)
#define DW_MIN(a, b) _mm256_min_ps(a, b)
#define DW_RELU(v) _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LE_OQ), v)
#include "backends/host/depthwise_tmpl.h"

/* A multiplier over 1: the loops above, float also compiled for AVX2 (8 channels a vector, not
 * SSE2's 4; no contraction into FMAs, so the same sums as the baseline's). */
__attribute__((target("avx2,fma"))) static void forward_f32_avx2(const dw_job *j, size_t begin,
                                                                 size_t end)
{
  const clg_window *g = &j->g;
  FORWARD(float);
}
#endif

static void forward_range(void *ctx, size_t begin, size_t end)
{
  const dw_job *j = ctx;
  const clg_window *g = &j->g;
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  if (j->c->node->outs[0].dtype == CLG_FLOAT32 && j->isa != 0) {
    const float *x = j->c->in[0].host, *f = j->c->in[1].host;
    float *y = j->c->out[0].host;
    if (j->m != 1)
      forward_f32_avx2(j, begin, end);
    else if (j->isa == 2)
      forward_rows_avx512(g, x, f, y, begin, end);
    else
      forward_rows_avx2(g, x, f, y, begin, end);
    return;
  }
#endif
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    FORWARD(double);
  else
    FORWARD(float);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
/* The 3-wide kernel (depthwise_tmpl.h's rows3) takes the layer: float, multiplier 1, kw 3,
 * column dilation 1, column stride 1 or 2, an epilogue over rows of the output's channels. */
static bool forward3_fits(const dw_job *j)
{
  const clg_window *g = &j->g;
  const clg_epilogue *e = j->c->epilogue;
  return j->isa != 0 && j->c->node->outs[0].dtype == CLG_FLOAT32 && j->m == 1 && g->kw == 3 &&
         g->dw == 1 && (g->sw == 1 || g->sw == 2) && (!e || e->cols == (size_t)g->c);
}
#endif

/* The forward rows, then the fused ops on them while they are in cache (float32 only; the
 * 3-wide kernel applies them in registers). */
static void forward_task(void *ctx, int t)
{
  const dw_job *j = ctx;
  size_t T = (size_t)j->tasks, begin = j->rows * (size_t)t / T, end = j->rows * (size_t)(t + 1) / T;
  const clg_epilogue *e = j->c->node->outs[0].dtype == CLG_FLOAT32 ? j->c->epilogue : NULL;
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  if (forward3_fits(j)) {
    const float *x = j->c->in[0].host, *f = j->c->in[1].host;
    float *y = j->c->out[0].host;
    if (j->isa == 2)
      forward3_rows_avx512(&j->g, x, f, y, begin, end, e);
    else
      forward3_rows_avx2(&j->g, x, f, y, begin, end, e);
    return;
  }
#endif
  forward_range(ctx, begin, end);
  if (e)
    clg_host_epilogue_rows(e, j->c->out[0].host, begin * (size_t)j->g.ow,
                           (end - begin) * (size_t)j->g.ow);
}

static void input_range(void *ctx, size_t begin, size_t end)
{
  const dw_job *j = ctx;
  const clg_window *g = &j->g;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BACKPROP_INPUT(double);
  else
    BACKPROP_INPUT(float);
}

static void filter_range(void *ctx, size_t begin, size_t end)
{
  const dw_job *j = ctx;
  const clg_window *g = &j->g;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BACKPROP_FILTER(double);
  else
    BACKPROP_FILTER(float);
}

static clg_code dw_run(const clg_kernel_ctx *c)
{
  const char *isa = clg_host_matmul_portable_isa();
  dw_job j = {c, {0}, 0, strcmp(isa, "avx512") == 0 ? 2 : strcmp(isa, "avx2") == 0, 0, 1};
  clg_code code = clg_depthwise_geometry(c->node, &j.g, &j.m);
  if (code != CLG_OK || clg_out_count(&c->node->outs[0]) == 0)
    return code;
  const clg_window *g = &j.g;
  const clg_op_def *d = c->node->def;
  /* Grain: rows worth about 32k multiply-adds, so small layers stay on one thread. */
  size_t per_row = (size_t)(g->ow + 1) * (size_t)(g->cout + 1) * (size_t)(g->kh * g->kw + 1);
  size_t grain = per_row >= 32768 ? 1 : 32768 / per_row;
  if (d == &clg_op_DepthwiseConv2dNative) {
    /* Four pieces a thread, taken in turn: on a loaded machine a thread the scheduler stops
     * leaves its pieces to the others. */
    j.rows = (size_t)(g->n * g->oh);
    size_t most = 4 * (size_t)clg_host_threads(), pieces = j.rows / grain;
    j.tasks = pieces < 1 ? 1 : pieces > most ? (int)most : (int)pieces;
    clg_host_parallel(j.tasks, forward_task, &j);
  } else if (d == &clg_op_DepthwiseConv2dNativeBackpropInput)
    clg_host_parallel_for((size_t)(g->n * g->h), grain, input_range, &j);
  else
    clg_host_parallel_for((size_t)(g->kh * g->kw), 1, filter_range, &j);
  return CLG_OK;
}

/* The float operands and the output share one dtype (the sizes inputs are int). */
static bool dw_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  clg_dtype t = n->outs[0].dtype;
  return t == CLG_FLOAT32 || t == CLG_FLOAT64;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_DepthwiseConv2dNative, {CLG_KIND_HOST, dw_supports, dw_run, NULL, NULL}},
    {&clg_op_DepthwiseConv2dNativeBackpropInput, {CLG_KIND_HOST, dw_supports, dw_run, NULL, NULL}},
    {&clg_op_DepthwiseConv2dNativeBackpropFilter, {CLG_KIND_HOST, dw_supports, dw_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_depthwise, entries);
