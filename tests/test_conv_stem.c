/* The host's Conv2D from few input channels (conv_stem.c) through clg_host_conv2d_epi against a
 * double convolution written here from the definition: 1 to 15 channels, filters 1x1 to 7x7,
 * strides 1 to 3, SAME, VALID and explicit asymmetric pads, dilations (gathered tiles), output
 * channels around each tile's width (16..96 on AVX-512, 8..24 on AVX2) and past it (strips,
 * a filter padded into strips), rows narrower than a tile, batch > 1, and work enough to split
 * across the team. Fused epilogues (bias, residual add, Relu; scalar add, Relu6, Maximum,
 * Minimum) must equal the same ops applied after the unfused convolution bit for bit. Each ISA
 * variant runs from the ctest lines; the kernel must have run every case it serves on AVX-512
 * and AVX2 (not a skip counted as a pass), and the other paths (CLGRAPH_CONV_STEM=0) run the
 * same cases against the same reference. */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
// ctest: threads1 CLGRAPH_HOST_THREADS=1
// ctest: threads3 CLGRAPH_HOST_THREADS=3
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "ops/ops.h"
#include "testutil.h"

typedef struct scase {
  int64_t n, h, w, c, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, cout;
} scase;

static float *rand_floats(size_t n)
{
  float *p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++)
    p[i] = (float)clg_test_uniform(-1, 1);
  return p;
}

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after)
{
  return (in + before + after - (k - 1) * d - 1) / s + 1;
}

/* y against the double sum: within a few ulps of the sum of the products' magnitudes.
 * Returns the first bad element's index, or the count. */
static size_t first_bad(const float *y, const double *ref, const double *mag, size_t ny)
{
  for (size_t i = 0; i < ny; i++)
    if (!(fabs((double)y[i] - ref[i]) <= 1e-6 * (mag[i] + 1e-30)))
      return i;
  return ny;
}

static size_t taken; /* cases the stem kernel ran */

/* The fused result against the unfused one with e applied after it, bit for bit. */
static void check_fused(const clg_window *g, const float *x, const float *f, const float *y,
                        const clg_epilogue *e, const char *what, const char *which)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), ny = rows * (size_t)g->cout;
  float *ye = malloc(ny * sizeof(float)), *yu = malloc(ny * sizeof(float));
  memcpy(yu, y, ny * sizeof(float));
  clg_host_epilogue_rows(e, yu, 0, rows);
  memset(ye, 0xff, ny * sizeof(float));
  clg_code code = clg_host_conv2d_epi(NULL, NULL, CLG_FLOAT32, x, f, ye, g, e);
  CHECK_MSG(code == CLG_OK, "%s %s: %s", what, which, code == CLG_OK ? "" : clg_last_error());
  size_t i = 0;
  while (i < ny && memcmp(&yu[i], &ye[i], sizeof(float)) == 0)
    i++;
  CHECK_MSG(i == ny, "%s %s: element %zu is %.9g, want %.9g", what, which, i,
            i < ny ? (double)ye[i] : 0.0, i < ny ? (double)yu[i] : 0.0);
  free(ye), free(yu);
}

static void check(const scase *d, const char *path)
{
  clg_window g = {.n = d->n,
                  .h = d->h,
                  .w = d->w,
                  .c = d->c,
                  .kh = d->kh,
                  .kw = d->kw,
                  .sh = d->sh,
                  .sw = d->sw,
                  .dh = d->dh,
                  .dw = d->dw,
                  .pt = d->pt,
                  .pl = d->pl,
                  .cout = d->cout};
  g.oh = out_dim(d->h, d->kh, d->sh, d->dh, d->pt, d->pb);
  g.ow = out_dim(d->w, d->kw, d->sw, d->dw, d->pl, d->pr);
  g.kdim = d->kh * d->kw * d->c;
  size_t nx = (size_t)(d->n * d->h * d->w * d->c), nf = (size_t)(g.kdim * d->cout);
  size_t rows = (size_t)(d->n * g.oh * g.ow), ny = rows * (size_t)d->cout;
  float *x = rand_floats(nx), *f = rand_floats(nf), *bias = rand_floats((size_t)d->cout);
  float *res = rand_floats(ny), *y = malloc(ny * sizeof(float));
  double *ref = calloc(ny, sizeof(double)), *mag = calloc(ny, sizeof(double));
  for (int64_t b = 0; b < d->n; b++)
    for (int64_t i = 0; i < g.oh; i++)
      for (int64_t j = 0; j < g.ow; j++)
        for (int64_t a = 0; a < d->kh; a++)
          for (int64_t e = 0; e < d->kw; e++) {
            int64_t ih = i * d->sh - d->pt + a * d->dh, iw = j * d->sw - d->pl + e * d->dw;
            if (ih < 0 || ih >= d->h || iw < 0 || iw >= d->w)
              continue;
            const float *xp = x + ((b * d->h + ih) * d->w + iw) * d->c;
            const float *fp = f + (a * d->kw + e) * d->c * d->cout;
            size_t y0 = (size_t)(((b * g.oh + i) * g.ow + j) * d->cout);
            for (int64_t ch = 0; ch < d->c; ch++)
              for (int64_t o = 0; o < d->cout; o++) {
                double p = (double)xp[ch] * (double)fp[ch * d->cout + o];
                ref[y0 + (size_t)o] += p;
                mag[y0 + (size_t)o] += fabs(p);
              }
          }
  char what[200];
  snprintf(what, sizeof what,
           "%s: x [%lld,%lld,%lld,%lld] k %lldx%lld s %lld,%lld d %lld,%lld pads %lld,%lld,%lld,"
           "%lld cout %lld",
           path, (long long)d->n, (long long)d->h, (long long)d->w, (long long)d->c,
           (long long)d->kh, (long long)d->kw, (long long)d->sh, (long long)d->sw, (long long)d->dh,
           (long long)d->dw, (long long)d->pt, (long long)d->pb, (long long)d->pl, (long long)d->pr,
           (long long)d->cout);
  taken += clg_host_conv_stem_usable(&g);
  memset(y, 0xff, ny * sizeof(float)); /* NaN: an element left unwritten fails */
  clg_code code = clg_host_conv2d_epi(NULL, NULL, CLG_FLOAT32, x, f, y, &g, NULL);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, code == CLG_OK ? "" : clg_last_error());
  size_t bad = first_bad(y, ref, mag, ny);
  CHECK_MSG(bad == ny, "%s: element %zu is %.9g, want %.9g", what, bad,
            bad < ny ? (double)y[bad] : 0.0, bad < ny ? ref[bad] : 0.0);
  clg_epilogue e = {.nops = 3, .cols = (size_t)d->cout};
  e.op[0] = CLG_EPI_BIAS, e.arg[0] = bias;
  e.op[1] = CLG_EPI_ADD, e.arg[1] = res;
  e.op[2] = CLG_EPI_RELU, e.arg[2] = NULL;
  check_fused(&g, x, f, y, &e, what, "bias+add+relu");
  /* the sums reach past 6 and below 0 here: Relu6 clips both ways, then the clamps */
  static const float shift = 0.25f, lo = 0.5f, hi = 4.0f;
  clg_epilogue e2 = {.nops = 4, .cols = (size_t)d->cout};
  e2.op[0] = CLG_EPI_SCALAR, e2.arg[0] = &shift;
  e2.op[1] = CLG_EPI_RELU6, e2.arg[1] = NULL;
  e2.op[2] = CLG_EPI_MAX, e2.arg[2] = &lo;
  e2.op[3] = CLG_EPI_MIN, e2.arg[3] = &hi;
  check_fused(&g, x, f, y, &e2, what, "scalar+relu6+max+min");
  free(x), free(f), free(bias), free(res), free(y), free(ref), free(mag);
}

static const scase cases[] = {
    /* n  h   w   c  kh kw sh sw dh dw pt pb pl pr cout */
    {1, 9, 9, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 11, 10, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17},
    {1, 13, 13, 3, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 64},  /* a ResNet stem */
    {1, 15, 17, 3, 7, 7, 2, 2, 1, 1, 0, 0, 0, 0, 96},  /* SqueezeNet's, VALID */
    {2, 19, 21, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32},  /* MobileNet's */
    {1, 12, 30, 3, 3, 3, 2, 2, 1, 1, 0, 1, 0, 1, 32},  /* TF SAME stride 2 */
    {3, 8, 27, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 48},   /* rows of 27: tiles end early */
    {2, 12, 9, 5, 3, 3, 1, 1, 1, 1, 0, 2, 2, 0, 65},   /* asymmetric both ways; strips */
    {1, 14, 26, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 31},  /* dilation 2 */
    {1, 12, 31, 7, 3, 2, 2, 1, 1, 3, 1, 0, 3, 2, 80},  /* mixed strides, dilations */
    {2, 10, 25, 8, 2, 4, 3, 3, 1, 1, 1, 0, 0, 2, 33},  /* stride 3, even filter */
    {1, 9, 40, 8, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 100},  /* 1x1 stride 2 */
    {1, 6, 20, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 9},    /* 1x1 padded */
    {1, 7, 30, 2, 1, 3, 1, 2, 1, 1, 0, 0, 1, 1, 130},  /* 1x3 */
    {1, 30, 6, 1, 7, 1, 2, 1, 3, 1, 3, 3, 0, 0, 24},   /* 7x1 dilated: kh runs of one */
    {2, 4, 5, 3, 5, 5, 1, 1, 1, 1, 4, 4, 4, 4, 11},    /* pads as wide as the filter */
    {1, 3, 3, 3, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 5},     /* one output pixel */
    {1, 10, 4, 8, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 47},   /* rows narrower than a tile */
    {1, 16, 80, 5, 4, 4, 2, 2, 1, 1, 1, 2, 1, 2, 200}, /* many strips */
    {2, 32, 32, 3, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 64},  /* over 2^21 multiply-adds */
    {3, 30, 33, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 96},
    {1, 20, 20, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32},
    {2, 11, 19, 12, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 40},
    {1, 13, 23, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64}, /* 15 channels: the last it takes */
    {1, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32},   /* 16: conv_direct's */
    {1, 12, 12, 11, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 16}, /* K 539: over the stem's 512 */
    {1, 10, 10, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 16},  /* 1x1 stride 1: a GEMM on x */
};

int main(void)
{
  clg_test_seed(20261202);
  size_t count = sizeof cases / sizeof cases[0];
  for (int path = 0; path < 2; path++) {
    /* the stem kernel (where the ISA has it), then the other paths on the same cases */
    setenv("CLGRAPH_CONV_STEM", path == 0 ? "1" : "0", 1);
    taken = 0;
    for (size_t i = 0; i < count; i++)
      check(&cases[i], path == 0 ? "stem" : "other");
    /* AVX-512 and AVX2 take all but the last three cases; the baseline ISA and the second pass
     * never */
    bool has = path == 0 && strcmp(clg_host_matmul_portable_isa(), "base") != 0;
    CHECK_MSG(has ? taken == count - 3 : taken == 0, "%s: the stem kernel ran %zu cases",
              path == 0 ? "stem" : "other", taken);
  }
  return clg_test_summary("test_conv_stem");
}
