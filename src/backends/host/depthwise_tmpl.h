/* The float, multiplier-1 DepthwiseConv2dNative forward pass for one vector ISA, included by
 * depthwise.c once per ISA. Before including, define:
 *   DW_SFX(name)       the name decorated with the ISA's suffix
 *   DW_TGT             the function attribute that enables the ISA
 *   DW_V, DW_M, DW_W   the float vector type, its mask type, its lanes
 *   DW_NV              vectors in a full block of channels
 *   DW_ZERO, DW_FMA(a, b, c), DW_MASK(left)  (lanes below left on, at most DW_W)
 *   DW_LOAD(p, m, full), DW_STORE(p, m, full, v)  (masked unless full)
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
