/* Host NHWC float Conv2D forward as an implicit GEMM: no im2col copy. Each tile of 6 output
 * pixels gets, per filter tap, a pointer to each pixel's input channels in place (or to zeros
 * where the tap falls in the padding: an indirection buffer), so strides, dilations and
 * padding cost nothing per element. The tiles read the filter's rows in place where cout is a
 * multiple of the strip width, else a copy packed into strips once per call. Work items split
 * the output rows, or the output channels where the rows are few (a late layer at batch 1),
 * whichever reads less. Every element is summed in the same order (K blocks in order, taps
 * then channels within a block) whatever the split: the result does not depend on the thread
 * count, and a fused epilogue sees the same sums as the unfused op. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#define D_MR 6   /* output pixels per tile */
#define D_KC 256 /* K values (taps x channels) per block */
#define D_GC 256 /* output channels per group (their K block of the filter stays in L2) */
#define D_YB ((size_t)256 << 10) /* bytes of output rows x a group's columns per row block */
#define D_ALIGN 64

typedef void (*tile_fn)(const float *const *ind, size_t tn, size_t cn, const float *bp, size_t ldb,
                        float *y, size_t ldy, size_t mr, size_t nr, bool acc);

/* Shared zeros for taps in the padding (a block reads at most D_KC channels of a tap). */
static _Alignas(64) const float zeros[D_KC];

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define D_X86 1

/* --- AVX-512: a 6 x 64 tile in 24 zmm accumulators -------------------------------------- */

#define FMA512(r)                                                                                  \
  do {                                                                                             \
    __m512 av = _mm512_set1_ps(a##r[c]);                                                           \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                    \
    c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                                    \
    c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                                    \
    c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                                    \
  } while (0)

#define STORE512(r)                                                                                \
  do {                                                                                             \
    if (r < mr) {                                                                                  \
      float *yr = y + (size_t)r * ldy;                                                             \
      if (acc) {                                                                                   \
        c##r##0 = _mm512_add_ps(c##r##0, _mm512_maskz_loadu_ps(m0, yr));                           \
        c##r##1 = _mm512_add_ps(c##r##1, _mm512_maskz_loadu_ps(m1, yr + 16));                      \
        c##r##2 = _mm512_add_ps(c##r##2, _mm512_maskz_loadu_ps(m2, yr + 32));                      \
        c##r##3 = _mm512_add_ps(c##r##3, _mm512_maskz_loadu_ps(m3, yr + 48));                      \
      }                                                                                            \
      _mm512_mask_storeu_ps(yr, m0, c##r##0);                                                      \
      _mm512_mask_storeu_ps(yr + 16, m1, c##r##1);                                                 \
      _mm512_mask_storeu_ps(yr + 32, m2, c##r##2);                                                 \
      _mm512_mask_storeu_ps(yr + 48, m3, c##r##3);                                                 \
    }                                                                                              \
  } while (0)

__attribute__((target("avx512f"))) static __mmask16 mask512(size_t nr, size_t from)
{
  if (nr <= from)
    return 0;
  return nr - from >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nr - from)) - 1);
}

/* y[0..mr) x [0..nr) = (or +=) the sum over tn taps x cn channels of the pixels' inputs
 * (ind[t * 6 + r]) times the packed strip bp (64 per K value). */
__attribute__((target("avx512f"))) static void tile512(const float *const *ind, size_t tn,
                                                       size_t cn, const float *bp, size_t ldb,
                                                       float *y, size_t ldy, size_t mr, size_t nr,
                                                       bool acc)
{
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
  __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00;
  __m512 c30 = c00, c31 = c00, c32 = c00, c33 = c00, c40 = c00, c41 = c00, c42 = c00, c43 = c00;
  __m512 c50 = c00, c51 = c00, c52 = c00, c53 = c00;
  for (size_t t = 0; t < tn; t++, ind += D_MR) {
    const float *a0 = ind[0], *a1 = ind[1], *a2 = ind[2], *a3 = ind[3], *a4 = ind[4];
    const float *a5 = ind[5];
    for (size_t c = 0; c < cn; c++, bp += ldb) {
      __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
      __m512 b2 = _mm512_loadu_ps(bp + 32), b3 = _mm512_loadu_ps(bp + 48);
      FMA512(0);
      FMA512(1);
      FMA512(2);
      FMA512(3);
      FMA512(4);
      FMA512(5);
    }
  }
  __mmask16 m0 = mask512(nr, 0), m1 = mask512(nr, 16), m2 = mask512(nr, 32), m3 = mask512(nr, 48);
  STORE512(0);
  STORE512(1);
  STORE512(2);
  STORE512(3);
  STORE512(4);
  STORE512(5);
}

/* --- AVX2: a 6 x 16 tile in 12 ymm accumulators ----------------------------------------- */

#define FMA256(r)                                                                                  \
  do {                                                                                             \
    __m256 av = _mm256_broadcast_ss(a##r + c);                                                     \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                    \
    c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                    \
  } while (0)

#define STORE256(r)                                                                                \
  do {                                                                                             \
    if (r < mr) {                                                                                  \
      float *yr = y + (size_t)r * ldy;                                                             \
      if (acc) {                                                                                   \
        c##r##0 = _mm256_add_ps(c##r##0, _mm256_maskload_ps(yr, m0));                              \
        c##r##1 = _mm256_add_ps(c##r##1, _mm256_maskload_ps(yr + 8, m1));                          \
      }                                                                                            \
      _mm256_maskstore_ps(yr, m0, c##r##0);                                                        \
      _mm256_maskstore_ps(yr + 8, m1, c##r##1);                                                    \
    }                                                                                              \
  } while (0)

/* Lanes below nr - from set (all where nr - from >= 8). */
__attribute__((target("avx2,fma"))) static __m256i mask256(size_t nr, size_t from)
{
  int left = nr <= from ? 0 : nr - from >= 8 ? 8 : (int)(nr - from);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) static void tile256(const float *const *ind, size_t tn,
                                                        size_t cn, const float *bp, size_t ldb,
                                                        float *y, size_t ldy, size_t mr, size_t nr,
                                                        bool acc)
{
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (size_t t = 0; t < tn; t++, ind += D_MR) {
    const float *a0 = ind[0], *a1 = ind[1], *a2 = ind[2], *a3 = ind[3], *a4 = ind[4];
    const float *a5 = ind[5];
    for (size_t c = 0; c < cn; c++, bp += ldb) {
      __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
      FMA256(0);
      FMA256(1);
      FMA256(2);
      FMA256(3);
      FMA256(4);
      FMA256(5);
    }
  }
  __m256i m0 = mask256(nr, 0), m1 = mask256(nr, 8);
  STORE256(0);
  STORE256(1);
  STORE256(2);
  STORE256(3);
  STORE256(4);
  STORE256(5);
}

#else
#define D_X86 0
#endif

/* The tile kernel and its strip width for this CPU's ISA choice, or none (the GEMM path). */
static tile_fn isa_tile(size_t *nrw)
{
#if D_X86
  const char *isa = clg_host_matmul_portable_isa();
  if (strcmp(isa, "avx512") == 0)
    return *nrw = 64, tile512;
  if (strcmp(isa, "avx2") == 0)
    return *nrw = 16, tile256;
#endif
  *nrw = 0;
  return NULL;
}

bool clg_host_conv_direct_usable(const clg_window *g)
{
  size_t nrw;
  const char *env = getenv("CLGRAPH_CONV_DIRECT"); /* 0: the im2col path (tests, A/B) */
  if (env && strcmp(env, "0") == 0)
    return false;
  /* Where it beats im2col + GEMM: 16 channels or more (fewer, as a network's first layer on
   * RGB, leave the tile a short loop per tap) and K of 128 or more (a shorter K leaves the
   * tile's stores a larger share: a 1x1 stride-2 from 64 channels is faster through patches;
   * from 256, 0.63-0.71x of their time); a packed filter of at most 256 MB. */
  double packed = (double)g->kdim * (double)(g->cout + 63) * sizeof(float);
  return isa_tile(&nrw) && g->cout > 0 && g->c >= 16 && g->kdim >= 128 && !clg_conv_is_direct(g) &&
         g->n * g->oh * g->ow > 0 && packed <= (double)(256u << 20);
}

typedef struct direct_plan {
  size_t rows, taps, mtiles, strips, nrw;
  size_t cc, tb; /* channels per block, taps per block */
  size_t mg, ng; /* row groups, column groups */
  size_t gs;     /* strips per group */
  size_t packed; /* scratch bytes of the packed filter */
  bool in_place; /* the filter read as it is, not packed */
  int threads;
  tile_fn tile;
} direct_plan;

static size_t round_up(size_t v) { return (v + D_ALIGN - 1) / D_ALIGN * D_ALIGN; }

static direct_plan plan_of(const clg_window *g)
{
  direct_plan p;
  memset(&p, 0, sizeof p);
  size_t c = (size_t)g->c, cout = (size_t)g->cout;
  p.tile = isa_tile(&p.nrw);
  if (!p.tile)
    p.nrw = 16; /* plan sizes only; never run */
  p.rows = (size_t)(g->n * g->oh * g->ow);
  p.taps = (size_t)(g->kh * g->kw);
  p.mtiles = (p.rows + D_MR - 1) / D_MR;
  p.strips = (cout + p.nrw - 1) / p.nrw;
  size_t parts = (c + D_KC - 1) / D_KC; /* a tap over D_KC channels: even parts */
  p.cc = (c + parts - 1) / parts;
  p.tb = D_KC / p.cc;
  p.gs = D_GC / p.nrw;
  p.threads = clg_host_threads();
  double macs = (double)p.rows * (double)cout * (double)g->kdim;
  if (macs < (double)(1 << 21)) /* microseconds of work: one thread (as the GEMM's rule) */
    p.threads = 1;
  /* Items: about four per thread (a stopped thread leaves its share to the others), split
   * as rows x columns so that the redundant reads (each row group reads the whole filter,
   * each column group reads all of its rows' inputs) are fewest. */
  size_t want = p.threads == 1 ? 1 : 4 * (size_t)p.threads;
  double fbytes = (double)g->kdim * (double)cout, abytes = (double)p.rows * (double)g->kdim;
  double best = -1;
  for (size_t ng = 1; ng <= p.strips && ng <= want; ng++) {
    size_t mg = (want + ng - 1) / ng;
    if (mg > p.mtiles)
      mg = p.mtiles;
    double cost = (double)mg * fbytes + (double)ng * abytes;
    if (best < 0 || cost < best)
      best = cost, p.mg = mg, p.ng = ng;
  }
  /* Whole strips: the tiles read the filter's rows where they lie (a copy would cost a pass
   * over the filter per call, for reads the tiles make from cache anyway). */
  p.in_place = cout % p.nrw == 0;
  p.packed = p.in_place ? 0 : round_up(p.strips * p.nrw * (size_t)g->kdim * sizeof(float));
  return p;
}

size_t clg_host_conv_direct_scratch(const clg_window *g)
{
  direct_plan p = plan_of(g);
  return p.in_place ? 0 : p.packed + D_ALIGN;
}

typedef struct direct_job {
  const clg_window *g;
  const float *x, *f;
  float *y;
  const clg_epilogue *e;
  float *bp; /* the packed filter */
  direct_plan p;
} direct_job;

/* The filter [K][cout] into strips nrw wide (zeros past cout), strip after strip, each K
 * value's nrw columns after the last's: rows [k0, k1) of every strip. Each source row is read
 * whole, in order (a strip's columns alone, a short run per row at the row stride, leave the
 * hardware prefetcher idle: a filter from memory then costs a latency per row). */
static void pack_rows(const direct_job *j, size_t k0, size_t k1)
{
  size_t k = (size_t)j->g->kdim, cout = (size_t)j->g->cout, nrw = j->p.nrw;
  for (size_t r = k0; r < k1; r++) {
    const float *src = j->f + r * cout;
    for (size_t s = 0; s < j->p.strips; s++) {
      size_t col = s * nrw, w = cout - col < nrw ? cout - col : nrw;
      float *dst = j->bp + (s * k + r) * nrw;
      for (size_t q = 0; q < w; q++)
        dst[q] = src[col + q];
      for (size_t q = w; q < nrw; q++)
        dst[q] = 0.0f;
    }
  }
}

static void pack_task(void *ctx, int t)
{
  direct_job *j = ctx;
  size_t k = (size_t)j->g->kdim, T = (size_t)j->p.threads;
  pack_rows(j, k * (size_t)t / T, k * (size_t)(t + 1) / T);
}

/* For tile rows [r0, r0 + mr) and taps [t0, t0 + tn): ind[t * 6 + r] = the input pixel's
 * channels from c0, or zeros; rows past mr repeat row 0 (computed, not stored). */
static void fill_ind(const direct_job *j, size_t r0, size_t mr, size_t t0, size_t tn, size_t c0,
                     const float **ind)
{
  const clg_window *g = j->g;
  int64_t n[D_MR], ih0[D_MR], iw0[D_MR];
  for (size_t r = 0; r < D_MR; r++) {
    int64_t row = (int64_t)(r0 + (r < mr ? r : 0));
    int64_t ow = row % g->ow, t = row / g->ow;
    n[r] = t / g->oh;
    ih0[r] = (t % g->oh) * g->sh - g->pt;
    iw0[r] = ow * g->sw - g->pl;
  }
  for (size_t t = 0; t < tn; t++) {
    int64_t a = (int64_t)(t0 + t) / g->kw, b = (int64_t)(t0 + t) % g->kw;
    for (size_t r = 0; r < D_MR; r++) {
      int64_t ih = ih0[r] + a * g->dh, iw = iw0[r] + b * g->dw;
      bool in = ih >= 0 && ih < g->h && iw >= 0 && iw < g->w;
      ind[t * D_MR + r] =
          in ? j->x + (size_t)((n[r] * g->h + ih) * g->w + iw) * (size_t)g->c + c0 : zeros;
    }
  }
}

/* Tiles [m0, m1) x strips [s0, s1): every K block of each group of strips in turn. */
static void direct_rows(const direct_job *j, size_t m0, size_t m1, size_t s0, size_t s1,
                        const float **ind)
{
  const direct_plan *p = &j->p;
  size_t c = (size_t)j->g->c, cout = (size_t)j->g->cout, nrw = p->nrw;
  size_t k = (size_t)j->g->kdim;
  for (size_t sg = s0; sg < s1; sg += p->gs) {
    size_t se = s1 - sg < p->gs ? s1 : sg + p->gs;
    for (size_t t0 = 0; t0 < p->taps; t0 += p->tb) {
      size_t tn = p->taps - t0 < p->tb ? p->taps - t0 : p->tb;
      for (size_t c0 = 0; c0 < c; c0 += p->cc) {
        size_t cn = c - c0 < p->cc ? c - c0 : p->cc, kb = t0 * c + c0;
        bool acc = t0 > 0 || c0 > 0;
        for (size_t mt = m0; mt < m1; mt++) {
          size_t r0 = mt * D_MR, mr = p->rows - r0 < D_MR ? p->rows - r0 : D_MR;
          fill_ind(j, r0, mr, t0, tn, c0, ind);
          for (size_t s = sg; s < se; s++) {
            size_t col = s * nrw, nr = cout - col < nrw ? cout - col : nrw;
            const float *b = p->in_place ? j->f + kb * cout + col : j->bp + (s * k + kb) * nrw;
            p->tile(ind, tn, cn, b, p->in_place ? cout : nrw, j->y + r0 * cout + col, cout, mr, nr,
                    acc);
          }
        }
      }
    }
  }
}

static void direct_task(void *ctx, int item)
{
  direct_job *j = ctx;
  const direct_plan *p = &j->p;
  size_t mi = (size_t)item / p->ng, ni = (size_t)item % p->ng;
  size_t m0 = p->mtiles * mi / p->mg, m1 = p->mtiles * (mi + 1) / p->mg;
  size_t s0 = p->strips * ni / p->ng, s1 = p->strips * (ni + 1) / p->ng;
  size_t cout = (size_t)j->g->cout;
  const float *ind[D_KC * D_MR];
  /* Row blocks whose outputs (a group's columns) stay in L2 while the K blocks add to them:
   * an item's whole share at batch 8 would go to L3 once per K block. */
  size_t gcols = cout < p->gs * p->nrw ? cout : p->gs * p->nrw,
         mb = D_YB / (D_MR * gcols * sizeof(float));
  if (mb < 1)
    mb = 1;
  for (size_t b0 = m0; b0 < m1; b0 += mb) {
    size_t b1 = m1 - b0 < mb ? m1 : b0 + mb;
    direct_rows(j, b0, b1, s0, s1, ind);
    if (p->ng == 1) { /* whole rows: the epilogue while they are in cache */
      size_t r0 = b0 * D_MR, r1 = b1 * D_MR < p->rows ? b1 * D_MR : p->rows;
      clg_host_epilogue_rows(j->e, j->y, r0, r1 - r0);
    }
  }
}

void clg_host_conv_direct(const float *x, const float *f, float *y, const clg_window *g,
                          const clg_epilogue *e, void *scratch)
{
  direct_job j = {.g = g, .x = x, .f = f, .y = y, .e = e};
  j.p = plan_of(g);
  j.bp = (float *)(((uintptr_t)scratch + D_ALIGN - 1) & ~(uintptr_t)(D_ALIGN - 1));
  if (!j.p.in_place)
    clg_host_parallel(j.p.threads, pack_task, &j);
  clg_host_parallel((int)(j.p.mg * j.p.ng), direct_task, &j);
  if (j.p.ng > 1) /* column groups: rows are whole only now */
    clg_host_epilogue(e, y, 0, j.p.rows);
}
