/* One register tile of conv_stem.c, included once per (ISA, rows, vectors): STEM_FN computes
 * STEM_MR output pixels x STEM_NV vectors of output channels, the sum over kh filter rows of
 * L = kw * c contiguous inputs each (pixel r's at rowp[a] + r * s), then the epilogue in
 * registers and a masked store. The includer defines STEM_TARGET, the vector type and ops
 * (S_VEC, S_T, S_M, S_ZERO, S_LOAD, S_BCAST, S_FMA, S_ADD, S_MASK, S_MLOAD, S_MSTORE,
 * S_RELU, S_RELU6, S_MAX, S_MIN). */

STEM_TARGET static void STEM_FN(const stem_tile *t)
{
  S_T acc[STEM_MR][STEM_NV];
#pragma GCC unroll 16
  for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < STEM_NV; v++)
      acc[r][v] = S_ZERO();
  const size_t L = t->L, s = t->s, ldb = t->ldb, kh = t->kh;
  const float *const *rowp = t->rowp, *b = t->b;
  for (size_t a = 0; a < kh; a++) {
    const float *p = rowp[a], *pe = p + L;
    /* one pointer walks the row (the filter's rows follow at ldb): few registers live */
    for (; p < pe; p++, b += ldb) {
      S_T bv[STEM_NV];
#pragma GCC unroll 8
      for (int v = 0; v < STEM_NV; v++)
        bv[v] = S_LOAD(b + v * S_VEC);
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++) {
        S_T av = S_BCAST(p + (size_t)r * s);
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_FMA(av, bv[v], acc[r][v]);
      }
    }
  }
  S_M m[STEM_NV];
#pragma GCC unroll 8
  for (int v = 0; v < STEM_NV; v++)
    m[v] = S_MASK(t->nc, (size_t)v * S_VEC);
  const clg_epilogue *e = t->e;
  for (int k = 0; e && k < e->nops; k++) {
    const float *arg = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS:
#pragma GCC unroll 8
      for (int v = 0; v < STEM_NV; v++) {
        S_T bias = S_MLOAD(arg + t->col + (size_t)v * S_VEC, m[v]);
#pragma GCC unroll 16
        for (int r = 0; r < STEM_MR; r++)
          acc[r][v] = S_ADD(acc[r][v], bias);
      }
      break;
    case CLG_EPI_ADD:
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++) {
          /* rows past mr are not stored: their residual row may lie past the output */
          size_t row = t->row + (size_t)(r < (int)t->mr ? r : 0);
          acc[r][v] =
              S_ADD(acc[r][v], S_MLOAD(arg + row * e->cols + t->col + (size_t)v * S_VEC, m[v]));
        }
      break;
    case CLG_EPI_SCALAR: {
      S_T sv = S_SET1(arg[0]);
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_ADD(acc[r][v], sv);
      break;
    }
    case CLG_EPI_RELU:
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_RELU(acc[r][v]);
      break;
    case CLG_EPI_RELU6:
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_RELU6(acc[r][v]);
      break;
    case CLG_EPI_MAX: {
      S_T sv = S_SET1(arg[0]);
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_MAX(acc[r][v], sv);
      break;
    }
    case CLG_EPI_MIN: {
      S_T sv = S_SET1(arg[0]);
#pragma GCC unroll 16
      for (int r = 0; r < STEM_MR; r++)
#pragma GCC unroll 8
        for (int v = 0; v < STEM_NV; v++)
          acc[r][v] = S_MIN(acc[r][v], sv);
      break;
    }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < STEM_MR; r++)
    if ((size_t)r < t->mr)
#pragma GCC unroll 8
      for (int v = 0; v < STEM_NV; v++)
        S_MSTORE(t->y + (size_t)r * t->ldy + (size_t)v * S_VEC, m[v], acc[r][v]);
}

#undef STEM_FN
#undef STEM_MR
#undef STEM_NV
