/* Host NHWC float Conv2D forward as an implicit GEMM: no im2col copy. Each tile of 6 output
 * pixels gets, per filter tap, a pointer to each pixel's input channels in place (or to zeros
 * where the tap falls in the padding: an indirection buffer), so strides, dilations and
 * padding cost nothing per element. Per K block, each strip of the filter is copied into a
 * small buffer that stays in L1 while all of a row block's tiles run over it (the next block
 * prefetched meanwhile); a short last tile runs a kernel for its rows only. Work items split
 * the output rows, or the output channels where the rows are few (a late layer at batch 1),
 * whichever reads less. Every element is summed in the same order (K blocks in order, taps
 * then channels within a block) whatever the split: the result does not depend on the thread
 * count, and a fused epilogue, applied to each tile after its last K block while it is in L1,
 * sees the same sums as the unfused op. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#define D_MR 6      /* output pixels per tile */
#define D_PK 8192   /* floats of a thread's packed K block of one strip (32 KB: it stays in L1) */
#define D_KC 256    /* K values per block at most */
#define D_ROWS 1024 /* rows per row block at most */
#define D_IND 4096  /* tap pointers of a row block's tiles for one K block */
#define D_YB ((size_t)256 << 10) /* bytes of output rows x an item's columns per row block */

/* Shared zeros for taps in the padding (a block reads at most D_KC channels of a tap). */
static _Alignas(64) const float zeros[D_KC];

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define D_X86 1

/* --- AVX-512: a 6 x 64 tile in 24 zmm accumulators -------------------------------------- */

#define FMA512(r, MR)                                                                              \
  do {                                                                                             \
    if (r < MR) {                                                                                  \
      __m512 av = _mm512_set1_ps(a##r[c]);                                                         \
      c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                  \
      c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                                  \
      c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                                  \
      c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                                  \
    }                                                                                              \
  } while (0)

#define STORE512(r, MR)                                                                            \
  do {                                                                                             \
    if (r < MR) {                                                                                  \
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

#define TILE512(MR)                                                                                \
  __attribute__((target("avx512f"))) static void tile512_##MR(                                     \
      const float *const *ind, size_t tn, size_t cn, const float *bp, float *y, size_t ldy,        \
      size_t nr, bool acc)                                                                         \
  {                                                                                                \
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;                             \
    __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00, c20 = c00, c21 = c00, c22 = c00;            \
    __m512 c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00, c40 = c00, c41 = c00;            \
    __m512 c42 = c00, c43 = c00, c50 = c00, c51 = c00, c52 = c00, c53 = c00;                       \
    for (size_t t = 0; t < tn; t++, ind += D_MR) {                                                 \
      const float *a0 = ind[0], *a1 = ind[1], *a2 = ind[2], *a3 = ind[3], *a4 = ind[4];            \
      const float *a5 = ind[5];                                                                    \
      for (size_t c = 0; c < cn; c++, bp += 64) {                                                  \
        __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);                              \
        __m512 b2 = _mm512_load_ps(bp + 32), b3 = _mm512_load_ps(bp + 48);                         \
        FMA512(0, MR);                                                                             \
        FMA512(1, MR);                                                                             \
        FMA512(2, MR);                                                                             \
        FMA512(3, MR);                                                                             \
        FMA512(4, MR);                                                                             \
        FMA512(5, MR);                                                                             \
      }                                                                                            \
    }                                                                                              \
    __mmask16 m0 = mask512(nr, 0), m1 = mask512(nr, 16), m2 = mask512(nr, 32);                     \
    __mmask16 m3 = mask512(nr, 48);                                                                \
    STORE512(0, MR);                                                                               \
    STORE512(1, MR);                                                                               \
    STORE512(2, MR);                                                                               \
    STORE512(3, MR);                                                                               \
    STORE512(4, MR);                                                                               \
    STORE512(5, MR);                                                                               \
  }

TILE512(1)
TILE512(2)
TILE512(3)
TILE512(4)
TILE512(5)
TILE512(6)

/* kn rows of 64 floats, ld apart, into bp (64-byte aligned), one after another. */
__attribute__((target("avx512f"))) static void copy64(const float *src, size_t ld, size_t kn,
                                                      float *bp)
{
  for (size_t r = 0; r < kn; r++, src += ld, bp += 64) {
    __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16);
    __m512 v2 = _mm512_loadu_ps(src + 32), v3 = _mm512_loadu_ps(src + 48);
    _mm512_store_ps(bp, v0);
    _mm512_store_ps(bp + 16, v1);
    _mm512_store_ps(bp + 32, v2);
    _mm512_store_ps(bp + 48, v3);
  }
}

static const clg_host_tile_fn tiles512[D_MR] = {tile512_1, tile512_2, tile512_3,
                                                tile512_4, tile512_5, tile512_6};

/* --- AVX2: a 6 x 16 tile in 12 ymm accumulators ----------------------------------------- */

#define FMA256(r, MR)                                                                              \
  do {                                                                                             \
    if (r < MR) {                                                                                  \
      __m256 av = _mm256_broadcast_ss(a##r + c);                                                   \
      c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                  \
      c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                  \
    }                                                                                              \
  } while (0)

#define STORE256(r, MR)                                                                            \
  do {                                                                                             \
    if (r < MR) {                                                                                  \
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

#define TILE256(MR)                                                                                \
  __attribute__((target("avx2,fma"))) static void tile256_##MR(                                    \
      const float *const *ind, size_t tn, size_t cn, const float *bp, float *y, size_t ldy,        \
      size_t nr, bool acc)                                                                         \
  {                                                                                                \
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;       \
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                       \
    for (size_t t = 0; t < tn; t++, ind += D_MR) {                                                 \
      const float *a0 = ind[0], *a1 = ind[1], *a2 = ind[2], *a3 = ind[3], *a4 = ind[4];            \
      const float *a5 = ind[5];                                                                    \
      for (size_t c = 0; c < cn; c++, bp += 16) {                                                  \
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);                               \
        FMA256(0, MR);                                                                             \
        FMA256(1, MR);                                                                             \
        FMA256(2, MR);                                                                             \
        FMA256(3, MR);                                                                             \
        FMA256(4, MR);                                                                             \
        FMA256(5, MR);                                                                             \
      }                                                                                            \
    }                                                                                              \
    __m256i m0 = mask256(nr, 0), m1 = mask256(nr, 8);                                              \
    STORE256(0, MR);                                                                               \
    STORE256(1, MR);                                                                               \
    STORE256(2, MR);                                                                               \
    STORE256(3, MR);                                                                               \
    STORE256(4, MR);                                                                               \
    STORE256(5, MR);                                                                               \
  }

TILE256(1)
TILE256(2)
TILE256(3)
TILE256(4)
TILE256(5)
TILE256(6)

/* kn rows of 16 floats, ld apart, into bp (32-byte aligned), one after another. */
__attribute__((target("avx2,fma"))) static void copy16(const float *src, size_t ld, size_t kn,
                                                       float *bp)
{
  for (size_t r = 0; r < kn; r++, src += ld, bp += 16) {
    __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8);
    _mm256_store_ps(bp, v0);
    _mm256_store_ps(bp + 8, v1);
  }
}

static const clg_host_tile_fn tiles256[D_MR] = {tile256_1, tile256_2, tile256_3,
                                                tile256_4, tile256_5, tile256_6};

#else
#define D_X86 0
#endif

const clg_host_tile_fn *clg_host_conv_tiles(size_t *nrw)
{
#if D_X86
  const char *isa = clg_host_matmul_portable_isa();
  if (strcmp(isa, "avx512") == 0)
    return *nrw = 64, tiles512;
  if (strcmp(isa, "avx2") == 0)
    return *nrw = 16, tiles256;
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
   * from 256, 0.63-0.71x of their time). */
  return clg_host_conv_tiles(&nrw) && g->cout > 0 && g->c >= 16 && g->kdim >= 128 &&
         !clg_conv_is_direct(g) && g->n * g->oh * g->ow > 0;
}

typedef struct direct_plan {
  size_t rows, taps, mtiles, strips, nrw;
  size_t cc, tb; /* channels per block, taps per block */
  size_t mg, ng; /* row groups, column groups */
  int threads;
  const clg_host_tile_fn *tiles;
} direct_plan;

static direct_plan plan_of(const clg_window *g)
{
  direct_plan p;
  memset(&p, 0, sizeof p);
  size_t c = (size_t)g->c, cout = (size_t)g->cout;
  p.tiles = clg_host_conv_tiles(&p.nrw);
  if (!p.tiles)
    p.nrw = 16; /* plan sizes only; never run */
  p.rows = (size_t)(g->n * g->oh * g->ow);
  p.taps = (size_t)(g->kh * g->kw);
  p.mtiles = (p.rows + D_MR - 1) / D_MR;
  p.strips = (cout + p.nrw - 1) / p.nrw;
  /* K values per block: as many as fill the packed strip (128 at 64 wide, 256 at 16), a tap
   * over more channels in even parts. */
  size_t kc = D_PK / p.nrw < D_KC ? D_PK / p.nrw : D_KC;
  size_t parts = (c + kc - 1) / kc;
  p.cc = (c + parts - 1) / parts;
  p.tb = kc / p.cc;
  if (p.tb > p.taps)
    p.tb = p.taps;
  size_t tparts = (p.taps + p.tb - 1) / p.tb; /* taps in even blocks */
  p.tb = (p.taps + tparts - 1) / tparts;
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
  return p;
}

/* The filter goes through a small per-thread buffer (a K block of one strip at a time), so
 * the kernel needs no scratch. */
size_t clg_host_conv_direct_scratch(const clg_window *g)
{
  (void)g;
  return 0;
}

typedef struct direct_job {
  const clg_window *g;
  const float *x, *f;
  float *y;
  const clg_epilogue *e;
  direct_plan p;
} direct_job;

/* Rows [kb, kb + kn) of strip s of the filter [K][cout] into bp, nrw floats per row (zeros
 * past cout): the tiles then read it from L1 in order (read in place, its rows cout apart
 * map to a few L1 sets and come from L2 or further on every tile). */
static void pack_block(const direct_job *j, size_t s, size_t kb, size_t kn, float *bp)
{
  size_t cout = (size_t)j->g->cout, nrw = j->p.nrw, col = s * nrw;
  size_t w = cout - col < nrw ? cout - col : nrw;
  const float *src = j->f + kb * cout + col;
#if D_X86
  /* whole strips in vectors (a call to memcpy per row costs about as much as the copy) */
  if (w == 64 && nrw == 64) {
    copy64(src, cout, kn, bp);
    return;
  }
  if (w == 16 && nrw == 16) {
    copy16(src, cout, kn, bp);
    return;
  }
#endif
  for (size_t r = 0; r < kn; r++, src += cout, bp += nrw) {
    memcpy(bp, src, w * sizeof(float));
    for (size_t q = w; q < nrw; q++)
      bp[q] = 0.0f;
  }
}

/* Prefetches rows [r0, r1) of strip s's K block from kb into L2 (the block packed next: its
 * reads from L3 or memory then overlap the tiles' work on this one). */
static void prefetch_block(const direct_job *j, size_t s, size_t kb, size_t r0, size_t r1)
{
  size_t cout = (size_t)j->g->cout, nrw = j->p.nrw, col = s * nrw;
  size_t w = cout - col < nrw ? cout - col : nrw;
  const float *src = j->f + (kb + r0) * cout + col;
  for (size_t r = r0; r < r1; r++, src += cout) {
    for (size_t q = 0; q < w; q += 16)
      __builtin_prefetch(src + q, 0, 2);
    __builtin_prefetch(src + w - 1, 0, 2);
  }
}

/* Where each output row's window starts: its input offset (from x, in floats; negative or past
 * the image where the window starts in the padding) and its first input row and column. */
typedef struct rowpos {
  int64_t off, ih0, iw0;
} rowpos;

static void fill_pos(const direct_job *j, size_t r0, size_t nrows, rowpos *pos)
{
  const clg_window *g = j->g;
  int64_t row = (int64_t)r0, t = row / g->ow, ow = row % g->ow, oh = t % g->oh, n = t / g->oh;
  for (size_t r = 0; r < nrows; r++) {
    int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
    pos[r] = (rowpos){((n * g->h + ih0) * g->w + iw0) * g->c, ih0, iw0};
    if (++ow == g->ow && ++oh == g->oh)
      oh = 0, n++;
    if (ow == g->ow)
      ow = 0;
  }
}

/* For a tile's rows pos[0, mr) and taps [t0, t0 + tn): ind[t * 6 + r] = the input pixel's
 * channels from c0, or zeros; rows past mr repeat row 0 (never read). */
static void fill_ind(const direct_job *j, const rowpos *pos, size_t mr, size_t t0, size_t tn,
                     size_t c0, const float **ind)
{
  const clg_window *g = j->g;
  for (size_t t = 0; t < tn; t++) {
    int64_t a = (int64_t)(t0 + t) / g->kw, b = (int64_t)(t0 + t) % g->kw;
    int64_t da = a * g->dh, db = b * g->dw, d = (da * g->w + db) * g->c + (int64_t)c0;
    for (size_t r = 0; r < D_MR; r++) {
      const rowpos *q = pos + (r < mr ? r : 0);
      int64_t ih = q->ih0 + da, iw = q->iw0 + db;
      bool in = ih >= 0 && ih < g->h && iw >= 0 && iw < g->w;
      ind[t * D_MR + r] = in ? j->x + (q->off + d) : zeros;
    }
  }
}

/* e on a tile the kernel of strip width nrw (64: AVX-512, 16: AVX2) just stored. */
static void epilogue_tile(size_t nrw, const clg_epilogue *e, float *y, size_t ldy, size_t row,
                          size_t col, size_t mr, size_t nr)
{
#if D_X86
  if (nrw == 64)
    clg_host_epilogue_tile512(e, y, ldy, row, col, mr, nr);
  else
    clg_host_epilogue_tile256(e, y, ldy, row, col, mr, nr);
#else
  (void)nrw, (void)e, (void)y, (void)ldy, (void)row, (void)col, (void)mr, (void)nr;
#endif
}

/* Tiles [m0, m1) x strips [s0, s1): for each K block in order, the tiles' tap pointers once,
 * then each strip's block packed and run over all the tiles. */
static void direct_rows(const direct_job *j, size_t m0, size_t m1, size_t s0, size_t s1,
                        const float **ind, float *bp, rowpos *pos)
{
  const direct_plan *p = &j->p;
  size_t c = (size_t)j->g->c, cout = (size_t)j->g->cout, nrw = p->nrw, nt = m1 - m0;
  size_t rows0 = m0 * D_MR, rows1 = m1 * D_MR < p->rows ? m1 * D_MR : p->rows;
  fill_pos(j, rows0, rows1 - rows0, pos);
  for (size_t t0 = 0; t0 < p->taps; t0 += p->tb) {
    size_t tn = p->taps - t0 < p->tb ? p->taps - t0 : p->tb;
    for (size_t c0 = 0; c0 < c; c0 += p->cc) {
      size_t cn = c - c0 < p->cc ? c - c0 : p->cc, kb = t0 * c + c0, kn = tn * cn;
      bool acc = t0 > 0 || c0 > 0;
      /* the block packed after this strip's: the next strip's, or the next K block's first */
      size_t nt0 = t0, nc0 = c0 + p->cc;
      if (nc0 >= c)
        nt0 = t0 + p->tb, nc0 = 0;
      size_t ntn = nt0 < p->taps ? (p->taps - nt0 < p->tb ? p->taps - nt0 : p->tb) : 0;
      size_t nkb = nt0 * c + nc0, nkn = ntn * (c - nc0 < p->cc ? c - nc0 : p->cc);
      bool last = t0 + tn == p->taps && c0 + cn == c; /* the tiles' sums are final */
      for (size_t mt = m0; mt < m1; mt++) {
        size_t r0 = mt * D_MR, mr = p->rows - r0 < D_MR ? p->rows - r0 : D_MR;
        fill_ind(j, pos + (r0 - rows0), mr, t0, tn, c0, ind + (mt - m0) * tn * D_MR);
      }
      for (size_t s = s0; s < s1; s++) {
        size_t col = s * nrw, nr = cout - col < nrw ? cout - col : nrw;
        size_t ps = s + 1 < s1 ? s + 1 : s0, pkb = s + 1 < s1 ? kb : nkb;
        size_t pkn = s + 1 < s1 ? kn : nkn;
        pack_block(j, s, kb, kn, bp);
        for (size_t mt = m0; mt < m1; mt++) {
          size_t q = mt - m0, r0 = mt * D_MR, mr = p->rows - r0 < D_MR ? p->rows - r0 : D_MR;
          if (pkn)
            prefetch_block(j, ps, pkb, pkn * q / nt, pkn * (q + 1) / nt);
          float *yt = j->y + r0 * cout + col;
          p->tiles[mr - 1](ind + q * tn * D_MR, tn, cn, bp, yt, cout, nr, acc);
          if (last && j->e) /* the epilogue while the tile is in L1, not a pass over the rows */
            epilogue_tile(p->nrw, j->e, yt, cout, r0, col, mr, nr);
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
  const float *ind[D_IND];
  _Alignas(64) float bp[D_PK];
  rowpos pos[D_ROWS];
  /* Row blocks whose outputs (the item's columns) stay in L2 while the K blocks add to them
   * (an item's whole share at batch 8 would go to L3 once per K block), and whose tiles' tap
   * pointers for a K block fit ind. */
  size_t cols = (s1 - s0) * p->nrw < cout ? (s1 - s0) * p->nrw : cout;
  size_t mb = D_YB / (D_MR * cols * sizeof(float)), mi_max = D_IND / (p->tb * D_MR);
  if (mb > mi_max)
    mb = mi_max;
  if (mb > D_ROWS / D_MR)
    mb = D_ROWS / D_MR;
  if (mb < 1)
    mb = 1;
  for (size_t b0 = m0; b0 < m1; b0 += mb) {
    size_t b1 = m1 - b0 < mb ? m1 : b0 + mb;
    direct_rows(j, b0, b1, s0, s1, ind, bp, pos);
  }
}

void clg_host_conv_direct(const float *x, const float *f, float *y, const clg_window *g,
                          const clg_epilogue *e, void *scratch)
{
  (void)scratch;
  direct_job j = {.g = g, .x = x, .f = f, .y = y, .e = e};
  j.p = plan_of(g);
  clg_host_parallel((int)(j.p.mg * j.p.ng), direct_task, &j);
}
