/* DepthwiseConv2dNative's forward pass on CPU:0 against a double reference written here from
 * TensorFlow's definition (y[b,i,j,c*M+m] = sum over the taps (a,e) inside the input of
 * x[b, i*s-pt+a*d, j*s-pl+e*d, c] * f[a,e,c,m], SAME/VALID padding as TensorFlow computes it),
 * at sizes that reach every part of the host kernel: channel counts on both sides of its
 * vector blocks (8 and 16 lanes, blocks of 16 and 64: the masked tails), rows wide enough for
 * the interior's 4-pixel tiles and every remainder of them, left and right edges, strides 1,
 * 2 and 3, dilation 2, non-square filters, multipliers 1 to 3, batches up to 3, layers large
 * enough that the rows split across the threads, and double. Each case also runs under every
 * host ISA variant (CLGRAPH_HOST_GEMM_ISA in the ctest lines). */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static clg_session_options opt;

typedef struct dw_case {
  int64_t n, h, w, c; /* input */
  int64_t kh, kw, m;  /* filter [kh, kw, c, m] */
  int64_t s, d;
  bool same, f64;
  bool explicit; /* padding EXPLICIT with pads (top, bottom, left, right), not SAME/VALID */
  int64_t pads[4];
  int64_t sh, dh; /* the rows' stride and dilation where not 0 (else s and d) */
} dw_case;

static double *rand_values(size_t count)
{
  double *p = malloc((count ? count : 1) * sizeof(double));
  for (size_t i = 0; i < count; i++) {
    /* float-representable, so that both dtypes see the same operands */
    p[i] = (double)(float)clg_test_uniform(-1, 1);
  }
  return p;
}

static clg_node *values_const(clg_graph *g, const char *name, const int64_t *dims, const double *v,
                              size_t count, bool f64)
{
  if (f64)
    return clg_const_f64(g, name, 4, dims, v);
  float *fv = malloc((count ? count : 1) * sizeof(float));
  for (size_t i = 0; i < count; i++)
    fv[i] = (float)v[i];
  clg_node *node = clg_const_f32(g, name, 4, dims, fv);
  free(fv);
  return node;
}

static void check(const dw_case *k)
{
  int64_t oh, ow, pt, pl, C = k->c, M = k->m, CM = k->c * k->m;
  int64_t sh = k->sh ? k->sh : k->s, dh = k->dh ? k->dh : k->d;
  if (k->explicit) { /* VALID over the input padded with zeros */
    clg_test_out_dim(k->h + k->pads[0] + k->pads[1], k->kh, dh, sh, false, &oh, &pt);
    clg_test_out_dim(k->w + k->pads[2] + k->pads[3], k->kw, k->d, k->s, false, &ow, &pl);
    pt = k->pads[0], pl = k->pads[2];
  } else {
    clg_test_out_dim(k->h, k->kh, dh, sh, k->same, &oh, &pt);
    clg_test_out_dim(k->w, k->kw, k->d, k->s, k->same, &ow, &pl);
  }
  int64_t xd[4] = {k->n, k->h, k->w, C}, fd[4] = {k->kh, k->kw, C, M}, yd[4] = {k->n, oh, ow, CM};
  size_t nx = (size_t)(k->n * k->h * k->w * C), nf = (size_t)(k->kh * k->kw * CM);
  size_t ny = (size_t)(k->n * oh * ow * CM);
  double *x = rand_values(nx), *f = rand_values(nf);
  double *ref = calloc(ny ? ny : 1, sizeof(double)), *mag = calloc(ny ? ny : 1, sizeof(double));
  for (int64_t b = 0; b < k->n; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t ch = 0; ch < C; ch++)
          for (int64_t q = 0; q < M; q++) {
            size_t yi = (size_t)(((b * oh + i) * ow + j) * CM + ch * M + q);
            for (int64_t a = 0; a < k->kh; a++)
              for (int64_t e = 0; e < k->kw; e++) {
                int64_t ih = i * sh - pt + a * dh, iw = j * k->s - pl + e * k->d;
                if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w)
                  continue;
                double p = x[((b * k->h + ih) * k->w + iw) * C + ch] *
                           f[(a * k->kw + e) * CM + ch * M + q];
                ref[yi] += p;
                mag[yi] += fabs(p);
              }
          }
  char what[240], pads[64] = "";
  if (k->explicit)
    snprintf(pads, sizeof pads, " [%lld,%lld,%lld,%lld]", (long long)k->pads[0],
             (long long)k->pads[1], (long long)k->pads[2], (long long)k->pads[3]);
  snprintf(what, sizeof what,
           "%s x [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s %lld,%lld d %lld,%lld %s%s",
           k->f64 ? "double" : "float", (long long)k->n, (long long)k->h, (long long)k->w,
           (long long)C, (long long)k->kh, (long long)k->kw, (long long)C, (long long)M,
           (long long)sh, (long long)k->s, (long long)dh, (long long)k->d,
           k->explicit ? "EXPLICIT"
           : k->same   ? "SAME"
                       : "VALID",
           pads);
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *xn = values_const(g, "x", xd, x, nx, k->f64);
  clg_node *fn = values_const(g, "f", fd, f, nf, k->f64);
  int64_t st[4] = {1, sh, k->s, 1}, dl[4] = {1, dh, k->d, 1};
  clg_node *node;
  if (k->explicit) { /* the generic builder: explicit_paddings */
    int64_t ep[8] = {0, 0, k->pads[0], k->pads[1], k->pads[2], k->pads[3], 0, 0};
    clg_attr at[4] = {clg_attr_int_list("strides", 4, st), clg_attr_string("padding", "EXPLICIT"),
                      clg_attr_int_list("dilations", 4, dl),
                      clg_attr_int_list("explicit_paddings", 8, ep)};
    clg_output in[2] = {{xn, 0}, {fn, 0}};
    node = clg_op(g, "DepthwiseConv2dNative", "dw", 2, in, 4, at);
  } else
    node = clg_depthwise_conv2d(g, "dw", xn, fn, st, k->same ? "SAME" : "VALID", dl);
  clg_graph_pop_device(g);
  clg_tensor *out = NULL;
  clg_code code = clg_test_run_one(g, &opt, node, &out);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, code == CLG_OK ? "" : clg_last_error());
  bool shape_ok = out && clg_tensor_rank(out) == 4;
  for (int i = 0; shape_ok && i < 4; i++)
    shape_ok = clg_tensor_dim(out, i) == yd[i];
  CHECK_MSG(code != CLG_OK || shape_ok, "%s: output shape differs", what);
  if (code == CLG_OK && shape_ok) {
    /* A sum of t products rounded in the output's type, in any order, is within t units of
     * its rounding (2^-24 or 2^-53) times the sum of the magnitudes of the exact products
     * (the float products are exact in double; each rounding adds at most one unit). */
    double unit = k->f64 ? ldexp(1, -53) : ldexp(1, -24);
    double tol = (double)(k->kh * k->kw + 1) * unit;
    size_t bad = ny;
    for (size_t i = 0; i < ny && bad == ny; i++)
      if (!(fabs(clg_test_elem(out, i) - ref[i]) <= tol * mag[i]))
        bad = i;
    CHECK_MSG(bad == ny, "%s: element %zu is %.17g, want %.17g", what, bad,
              bad < ny ? clg_test_elem(out, bad) : 0.0, bad < ny ? ref[bad] : 0.0);
  }
  clg_tensor_free(out);
  clg_graph_free(g);
  free(x), free(f), free(ref), free(mag);
}

/* Around the blocks: 1, odd tails of an 8- and a 16-lane vector, a vector, one and a bit,
 * AVX2's block of 16 and past it, AVX-512's block of 64 and past it, MobileNet's 144. */
static const int64_t channels[] = {1, 3, 7, 8, 9, 16, 17, 31, 33, 48, 63, 64, 65, 79, 144};

/* 3x3 SAME and VALID, strides 1 and 2, over every channel count; widths whose interior is
 * 0..3 pixels past a multiple of the 4-pixel tile. */
static void test_channels(void)
{
  for (size_t ci = 0; ci < sizeof channels / sizeof channels[0]; ci++)
    for (int v = 0; v < 4; v++) {
      dw_case k = {.n = 1 + (int64_t)(ci % 2), .h = 6, .w = 9 + (int64_t)ci % 4, .c = channels[ci]};
      k.kh = k.kw = 3, k.m = 1, k.d = 1;
      k.same = v % 2 == 0, k.s = v < 2 ? 1 : 2;
      check(&k);
    }
}

/* Every width from 1 to 14 (no interior, then interiors of every length) at strides 1 to 3,
 * with a few filter shapes and dilations. */
static void test_widths(void)
{
  static const int64_t filters[][3] = {{3, 3, 1}, {5, 5, 1}, {1, 3, 1}, {3, 1, 1}, {3, 3, 2}};
  for (int64_t w = 1; w <= 14; w++)
    for (int64_t s = 1; s <= 3; s++)
      for (size_t fi = 0; fi < sizeof filters / sizeof filters[0]; fi++)
        for (int same = 0; same < 2; same++) {
          dw_case k = {.n = 1, .h = 6, .w = w, .c = 20, .m = 1, .s = s, .same = same};
          k.kh = filters[fi][0], k.kw = filters[fi][1], k.d = filters[fi][2];
          if (!same && (k.kw - 1) * k.d + 1 > w)
            continue; /* VALID's window must fit the input */
          check(&k);
        }
}

/* The 3-wide kernel's tiles at strides 1 and 2 (interiors of 8-pixel tiles and every
 * remainder), over channel counts around the vector widths, padded and not; rows with their
 * own stride and dilation, 3 and 4 taps high. */
static void test_wide_rows(void)
{
  static const int64_t cs[] = {3, 8, 17, 40};
  for (int64_t w = 15; w <= 40; w += 1)
    for (int64_t s = 1; s <= 2; s++) {
      dw_case k = {.n = 1 + w % 2, .h = 4 + s, .w = w, .c = cs[w % 4], .m = 1, .s = s};
      k.kh = k.kw = 3, k.d = 1, k.same = w % 3 != 0;
      check(&k);
    }
  /* the rows' stride and dilation apart from the columns' (the kernel takes any for rows) */
  static const int64_t rows[][2] = {{1, 2}, {3, 1}, {2, 3}, {1, 1}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    for (int64_t s = 1; s <= 2; s++) {
      dw_case k = {.n = 2, .h = 11, .w = 19 + s, .c = 17 + 6 * (int64_t)i, .m = 1, .s = s};
      k.kh = 3 + (int64_t)(i == 3), k.kw = 3, k.d = 1, k.same = i % 2 == 0;
      k.sh = rows[i][0], k.dh = rows[i][1];
      check(&k);
    }
}

/* Multipliers over 1 (their own loops), batches over 1, double, and MobileNet-sized layers
 * whose rows split across the threads (stride 1 and 2). */
static void test_shapes(void)
{
  dw_case cases[] = {
      {2, 7, 9, 19, 3, 3, 2, 1, 1, true, false, false, {0}, 0, 0},
      {3, 8, 8, 5, 3, 3, 3, 2, 1, false, false, false, {0}, 0, 0},
      {1, 9, 10, 17, 3, 3, 2, 1, 2, true, false, false, {0}, 0, 0},
      {3, 6, 13, 33, 3, 3, 1, 1, 1, true, false, false, {0}, 0, 0},
      {2, 9, 11, 21, 3, 3, 1, 2, 2, true, true, false, {0}, 0, 0},
      {1, 7, 7, 3, 3, 3, 2, 1, 1, false, true, false, {0}, 0, 0},
      {1, 56, 56, 144, 3, 3, 1, 1, 1, true, false, false, {0}, 0, 0},
      {1, 56, 56, 144, 3, 3, 1, 2, 1, true, false, false, {0}, 0, 0},
      {2, 28, 28, 192, 3, 3, 1, 1, 1, true, false, false, {0}, 0, 0},
      {1, 14, 14, 576, 3, 3, 1, 2, 1, false, false, false, {0}, 0, 0},
      {1, 7, 7, 960, 3, 3, 1, 1, 1, true, false, false, {0}, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check(&cases[i]);
}

/* Padding EXPLICIT (ONNX's pads, no Pad before the op): symmetric and asymmetric pads, pads
 * as wide as the window and wider (windows wholly in the padding give zeros), over channel
 * counts around the vector blocks, strides 1 to 3, dilation 2, a multiplier of 2, double. */
static void test_explicit(void)
{
  static const int64_t pads[][4] = {
      {1, 1, 1, 1}, {0, 1, 0, 1}, {2, 0, 1, 3}, {3, 3, 4, 4}, {0, 0, 2, 0}};
  for (size_t pi = 0; pi < sizeof pads / sizeof pads[0]; pi++)
    for (size_t ci = 0; ci < sizeof channels / sizeof channels[0]; ci += 2)
      for (int64_t s = 1; s <= 3; s++) {
        dw_case k = {.n = 1 + (int64_t)(ci % 2), .h = 5 + s, .w = 6 + (int64_t)ci % 5};
        k.c = channels[ci], k.kh = k.kw = 3, k.m = 1, k.s = s, k.d = 1 + (int64_t)(pi == 2);
        k.explicit = true;
        memcpy(k.pads, pads[pi], sizeof k.pads);
        check(&k);
      }
  dw_case more[] = {
      {2, 7, 9, 19, 3, 3, 2, 1, 1, false, false, true, {1, 1, 1, 1}, 0, 0},
      {1, 9, 10, 17, 3, 2, 1, 2, 1, false, true, true, {1, 0, 2, 1}, 0, 0},
      {1, 56, 56, 144, 3, 3, 1, 2, 1, false, false, true, {1, 1, 1, 1}, 0, 0},
      {1, 112, 112, 96, 3, 3, 1, 2, 1, false, false, true, {1, 1, 1, 1}, 0, 0},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    check(&more[i]);
}

int main(void)
{
  clg_test_seed(20261202);
  clg_session_options_init(&opt);
  test_channels();
  test_widths();
  test_wide_rows();
  test_shapes();
  test_explicit();
  return clg_test_summary("test_depthwise");
}
