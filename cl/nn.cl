/* NHWC kernels of the CNN ops: pooling, LRN and Conv2D's im2col. One work-item per output
 * element. T is float or double. */

/* Window geometry: output (oh, ow) starts at input (oh*sh - pt, ow*sw - pl). */
typedef struct clg_window {
  long n, h, w, c;  /* input */
  long oh, ow;      /* output */
  long kh, kw;      /* window (or filter) */
  long sh, sw;      /* strides */
  long dh, dw;      /* dilations */
  long pt, pl;      /* padding before (top, left) */
  long cout, kdim;  /* Conv2D: output channels, kh*kw*c */
} clg_window;

/* The taps [*lo, *hi) of a window of k taps from start that lie inside [0, n), found before
 * any index arithmetic: a window far larger than the input is never walked, and no sum
 * overflows (for start < n, n - start is exact as a ulong). */
static void clip_window(long start, long k, long n, long *lo, long *hi)
{
  *lo = start < 0 ? 0 : start;
  *hi = start >= n ? *lo : (ulong)k >= (ulong)n - (ulong)start ? n : start + k;
  if (*hi < *lo)
    *hi = *lo;
}

/* The outputs [*lo, *hi) (of nout, stride s) whose windows of k taps, the first at -pad, hold
 * input index i: o*s - pad <= i < o*s - pad + k. */
static void windows_holding(long i, long pad, long k, long s, long nout, long *lo, long *hi)
{
  long t = i + pad, u = t - k + 1; /* o*s in [u, t] */
  *lo = u <= 0 ? 0 : u / s + (u % s != 0);
  *hi = t / s + 1 < nout ? t / s + 1 : nout;
  if (*hi < *lo)
    *hi = *lo;
}

/* MaxPool (avg 0) or AvgPool (avg 1; divides by the number of unpadded elements). */
__kernel void clg_pool(__global const T *x, ulong xo, __global T *y, ulong yo, ulong count,
                       clg_window g, uint avg)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long c = (long)(i % (ulong)g.c);
  ulong r = i / (ulong)g.c;
  long ow = (long)(r % (ulong)g.ow);
  r /= (ulong)g.ow;
  long oh = (long)(r % (ulong)g.oh);
  long n = (long)(r / (ulong)g.oh);
  long hs, he, ws, we;
  clip_window(oh * g.sh - g.pt, g.kh, g.h, &hs, &he);
  clip_window(ow * g.sw - g.pl, g.kw, g.w, &ws, &we);
  T acc = avg ? (T)0 : (T)(-INFINITY);
  for (long ih = hs; ih < he; ih++)
    for (long iw = ws; iw < we; iw++) {
      T v = x[xo + ((n * g.h + ih) * g.w + iw) * g.c + c];
      if (avg)
        acc += v;
      else
        acc = acc < v ? v : acc;
    }
  y[yo + i] = avg ? acc / (T)((he - hs) * (we - ws)) : acc;
}

/* LRN over the channel axis: x / (bias + alpha * sum of squares within radius)^beta. */
__kernel void clg_lrn(__global const T *x, ulong xo, __global T *y, ulong yo, ulong count,
                      long c, long radius, T bias, T alpha, T beta)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long ch = (long)(i % (ulong)c), r = min(radius, c); /* beyond c: every channel */
  ulong base = xo + i - (ulong)ch;
  long lo = ch - r < 0 ? 0 : ch - r, hi = ch + r >= c ? c - 1 : ch + r;
  T sq = 0;
  for (long k = lo; k <= hi; k++) {
    T v = x[base + (ulong)k];
    sq += v * v;
  }
  y[yo + i] = x[xo + i] / pow(bias + alpha * sq, beta);
}

/* Rows [row0, row0 + rows) of the patch matrix [N*OH*OW, KH*KW*C] into p (zeros where the
 * window is over padding). */
__kernel void clg_im2col(__global const T *x, ulong xo, __global T *p, ulong po, ulong row0,
                         ulong count, clg_window g)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  ulong kk = i % (ulong)g.kdim, row = row0 + i / (ulong)g.kdim;
  long c = (long)(kk % (ulong)g.c);
  ulong t = kk / (ulong)g.c;
  long b = (long)(t % (ulong)g.kw), a = (long)(t / (ulong)g.kw);
  long ow = (long)(row % (ulong)g.ow);
  ulong r = row / (ulong)g.ow;
  long oh = (long)(r % (ulong)g.oh), n = (long)(r / (ulong)g.oh);
  long ih = oh * g.sh - g.pt + a * g.dh, iw = ow * g.sw - g.pl + b * g.dw;
  T v = 0;
  if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
    v = x[xo + ((n * g.h + ih) * g.w + iw) * g.c + c];
  p[po + i] = v;
}

/* --- gradients ------------------------------------------------------------------------- */

/* Conv2DBackpropInput's col2im, one work-item per input element: adds into x the entries of
 * the patch rows [row0, row0 + rows) (in p) that element was copied to. A gather, so no two
 * work-items write one element. */
__kernel void clg_col2im(__global const T *p, ulong po, __global T *x, ulong xo, ulong row0,
                         ulong rows, ulong count, clg_window g)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long c = (long)(i % (ulong)g.c);
  ulong r = i / (ulong)g.c;
  long iw = (long)(r % (ulong)g.w);
  r /= (ulong)g.w;
  long ih = (long)(r % (ulong)g.h), n = (long)(r / (ulong)g.h);
  /* Only taps with a * dh <= ih + pt reach row ih: the loops stop there (a * dh in range). */
  long ae = min(g.kh, (ih + g.pt) / g.dh + 1), be = min(g.kw, (iw + g.pl) / g.dw + 1);
  T acc = 0;
  for (long a = 0; a < ae; a++) {
    long th = ih + g.pt - a * g.dh;
    if (th % g.sh != 0 || th / g.sh >= g.oh)
      continue;
    for (long b = 0; b < be; b++) {
      long tw = iw + g.pl - b * g.dw;
      if (tw % g.sw != 0 || tw / g.sw >= g.ow)
        continue;
      ulong row = (ulong)((n * g.oh + th / g.sh) * g.ow + tw / g.sw);
      if (row < row0 || row >= row0 + rows)
        continue;
      acc += p[po + (row - row0) * (ulong)g.kdim + (ulong)((a * g.kw + b) * g.c + c)];
    }
  }
  x[xo + i] += acc;
}

/* MaxPoolGrad / AvgPoolGrad, one work-item per input element: the sum over the windows that
 * hold it of dy, where (max) it is the window's first maximum in scan order, or (avg) divided
 * by the window's count of unpadded elements. */
__kernel void clg_pool_grad(__global const T *x, ulong xo, __global const T *dy, ulong dyo,
                            __global T *dx, ulong dxo, ulong count, clg_window g, uint avg)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long c = (long)(i % (ulong)g.c);
  ulong r = i / (ulong)g.c;
  long iw = (long)(r % (ulong)g.w);
  r /= (ulong)g.w;
  long ih = (long)(r % (ulong)g.h), n = (long)(r / (ulong)g.h);
  /* Only the windows holding (ih, iw), in the host's order (oh, then ow, ascending). */
  long ohs, ohe, ows, owe;
  windows_holding(ih, g.pt, g.kh, g.sh, g.oh, &ohs, &ohe);
  windows_holding(iw, g.pl, g.kw, g.sw, g.ow, &ows, &owe);
  T acc = 0;
  for (long oh = ohs; oh < ohe; oh++) {
    long hs, he;
    clip_window(oh * g.sh - g.pt, g.kh, g.h, &hs, &he);
    for (long ow = ows; ow < owe; ow++) {
      long ws, we;
      clip_window(ow * g.sw - g.pl, g.kw, g.w, &ws, &we);
      T gv = dy[dyo + (ulong)(((n * g.oh + oh) * g.ow + ow) * g.c + c)];
      if (avg) {
        acc += gv / (T)((he - hs) * (we - ws));
        continue;
      }
      T best = (T)(-INFINITY);
      long at = -1;
      for (long h2 = hs; h2 < he; h2++)
        for (long w2 = ws; w2 < we; w2++) {
          T v = x[xo + (ulong)(((n * g.h + h2) * g.w + w2) * g.c + c)];
          if (best < v) {
            best = v;
            at = h2 * g.w + w2;
          }
        }
      if (at == ih * g.w + iw)
        acc += gv;
    }
  }
  dx[dxo + i] = acc;
}

/* LRNGrad: dx[c] = dy[c]*N[c]^-beta - 2*alpha*beta*x[c]*sum over |c'-c| <= r of
 * dy[c']*y[c'] / N[c'], with N = bias + alpha*(sum of squares within radius). */
__kernel void clg_lrn_grad(__global const T *dy, ulong dyo, __global const T *x, ulong xo,
                           __global const T *y, ulong yo, __global T *dx, ulong dxo, ulong count,
                           long c, long radius, T bias, T alpha, T beta)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long ch = (long)(i % (ulong)c), r = min(radius, c); /* beyond c: every channel */
  ulong base = i - (ulong)ch;
  long lo = ch - r < 0 ? 0 : ch - r, hi = ch + r >= c ? c - 1 : ch + r;
  T own = 0, cross = 0;
  for (long k = lo; k <= hi; k++) {
    long lo2 = k - r < 0 ? 0 : k - r, hi2 = k + r >= c ? c - 1 : k + r;
    T sq = 0;
    for (long j = lo2; j <= hi2; j++) {
      T v = x[xo + base + (ulong)j];
      sq += v * v;
    }
    T norm = bias + alpha * sq;
    if (k == ch)
      own = pow(norm, -beta);
    cross += dy[dyo + base + (ulong)k] * y[yo + base + (ulong)k] / norm;
  }
  dx[dxo + i] =
      dy[dyo + i] * own - (T)2 * alpha * beta * x[xo + i] * cross;
}
