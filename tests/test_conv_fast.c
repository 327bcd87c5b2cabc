/* The host's fast convolution paths on CPU:0 against a double reference written here from the
 * definitions: DepthwiseConv2dNative with channel counts on both sides of the AVX-512 blocks
 * (16, 32, 64: 1 to 130 channels, multiplier 1 and 2, strides, dilations, SAME and VALID),
 * and Conv2D whose GEMMs are thin (1x1 to 1 to 130 output channels, the narrow tiles' widths
 * and their edges; a 3x3 stride 2 from 3 channels as a network's first layer) or wide (every
 * side over 128). Each case also runs under every host ISA variant the CPU has
 * (CLGRAPH_HOST_GEMM_ISA in the ctest lines). */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
// ctest: threads3 CLGRAPH_HOST_THREADS=3
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static clg_session_options opt;

static int64_t irand(int64_t lo, int64_t hi)
{
  return lo + (int64_t)(clg_test_rand() % (unsigned long long)(hi - lo + 1));
}

static float *rand_floats(size_t n)
{
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    p[i] = (float)clg_test_uniform(-1, 1);
  return p;
}

typedef struct conv_case {
  int64_t x[4], f[4], s, d;
  bool same, depthwise;
} conv_case;

/* Runs the case's node on CPU:0 from Consts and compares with the reference. */
static void check_case(const conv_case *c)
{
  size_t nx = (size_t)(c->x[0] * c->x[1] * c->x[2] * c->x[3]);
  size_t nf = (size_t)(c->f[0] * c->f[1] * c->f[2] * c->f[3]);
  float *x = rand_floats(nx), *f = rand_floats(nf);
  int64_t oh, ow, pt, pl;
  clg_test_out_dim(c->x[1], c->f[0], c->d, c->s, c->same, &oh, &pt);
  clg_test_out_dim(c->x[2], c->f[1], c->d, c->s, c->same, &ow, &pl);
  int64_t C = c->x[3], co = c->depthwise ? C * c->f[3] : c->f[3];
  int64_t y[4] = {c->x[0], oh, ow, co};
  size_t ny = (size_t)(y[0] * oh * ow * co);
  double *ref = calloc(ny ? ny : 1, sizeof(double)), *mag = calloc(ny ? ny : 1, sizeof(double));
  for (int64_t b = 0; b < y[0]; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t a = 0; a < c->f[0]; a++)
          for (int64_t e = 0; e < c->f[1]; e++) {
            int64_t ih = i * c->s - pt + a * c->d, iw = j * c->s - pl + e * c->d;
            if (ih < 0 || ih >= c->x[1] || iw < 0 || iw >= c->x[2])
              continue;
            size_t y0 = (size_t)(((b * oh + i) * ow + j) * co);
            const float *xp = x + ((b * c->x[1] + ih) * c->x[2] + iw) * C;
            const float *fp = f + (a * c->f[1] + e) * C * c->f[3];
            for (int64_t ch = 0; ch < C; ch++)
              for (int64_t m = 0; m < c->f[3]; m++) {
                /* depthwise: output ch*M+m from input ch; Conv2D: output m from every ch */
                size_t yi = y0 + (size_t)(c->depthwise ? ch * c->f[3] + m : m);
                double p = (double)xp[ch] * (double)fp[ch * c->f[3] + m];
                ref[yi] += p;
                mag[yi] += fabs(p);
              }
          }
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *xn = clg_const_f32(g, "x", 4, c->x, x), *fn = clg_const_f32(g, "f", 4, c->f, f);
  int64_t st[4] = {1, c->s, c->s, 1}, dl[4] = {1, c->d, c->d, 1};
  const char *pad = c->same ? "SAME" : "VALID";
  clg_node *node = c->depthwise ? clg_depthwise_conv2d(g, "conv", xn, fn, st, pad, dl)
                                : clg_conv2d(g, "conv", xn, fn, st, pad, dl);
  clg_graph_pop_device(g);
  char what[160];
  snprintf(what, sizeof what, "%s x [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s %lld d %lld %s",
           c->depthwise ? "DepthwiseConv2dNative" : "Conv2D", (long long)c->x[0],
           (long long)c->x[1], (long long)c->x[2], (long long)c->x[3], (long long)c->f[0],
           (long long)c->f[1], (long long)c->f[2], (long long)c->f[3], (long long)c->s,
           (long long)c->d, pad);
  clg_tensor *out = NULL;
  clg_code code = clg_test_run_one(g, &opt, node, &out);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, code == CLG_OK ? "" : clg_last_error());
  bool shape_ok = out && clg_tensor_rank(out) == 4;
  for (int k = 0; shape_ok && k < 4; k++)
    shape_ok = clg_tensor_dim(out, k) == y[k];
  CHECK_MSG(code != CLG_OK || shape_ok, "%s: output shape differs", what);
  if (code == CLG_OK && shape_ok) {
    /* float products summed in float: within a few ulps of the sum of the magnitudes */
    size_t bad = ny;
    for (size_t i = 0; i < ny && bad == ny; i++)
      if (!(fabs(clg_test_elem(out, i) - ref[i]) <= 1e-6 * (mag[i] + 1e-30)))
        bad = i;
    CHECK_MSG(bad == ny, "%s: element %zu is %.9g, want %.9g", what, bad,
              bad < ny ? clg_test_elem(out, bad) : 0.0, bad < ny ? ref[bad] : 0.0);
  }
  clg_tensor_free(out);
  clg_graph_free(g);
  free(x), free(f), free(ref), free(mag);
}

/* Channel counts around the blocks: 1, a partial vector, one, two, three vectors, a full
 * block of 64, a block and a partial one, two blocks and a partial one. */
static const int64_t channels[] = {1, 5, 16, 17, 32, 33, 48, 64, 70, 130};

static void test_depthwise(void)
{
  for (size_t ci = 0; ci < sizeof channels / sizeof channels[0]; ci++)
    for (int v = 0; v < 4; v++) {
      conv_case c = {.depthwise = true, .same = v % 2 == 0, .s = v < 2 ? 1 : 2};
      c.d = v == 3 ? 2 : 1;
      int64_t k = v == 1 ? 5 : 3;
      c.x[0] = irand(1, 2), c.x[1] = irand(5, 11), c.x[2] = irand(5, 11), c.x[3] = channels[ci];
      c.f[0] = k, c.f[1] = k, c.f[2] = channels[ci], c.f[3] = 1;
      check_case(&c);
    }
  /* a multiplier of 2 (the general loop) beside them */
  conv_case m2 = {{1, 7, 6, 19}, {3, 3, 19, 2}, 1, 1, true, true};
  check_case(&m2);
}

static void test_conv_thin(void)
{
  static const int64_t couts[] = {1, 8, 16, 17, 24, 32, 40, 48, 64, 72, 130};
  for (size_t oi = 0; oi < sizeof couts / sizeof couts[0]; oi++) {
    /* 1x1, stride 1: a GEMM on the input itself; rows not a multiple of 12 or 8 */
    conv_case direct = {
        {1, irand(5, 23), irand(5, 23), irand(1, 40)}, {1, 1, 0, couts[oi]}, 1, 1, false, false};
    direct.f[2] = direct.x[3];
    check_case(&direct);
    /* 3x3 stride 2 SAME through im2col */
    conv_case patches = {
        {2, irand(9, 20), irand(9, 20), 3}, {3, 3, 3, couts[oi]}, 2, 1, true, false};
    check_case(&patches);
  }
  /* a network's first layer at size: 192x192x3 -> 96x96x16 (over 2^21 multiply-adds: the
   * rows split across the threads) */
  conv_case first = {{1, 192, 192, 3}, {3, 3, 3, 16}, 2, 1, true, false};
  check_case(&first);
  conv_case wide = {{1, 48, 48, 32}, {1, 1, 32, 64}, 1, 1, false, false};
  check_case(&wide);
}

/* GEMMs with every side over 128 (a ResNet's later layers): on AVX-512 the patch rows split
 * across the threads too; 3x3 SAME and stride 2, and 1x1 on the input itself, with channel
 * counts off the tiles' widths. */
static void test_conv_wide(void)
{
  conv_case same = {{2, 13, 12, 130}, {3, 3, 130, 141}, 1, 1, true, false};
  check_case(&same);
  conv_case strided = {{1, 27, 25, 136}, {3, 3, 136, 200}, 2, 1, true, false};
  check_case(&strided);
  conv_case direct = {{2, 11, 13, 150}, {1, 1, 150, 133}, 1, 1, false, false};
  check_case(&direct);
}

/* 1x1 convolutions with few rows and over 2^21 multiply-adds (MobileNet's 14x14 and 7x7
 * layers at batch 1, batch 2 as well): GEMMs that split across the threads by rows or by
 * columns, their widths off the tiles' (also under 3 threads, the ctest line). */
static void test_conv_direct_split(void)
{
  conv_case cases[] = {
      {{1, 7, 7, 960}, {1, 1, 960, 160}, 1, 1, false, false},
      {{1, 7, 7, 160}, {1, 1, 160, 960}, 1, 1, false, false},
      {{1, 7, 7, 320}, {1, 1, 320, 1280}, 1, 1, false, false},
      {{1, 14, 14, 96}, {1, 1, 96, 576}, 1, 1, true, false},
      {{1, 14, 14, 576}, {1, 1, 576, 96}, 1, 1, false, false},
      {{2, 7, 7, 200}, {1, 1, 200, 133}, 1, 1, false, false},
      {{1, 9, 11, 700}, {1, 1, 700, 77}, 1, 1, false, false},
      {{1, 20, 20, 300}, {1, 1, 300, 40}, 1, 1, false, false},
      {{1, 13, 17, 999}, {1, 1, 999, 9}, 1, 1, true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_case(&cases[i]);
}

int main(void)
{
  clg_test_seed(20261201);
  clg_session_options_init(&opt);
  test_depthwise();
  test_conv_thin();
  test_conv_wide();
  test_conv_direct_split();
  return clg_test_summary("test_conv_fast");
}
