/* A float GEMM for x86-64 CPUs with AVX2 and FMA, single-threaded, for convolutions split across
 * the host team (nn.c): OpenBLAS's own threads start, spin and wait per call, and beside the
 * team's im2col they oversubscribe a loaded machine. A 6 x 16 tile of C in 12 ymm registers;
 * B packed in 16-wide strips per KC slice, A in 6-high strips per MC x KC block (as
 * sgemm512.c), edges zero-padded in the packs and clipped at the stores. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#define T_MR 6
#define T_NR 16
#define T_KC 256
#define T_MC 96
#define T_NC 512
/* at most this many rows: B's full strips read in place, not packed (as sgemm512.c) */
#define T_BROWS 128

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

#define T_TARGET __attribute__((target("avx2,fma")))

/* One row r of the tile: two FMAs of the broadcast a value into accumulators c<r>0, c<r>1. */
#define ROW_FMA(r)                                                                                 \
  do {                                                                                             \
    __m256 av = _mm256_broadcast_ss(ap + r * rs);                                                  \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                    \
    c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                    \
  } while (0)

/* Row r of the tile to c (ldc), stored or added. */
#define ROW_STORE(r)                                                                               \
  do {                                                                                             \
    float *cr = c + (size_t)r * ldc;                                                               \
    if (acc) {                                                                                     \
      c##r##0 = _mm256_add_ps(c##r##0, _mm256_loadu_ps(cr));                                       \
      c##r##1 = _mm256_add_ps(c##r##1, _mm256_loadu_ps(cr + 8));                                   \
    }                                                                                              \
    _mm256_storeu_ps(cr, c##r##0);                                                                 \
    _mm256_storeu_ps(cr + 8, c##r##1);                                                             \
  } while (0)

/* Row r of the tile into tile[r] (a ragged edge). */
#define ROW_SAVE(r)                                                                                \
  do {                                                                                             \
    _mm256_storeu_ps(tile[r], c##r##0);                                                            \
    _mm256_storeu_ps(tile[r] + 8, c##r##1);                                                        \
  } while (0)

/* The 6 x 16 tile's named accumulators (in an array GCC keeps a copy in memory), one step of p
 * over its six rows, its store and its save: shared by micro_6x16 and micro_6x16_rows. */
#define TILE_ZERO                                                                                  \
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;         \
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00
#define TILE_ROWS(ROW)                                                                             \
  do {                                                                                             \
    ROW(0);                                                                                        \
    ROW(1);                                                                                        \
    ROW(2);                                                                                        \
    ROW(3);                                                                                        \
    ROW(4);                                                                                        \
    ROW(5);                                                                                        \
  } while (0)
#define TILE_FMA TILE_ROWS(ROW_FMA)
#define TILE_STORE TILE_ROWS(ROW_STORE)
#define TILE_SAVE TILE_ROWS(ROW_SAVE)

/* Rows [0, mr) x columns [0, nr) of a tile saved to memory into c (ldc), stored or added. */
static inline void tile_clip(float tile[][T_NR], float *c, size_t ldc, size_t mr, size_t nr,
                             bool acc)
{
  for (size_t r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    for (size_t j = 0; j < nr; j++)
      cr[j] = acc ? cr[j] + tile[r][j] : tile[r][j];
  }
}

/* c[0..mr) x [0..nr) = (or +=) the product over kc of six rows of A, element (r, p) at
 * ap[r * rs + p * ps] (a packed strip: rs 1, ps 6; rows read in place: rs lda, ps 1), and a
 * packed strip of B (16 per p); each element summed over p in order, then added to c when
 * acc. */
T_TARGET static void micro_6x16(size_t kc, const float *ap, size_t rs, size_t ps, const float *bp,
                                float *c, size_t ldc, size_t mr, size_t nr, bool acc)
{
  TILE_ZERO;
  for (size_t p = 0; p < kc; p++, ap += ps, bp += T_NR) {
    __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    TILE_FMA;
  }
  if (mr == T_MR && nr == T_NR) {
    TILE_STORE;
    return;
  }
  /* A ragged edge: the tile through memory, clipped (the same sums as a full tile's). */
  float tile[T_MR][T_NR];
  TILE_SAVE;
  tile_clip(tile, c, ldc, mr, nr, acc);
}

/* The same over a full strip of B read in place, its rows ldb apart (a kernel of its own, as
 * sgemm512.c's micro_6x64_rows). */
T_TARGET static void micro_6x16_rows(size_t kc, const float *ap, size_t rs, size_t ps,
                                     const float *bp, size_t ldb, float *c, size_t ldc, size_t mr,
                                     bool acc)
{
  TILE_ZERO;
  for (size_t p = 0; p < kc; p++, ap += ps, bp += ldb) {
    __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
    TILE_FMA;
  }
  if (mr == T_MR) {
    TILE_STORE;
    return;
  }
  float tile[T_MR][T_NR];
  TILE_SAVE;
  tile_clip(tile, c, ldc, mr, T_NR, acc);
}

/* Rows [i0, i0+mc) x columns [p0, p0+kc) of op(A) into 6-high strips (p-major). */
static void pack_a(bool ta, const float *a, size_t lda, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *ap)
{
  for (size_t is = 0; is < mc; is += T_MR) {
    size_t rows = mc - is < T_MR ? mc - is : T_MR;
    float *dst = ap + is * kc;
    if (ta) { /* op(A)[i][p] = a[p * lda + i]: consecutive values per p */
      for (size_t p = 0; p < kc; p++) {
        const float *src = a + (p0 + p) * lda + i0 + is;
        for (size_t r = 0; r < T_MR; r++)
          dst[p * T_MR + r] = r < rows ? src[r] : 0.0f;
      }
      continue;
    }
    for (size_t r = 0; r < T_MR; r++) {
      float *d = dst + r;
      if (r >= rows) {
        for (size_t p = 0; p < kc; p++)
          d[p * T_MR] = 0.0f;
        continue;
      }
      const float *src = a + (i0 + is + r) * lda + p0;
      for (size_t p = 0; p < kc; p++)
        d[p * T_MR] = src[p];
    }
  }
}

/* Rows [p0, p0+kc) x columns [j0, j0+nc) of op(B) into 16-wide strips (p-major). */
static void pack_b(bool tb, const float *b, size_t ldb, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *bp)
{
  for (size_t js = 0; js < nc; js += T_NR) {
    size_t cols = nc - js < T_NR ? nc - js : T_NR;
    float *dst = bp + js * kc;
    for (size_t p = 0; p < kc; p++) {
      float *d = dst + p * T_NR;
      if (!tb && cols == T_NR) { /* a row of 16 in place */
        const float *src = b + (p0 + p) * ldb + j0 + js;
        for (size_t q = 0; q < T_NR; q++)
          d[q] = src[q];
        continue;
      }
      for (size_t q = 0; q < T_NR; q++) {
        size_t j = j0 + js + q, r = p0 + p;
        d[q] = q >= cols ? 0.0f : tb ? b[j * ldb + r] : b[r * ldb + j];
      }
    }
  }
}

size_t clg_host_sgemm256_work(void)
{
  return (T_MC + T_MR) * T_KC + T_NC * T_KC + 16; /* + 16: room to align to 64 bytes */
}

/* clg_host_sgemm256, and with e (not NULL) each tile's epilogue after its last slice of k. */
static bool sgemm256(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                     const float *b, size_t ldb, float *c, size_t ldc, bool accumulate, float *work,
                     const clg_epilogue *e, size_t row0)
{
  if (m == 0 || n == 0)
    return true;
  if (k == 0) {
    for (size_t i = 0; i < m && !accumulate; i++)
      memset(c + i * ldc, 0, n * sizeof(float));
    if (e)
      clg_host_epilogue_tile256(e, c, ldc, row0, 0, m, n);
    return true;
  }
  float *ap, *bp;
  if (work) { /* the caller's: packs aligned to 64 bytes inside it */
    ap = (float *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
  } else if (!(ap = clg_aligned_alloc(64, (clg_host_sgemm256_work() - 16) * sizeof(float)))) {
    return false;
  }
  bp = ap + (T_MC + T_MR) * T_KC;
  /* Few rows: each element of B serves few tiles, so packing B costs as much as the FMAs; its
   * full strips are read where they lie (micro_6x16_rows), a ragged one is packed alone. */
  bool b_rows = !tb && m <= T_BROWS;
  for (size_t jc = 0; jc < n; jc += T_NC) {
    size_t nc = n - jc < T_NC ? n - jc : T_NC;
    for (size_t pc = 0; pc < k; pc += T_KC) {
      size_t kc = k - pc < T_KC ? k - pc : T_KC;
      bool acc = accumulate || pc > 0;
      if (!b_rows)
        pack_b(tb, b, ldb, pc, kc, jc, nc, bp);
      for (size_t ic = 0; ic < m; ic += T_MC) {
        size_t mc = m - ic < T_MC ? m - ic : T_MC;
        /* A's full strips read where they lie (rows of im2col patches: packing them cost a
         * third of the FMAs' time at 64 output channels); transposed or ragged ones packed. */
        size_t whole = ta ? 0 : mc / T_MR * T_MR;
        if (whole < mc)
          pack_a(ta, a, lda, ic + whole, mc - whole, pc, kc, ap);
        for (size_t jr = 0; jr < nc; jr += T_NR) {
          size_t nr = nc - jr < T_NR ? nc - jr : T_NR;
          const float *bt = bp + jr * kc, *brow = NULL;
          if (b_rows && nr == T_NR)
            brow = b + pc * ldb + jc + jr;
          else if (b_rows) /* packed alone, at the packs' start */
            pack_b(false, b, ldb, pc, kc, jc + jr, nr, bp), bt = bp;
          for (size_t ir = 0; ir < mc; ir += T_MR) {
            size_t mr = mc - ir < T_MR ? mc - ir : T_MR;
            float *ct = c + (ic + ir) * ldc + jc + jr;
            const float *at = ap + (ir - whole) * kc; /* A's rows: packed, or where they lie */
            size_t rs = 1, ps = T_MR;
            if (ir < whole)
              at = a + (ic + ir) * lda + pc, rs = lda, ps = 1;
            if (brow)
              micro_6x16_rows(kc, at, rs, ps, brow, ldb, ct, ldc, mr, acc);
            else
              micro_6x16(kc, at, rs, ps, bt, ct, ldc, mr, nr, acc);
            if (e && pc + kc == k) /* the tile is final and in L1 */
              clg_host_epilogue_tile256(e, ct, ldc, row0 + ic + ir, jc + jr, mr, nr);
          }
        }
      }
    }
  }
  if (!work)
    clg_aligned_free(ap);
  return true;
}

bool clg_host_sgemm256(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work)
{
  return sgemm256(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, work, NULL, 0);
}

bool clg_host_sgemm256_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0)
{
  if (e && e->nops == 0)
    e = NULL;
  return sgemm256(false, false, m, n, k, a, lda, b, ldb, c, ldc, false, work, e, row0);
}

#else

size_t clg_host_sgemm256_work(void) { return 0; }

bool clg_host_sgemm256(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work)
{
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb;
  (void)c, (void)ldc, (void)accumulate, (void)work;
  return false;
}

bool clg_host_sgemm256_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0)
{
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc;
  (void)work, (void)e, (void)row0;
  return false;
}

#endif
