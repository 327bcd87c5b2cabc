/* A float GEMM for x86-64 CPUs with AVX-512, single-threaded (callers split work across
 * cores with clg_host_parallel). Debian's OpenBLAS 0.3.21 does not know AMD Zen 4/5 and runs
 * its AVX2 (Haswell) kernels there, at half of what the 512-bit FMA units do; this kernel
 * keeps a 6 x 64 tile of C in 24 zmm registers. Structure as the portable kernel's
 * (host_gemm_tmpl.h): B packed in 64-wide strips per KC slice (read in place for few rows),
 * A in 6-high strips per MC x KC block, edges zero-padded in the packs and masked at the
 * stores. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#define S_MR 6
#define S_NR 64
#define S_KC 256
#define S_MC 120
#define S_NC 512
/* at most this many rows: B's full strips read in place, not packed (see clg_host_sgemm512) */
#define S_BROWS 128

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

#define S_TARGET __attribute__((target("avx512f")))

/* One row r of the tile: four FMAs of the broadcast a value into accumulators c<r>0..3. */
#define ROW_FMA(r)                                                                                 \
  do {                                                                                             \
    __m512 av = _mm512_set1_ps(ap[r * rs]);                                                        \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                    \
    c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                                    \
    c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                                    \
    c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                                    \
  } while (0)

/* Row r to c (ldc), columns masked by m0..m3, stored or added. */
#define ROW_STORE(r)                                                                               \
  do {                                                                                             \
    if (r < mr) {                                                                                  \
      float *cr = c + (size_t)r * ldc;                                                             \
      if (acc) {                                                                                   \
        c##r##0 = _mm512_add_ps(c##r##0, _mm512_maskz_loadu_ps(m0, cr));                           \
        c##r##1 = _mm512_add_ps(c##r##1, _mm512_maskz_loadu_ps(m1, cr + 16));                      \
        c##r##2 = _mm512_add_ps(c##r##2, _mm512_maskz_loadu_ps(m2, cr + 32));                      \
        c##r##3 = _mm512_add_ps(c##r##3, _mm512_maskz_loadu_ps(m3, cr + 48));                      \
      }                                                                                            \
      _mm512_mask_storeu_ps(cr, m0, c##r##0);                                                      \
      _mm512_mask_storeu_ps(cr + 16, m1, c##r##1);                                                 \
      _mm512_mask_storeu_ps(cr + 32, m2, c##r##2);                                                 \
      _mm512_mask_storeu_ps(cr + 48, m3, c##r##3);                                                 \
    }                                                                                              \
  } while (0)

static __mmask16 col_mask(size_t nr, size_t from)
{
  if (nr <= from)
    return 0;
  return nr - from >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nr - from)) - 1);
}

/* The 6 x 64 tile's 24 named accumulators (in an array GCC keeps a copy in memory), one step
 * of p over its six rows, and its masked store: shared by micro_6x64 and micro_6x64_rows. */
#define TILE_ZERO                                                                                  \
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;                               \
  __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00;   \
  __m512 c30 = c00, c31 = c00, c32 = c00, c33 = c00, c40 = c00, c41 = c00, c42 = c00, c43 = c00;   \
  __m512 c50 = c00, c51 = c00, c52 = c00, c53 = c00
#define TILE_FMA                                                                                   \
  do {                                                                                             \
    ROW_FMA(0);                                                                                    \
    ROW_FMA(1);                                                                                    \
    ROW_FMA(2);                                                                                    \
    ROW_FMA(3);                                                                                    \
    ROW_FMA(4);                                                                                    \
    ROW_FMA(5);                                                                                    \
  } while (0)
#define TILE_STORE                                                                                 \
  __mmask16 m0 = col_mask(nr, 0), m1 = col_mask(nr, 16), m2 = col_mask(nr, 32);                    \
  __mmask16 m3 = col_mask(nr, 48);                                                                 \
  ROW_STORE(0);                                                                                    \
  ROW_STORE(1);                                                                                    \
  ROW_STORE(2);                                                                                    \
  ROW_STORE(3);                                                                                    \
  ROW_STORE(4);                                                                                    \
  ROW_STORE(5)

/* c[0..mr) x [0..nr) = (or +=) the product over kc of six rows of A, element (r, p) at
 * ap[r * rs + p * ps] (a packed strip: rs 1, ps 6; rows read in place: rs lda, ps 1), and a
 * packed strip of B. */
S_TARGET static void micro_6x64(size_t kc, const float *ap, size_t rs, size_t ps, const float *bp,
                                float *c, size_t ldc, size_t mr, size_t nr, bool acc)
{
  TILE_ZERO;
  for (size_t p = 0; p < kc; p++, ap += ps, bp += S_NR) {
    __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
    __m512 b2 = _mm512_load_ps(bp + 32), b3 = _mm512_load_ps(bp + 48);
    TILE_FMA;
  }
  TILE_STORE;
}

/* The same over a full strip of B read in place, its rows ldb apart. A kernel of its own: with
 * the stride a parameter of micro_6x64, GCC's code for packed strips ran 5-10% slower. */
S_TARGET static void micro_6x64_rows(size_t kc, const float *ap, size_t rs, size_t ps,
                                     const float *bp, size_t ldb, float *c, size_t ldc, size_t mr,
                                     size_t nr, bool acc)
{
  TILE_ZERO;
  for (size_t p = 0; p < kc; p++, ap += ps, bp += ldb) {
    __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
    __m512 b2 = _mm512_loadu_ps(bp + 32), b3 = _mm512_loadu_ps(bp + 48);
    TILE_FMA;
  }
  TILE_STORE;
}

/* The same for a strip of B at most 16 v wide: r rows of v vectors each (r * v accumulators,
 * up to 24 of the 32 registers), so that thin products (a 1x1 convolution to 16, 24 or 32
 * channels) compute no padded columns. Each element is the same sum in the same order as in
 * micro_6x64. */
#define S_PRAGMA(x) _Pragma(#x)
#define MICRO_NARROW(R, V)                                                                         \
  S_TARGET static void micro_##R##x##V(size_t kc, const float *ap, size_t rs, size_t ps,           \
                                       const float *bp, float *c, size_t ldc, size_t mr,           \
                                       size_t nr, bool acc)                                        \
  {                                                                                                \
    __m512 t[R][V];                                                                                \
    S_PRAGMA(GCC unroll 16)                                                                        \
    for (int r = 0; r < R; r++)                                                                    \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < V; v++) t[r][v] = _mm512_setzero_ps();            \
    for (size_t p = 0; p < kc; p++, ap += ps, bp += S_NR) {                                        \
      __m512 b[V];                                                                                 \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < V; v++) b[v] = _mm512_load_ps(bp + 16 * v);       \
      S_PRAGMA(GCC unroll 16) for (int r = 0; r < R; r++)                                          \
      {                                                                                            \
        __m512 av = _mm512_set1_ps(ap[(size_t)r * rs]);                                            \
        S_PRAGMA(GCC unroll 4)                                                                     \
        for (int v = 0; v < V; v++)                                                                \
          t[r][v] = _mm512_fmadd_ps(av, b[v], t[r][v]);                                            \
      }                                                                                            \
    }                                                                                              \
    __mmask16 m[V];                                                                                \
    S_PRAGMA(GCC unroll 4) for (int v = 0; v < V; v++) m[v] = col_mask(nr, 16 * (size_t)v);        \
    for (size_t r = 0; r < mr && r < R; r++) {                                                     \
      float *cr = c + r * ldc;                                                                     \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < V; v++)                                           \
      {                                                                                            \
        __m512 o = t[r][v];                                                                        \
        if (acc)                                                                                   \
          o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m[v], cr + 16 * v));                          \
        _mm512_mask_storeu_ps(cr + 16 * v, m[v], o);                                               \
      }                                                                                            \
    }                                                                                              \
  }

MICRO_NARROW(12, 1)
MICRO_NARROW(6, 1)
MICRO_NARROW(8, 2)
MICRO_NARROW(6, 2)
MICRO_NARROW(6, 3)

/* A ragged tile of R < 6 rows on a strip 64 wide, B's rows bs apart (a packed strip: S_NR; rows
 * read in place: ldb): R x 4 accumulators, so that the last rows of a block (49 of a 7x7 map:
 * eight tiles and one row) cost their own FMAs, not a whole tile's. The same sums, in the same
 * order, as micro_6x64. */
#define MICRO_SHORT(R)                                                                             \
  S_TARGET static void micro_##R##x64(size_t kc, const float *ap, size_t rs, size_t ps,            \
                                      const float *bp, size_t bs, float *c, size_t ldc, size_t nr, \
                                      bool acc)                                                    \
  {                                                                                                \
    __m512 t[R][4];                                                                                \
    S_PRAGMA(GCC unroll 8)                                                                         \
    for (int r = 0; r < R; r++)                                                                    \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < 4; v++) t[r][v] = _mm512_setzero_ps();            \
    for (size_t p = 0; p < kc; p++, ap += ps, bp += bs) {                                          \
      __m512 b[4];                                                                                 \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < 4; v++) b[v] = _mm512_loadu_ps(bp + 16 * v);      \
      S_PRAGMA(GCC unroll 8) for (int r = 0; r < R; r++)                                           \
      {                                                                                            \
        __m512 av = _mm512_set1_ps(ap[(size_t)r * rs]);                                            \
        S_PRAGMA(GCC unroll 4)                                                                     \
        for (int v = 0; v < 4; v++)                                                                \
          t[r][v] = _mm512_fmadd_ps(av, b[v], t[r][v]);                                            \
      }                                                                                            \
    }                                                                                              \
    __mmask16 m[4];                                                                                \
    S_PRAGMA(GCC unroll 4) for (int v = 0; v < 4; v++) m[v] = col_mask(nr, 16 * (size_t)v);        \
    S_PRAGMA(GCC unroll 8) for (int r = 0; r < R; r++)                                             \
    {                                                                                              \
      float *cr = c + (size_t)r * ldc;                                                             \
      S_PRAGMA(GCC unroll 4) for (int v = 0; v < 4; v++)                                           \
      {                                                                                            \
        __m512 o = t[r][v];                                                                        \
        if (acc)                                                                                   \
          o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m[v], cr + 16 * v));                          \
        _mm512_mask_storeu_ps(cr + 16 * v, m[v], o);                                               \
      }                                                                                            \
    }                                                                                              \
  }

MICRO_SHORT(1)
MICRO_SHORT(2)
MICRO_SHORT(3)
MICRO_SHORT(4)
MICRO_SHORT(5)

typedef void (*short_fn)(size_t, const float *, size_t, size_t, const float *, size_t, float *,
                         size_t, size_t, bool);
static const short_fn micro_short[S_MR] = {NULL,       micro_1x64, micro_2x64,
                                           micro_3x64, micro_4x64, micro_5x64};

typedef void (*micro_fn)(size_t, const float *, size_t, size_t, const float *, float *, size_t,
                         size_t, size_t, bool);

/* The kernels for a strip nr wide: tall (for A read in place) and 6 rows high (packed A). */
static void micro_for(size_t nr, micro_fn *tall, size_t *tall_rows, micro_fn *six)
{
  if (nr <= 16)
    *tall = micro_12x1, *tall_rows = 12, *six = micro_6x1;
  else if (nr <= 32)
    *tall = micro_8x2, *tall_rows = 8, *six = micro_6x2;
  else if (nr <= 48)
    *tall = micro_6x3, *tall_rows = 6, *six = micro_6x3;
  else
    *tall = micro_6x64, *tall_rows = 6, *six = micro_6x64;
}

/* Six rows of A (lda apart) over kc columns into a 6-high strip, dst[p * 6 + r], eight columns
 * a step: the rows' 8 values (two zero rows beside them) transposed in registers, each column
 * stored as 8 floats whose last two the next column's store overwrites (the last one masked
 * to 6). The scalar copy stored every float alone: 27% of the tile's time on GEMMs of three
 * 64-wide strips (the strip is reused by fewer tiles there). */
__attribute__((target("avx2"))) static void pack_six(const float *src, size_t lda, size_t kc,
                                                     float *dst)
{
  const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  const __m256 z = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 8 <= kc; p += 8, dst += 48) {
    __m256 r0 = _mm256_loadu_ps(src + p), r1 = _mm256_loadu_ps(src + lda + p);
    __m256 r2 = _mm256_loadu_ps(src + 2 * lda + p), r3 = _mm256_loadu_ps(src + 3 * lda + p);
    __m256 r4 = _mm256_loadu_ps(src + 4 * lda + p), r5 = _mm256_loadu_ps(src + 5 * lda + p);
    /* pairs of rows interleaved, then quads, then the 128-bit halves: column j in o[j] */
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, z, 0x44), u5 = _mm256_shuffle_ps(t4, z, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, z, 0x44), u7 = _mm256_shuffle_ps(t5, z, 0xee);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 6, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 12, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 18, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 24, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 30, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 36, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_maskstore_ps(dst + 42, six, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
  for (; p < kc; p++, dst += 6)
    for (size_t r = 0; r < 6; r++)
      dst[r] = src[r * lda + p];
}

/* Rows [i0, i0+mc) x columns [p0, p0+kc) of op(A) into 6-high strips (p-major). */
static void pack_a(bool ta, const float *a, size_t lda, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *ap)
{
  for (size_t is = 0; is < mc; is += S_MR) {
    size_t rows = mc - is < S_MR ? mc - is : S_MR;
    float *dst = ap + is * kc;
    if (ta) { /* op(A)[i][p] = a[p * lda + i]: S_MR consecutive values per p */
      for (size_t p = 0; p < kc; p++) {
        const float *src = a + (p0 + p) * lda + i0 + is;
        for (size_t r = 0; r < S_MR; r++)
          dst[p * S_MR + r] = r < rows ? src[r] : 0.0f;
      }
      continue;
    }
    if (rows == S_MR) {
      pack_six(a + (i0 + is) * lda + p0, lda, kc, dst);
      continue;
    }
    for (size_t r = 0; r < S_MR; r++) {
      if (r >= rows) {
        for (size_t p = 0; p < kc; p++)
          dst[p * S_MR + r] = 0.0f;
        continue;
      }
      const float *src = a + (i0 + is + r) * lda + p0;
      for (size_t p = 0; p < kc; p++)
        dst[p * S_MR + r] = src[p];
    }
  }
}

/* Rows [p0, p0+kc) x columns [j0, j0+nc) of op(B) into 64-wide strips (p-major). */
static void pack_b(bool tb, const float *b, size_t ldb, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *bp)
{
  for (size_t js = 0; js < nc; js += S_NR) {
    size_t cols = nc - js < S_NR ? nc - js : S_NR;
    float *dst = bp + js * kc;
    if (!tb) {
      for (size_t p = 0; p < kc; p++) {
        const float *src = b + (p0 + p) * ldb + j0 + js;
        float *d = dst + p * S_NR;
        for (size_t q = 0; q < cols; q++) /* a loop: GCC inlines memcpy here as rep movsq */
          d[q] = src[q];
        if (cols < S_NR)
          memset(d + cols, 0, (S_NR - cols) * sizeof(float));
      }
      continue;
    }
    /* op(B)[p][j] = b[j * ldb + p], in blocks of 16 p: a cache line of each source row, and
     * 16 destination rows that stay in L1 (the whole strip's rows would not). */
    for (size_t pb = 0; pb < kc; pb += 16) {
      size_t pe = kc - pb < 16 ? kc : pb + 16;
      for (size_t j = 0; j < S_NR; j++) {
        if (j >= cols) {
          for (size_t p = pb; p < pe; p++)
            dst[p * S_NR + j] = 0.0f;
          continue;
        }
        const float *src = b + (j0 + js + j) * ldb + p0;
        for (size_t p = pb; p < pe; p++)
          dst[p * S_NR + j] = src[p];
      }
    }
  }
}

/* A few rows of C (a batch of 1 through a fully connected layer, a convolution on a 1x1
 * map): each row's 64-wide blocks accumulated in registers over p, reading B where it lies,
 * once per row; packing B would copy all of it for one use. */
S_TARGET static void few_rows(bool ta, size_t m, size_t n, size_t k, const float *a, size_t lda,
                              const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j += S_NR) {
      size_t nr = n - j < S_NR ? n - j : S_NR;
      __mmask16 m0 = col_mask(nr, 0), m1 = col_mask(nr, 16), m2 = col_mask(nr, 32);
      __mmask16 m3 = col_mask(nr, 48);
      __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
      for (size_t p = 0; p < k; p++) {
        const float *br = b + p * ldb + j;
        __m512 av = _mm512_set1_ps(ta ? a[p * lda + i] : a[i * lda + p]);
        c0 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m0, br), c0);
        c1 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m1, br + 16), c1);
        c2 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m2, br + 32), c2);
        c3 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m3, br + 48), c3);
      }
      float *cr = c + i * ldc + j;
      if (accumulate) {
        c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, cr));
        c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, cr + 16));
        c2 = _mm512_add_ps(c2, _mm512_maskz_loadu_ps(m2, cr + 32));
        c3 = _mm512_add_ps(c3, _mm512_maskz_loadu_ps(m3, cr + 48));
      }
      _mm512_mask_storeu_ps(cr, m0, c0);
      _mm512_mask_storeu_ps(cr + 16, m1, c1);
      _mm512_mask_storeu_ps(cr + 32, m2, c2);
      _mm512_mask_storeu_ps(cr + 48, m3, c3);
    }
}

size_t clg_host_sgemm512_work(void)
{
  return (S_MC + S_MR) * S_KC + S_NC * S_KC + 16; /* + 16: room to align to 64 bytes */
}

/* clg_host_sgemm512, and with e (not NULL) each tile's epilogue after its last slice of k. */
static bool sgemm512(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                     const float *b, size_t ldb, float *c, size_t ldc, bool accumulate, float *work,
                     const clg_epilogue *e, size_t row0)
{
  if (m == 0 || n == 0)
    return true;
  if (k == 0 || (m < 3 && !tb)) {
    if (k > 0)
      few_rows(ta, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    else
      for (size_t i = 0; i < m && !accumulate; i++)
        memset(c + i * ldc, 0, n * sizeof(float));
    if (e)
      clg_host_epilogue_tile512(e, c, ldc, row0, 0, m, n);
    return true;
  }
  size_t kc_max = k < S_KC ? k : S_KC, mc_max = m < S_MC ? m : S_MC, nc_max = n < S_NC ? n : S_NC;
  size_t mc_pad = (mc_max + S_MR - 1) / S_MR * S_MR, nc_pad = (nc_max + S_NR - 1) / S_NR * S_NR;
  float *ap, *bp;
  if (work) { /* the caller's: packs aligned to 64 bytes inside it */
    ap = (float *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    bp = ap + (S_MC + S_MR) * S_KC;
  } else {
    ap = clg_aligned_alloc(64, mc_pad * kc_max * sizeof(float));
    bp = clg_aligned_alloc(64, nc_pad * kc_max * sizeof(float));
    if (!ap || !bp) {
      clg_aligned_free(ap);
      clg_aligned_free(bp);
      return false;
    }
  }
  /* Few rows (a late layer at batch 1, a task's share of one): each element of B serves only
   * a few tiles, so packing B would cost as much as the FMAs that use it: its full strips are
   * read where they lie (micro_6x64_rows), a ragged one is packed alone. */
  bool b_rows = !tb && m <= S_BROWS;
  for (size_t jc = 0; jc < n; jc += S_NC) {
    size_t nc = n - jc < S_NC ? n - jc : S_NC;
    /* With one or two strips of B, packing A would cost as much as the FMAs that use it:
     * full tiles read A where it lies (broadcasts from memory), ragged ones are packed. */
    bool direct = nc <= 2 * S_NR;
    /* B already in a packed strip's layout (one full strip, rows of 64 aligned to 64 bytes,
     * as a convolution's dy with 64 channels): read in place, not copied per KC slice. */
    bool b_in_place = !tb && nc == S_NR && ldb == S_NR && ((uintptr_t)(b + jc) & 63) == 0;
    for (size_t pc = 0; pc < k; pc += S_KC) {
      size_t kc = k - pc < S_KC ? k - pc : S_KC;
      bool acc = accumulate || pc > 0;
      const float *bs = b_in_place ? b + pc * ldb + jc : bp;
      if (!b_in_place && !b_rows)
        pack_b(tb, b, ldb, pc, kc, jc, nc, bp);
      for (size_t ic = 0; ic < m; ic += S_MC) {
        size_t mc = m - ic < S_MC ? m - ic : S_MC;
        if (!direct)
          pack_a(ta, a, lda, ic, mc, pc, kc, ap);
        for (size_t jr = 0; jr < nc; jr += S_NR) {
          size_t nr = nc - jr < S_NR ? nc - jr : S_NR, tr;
          const float *bt = bs + jr * kc, *brow = NULL;
          if (b_rows && !b_in_place && nr == S_NR)
            brow = b + pc * ldb + jc + jr;
          else if (b_rows && !b_in_place) /* packed alone, at the packs' start */
            pack_b(false, b, ldb, pc, kc, jc + jr, nr, bp), bt = bp;
          micro_fn tall, six;
          micro_for(nr, &tall, &tr, &six);
          for (size_t ir = 0; ir < mc;) {
            size_t mr = mc - ir < S_MR ? mc - ir : S_MR;
            float *ct = c + (ic + ir) * ldc + jc + jr;
            micro_fn fn = six;
            if (direct && mc - ir >= tr) /* full tiles read in place, the tallest first */
              fn = tall, mr = tr;
            const float *at = ap + ir * kc; /* A's rows: packed, or where they lie */
            size_t rs = 1, ps = S_MR;
            if (direct && mr < S_MR) {
              pack_a(ta, a, lda, ic + ir, mr, pc, kc, ap);
              at = ap;
            } else if (direct && ta) { /* op(A)[i][p] = a[p * lda + i] */
              at = a + pc * lda + ic + ir, ps = lda;
            } else if (direct) {
              at = a + (ic + ir) * lda + pc, rs = lda, ps = 1;
            }
            if (mr < S_MR && nr > 48) /* ragged rows of a 64-wide strip */
              micro_short[mr](kc, at, rs, ps, brow ? brow : bt, brow ? ldb : S_NR, ct, ldc, nr,
                              acc);
            else if (brow)
              micro_6x64_rows(kc, at, rs, ps, brow, ldb, ct, ldc, mr, nr, acc);
            else
              fn(kc, at, rs, ps, bt, ct, ldc, mr, nr, acc);
            if (e && pc + kc == k) /* the tile is final and in L1 */
              clg_host_epilogue_tile512(e, ct, ldc, row0 + ic + ir, jc + jr, mr, nr);
            ir += mr;
          }
        }
      }
    }
  }
  if (!work) {
    clg_aligned_free(ap);
    clg_aligned_free(bp);
  }
  return true;
}

bool clg_host_sgemm512(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work)
{
  return sgemm512(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, work, NULL, 0);
}

bool clg_host_sgemm512_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0)
{
  if (e && e->nops == 0)
    e = NULL;
  return sgemm512(false, false, m, n, k, a, lda, b, ldb, c, ldc, false, work, e, row0);
}

#else

size_t clg_host_sgemm512_work(void) { return 0; }

bool clg_host_sgemm512(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work)
{
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb;
  (void)c, (void)ldc, (void)accumulate, (void)work;
  return false;
}

bool clg_host_sgemm512_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0)
{
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc;
  (void)work, (void)e, (void)row0;
  return false;
}

#endif
