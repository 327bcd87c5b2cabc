/* Fused epilogues on the host: the element-wise ops the planner fused into a Conv2D, MatMul
 * or DepthwiseConv2dNative (runtime/fuse.c), applied to output rows the kernel just stored,
 * so that BiasAdd, Relu and a residual Add cost no pass of their own over memory. Each op is
 * the unfused kernel's float arithmetic, in the same order: the result is bit-identical. */
#include "backends/host/host.h"

/* One row of cols elements: every op in turn while the row is in L1. */
static void epi_row(const clg_epilogue *e, float *y, size_t r)
{
  size_t cols = e->cols;
  for (int k = 0; k < e->nops; k++) {
    const float *a = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS:
      for (size_t c = 0; c < cols; c++)
        y[c] += a[c];
      break;
    case CLG_EPI_ADD:
      a += r * cols;
      for (size_t c = 0; c < cols; c++)
        y[c] += a[c];
      break;
    case CLG_EPI_SCALAR: {
      float s = a[0];
      for (size_t c = 0; c < cols; c++)
        y[c] += s;
      break;
    }
    case CLG_EPI_RELU: /* as relu.c: NaN passes */
      for (size_t c = 0; c < cols; c++)
        y[c] = !(y[c] <= 0) ? y[c] : 0;
      break;
    case CLG_EPI_RELU6: /* as activation.c */
      for (size_t c = 0; c < cols; c++)
        y[c] = y[c] < 0 ? 0.0f : y[c] > 6 ? 6.0f : y[c];
      break;
    case CLG_EPI_MAX: { /* as broadcast.c's Maximum with y as x */
      float s = a[0];
      for (size_t c = 0; c < cols; c++)
        y[c] = y[c] < s ? s : y[c];
      break;
    }
    case CLG_EPI_MIN: {
      float s = a[0];
      for (size_t c = 0; c < cols; c++)
        y[c] = s < y[c] ? s : y[c];
      break;
    }
    }
  }
}

void clg_host_epilogue_rows(const clg_epilogue *e, float *y, size_t row0, size_t rows)
{
  if (!e || e->nops == 0)
    return;
  for (size_t r = row0; r < row0 + rows; r++)
    epi_row(e, y + r * e->cols, r);
}

typedef struct epi_job {
  const clg_epilogue *e;
  float *y;
  size_t row0;
} epi_job;

static void epi_range(void *ctx, size_t begin, size_t end)
{
  const epi_job *j = ctx;
  clg_host_epilogue_rows(j->e, j->y, j->row0 + begin, end - begin);
}

void clg_host_epilogue(const clg_epilogue *e, float *y, size_t row0, size_t rows)
{
  if (!e || e->nops == 0 || rows == 0)
    return;
  epi_job j = {e, y, row0};
  /* rows worth about 32k elements a range, as the element-wise kernels' grain */
  size_t grain = e->cols >= 32768 ? 1 : 32768 / (e->cols ? e->cols : 1);
  clg_host_parallel_for(rows, grain, epi_range, &j);
}
