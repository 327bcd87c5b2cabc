/* A float product of one row by a matrix (a fully connected layer at batch 1: ONNX's Gemm,
 * tfjs's MatMul), split by output columns across the host team. It reads the matrix once, in
 * order; a GEMM kernel would pack it first, and at one row that packing is the whole cost
 * (mobilenet_v2's 1280 x 1000 classifier: 2.9 ms through the GEMM, the bandwidth of 5 MB
 * here). Each output is computed by one task, in one order: results do not depend on the
 * number of threads. */

#include "backends/host/host.h"

typedef struct gemv_job {
  bool tb;
  size_t n, k;
  const float *a, *b;
  float *c;
} gemv_job;

/* Dot product in 8 interleaved sums (which vectorise without reassociating the loop). */
static float dot(const float *x, const float *y, size_t k)
{
  float s[8] = {0};
  size_t q = 0;
  for (; q + 8 <= k; q += 8)
    for (int l = 0; l < 8; l++)
      s[l] += x[q + l] * y[q + l];
  float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  for (; q < k; q++)
    t += x[q] * y[q];
  return t;
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define GEMV_X86 1
#define GEMV_TARGET __attribute__((target("avx2,fma")))

/* dot's sums in one ymm register per column, four columns at once (the baseline code keeps one
 * chain of adds per lane, one column at a time: bound by the adds' latency), multiplies and adds
 * apart as dot's (C11 does not contract them): the same sums, bit for bit. */
GEMV_TARGET static void dot4(const float *x, const float *y, size_t ldy, size_t k, float *out)
{
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  const float *y0 = y, *y1 = y + ldy, *y2 = y + 2 * ldy, *y3 = y + 3 * ldy;
  size_t q = 0;
  for (; q + 8 <= k; q += 8) {
    __m256 xv = _mm256_loadu_ps(x + q);
    s0 = _mm256_add_ps(s0, _mm256_mul_ps(xv, _mm256_loadu_ps(y0 + q)));
    s1 = _mm256_add_ps(s1, _mm256_mul_ps(xv, _mm256_loadu_ps(y1 + q)));
    s2 = _mm256_add_ps(s2, _mm256_mul_ps(xv, _mm256_loadu_ps(y2 + q)));
    s3 = _mm256_add_ps(s3, _mm256_mul_ps(xv, _mm256_loadu_ps(y3 + q)));
  }
  __m256 sv[4] = {s0, s1, s2, s3};
  const float *ys[4] = {y0, y1, y2, y3};
  for (int c = 0; c < 4; c++) {
    float l[8];
    _mm256_storeu_ps(l, sv[c]);
    float t = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (size_t p = q; p < k; p++)
      t += x[p] * ys[c][p];
    out[c] = t;
  }
}

/* The k x n case as the baseline loop (each c[j] += a[q] * b[q][j] in row order, the rows
 * read in order), eight columns a step. */
GEMV_TARGET static void rows8(const float *a, const float *b, size_t n, size_t k, size_t j0,
                              size_t j1, float *c)
{
  for (size_t j = j0; j < j1; j += 8)
    _mm256_storeu_ps(c + j, _mm256_setzero_ps());
  for (size_t q = 0; q < k; q++) {
    const float *row = b + q * n;
    __m256 av = _mm256_set1_ps(a[q]);
    for (size_t j = j0; j < j1; j += 8)
      _mm256_storeu_ps(c + j, _mm256_add_ps(_mm256_loadu_ps(c + j),
                                            _mm256_mul_ps(av, _mm256_loadu_ps(row + j))));
  }
}

#endif

static void gemv_columns(void *ctx, size_t j0, size_t j1)
{
  const gemv_job *g = ctx;
#ifdef GEMV_X86
  if (clg_host_avx2()) {
    if (g->tb)
      for (; j0 + 4 <= j1; j0 += 4)
        dot4(g->a, g->b + j0 * g->k, g->k, g->k, g->c + j0);
    else if (j1 - j0 >= 8) {
      size_t whole = j0 + (j1 - j0) / 8 * 8;
      rows8(g->a, g->b, g->n, g->k, j0, whole, g->c);
      j0 = whole;
    }
  }
#endif
  if (g->tb) { /* b is n x k: column j of op(b) is row j of b */
    for (size_t j = j0; j < j1; j++)
      g->c[j] = dot(g->a, g->b + j * g->k, g->k);
    return;
  }
  /* b is k x n: the columns' slice of every row, added in row order */
  float *c = g->c;
  for (size_t j = j0; j < j1; j++)
    c[j] = 0;
  for (size_t q = 0; q < g->k; q++) {
    const float *row = g->b + q * g->n;
    float aq = g->a[q];
    for (size_t j = j0; j < j1; j++)
      c[j] += aq * row[j];
  }
}

void clg_host_gemv(bool tb, size_t n, size_t k, const float *a, const float *b, float *c)
{
  gemv_job g = {tb, n, k, a, b, c};
  /* Columns of at least 32 KiB of the matrix a task, 16 columns at least. */
  size_t grain = k ? ((size_t)1 << 13) / k : n;
  clg_host_parallel_for(n, grain < 16 ? 16 : grain, gemv_columns, &g);
}
