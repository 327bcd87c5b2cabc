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

static void gemv_columns(void *ctx, size_t j0, size_t j1)
{
  const gemv_job *g = ctx;
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
