/* DepthwiseConv2dNative and its gradients on the host: direct loops over the taps, each an
 * inner loop over the channels (contiguous in NHWC, so it vectorises); rows of the output
 * spread over the cores, each written by one thread. */
#include <string.h>

#include "backends/host/host.h"

typedef struct dw_job {
  const clg_kernel_ctx *c;
  clg_window g;
  int64_t m; /* channel multiplier */
} dw_job;

/* The forward pass and the filter gradient walk the same taps: for output rows (b, oh) in
 * [r0, r1) (of n * oh), every ow, and filter taps (a, e) in [t0, t1) (of kh * kw), in that
 * order, each tap inside the input adds x[b,ih,iw,c] * w[c*M+k] into acc[c*M+k]. Forward: w
 * is f[a,e] and acc y[b,oh,ow]; filter gradient: w is dy[b,oh,ow] and acc df[a,e]. Either
 * way each acc element sums its terms in the order the two loops had apart. */
#define TAPS(T)                                                                                    \
  static void taps_##T(const dw_job *j, size_t r0, size_t r1, size_t t0, size_t t1,                \
                       bool filter_grad)                                                           \
  {                                                                                                \
    const clg_window *g = &j->g;                                                                   \
    /* The weights: the filter (input 1), or dy (input 2) for the filter gradient. */              \
    const T *x = j->c->in[0].host, *wts = j->c->in[filter_grad ? 2 : 1].host;                      \
    T *y = j->c->out[0].host;                                                                      \
    int64_t C = g->c, M = j->m, CM = g->cout;                                                      \
    for (size_t r = r0; r < r1; r++) {                                                             \
      int64_t b = (int64_t)r / g->oh, oh = (int64_t)r % g->oh;                                     \
      for (int64_t ow = 0; ow < g->ow; ow++) {                                                     \
        size_t pixel = (size_t)r * (size_t)g->ow + (size_t)ow;                                     \
        for (size_t t = t0; t < t1; t++) {                                                         \
          int64_t a = (int64_t)t / g->kw, e = (int64_t)t % g->kw;                                  \
          int64_t ih = oh * g->sh - g->pt + a * g->dh, iw = ow * g->sw - g->pl + e * g->dw;        \
          if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)                                        \
            continue;                                                                              \
          const T *xr =                                                                            \
              x +                                                                                  \
              (((size_t)b * (size_t)g->h + (size_t)ih) * (size_t)g->w + (size_t)iw) * (size_t)C;   \
          const T *w = wts + (filter_grad ? pixel : t) * (size_t)CM;                               \
          T *acc = y + (filter_grad ? t : pixel) * (size_t)CM;                                     \
          if (M == 1) {                                                                            \
            for (int64_t q = 0; q < C; q++)                                                        \
              acc[q] += xr[q] * w[q];                                                              \
          } else {                                                                                 \
            for (int64_t ch = 0; ch < C; ch++)                                                     \
              for (int64_t k = 0; k < M; k++)                                                      \
                acc[ch * M + k] += xr[ch] * w[ch * M + k];                                         \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }
TAPS(float)
TAPS(double)

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

/* Output rows (b, oh) [begin, end): y[b,oh,ow,c*M+k] = sum of x[b,ih,iw,c] * f[a,e,c,k]. */
static void forward_range(void *ctx, size_t begin, size_t end)
{
  const dw_job *j = ctx;
  const clg_window *g = &j->g;
  size_t es = clg_dtype_size(j->c->node->outs[0].dtype), row = (size_t)(g->ow * g->cout);
  memset((char *)j->c->out[0].host + begin * row * es, 0, (end - begin) * row * es);
  if (es == 8)
    taps_double(j, begin, end, 0, (size_t)(g->kh * g->kw), false);
  else
    taps_float(j, begin, end, 0, (size_t)(g->kh * g->kw), false);
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

/* Filter taps (a, e) [begin, end): df[a,e,c,k] = sum over (b, oh, ow) of x[b,ih,iw,c] *
 * dy[b,oh,ow,c*M+k], each tap's row of C*M summed by one thread. */
static void filter_range(void *ctx, size_t begin, size_t end)
{
  const dw_job *j = ctx;
  const clg_window *g = &j->g;
  size_t es = clg_dtype_size(j->c->node->outs[0].dtype), row = (size_t)g->cout;
  memset((char *)j->c->out[0].host + begin * row * es, 0, (end - begin) * row * es);
  if (es == 8)
    taps_double(j, 0, (size_t)(g->n * g->oh), begin, end, true);
  else
    taps_float(j, 0, (size_t)(g->n * g->oh), begin, end, true);
}

static clg_code dw_run(const clg_kernel_ctx *c)
{
  dw_job j = {c, {0}, 0};
  clg_code code = clg_depthwise_geometry(c->node, &j.g, &j.m);
  if (code != CLG_OK || clg_out_count(&c->node->outs[0]) == 0)
    return code;
  const clg_window *g = &j.g;
  const clg_op_def *d = c->node->def;
  /* Grain: rows worth about 32k multiply-adds, so small layers stay on one thread. */
  size_t per_row = (size_t)(g->ow + 1) * (size_t)(g->cout + 1) * (size_t)(g->kh * g->kw + 1);
  size_t grain = per_row >= 32768 ? 1 : 32768 / per_row;
  if (d == &clg_op_DepthwiseConv2dNative)
    clg_host_parallel_for((size_t)(g->n * g->oh), grain, forward_range, &j);
  else if (d == &clg_op_DepthwiseConv2dNativeBackpropInput)
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
