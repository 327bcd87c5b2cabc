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

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

/* One element y at (row, col) of the output: every op in turn, the same arithmetic as
 * epi_row's. */
static float epi_one(const clg_epilogue *e, size_t row, size_t col, float y)
{
  for (int k = 0; k < e->nops; k++) {
    const float *a = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS:
      y += a[col];
      break;
    case CLG_EPI_ADD:
      y += a[row * e->cols + col];
      break;
    case CLG_EPI_SCALAR:
      y += a[0];
      break;
    case CLG_EPI_RELU:
      y = !(y <= 0) ? y : 0;
      break;
    case CLG_EPI_RELU6:
      y = y < 0 ? 0.0f : y > 6 ? 6.0f : y;
      break;
    case CLG_EPI_MAX:
      y = y < a[0] ? a[0] : y;
      break;
    case CLG_EPI_MIN:
      y = a[0] < y ? a[0] : y;
      break;
    }
  }
  return y;
}

/* The ops on 16 columns under mask m, in registers. Each is the scalar op lane by lane: the
 * compares are ordered (false on NaN) or, for Relu, not-less-or-equal unordered (true on NaN,
 * which passes), and a masked move puts the constant where the scalar's ternary would. */
__attribute__((target("avx512f"))) static __m512 epi_v16(const clg_epilogue *e, size_t row,
                                                         size_t col, __mmask16 m, __m512 y)
{
  for (int k = 0; k < e->nops; k++) {
    const float *a = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS:
      y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, a + col));
      break;
    case CLG_EPI_ADD:
      y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, a + row * e->cols + col));
      break;
    case CLG_EPI_SCALAR:
      y = _mm512_add_ps(y, _mm512_set1_ps(a[0]));
      break;
    case CLG_EPI_RELU:
      y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_NLE_UQ), y);
      break;
    case CLG_EPI_RELU6: {
      __mmask16 lt = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ);
      __mmask16 gt = _mm512_cmp_ps_mask(y, _mm512_set1_ps(6.0f), _CMP_GT_OQ);
      y = _mm512_mask_mov_ps(y, gt, _mm512_set1_ps(6.0f));
      y = _mm512_maskz_mov_ps((__mmask16)~lt, y);
      break;
    }
    case CLG_EPI_MAX: {
      __m512 s = _mm512_set1_ps(a[0]);
      y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(y, s, _CMP_LT_OQ), s);
      break;
    }
    case CLG_EPI_MIN: {
      __m512 s = _mm512_set1_ps(a[0]);
      y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(s, y, _CMP_LT_OQ), s);
      break;
    }
    }
  }
  return y;
}

__attribute__((target("avx512f"))) void clg_host_epilogue_tile512(const clg_epilogue *e, float *c,
                                                                  size_t ldc, size_t row,
                                                                  size_t col, size_t mr, size_t nr)
{
  for (size_t r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    for (size_t j = 0; j < nr; j += 16) {
      __mmask16 m = nr - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nr - j)) - 1);
      __m512 y = _mm512_maskz_loadu_ps(m, cr + j);
      _mm512_mask_storeu_ps(cr + j, m, epi_v16(e, row + r, col + j, m, y));
    }
  }
}

/* The same on 8 full columns in ymm registers (blends where AVX-512 has masked moves). */
__attribute__((target("avx2,fma"))) static __m256 epi_v8(const clg_epilogue *e, size_t row,
                                                         size_t col, __m256 y)
{
  for (int k = 0; k < e->nops; k++) {
    const float *a = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS:
      y = _mm256_add_ps(y, _mm256_loadu_ps(a + col));
      break;
    case CLG_EPI_ADD:
      y = _mm256_add_ps(y, _mm256_loadu_ps(a + row * e->cols + col));
      break;
    case CLG_EPI_SCALAR:
      y = _mm256_add_ps(y, _mm256_set1_ps(a[0]));
      break;
    case CLG_EPI_RELU:
      y = _mm256_and_ps(y, _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_NLE_UQ));
      break;
    case CLG_EPI_RELU6: {
      __m256 lt = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ);
      __m256 gt = _mm256_cmp_ps(y, _mm256_set1_ps(6.0f), _CMP_GT_OQ);
      y = _mm256_blendv_ps(y, _mm256_set1_ps(6.0f), gt);
      y = _mm256_andnot_ps(lt, y);
      break;
    }
    case CLG_EPI_MAX: {
      __m256 s = _mm256_set1_ps(a[0]);
      y = _mm256_blendv_ps(y, s, _mm256_cmp_ps(y, s, _CMP_LT_OQ));
      break;
    }
    case CLG_EPI_MIN: {
      __m256 s = _mm256_set1_ps(a[0]);
      y = _mm256_blendv_ps(y, s, _mm256_cmp_ps(s, y, _CMP_LT_OQ));
      break;
    }
    }
  }
  return y;
}

__attribute__((target("avx2,fma"))) void clg_host_epilogue_tile256(const clg_epilogue *e, float *c,
                                                                   size_t ldc, size_t row,
                                                                   size_t col, size_t mr, size_t nr)
{
  for (size_t r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    size_t j = 0;
    for (; j + 8 <= nr; j += 8)
      _mm256_storeu_ps(cr + j, epi_v8(e, row + r, col + j, _mm256_loadu_ps(cr + j)));
    for (; j < nr; j++) /* the ragged edge, element by element */
      cr[j] = epi_one(e, row + r, col + j, cr[j]);
  }
}
#endif
