/* Host NHWC float Conv2D of a 3x3 stride-1 window as Winograd's minimal filtering F(2x2, 3x3)
 * (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): per 2x2 block of
 * outputs, the 4x4 input tile under it is transformed (V = B^T d B), multiplied channel by
 * channel with the transformed filter (U = G g G^T) in 16 independent products of tiles x
 * input channels by input x output channels, and the 16 sums transformed back (Y = A^T M A):
 * 16 multiplies per tile and channel pair where the direct convolution does 36. The transforms'
 * coefficients are 0, +-1 and +-1/2, so the rounding stays close to the direct sum's.
 *
 * Work items are tile groups x output-channel strip groups (few tiles, as a late layer at batch
 * 1, split the columns so that each item reads only its part of U). An item runs blocks of
 * tiles whose transformed inputs V and products M stay in L2; the products run on the implicit
 * GEMM's tile kernels (conv_direct.c) with U packed in their strips. Every output is computed
 * from its own tile in a fixed order whatever the split: the result does not depend on the
 * thread count, and a fused epilogue, applied to each output tile in L1, sees the same sums as
 * the unfused op. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#define W_MR 6                    /* tiles per kernel call (its rows) */
#define W_TB_MAX 96               /* tiles per block at most */
#define W_BLOCK ((size_t)1 << 20) /* bytes of a block's V and M: they stay in L2 */
#define W_ALIGN 64
/* Tiles at least: the filter's transform (16 x c x cout floats written per run) costs more than
 * it saves on fewer (resnet18's 14x14 and 7x7 layers at batch 1 ran slower) */
#define W_MIN_TILES 150

typedef struct wino_plan {
  size_t th, tw, tiles; /* 2x2 output tiles down a map, across it, in all */
  size_t nrw, strips;   /* the tile kernels' strip width; strips over the output channels */
  size_t mg, ng;        /* tile groups x strip groups: the work items */
  size_t tb, ldm;       /* tiles per block; M's row (an item's strips' columns at most) */
  size_t u, zero, each; /* floats: transformed filter, a zero pixel, one member's V and M */
  int threads;
  const clg_host_tile_fn *fn;
} wino_plan;

static size_t up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Tiles per block: V (16 x tb x c) and M (16 x tb x ldm) within W_BLOCK, whole kernel calls. */
static size_t block_tiles(size_t c, size_t ldm)
{
  size_t tb = W_BLOCK / (16 * sizeof(float) * (c + ldm));
  if (tb > W_TB_MAX)
    tb = W_TB_MAX;
  return tb < W_MR ? W_MR : tb / W_MR * W_MR;
}

static wino_plan plan_of(const clg_window *g)
{
  wino_plan p;
  memset(&p, 0, sizeof p);
  size_t c = (size_t)g->c, cout = (size_t)g->cout;
  p.fn = clg_host_conv_tiles(&p.nrw);
  if (!p.fn)
    p.nrw = 16; /* plan sizes only; never run */
  p.th = (size_t)(g->oh + 1) / 2;
  p.tw = (size_t)(g->ow + 1) / 2;
  p.tiles = (size_t)g->n * p.th * p.tw;
  p.strips = (cout + p.nrw - 1) / p.nrw;
  p.threads = clg_host_threads();
  if ((double)p.tiles * 16.0 * (double)c * (double)cout < (double)(1 << 21))
    p.threads = 1; /* microseconds of work: one thread (as the GEMM's rule) */
  /* About four items per thread (a stopped thread leaves its share to the others), split so
   * that the bytes read again are fewest: each block of a tile group reads its strips of U,
   * each strip group transforms all of its tiles' inputs. */
  size_t want = p.threads == 1 ? 1 : 4 * (size_t)p.threads;
  double ubytes = 16.0 * (double)c * (double)(p.strips * p.nrw) * sizeof(float);
  double vbytes = 16.0 * (double)p.tiles * (double)c * sizeof(float);
  double best = -1;
  for (size_t ng = 1; ng <= p.strips && ng <= want; ng++) {
    size_t mg = (want + ng - 1) / ng;
    if (mg > p.tiles)
      mg = p.tiles;
    size_t ldm = (p.strips + ng - 1) / ng * p.nrw, tb = block_tiles(c, ldm);
    size_t per = (p.tiles + mg - 1) / mg, blocks = (per + tb - 1) / tb;
    double cost = (double)(mg * blocks) * ubytes + (double)ng * vbytes;
    if (best < 0 || cost < best)
      best = cost, p.mg = mg, p.ng = ng, p.ldm = ldm, p.tb = tb;
  }
  p.u = 16 * c * p.strips * p.nrw;
  p.zero = up(c, W_ALIGN / sizeof(float));
  p.each = up(16 * p.tb * (c + p.ldm), W_ALIGN / sizeof(float));
  return p;
}

static int64_t min_tiles(void)
{
  const char *env = getenv("CLGRAPH_CONV_WINOGRAD_TILES"); /* tests: smaller maps too */
  return env && atol(env) > 0 ? atol(env) : W_MIN_TILES;
}

bool clg_host_conv_winograd_usable(const clg_window *g)
{
  size_t nrw;
  const char *env = getenv("CLGRAPH_CONV_WINOGRAD"); /* 0: the implicit GEMM (tests, A/B) */
  if (env && strcmp(env, "0") == 0)
    return false;
  return clg_host_conv_tiles(&nrw) && g->kh == 3 && g->kw == 3 && g->sh == 1 && g->sw == 1 &&
         g->dh == 1 && g->dw == 1 && g->c >= 16 && g->cout >= 16 &&
         g->n * ((g->oh + 1) / 2) * ((g->ow + 1) / 2) >= min_tiles();
}

size_t clg_host_conv_winograd_scratch(const clg_window *g)
{
  wino_plan p = plan_of(g);
  return (p.u + p.zero + (size_t)p.threads * p.each) * sizeof(float) + W_ALIGN;
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

typedef struct wino_job {
  const clg_window *g;
  const float *x, *f;
  float *y;
  const clg_epilogue *e;
  float *u, *zero, *base; /* U [16][strips][c][nrw]; c zeros; the members' V and M */
  wino_plan p;
} wino_job;

/* U's rows for input channels [c0, c1): for each one and each 8 output channels, the 3x3 taps
 * g (f[(a * 3 + b) * c + ci][co]) to G g G^T, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1];
 * element (i, j) goes to U[i * 4 + j][co / nrw][ci][co % nrw], zeros past cout. */
#define W_FILTER(T, LD, ST, ADD, SUB, HALF)                                                        \
  do {                                                                                             \
    T gg[9], t[12];                                                                                \
    for (int k = 0; k < 9; k++)                                                                    \
      gg[k] = LD(src + (size_t)k * c * cout);                                                      \
    for (int b = 0; b < 3; b++) { /* t = G g: 4 x 3 */                                             \
      t[b] = gg[b];                                                                                \
      t[3 + b] = HALF(ADD(ADD(gg[b], gg[3 + b]), gg[6 + b]));                                      \
      t[6 + b] = HALF(ADD(SUB(gg[b], gg[3 + b]), gg[6 + b]));                                      \
      t[9 + b] = gg[6 + b];                                                                        \
    }                                                                                              \
    for (int i = 0; i < 4; i++) { /* U = t G^T: 4 x 4 */                                           \
      const T *r = t + 3 * i;                                                                      \
      ST(dst + (size_t)(i * 4 + 0) * estride, r[0]);                                               \
      ST(dst + (size_t)(i * 4 + 1) * estride, HALF(ADD(ADD(r[0], r[1]), r[2])));                   \
      ST(dst + (size_t)(i * 4 + 2) * estride, HALF(ADD(SUB(r[0], r[1]), r[2])));                   \
      ST(dst + (size_t)(i * 4 + 3) * estride, r[2]);                                               \
    }                                                                                              \
  } while (0)

#define V_LD(p) _mm256_loadu_ps(p)
#define V_ST(p, v) _mm256_storeu_ps((p), (v))
#define V_ADD(a, b) _mm256_add_ps((a), (b))
#define V_SUB(a, b) _mm256_sub_ps((a), (b))
#define V_HALF(a) _mm256_mul_ps((a), _mm256_set1_ps(0.5f))
#define S_LD(p) (*(p))
#define S_ST(p, v) (*(p) = (v))
#define S_ADD(a, b) ((a) + (b))
#define S_SUB(a, b) ((a) - (b))
#define S_HALF(a) ((a)*0.5f)

typedef struct filter_ctx {
  const wino_job *j;
} filter_ctx;

__attribute__((target("avx2"))) static void filter_range(void *ctx, size_t c0, size_t c1)
{
  const wino_job *j = ((const filter_ctx *)ctx)->j;
  size_t c = (size_t)j->g->c, cout = (size_t)j->g->cout, nrw = j->p.nrw;
  size_t strips = j->p.strips, estride = strips * c * nrw;
  for (size_t ci = c0; ci < c1; ci++) {
    size_t co = 0;
    for (; co + 8 <= cout; co += 8) { /* 8 columns never cross a strip (nrw is 16 or 64) */
      const float *src = j->f + ci * cout + co;
      float *dst = j->u + ((co / nrw) * c + ci) * nrw + co % nrw;
      W_FILTER(__m256, V_LD, V_ST, V_ADD, V_SUB, V_HALF);
    }
    for (; co < cout; co++) {
      const float *src = j->f + ci * cout + co;
      float *dst = j->u + ((co / nrw) * c + ci) * nrw + co % nrw;
      W_FILTER(float, S_LD, S_ST, S_ADD, S_SUB, S_HALF);
    }
    for (; co < strips * nrw; co++) /* the last strip's padding */
      for (size_t e = 0; e < 16; e++)
        j->u[e * estride + ((co / nrw) * c + ci) * nrw + co % nrw] = 0.0f;
  }
}

/* The 16 elements of B^T d B for a 4x4 tile d (row-major, d[i * 4 + j]), B^T = [1 0 -1 0;
 * 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: element e of the tile to out + e * ldv. */
#define W_INPUT(T, LD, ST, ADD, SUB)                                                               \
  do {                                                                                             \
    T d[16], t[16];                                                                                \
    for (int k = 0; k < 16; k++)                                                                   \
      d[k] = LD(px[k] + ci);                                                                       \
    for (int q = 0; q < 4; q++) { /* t = B^T d, column q */                                        \
      t[q] = SUB(d[q], d[8 + q]);                                                                  \
      t[4 + q] = ADD(d[4 + q], d[8 + q]);                                                          \
      t[8 + q] = SUB(d[8 + q], d[4 + q]);                                                          \
      t[12 + q] = SUB(d[4 + q], d[12 + q]);                                                        \
    }                                                                                              \
    for (int i = 0; i < 4; i++) { /* (B^T d) B, row i */                                           \
      const T *r = t + 4 * i;                                                                      \
      float *o = out + (size_t)(4 * i) * ldv + ci;                                                 \
      ST(o, SUB(r[0], r[2]));                                                                      \
      ST(o + ldv, ADD(r[1], r[2]));                                                                \
      ST(o + 2 * ldv, SUB(r[2], r[1]));                                                            \
      ST(o + 3 * ldv, SUB(r[1], r[3]));                                                            \
    }                                                                                              \
  } while (0)

/* Tile t's transformed input, all channels, to out (element e's row at out + e * ldv). */
__attribute__((target("avx2"))) static void input_tile(const wino_job *j, size_t t, float *out,
                                                       size_t ldv)
{
  const clg_window *g = j->g;
  size_t c = (size_t)g->c, per = j->p.th * j->p.tw;
  int64_t n = (int64_t)(t / per), ty = (int64_t)(t % per / j->p.tw);
  int64_t tx = (int64_t)(t % j->p.tw), ih0 = 2 * ty - g->pt, iw0 = 2 * tx - g->pl;
  const float *px[16];
  for (int64_t a = 0; a < 4; a++)
    for (int64_t b = 0; b < 4; b++) {
      int64_t ih = ih0 + a, iw = iw0 + b;
      bool in = ih >= 0 && ih < g->h && iw >= 0 && iw < g->w;
      px[a * 4 + b] = in ? j->x + (size_t)((n * g->h + ih) * g->w + iw) * c : j->zero;
    }
  size_t ci = 0;
  for (; ci + 8 <= c; ci += 8)
    W_INPUT(__m256, V_LD, V_ST, V_ADD, V_SUB);
  for (; ci < c; ci++)
    W_INPUT(float, S_LD, S_ST, S_ADD, S_SUB);
}

/* A^T m A for the tile's 16 products m (element e at m + e * ldm), A^T = [1 1 1 0; 0 1 -1 -1]:
 * the 2x2 outputs o[0..3] (row-major). */
#define W_OUTPUT(T, LD, ADD, SUB)                                                                  \
  do {                                                                                             \
    T v[16], s[8];                                                                                 \
    for (int k = 0; k < 16; k++)                                                                   \
      v[k] = LD(m + (size_t)k * ldm + q);                                                          \
    for (int b = 0; b < 4; b++) { /* s = A^T m: 2 x 4 */                                           \
      s[b] = ADD(ADD(v[b], v[4 + b]), v[8 + b]);                                                   \
      s[4 + b] = SUB(SUB(v[4 + b], v[8 + b]), v[12 + b]);                                          \
    }                                                                                              \
    for (int i = 0; i < 2; i++) {                                                                  \
      o[2 * i] = ADD(ADD(s[4 * i], s[4 * i + 1]), s[4 * i + 2]);                                   \
      o[2 * i + 1] = SUB(SUB(s[4 * i + 1], s[4 * i + 2]), s[4 * i + 3]);                           \
    }                                                                                              \
  } while (0)

/* Tile t's outputs in columns [col0, col0 + ncols) from its products m (element e at m + e *
 * ldm), stored where they fall inside the map, then the epilogue on them (in L1). */
__attribute__((target("avx2"))) static void output_tile(const wino_job *j, size_t t, const float *m,
                                                        size_t ldm, size_t col0, size_t ncols)
{
  const clg_window *g = j->g;
  size_t cout = (size_t)g->cout, per = j->p.th * j->p.tw;
  size_t n = t / per, oy = t % per / j->p.tw * 2, ox = t % j->p.tw * 2;
  size_t oh = (size_t)g->oh, ow = (size_t)g->ow, wide = ox + 1 < ow ? 2 : 1;
  size_t tall = oy + 1 < oh ? 2 : 1, row0 = (n * oh + oy) * ow + ox;
  float *y0 = j->y + row0 * cout + col0, *y1 = y0 + ow * cout;
  size_t q = 0;
  for (; q + 8 <= ncols; q += 8) {
    __m256 o[4];
    W_OUTPUT(__m256, V_LD, V_ADD, V_SUB);
    _mm256_storeu_ps(y0 + q, o[0]);
    if (wide == 2)
      _mm256_storeu_ps(y0 + cout + q, o[1]);
    if (tall == 2) {
      _mm256_storeu_ps(y1 + q, o[2]);
      if (wide == 2)
        _mm256_storeu_ps(y1 + cout + q, o[3]);
    }
  }
  for (; q < ncols; q++) {
    float o[4];
    W_OUTPUT(float, S_LD, S_ADD, S_SUB);
    y0[q] = o[0];
    if (wide == 2)
      y0[cout + q] = o[1];
    if (tall == 2) {
      y1[q] = o[2];
      if (wide == 2)
        y1[cout + q] = o[3];
    }
  }
  if (!j->e)
    return;
  for (size_t a = 0; a < tall; a++) {
    float *ya = a ? y1 : y0;
    if (j->p.nrw == 64)
      clg_host_epilogue_tile512(j->e, ya, cout, row0 + a * ow, col0, wide, ncols);
    else
      clg_host_epilogue_tile256(j->e, ya, cout, row0 + a * ow, col0, wide, ncols);
  }
}

static void wino_task(void *ctx, int item)
{
  const wino_job *j = ctx;
  const wino_plan *p = &j->p;
  size_t c = (size_t)j->g->c, cout = (size_t)j->g->cout, nrw = p->nrw;
  size_t mi = (size_t)item / p->ng, ni = (size_t)item % p->ng;
  size_t t0 = p->tiles * mi / p->mg, t1 = p->tiles * (mi + 1) / p->mg;
  size_t s0 = p->strips * ni / p->ng, s1 = p->strips * (ni + 1) / p->ng;
  size_t col0 = s0 * nrw, ncols = (s1 * nrw < cout ? s1 * nrw : cout) - col0;
  size_t ldm = (s1 - s0) * nrw, tb = p->tb, ldv = tb * c, lde = tb * ldm;
  /* one slot when the plan has one: a task nested in another team's keeps that member */
  size_t slot = p->threads > 1 ? (size_t)clg_host_parallel_member() : 0;
  float *v = j->base + slot * p->each, *m = v + 16 * ldv;
  size_t cnt = t1 - t0, nb = (cnt + tb - 1) / tb;
  for (size_t b = 0; b < nb; b++) { /* blocks of even size */
    size_t b0 = t0 + cnt * b / nb, bt = t0 + cnt * (b + 1) / nb - b0;
    for (size_t i = 0; i < bt; i++)
      input_tile(j, b0 + i, v + i * c, ldv);
    for (size_t e = 0; e < 16; e++) {
      const float *ve = v + e * ldv;
      float *me = m + e * lde;
      for (size_t s = s0; s < s1; s++) {
        const float *bp = j->u + (e * p->strips + s) * c * nrw;
        size_t nr = cout - s * nrw < nrw ? cout - s * nrw : nrw;
        for (size_t i = 0; i < bt; i += W_MR) {
          size_t mr = bt - i < W_MR ? bt - i : W_MR;
          const float *ind[W_MR];
          for (size_t r = 0; r < W_MR; r++)
            ind[r] = ve + (i + (r < mr ? r : 0)) * c;
          p->fn[mr - 1](ind, 1, c, bp, me + i * ldm + (s - s0) * nrw, ldm, nr, false);
        }
      }
    }
    for (size_t i = 0; i < bt; i++)
      output_tile(j, b0 + i, m + i * ldm, lde, col0, ncols);
  }
}

void clg_host_conv_winograd(const float *x, const float *f, float *y, const clg_window *g,
                            const clg_epilogue *e, void *scratch)
{
  wino_job j = {.g = g, .x = x, .f = f, .y = y, .e = e};
  j.p = plan_of(g);
  if (!j.p.fn)
    return; /* not usable here: never called */
  j.u = (float *)(((uintptr_t)scratch + W_ALIGN - 1) & ~(uintptr_t)(W_ALIGN - 1));
  j.zero = j.u + j.p.u;
  j.base = j.zero + j.p.zero;
  memset(j.zero, 0, (size_t)g->c * sizeof(float));
  filter_ctx fc = {&j};
  clg_host_parallel_for((size_t)g->c, 8, filter_range, &fc);
  clg_host_parallel((int)(j.p.mg * j.p.ng), wino_task, &j);
}

#else

void clg_host_conv_winograd(const float *x, const float *f, float *y, const clg_window *g,
                            const clg_epilogue *e, void *scratch)
{
  (void)x, (void)f, (void)y, (void)g, (void)e, (void)scratch; /* never usable here */
}

#endif
