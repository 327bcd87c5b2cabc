/* Sum, Mean, Max, Min, Prod, L2Loss, ArgMax and ArgMin on the host: each output walks its
 * reduced elements, accumulating in double. */
#include <math.h>
#include <stdint.h>

#include "backends/host/host.h"

#define REDUCE_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t o = 0; o < nout; o++) {                                                            \
      size_t base = clg_strided_offset(&keep, o);                                                  \
      double acc = op == CLG_REDUCTION_MAX    ? -INFINITY                                          \
                   : op == CLG_REDUCTION_MIN  ? INFINITY                                           \
                   : op == CLG_REDUCTION_PROD ? 1                                                  \
                                              : 0;                                                 \
      for (size_t r = 0; r < nred; r++) {                                                          \
        double v = x[base + clg_strided_offset(&red, r)];                                          \
        if (op == CLG_REDUCTION_MAX)                                                               \
          acc = acc < v ? v : acc;                                                                 \
        else if (op == CLG_REDUCTION_MIN)                                                          \
          acc = v < acc ? v : acc;                                                                 \
        else if (op == CLG_REDUCTION_PROD)                                                         \
          acc *= v;                                                                                \
        else                                                                                       \
          acc += op == CLG_REDUCTION_L2 ? v * v : v;                                               \
      }                                                                                            \
      y[o] = (T)(op == CLG_REDUCTION_MEAN ? acc / (double)nred                                     \
                 : op == CLG_REDUCTION_L2 ? acc / 2                                                \
                                          : acc);                                                  \
    }                                                                                              \
  } while (0)

/* The same sums where the kept axes end in a contiguous one (a spatial mean of NHWC, a
 * global pool): a run of outputs side by side takes each reduced offset once, in blocks of
 * RUN_BLOCK accumulators, instead of walking the strided map per output. Each output is the
 * same sequence of double operations as in REDUCE_LOOP, in one task whatever the thread
 * count; the blocks are split across the cores, and the loops compiled for AVX2 too (the
 * baseline's SSE2 converts and adds two doubles a step). */
#define RUN_BLOCK 256

typedef struct runs_job {
  const void *x;
  void *y;
  const clg_strided *keep, *red;
  size_t nred, run, blocks; /* blocks: RUN_BLOCK-wide blocks of a run */
  clg_reduction op;
  bool f64, avx2; /* avx2: the AVX2 variant (clg_host_avx2, asked once per op) */
} runs_job;

#define REDUCE_RUNS(T)                                                                             \
  do {                                                                                             \
    const T *x = j->x;                                                                             \
    T *y = j->y;                                                                                   \
    size_t o0 = item / j->blocks * j->run, c0 = item % j->blocks * RUN_BLOCK;                      \
    size_t cw = j->run - c0 < RUN_BLOCK ? j->run - c0 : RUN_BLOCK;                                 \
    size_t base = clg_strided_offset(j->keep, o0) + c0;                                            \
    for (size_t i = 0; i < cw; i++)                                                                \
      acc[i] = init;                                                                               \
    for (size_t r = 0; r < j->nred; r++) {                                                         \
      const T *v = x + base + clg_strided_offset(j->red, r);                                       \
      if (op == CLG_REDUCTION_MAX)                                                                 \
        for (size_t i = 0; i < cw; i++)                                                            \
          acc[i] = acc[i] < (double)v[i] ? (double)v[i] : acc[i];                                  \
      else if (op == CLG_REDUCTION_MIN)                                                            \
        for (size_t i = 0; i < cw; i++)                                                            \
          acc[i] = (double)v[i] < acc[i] ? (double)v[i] : acc[i];                                  \
      else if (op == CLG_REDUCTION_PROD)                                                           \
        for (size_t i = 0; i < cw; i++)                                                            \
          acc[i] *= (double)v[i];                                                                  \
      else if (op == CLG_REDUCTION_L2)                                                             \
        for (size_t i = 0; i < cw; i++)                                                            \
          acc[i] += (double)v[i] * (double)v[i];                                                   \
      else                                                                                         \
        for (size_t i = 0; i < cw; i++)                                                            \
          acc[i] += (double)v[i];                                                                  \
    }                                                                                              \
    for (size_t i = 0; i < cw; i++)                                                                \
      y[o0 + c0 + i] = (T)(op == CLG_REDUCTION_MEAN ? acc[i] / (double)j->nred                     \
                           : op == CLG_REDUCTION_L2 ? acc[i] / 2                                   \
                                                    : acc[i]);                                     \
  } while (0)

#if defined(__GNUC__) || defined(__clang__)
#define RUNS_INLINE __attribute__((always_inline)) /* into each ISA variant */
#else
#define RUNS_INLINE
#endif

static inline RUNS_INLINE void runs_body(const runs_job *j, size_t item)
{
  double acc[RUN_BLOCK];
  clg_reduction op = j->op;
  double init = op == CLG_REDUCTION_MAX    ? -INFINITY
                : op == CLG_REDUCTION_MIN  ? INFINITY
                : op == CLG_REDUCTION_PROD ? 1
                                           : 0;
  if (j->f64)
    REDUCE_RUNS(double);
  else
    REDUCE_RUNS(float);
}

static void runs_base(const runs_job *j, size_t item) { runs_body(j, item); }

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
__attribute__((target("avx2"))) static void runs_avx2(const runs_job *j, size_t item)
{
  runs_body(j, item);
}
#endif

static void runs_item(const runs_job *j, size_t item)
{
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  if (j->avx2) {
    runs_avx2(j, item);
    return;
  }
#endif
  runs_base(j, item);
}

static void runs_task(void *ctx, int item) { runs_item(ctx, (size_t)item); }

static clg_code reduce_host(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  clg_reduction op = clg_reduction_of(c->node);
  /* outputs side by side in the input too: the last kept axis has stride 1 */
  size_t run = keep.rank > 0 && keep.sa[keep.rank - 1] == 1 ? keep.dims[keep.rank - 1] : 0;
  bool f64 = c->node->outs[0].dtype == CLG_FLOAT64;
  if (run >= 2 && nred > 0 && nout % run == 0) {
    runs_job j = {c->in[0].host,
                  c->out[0].host,
                  &keep,
                  &red,
                  nred,
                  run,
                  (run + RUN_BLOCK - 1) / RUN_BLOCK,
                  op,
                  f64,
                  clg_host_avx2()};
    size_t items = nout / run * j.blocks;
    /* one thread below some 64K elements read (microseconds of work) */
    if (items < 2 || items > INT32_MAX || nout * nred < ((size_t)1 << 16))
      for (size_t i = 0; i < items; i++)
        runs_item(&j, i);
    else
      clg_host_parallel((int)items, runs_task, &j);
    return CLG_OK;
  }
  if (f64)
    REDUCE_LOOP(double);
  else
    REDUCE_LOOP(float);
  return CLG_OK;
}

#define ARGMAX_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    for (size_t o = 0; o < nout; o++) {                                                            \
      size_t base = clg_strided_offset(&keep, o), at = 0;                                          \
      for (size_t r = 1; r < nred; r++)                                                            \
        if (min ? x[base + r * red.sa[0]] < x[base + at * red.sa[0]]                               \
                : x[base + r * red.sa[0]] > x[base + at * red.sa[0]])                              \
          at = r;                                                                                  \
      if (c->node->outs[0].dtype == CLG_INT64)                                                     \
        ((int64_t *)c->out[0].host)[o] = (int64_t)at;                                              \
      else                                                                                         \
        ((int32_t *)c->out[0].host)[o] = (int32_t)at;                                              \
    }                                                                                              \
  } while (0)

static clg_code argmax_host(const clg_kernel_ctx *c)
{
  clg_strided keep, red;
  size_t nout, nred;
  clg_reduce_maps(c->node, &keep, &red, &nout, &nred);
  bool min = c->node->def == &clg_op_ArgMin;
  if (clg_node_in(c->node, 0)->dtype == CLG_FLOAT64)
    ARGMAX_LOOP(double);
  else
    ARGMAX_LOOP(float);
  return CLG_OK;
}

/* Float inputs (the axes may be int32 or int64). */
static bool float_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_dtype(clg_node_in(n, 0)->dtype, dev);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Sum, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Mean, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Max, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_L2Loss, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_ArgMax, {CLG_KIND_HOST, float_supports, argmax_host, NULL, NULL}},
    {&clg_op_Min, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_Prod, {CLG_KIND_HOST, float_supports, reduce_host, NULL, NULL}},
    {&clg_op_ArgMin, {CLG_KIND_HOST, float_supports, argmax_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_reduce, entries);
