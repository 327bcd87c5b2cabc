/* The portable blocked GEMM, written once for one element type and included by host.c
 * for float and for double. Before including, define:
 *   GEMM_T   the element type
 *   GEMM_FN  a macro that decorates a name with the type's suffix
 *   GEMM_MR  rows of the register tile (micro-kernel)
 *   GEMM_NR  columns of the register tile (a multiple of the widest vector)
 *
 * The structure is the usual one of BLIS and GotoBLAS: C is cut into NC-wide column
 * blocks; each is accumulated over KC-deep slices of k; for each slice a KC x NC panel of
 * op(B) is packed into NR-wide strips and MC x KC panels of op(A) into MR-high strips.
 * Packing absorbs the transposes (the micro-kernel sees one layout for all four cases) and
 * pads ragged edges with zeros, so the micro-kernel always computes a full MR x NR tile
 * with fixed trip counts that the compiler can unroll and vectorise.
 */

/* acc[MR][NR] = sum over p of ap[p][0..MR) outer bp[p][0..NR); the tile is written to c
 * (first slice) or added to it, clipped to mr x nr. */
static inline CLG_GEMM_INLINE void GEMM_FN(micro_body)(size_t kc, const GEMM_T *ap,
                                                       const GEMM_T *bp, GEMM_T *c, size_t ldc,
                                                       size_t mr, size_t nr, bool first)
{
  GEMM_T acc[GEMM_MR][GEMM_NR];
#pragma GCC unroll 16
  for (int r = 0; r < GEMM_MR; r++)
#pragma GCC unroll 32
    for (int j = 0; j < GEMM_NR; j++)
      acc[r][j] = 0;
  for (size_t p = 0; p < kc; p++) {
    const GEMM_T *a = ap + p * GEMM_MR, *b = bp + p * GEMM_NR;
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++)
#pragma GCC unroll 32
      for (int j = 0; j < GEMM_NR; j++)
        acc[r][j] += a[r] * b[j];
  }
  for (size_t r = 0; r < mr; r++) {
    GEMM_T *crow = c + r * ldc;
    if (first)
      for (size_t j = 0; j < nr; j++)
        crow[j] = acc[r][j];
    else
      for (size_t j = 0; j < nr; j++)
        crow[j] += acc[r][j];
  }
}

typedef void (*GEMM_FN(micro_fn))(size_t, const GEMM_T *, const GEMM_T *, GEMM_T *, size_t, size_t,
                                  size_t, bool);

#define GEMM_MICRO_VARIANT(name, attr)                                                             \
  attr static void GEMM_FN(name)(size_t kc, const GEMM_T *ap, const GEMM_T *bp, GEMM_T *c,         \
                                 size_t ldc, size_t mr, size_t nr, bool first)                     \
  {                                                                                                \
    GEMM_FN(micro_body)(kc, ap, bp, c, ldc, mr, nr, first);                                        \
  }

GEMM_MICRO_VARIANT(micro_base, )
#ifdef CLG_GEMM_X86_DISPATCH
GEMM_MICRO_VARIANT(micro_avx2, __attribute__((target("avx2,fma"))))
GEMM_MICRO_VARIANT(micro_avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))))
#endif

/* The widest variant this CPU (and OS) runs, within CLGRAPH_HOST_GEMM_ISA's limit. */
static GEMM_FN(micro_fn) GEMM_FN(micro_pick)(void)
{
  switch (gemm_isa()) {
#ifdef CLG_GEMM_X86_DISPATCH
  case GEMM_ISA_AVX512:
    return GEMM_FN(micro_avx512);
  case GEMM_ISA_AVX2:
    return GEMM_FN(micro_avx2);
#endif
  default:
    return GEMM_FN(micro_base);
  }
}

#undef GEMM_MICRO_VARIANT

/* Packs rows [i0, i0+mc) x columns [p0, p0+kc) of op(A) into MR-high strips, each stored
 * p-major (MR consecutive values per p), zero-padded to a multiple of MR rows. */
static void GEMM_FN(pack_a)(bool ta, size_t m, size_t k, const GEMM_T *a, size_t i0, size_t mc,
                            size_t p0, size_t kc, GEMM_T *ap)
{
  for (size_t is = 0; is < mc; is += GEMM_MR) {
    size_t rows = mc - is < GEMM_MR ? mc - is : GEMM_MR;
    GEMM_T *dst = ap + is * kc;
    for (size_t r = 0; r < (size_t)GEMM_MR; r++) {
      if (r >= rows) {
        for (size_t p = 0; p < kc; p++)
          dst[p * GEMM_MR + r] = 0;
      } else if (!ta) { /* A is [m,k]: row i0+is+r is contiguous */
        const GEMM_T *src = a + (i0 + is + r) * k + p0;
        for (size_t p = 0; p < kc; p++)
          dst[p * GEMM_MR + r] = src[p];
      } else { /* A is stored [k,m] */
        const GEMM_T *src = a + p0 * m + i0 + is + r;
        for (size_t p = 0; p < kc; p++)
          dst[p * GEMM_MR + r] = src[p * m];
      }
    }
  }
}

/* Packs rows [p0, p0+kc) x columns [j0, j0+nc) of op(B) into NR-wide strips, each stored
 * p-major (NR consecutive values per p), zero-padded to a multiple of NR columns. */
static void GEMM_FN(pack_b)(bool tb, size_t n, size_t k, const GEMM_T *b, size_t p0, size_t kc,
                            size_t j0, size_t nc, GEMM_T *bp)
{
  for (size_t js = 0; js < nc; js += GEMM_NR) {
    size_t cols = nc - js < GEMM_NR ? nc - js : GEMM_NR;
    GEMM_T *dst = bp + js * kc;
    if (!tb) { /* B is [k,n]: row p is contiguous in j */
      for (size_t p = 0; p < kc; p++) {
        const GEMM_T *src = b + (p0 + p) * n + j0 + js;
        GEMM_T *d = dst + p * GEMM_NR;
        for (size_t j = 0; j < cols; j++)
          d[j] = src[j];
        for (size_t j = cols; j < (size_t)GEMM_NR; j++)
          d[j] = 0;
      }
    } else { /* B is stored [n,k]: column j of op(B) is contiguous in p */
      for (size_t j = 0; j < (size_t)GEMM_NR; j++) {
        if (j >= cols) {
          for (size_t p = 0; p < kc; p++)
            dst[p * GEMM_NR + j] = 0;
          continue;
        }
        const GEMM_T *src = b + (j0 + js + j) * k + p0;
        for (size_t p = 0; p < kc; p++)
          dst[p * GEMM_NR + j] = src[p];
      }
    }
  }
}

/* Used only when the packing buffers cannot be allocated: correct, unblocked, slow. */
static void GEMM_FN(naive)(bool ta, bool tb, size_t m, size_t n, size_t k, const GEMM_T *a,
                           const GEMM_T *b, GEMM_T *c)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      GEMM_T s = 0;
      for (size_t p = 0; p < k; p++)
        s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
}

static void GEMM_FN(gemm)(bool ta, bool tb, size_t m, size_t n, size_t k, const GEMM_T *a,
                          const GEMM_T *b, GEMM_T *c)
{
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (size_t i = 0; i < m * n; i++)
      c[i] = 0;
    return;
  }
  size_t kc_max = k < GEMM_KC ? k : GEMM_KC;
  size_t mc_max = m < GEMM_MC ? m : GEMM_MC;
  size_t nc_max = n < GEMM_NC ? n : GEMM_NC;
  size_t mc_pad = (mc_max + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
  size_t nc_pad = (nc_max + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
  GEMM_T *ap = clg_aligned_alloc(64, mc_pad * kc_max * sizeof(GEMM_T));
  GEMM_T *bp = clg_aligned_alloc(64, nc_pad * kc_max * sizeof(GEMM_T));
  if (!ap || !bp) {
    clg_aligned_free(ap);
    clg_aligned_free(bp);
    GEMM_FN(naive)(ta, tb, m, n, k, a, b, c);
    return;
  }
  GEMM_FN(micro_fn) micro = GEMM_FN(micro_pick)();
  for (size_t jc = 0; jc < n; jc += GEMM_NC) {
    size_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
    for (size_t pc = 0; pc < k; pc += GEMM_KC) {
      size_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
      GEMM_FN(pack_b)(tb, n, k, b, pc, kc, jc, nc, bp);
      for (size_t ic = 0; ic < m; ic += GEMM_MC) {
        size_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        GEMM_FN(pack_a)(ta, m, k, a, ic, mc, pc, kc, ap);
        for (size_t jr = 0; jr < nc; jr += GEMM_NR) {
          size_t nr = nc - jr < GEMM_NR ? nc - jr : GEMM_NR;
          for (size_t ir = 0; ir < mc; ir += GEMM_MR) {
            size_t mr = mc - ir < GEMM_MR ? mc - ir : GEMM_MR;
            micro(kc, ap + ir * kc, bp + jr * kc, c + (ic + ir) * n + jc + jr, n, mr, nr, pc == 0);
          }
        }
      }
    }
  }
  clg_aligned_free(ap);
  clg_aligned_free(bp);
}
