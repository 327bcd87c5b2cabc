/* The float, multiplier-1 DepthwiseConv2dNative forward pass for one vector ISA, included by
 * depthwise.c once per ISA. Before including, define:
 *   DW_SFX(name)       the name decorated with the ISA's suffix
 *   DW_TGT             the function attribute that enables the ISA
 *   DW_V, DW_M, DW_W   the float vector type, its mask type, its lanes
 *   DW_NV              vectors in a full block of channels
 *   DW_ZERO, DW_FMA(a, b, c), DW_MASK(left)  (lanes below left on, at most DW_W)
 *   DW_LOAD(p, m, full), DW_STORE(p, m, full, v)  (masked unless full)
 *   DW_ADD(a, b), DW_SET1(s), DW_MAX(a, b), DW_MIN(a, b)  (x86's: a > b ? a : b, a < b ? a : b)
 *   DW_RELU(v)         y <= 0 ? +0 : y, NaN kept
 * (this file undefines them all at its end).
 *
 * An output row (b, oh) is cut into blocks of channels, each swept along the row in tiles of
 * DW_P pixels whose accumulators stay in registers over all of the window's taps (tap order a
 * then e, as the scalar loops); each tap's filter vectors are loaded once for the tile's
 * pixels. Pixels whose taps all lie inside the input row (the interior) skip the checks. */

#define DW_P 4

/* np (at most DW_P) pixels from ow0 of row oh of image xb, channels [c0, c0 + nv * DW_W),
 * into out (pixel ow0, channel 0). */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(tile)(const clg_window *g, const float *xb, const float *f, float *out, int64_t oh,
             int64_t ow0, int np, int64_t c0, const DW_M *m, int nv, bool full, bool interior)
{
  int64_t C = g->c;
  DW_V acc[DW_P][DW_NV];
#pragma GCC unroll 4
  for (int p = 0; p < DW_P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < DW_NV; v++)
      acc[p][v] = DW_ZERO;
  for (int64_t a = 0; a < g->kh; a++) {
    int64_t ih = oh * g->sh - g->pt + a * g->dh;
    if (ih < 0 || ih >= g->h)
      continue;
    const float *xr = xb + (size_t)ih * (size_t)g->w * (size_t)C + (size_t)c0;
    for (int64_t e = 0; e < g->kw; e++) {
      const float *fr = f + ((size_t)a * (size_t)g->kw + (size_t)e) * (size_t)C + (size_t)c0;
      DW_V fv[DW_NV];
#pragma GCC unroll 4
      for (int v = 0; v < DW_NV; v++)
        fv[v] = v < nv ? DW_LOAD(fr + DW_W * v, m[v], full) : DW_ZERO;
#pragma GCC unroll 4
      for (int p = 0; p < DW_P; p++) {
        int64_t iw = (ow0 + p) * g->sw - g->pl + e * g->dw;
        if (p >= np || (!interior && (iw < 0 || iw >= g->w)))
          continue;
        const float *xp = xr + (size_t)iw * (size_t)C;
#pragma GCC unroll 4
        for (int v = 0; v < DW_NV; v++)
          if (v < nv)
            acc[p][v] = DW_FMA(DW_LOAD(xp + DW_W * v, m[v], full), fv[v], acc[p][v]);
      }
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < DW_P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < DW_NV; v++)
      if (p < np && v < nv)
        DW_STORE(out + (size_t)p * (size_t)C + (size_t)(c0 + DW_W * v), m[v], full, acc[p][v]);
}

/* The whole row for the channels [c0, c0 + nv * DW_W) (to C): edges pixel by pixel, the
 * interior [lo, hi) in tiles. */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(sweep)(const clg_window *g, const float *xb, const float *f, float *yr, int64_t oh,
              int64_t lo, int64_t hi, int64_t c0, int nv, bool full)
{
  DW_M m[DW_NV];
#pragma GCC unroll 4
  for (int v = 0; v < DW_NV; v++)
    m[v] = DW_MASK(g->c - c0 - DW_W * v);
  int64_t ow = 0;
  for (; ow < lo; ow++)
    DW_SFX(tile)(g, xb, f, yr + (size_t)ow * (size_t)g->c, oh, ow, 1, c0, m, nv, full, false);
  for (; ow + DW_P <= hi; ow += DW_P)
    DW_SFX(tile)(g, xb, f, yr + (size_t)ow * (size_t)g->c, oh, ow, DW_P, c0, m, nv, full, true);
  for (; ow < g->ow; ow++)
    DW_SFX(tile)(g, xb, f, yr + (size_t)ow * (size_t)g->c, oh, ow, 1, c0, m, nv, full, ow < hi);
}

/* Output rows [begin, end) of the float, multiplier-1 forward pass. */
static DW_TGT void DW_SFX(forward_rows)(const clg_window *g, const float *x, const float *f,
                                        float *y, size_t begin, size_t end)
{
  /* The interior: ow * sw - pl >= 0 and ow * sw - pl + (kw - 1) * dw < w. */
  int64_t lo = (g->pl + g->sw - 1) / g->sw;
  int64_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl; /* ow * sw <= last */
  int64_t hi = last < 0 ? 0 : last / g->sw + 1;
  hi = hi < g->ow ? hi : g->ow;
  lo = lo < hi ? lo : hi;
  int64_t C = g->c, block = DW_W * DW_NV;
  for (size_t r = begin; r < end; r++) {
    int64_t b = (int64_t)r / g->oh, oh = (int64_t)r % g->oh;
    const float *xb = x + (size_t)b * (size_t)g->h * (size_t)g->w * (size_t)C;
    float *yr = y + r * (size_t)g->ow * (size_t)C;
    int64_t c0 = 0;
    for (; c0 + block <= C; c0 += block)
      DW_SFX(sweep)(g, xb, f, yr, oh, lo, hi, c0, DW_NV, true);
    /* the last, partial block with as many vectors as it needs (a constant in each call) */
    int64_t nv = (C - c0 + DW_W - 1) / DW_W;
    if (c0 == C)
      continue;
    if (nv == 1)
      DW_SFX(sweep)(g, xb, f, yr, oh, lo, hi, c0, 1, false);
#if DW_NV > 2
    else if (nv == 2)
      DW_SFX(sweep)(g, xb, f, yr, oh, lo, hi, c0, 2, false);
    else if (nv == 3)
      DW_SFX(sweep)(g, xb, f, yr, oh, lo, hi, c0, 3, false);
#endif
    else
      DW_SFX(sweep)(g, xb, f, yr, oh, lo, hi, c0, DW_NV, false);
  }
}

/* --- 3-wide windows (kw 3, no column dilation), column stride DW_S 1 or 2 ---------------
 * A tile of np output pixels of one row and one vector of channels: per filter row, its three
 * taps in registers and the tile's (np - 1) * s + 3 input pixels each loaded once and added
 * into the (up to three) outputs that use it, so that the loads stay well below the FMAs.
 * Each output still sums its taps in the order a then e, as the loops above. The fused
 * epilogue (if any) is applied in registers before the one store. */

#define DW_Q 8 /* pixels in a full interior tile */

/* Epilogue e on the np accumulators of pixels [pix0, pix0 + np) (rows of e), channels
 * [c, c + DW_W): epilogue.c's arithmetic, op by op. */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(epi)(const clg_epilogue *e, DW_V *acc, int np, size_t pix0, int64_t c, DW_M m, bool full)
{
  for (int k = 0; k < e->nops; k++) {
    const float *a = e->arg[k];
    switch (e->op[k]) {
    case CLG_EPI_BIAS: {
      DW_V b = DW_LOAD(a + c, m, full);
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_ADD(acc[p], b);
      break;
    }
    case CLG_EPI_ADD:
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_ADD(acc[p], DW_LOAD(a + (pix0 + (size_t)p) * e->cols + (size_t)c, m, full));
      break;
    case CLG_EPI_SCALAR: {
      DW_V s = DW_SET1(a[0]);
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_ADD(acc[p], s);
      break;
    }
    case CLG_EPI_RELU:
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_RELU(acc[p]);
      break;
    case CLG_EPI_RELU6: { /* min(6, max(0, y)): max and min return y where y is NaN */
      DW_V z = DW_ZERO, six = DW_SET1(6.0f);
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_MIN(six, DW_MAX(z, acc[p]));
      break;
    }
    case CLG_EPI_MAX: { /* y < s ? s : y */
      DW_V s = DW_SET1(a[0]);
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_MAX(s, acc[p]);
      break;
    }
    case CLG_EPI_MIN: { /* s < y ? s : y */
      DW_V s = DW_SET1(a[0]);
#pragma GCC unroll 16
      for (int p = 0; p < np; p++)
        acc[p] = DW_MIN(s, acc[p]);
      break;
    }
    }
  }
}

/* np pixels from ow0 of row oh of image xb (stride s, chk: test each input column), channels
 * [c, c + DW_W) (m, full: the tail's mask), stored at yp (pixel ow0, channel 0). */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(vec3)(const clg_window *g, const float *xb, const float *f, float *yp, int64_t oh,
             int64_t ow0, int s, int np, bool chk, int64_t c, DW_M m, bool full,
             const clg_epilogue *e, size_t pix0)
{
  int64_t C = g->c;
  DW_V acc[DW_Q];
#pragma GCC unroll 16
  for (int p = 0; p < np; p++)
    acc[p] = DW_ZERO;
  int64_t iw0 = ow0 * s - g->pl;
  for (int64_t a = 0; a < g->kh; a++) {
    int64_t ih = oh * g->sh - g->pt + a * g->dh;
    if (ih < 0 || ih >= g->h)
      continue;
    const float *xr = xb + (size_t)ih * (size_t)g->w * (size_t)C + (size_t)c;
    const float *fr = f + (size_t)a * 3 * (size_t)C + (size_t)c;
    DW_V f0 = DW_LOAD(fr, m, full), f1 = DW_LOAD(fr + C, m, full),
         f2 = DW_LOAD(fr + 2 * C, m, full);
#pragma GCC unroll 32
    for (int jj = 0; jj < (np - 1) * s + 3; jj++) {
      int64_t iw = iw0 + jj;
      if (chk && (iw < 0 || iw >= g->w))
        continue;
      DW_V xv = DW_LOAD(xr + (size_t)iw * (size_t)C, m, full);
      if (jj % s == 0 && jj / s < np)
        acc[jj / s] = DW_FMA(xv, f0, acc[jj / s]);
      if (jj >= 1 && (jj - 1) % s == 0 && (jj - 1) / s < np)
        acc[(jj - 1) / s] = DW_FMA(xv, f1, acc[(jj - 1) / s]);
      if (jj >= 2 && (jj - 2) % s == 0 && (jj - 2) / s < np)
        acc[(jj - 2) / s] = DW_FMA(xv, f2, acc[(jj - 2) / s]);
    }
  }
  if (e)
    DW_SFX(epi)(e, acc, np, pix0, c, m, full);
#pragma GCC unroll 16
  for (int p = 0; p < np; p++)
    DW_STORE(yp + (size_t)p * (size_t)C + (size_t)c, m, full, acc[p]);
}

/* The tile over all channel vectors, the last one masked. */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(tile3)(const clg_window *g, const float *xb, const float *f, float *yr, int64_t oh,
              int64_t ow0, int s, int np, bool chk, DW_M tail, const clg_epilogue *e, size_t pix0)
{
  int64_t C = g->c, c = 0;
  float *yp = yr + (size_t)ow0 * (size_t)C;
  for (; c + DW_W <= C; c += DW_W)
    DW_SFX(vec3)(g, xb, f, yp, oh, ow0, s, np, chk, c, tail, true, e, pix0);
  if (c < C)
    DW_SFX(vec3)(g, xb, f, yp, oh, ow0, s, np, chk, c, tail, false, e, pix0);
}

/* np pixels from ow, with the column checks only where the tile reaches past the interior
 * [lo, hi). */
#define DW_TILE3(np)                                                                               \
  do {                                                                                             \
    if (ow < lo || ow + (np) > hi)                                                                 \
      DW_SFX(tile3)(g, xb, f, yr, oh, ow, s, np, true, tail, e, pix + (size_t)ow);                 \
    else                                                                                           \
      DW_SFX(tile3)(g, xb, f, yr, oh, ow, s, np, false, tail, e, pix + (size_t)ow);                \
    ow += (np);                                                                                    \
  } while (0)

/* Output rows [begin, end) at column stride s (a constant in each call): tiles of DW_Q
 * pixels, then of 4, 2 and 1. */
static inline DW_TGT __attribute__((always_inline)) void
DW_SFX(rows3)(const clg_window *g, const float *x, const float *f, float *y, size_t begin,
              size_t end, const clg_epilogue *e, int s)
{
  int64_t lo = (g->pl + s - 1) / s;
  int64_t last = g->w - 3 + g->pl; /* interior: ow * s <= last */
  int64_t hi = last < 0 ? 0 : last / s + 1;
  hi = hi < g->ow ? hi : g->ow;
  lo = lo < hi ? lo : hi;
  int64_t C = g->c;
  DW_M tail = DW_MASK(C % DW_W);
  for (size_t r = begin; r < end; r++) {
    int64_t b = (int64_t)r / g->oh, oh = (int64_t)r % g->oh;
    const float *xb = x + (size_t)b * (size_t)g->h * (size_t)g->w * (size_t)C;
    float *yr = y + r * (size_t)g->ow * (size_t)C;
    size_t pix = r * (size_t)g->ow;
    int64_t ow = 0;
    while (ow + DW_Q <= g->ow)
      DW_TILE3(DW_Q);
    if (ow + 4 <= g->ow)
      DW_TILE3(4);
    if (ow + 2 <= g->ow)
      DW_TILE3(2);
    if (ow < g->ow)
      DW_TILE3(1);
  }
}
#undef DW_TILE3

/* Output rows [begin, end) of the float, multiplier-1 forward pass with kw 3, column dilation
 * 1 and column stride 1 or 2, then epilogue e (NULL: none) on them. */
static DW_TGT void DW_SFX(forward3_rows)(const clg_window *g, const float *x, const float *f,
                                         float *y, size_t begin, size_t end, const clg_epilogue *e)
{
  if (g->sw == 1)
    DW_SFX(rows3)(g, x, f, y, begin, end, e, 1);
  else
    DW_SFX(rows3)(g, x, f, y, begin, end, e, 2);
}

#undef DW_Q
#undef DW_P
/* The includer's parameters, so that the next instance defines its own. */
#undef DW_SFX
#undef DW_TGT
#undef DW_V
#undef DW_M
#undef DW_W
#undef DW_NV
#undef DW_ZERO
#undef DW_FMA
#undef DW_MASK
#undef DW_LOAD
#undef DW_STORE
#undef DW_ADD
#undef DW_SET1
#undef DW_MAX
#undef DW_MIN
#undef DW_RELU
