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
  long h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  T acc = avg ? (T)0 : (T)(-INFINITY);
  long valid = 0;
  for (long a = 0; a < g.kh; a++) {
    long ih = h0 + a;
    if (ih < 0 || ih >= g.h)
      continue;
    for (long b = 0; b < g.kw; b++) {
      long iw = w0 + b;
      if (iw < 0 || iw >= g.w)
        continue;
      T v = x[xo + ((n * g.h + ih) * g.w + iw) * g.c + c];
      if (avg)
        acc += v;
      else
        acc = acc < v ? v : acc;
      valid++;
    }
  }
  y[yo + i] = avg ? acc / (T)valid : acc;
}

/* LRN over the channel axis: x / (bias + alpha * sum of squares within radius)^beta. */
__kernel void clg_lrn(__global const T *x, ulong xo, __global T *y, ulong yo, ulong count,
                      long c, long radius, T bias, T alpha, T beta)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  long ch = (long)(i % (ulong)c);
  ulong base = xo + i - (ulong)ch;
  long lo = ch - radius < 0 ? 0 : ch - radius, hi = ch + radius >= c ? c - 1 : ch + radius;
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
