/* The host's implicit-GEMM Conv2D (conv_direct.c) through clg_host_conv2d_epi against a double
 * convolution written here from the definition: strides, dilations, explicit asymmetric pads
 * (more after than before and the reverse), channel counts around the tiles' widths (16, 64)
 * and the K blocks (128 or 256 per block: a tap over more channels splits), output channels over a
 * group (256), items over a row block (256 KB of outputs, or the tap pointers a block holds),
 * batch > 1, rows few enough that the work splits by columns, last tiles of 1 to 6 rows, and the
 * im2col path (CLGRAPH_CONV_DIRECT=0) on the same cases, also under small chunks. A fused epilogue
 * (bias, residual add, Relu) must equal the same ops applied after the unfused convolution bit for
 * bit, on every split. Winograd's F(2x2, 3x3) (conv_winograd.c, which serves the 3x3 stride-1 cases
 * first) is held to the same bound and checks on the same cases. Each ISA variant runs from the
 * ctest lines; the implicit GEMM must have run the cases it serves (not a skip counted as a pass).
 */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
// ctest: threads3 CLGRAPH_HOST_THREADS=3
// ctest: chunks CLGRAPH_CONV_CHUNK_BYTES=3000
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "ops/ops.h"
#include "testutil.h"

typedef struct dcase {
  int64_t n, h, w, c, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, cout;
} dcase;

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

/* y (float, as the kernel summed it) against the double sum: within a few ulps of the sum of
 * the products' magnitudes. Returns the first bad element's index, or the count. */
static size_t first_bad(const float *y, const double *ref, const double *mag, size_t ny)
{
  for (size_t i = 0; i < ny; i++)
    if (!(fabs((double)y[i] - ref[i]) <= 1e-6 * (mag[i] + 1e-30)))
      return i;
  return ny;
}

static size_t taken, taken_w; /* cases the implicit GEMM, Winograd's F(2x2, 3x3) ran */

static void check(const dcase *d, const char *path)
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
  float *res = rand_floats(ny), *y = malloc(ny * sizeof(float)), *ye = malloc(ny * sizeof(float));
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
  taken += clg_host_conv_direct_usable(&g);
  taken_w += clg_host_conv_winograd_usable(&g);
  memset(y, 0xff, ny * sizeof(float)); /* NaN: an element left unwritten fails */
  clg_code code = clg_host_conv2d_epi(NULL, NULL, CLG_FLOAT32, x, f, y, &g, NULL);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, code == CLG_OK ? "" : clg_last_error());
  size_t bad = first_bad(y, ref, mag, ny);
  CHECK_MSG(bad == ny, "%s: element %zu is %.9g, want %.9g", what, bad,
            bad < ny ? (double)y[bad] : 0.0, bad < ny ? ref[bad] : 0.0);
  /* fused bias + residual + Relu: the unfused result with the same ops after it */
  clg_epilogue e = {.nops = 3, .cols = (size_t)d->cout};
  e.op[0] = CLG_EPI_BIAS, e.arg[0] = bias;
  e.op[1] = CLG_EPI_ADD, e.arg[1] = res;
  e.op[2] = CLG_EPI_RELU, e.arg[2] = NULL;
  memset(ye, 0xff, ny * sizeof(float));
  code = clg_host_conv2d_epi(NULL, NULL, CLG_FLOAT32, x, f, ye, &g, &e);
  CHECK_MSG(code == CLG_OK, "%s fused: %s", what, code == CLG_OK ? "" : clg_last_error());
  clg_host_epilogue_rows(&e, y, 0, rows);
  CHECK_MSG(memcmp(y, ye, ny * sizeof(float)) == 0, "%s: the fused result differs", what);
  free(x), free(f), free(bias), free(res), free(y), free(ye), free(ref), free(mag);
}

static const dcase cases[] = {
    /* n  h   w   c   kh kw sh sw dh dw pt pb pl pr cout */
    {1, 9, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 11, 10, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17},
    {1, 13, 13, 3, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 64},   /* a ResNet stem */
    {1, 15, 17, 3, 7, 7, 2, 2, 1, 1, 0, 0, 0, 0, 96},   /* SqueezeNet's, VALID */
    {2, 12, 9, 16, 3, 3, 1, 1, 1, 1, 0, 2, 2, 0, 65},   /* asymmetric both ways */
    {1, 10, 12, 33, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 129}, /* TF SAME stride 2 */
    {1, 14, 14, 64, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 48},  /* dilation 2 */
    {1, 12, 11, 23, 3, 2, 2, 1, 1, 3, 1, 0, 3, 2, 31},  /* mixed strides, dilations */
    {1, 8, 8, 300, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 70},   /* 300 channels: a tap in several blocks */
    {1, 7, 7, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 300},  /* over a 256-column group */
    {1, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 512},   /* few rows: split by columns */
    {3, 5, 4, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 160},
    {1, 14, 14, 24, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 40}, /* 1x1 stride 2 */
    {1, 6, 6, 8, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 9},
    {2, 9, 9, 160, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 136}, /* 1x1 stride 2, K over 128 */
    {1, 5, 6, 128, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 20},
    /* 1x1 padded */                                    /* 1x1 with padding */
    {2, 4, 5, 17, 5, 5, 1, 1, 1, 1, 4, 4, 4, 4, 11},    /* pads as wide as the filter */
    {1, 3, 3, 18, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 5},     /* one output pixel */
    {1, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 128}, /* over 2^21 multiply-adds */
    {2, 40, 40, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 256}, /* items over one row block */
    /* last tiles of each row count (49 rows above: 1), each with its own kernel */
    {1, 2, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 33},  /* 26 rows: 2 */
    {1, 3, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64},   /* 27 rows: 3 */
    {1, 4, 7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 80},   /* 28 rows: 4 */
    {1, 1, 29, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 48},  /* 29 rows: 5 */
    {1, 40, 40, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20}, /* row blocks bound by the tap pointers */
};

int main(void)
{
  clg_test_seed(20261202);
  size_t count = sizeof cases / sizeof cases[0];
  static const char *const names[3] = {"winograd", "direct", "im2col"};
  for (int path = 0; path < 3; path++) {
    /* Winograd's F(2x2, 3x3) on every 3x3 stride-1 case (however few its tiles), then the
     * implicit GEMM (where the ISA has them), then the im2col path on the same cases */
    setenv("CLGRAPH_CONV_WINOGRAD", path == 0 ? "1" : "0", 1);
    setenv("CLGRAPH_CONV_WINOGRAD_TILES", "1", 1);
    setenv("CLGRAPH_CONV_DIRECT", path < 2 ? "1" : "0", 1);
    taken = taken_w = 0;
    for (size_t i = 0; i < count; i++)
      check(&cases[i], names[path]);
    /* AVX-512 and AVX2 take Winograd's on the 12 3x3 stride-1 cases of 16 channels or more in
     * and out, the implicit GEMM on those of 16 channels or more and K of 128 or more; the
     * baseline ISA never */
    bool has = strcmp(clg_host_matmul_portable_isa(), "base") != 0;
    if (path == 0)
      CHECK_MSG(has ? taken_w == 12 : taken_w == 0, "winograd: it ran %zu cases", taken_w);
    else
      CHECK_MSG(has && path == 1 ? taken == 19 : taken == 0, "%s: the implicit GEMM ran %zu cases",
                names[path], taken);
  }
  return clg_test_summary("test_conv_direct");
}
