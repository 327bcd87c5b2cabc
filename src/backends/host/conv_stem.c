/* Host NHWC float Conv2D forward from few input channels (a network's first layer on RGB):
 * im2col + GEMM spends as much on the patches as on the product there, and the implicit GEMM
 * of conv_direct.c runs a loop of c per tap. In NHWC a filter row (kw taps x c channels) is one
 * contiguous run of the input, so a tile of output pixels of one output row reads, per filter
 * row, kw * c floats from each pixel's own start (pixels sw * c apart) in place; only tiles
 * whose window crosses the border (or a dilated row) are gathered into a small buffer first.
 * The tile keeps all of its output channels (up to 96 on AVX-512) in registers and applies
 * the fused epilogue there before its one store. Sums run over K in the filter's order
 * whatever the thread count; a fused epilogue sees the same sums as the unfused op. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/host/host.h"

/* Input channels it takes: up to 15 it beat im2col + GEMM on one thread (3x3 stride 1 from 15
 * channels to 64: 1.46x on AVX-512, 1.21x on AVX2; 5x5 stride 2 from 10: 1.36x, 1.18x); from
 * 16 conv_direct.c takes them. */
#define STEM_MAX_C 15
#define STEM_MAX_K 512 /* kh * kw * c it takes (the gather buffer is on the stack) */
#define STEM_MAX_MR 8  /* the tallest tile */
#define STEM_ALIGN 64

typedef struct stem_tile {
  const float *const *rowp; /* per filter row: pixel 0's first input */
  size_t kh, L, s;          /* filter rows, K values per row (kw * c), pixel stride */
  const float *b;           /* the filter's strip: K rows at stride ldb */
  size_t ldb;
  float *y;           /* pixel 0's first output channel of the strip */
  size_t ldy, mr, nc; /* output row stride, pixels stored, channels stored */
  size_t row, col;    /* pixel 0's output row and the strip's first channel (epilogue) */
  const clg_epilogue *e;
} stem_tile;

typedef void (*stem_fn)(const stem_tile *);

typedef struct stem_kind {
  stem_fn fn;
  size_t mr, width; /* pixels per tile, channels per strip */
} stem_kind;

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define STEM_X86 1

/* --- AVX-512 ------------------------------------------------------------------------------ */

__attribute__((target("avx512f"))) static inline __mmask16 stem_mask512(size_t nc, size_t from)
{
  if (nc <= from)
    return 0;
  return nc - from >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nc - from)) - 1);
}

/* The epilogue's ops with the unfused kernels' comparisons (NaN as they treat it). */
__attribute__((target("avx512f"))) static inline __m512 relu512(__m512 v)
{
  __m512 z = _mm512_setzero_ps();
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, z, _CMP_LE_OQ), z);
}

__attribute__((target("avx512f"))) static inline __m512 relu6_512(__m512 v)
{
  __m512 z = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
  __m512 r = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, six, _CMP_GT_OQ), six);
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(v, z, _CMP_LT_OQ), z);
}

__attribute__((target("avx512f"))) static inline __m512 max512(__m512 v, __m512 s)
{
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, s, _CMP_LT_OQ), s);
}

__attribute__((target("avx512f"))) static inline __m512 min512(__m512 v, __m512 s)
{
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(s, v, _CMP_LT_OQ), s);
}

#define STEM_TARGET __attribute__((target("avx512f")))
#define S_VEC 16
#define S_T __m512
#define S_M __mmask16
#define S_ZERO() _mm512_setzero_ps()
#define S_LOAD(p) _mm512_loadu_ps(p)
#define S_BCAST(p) _mm512_set1_ps(*(p))
#define S_SET1(x) _mm512_set1_ps(x)
#define S_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define S_ADD(a, b) _mm512_add_ps(a, b)
#define S_MASK(nc, from) stem_mask512(nc, from)
#define S_MLOAD(p, m) _mm512_maskz_loadu_ps(m, p)
#define S_MSTORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define S_RELU(v) relu512(v)
#define S_RELU6(v) relu6_512(v)
#define S_MAX(v, s) max512(v, s)
#define S_MIN(v, s) min512(v, s)

/* rows x vectors: 24-28 accumulators of 32 registers, the strip's vectors and a broadcast */
#define STEM_FN stem512_8x1
#define STEM_MR 8
#define STEM_NV 1
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem512_8x2
#define STEM_MR 8
#define STEM_NV 2
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem512_8x3
#define STEM_MR 8
#define STEM_NV 3
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem512_6x4
#define STEM_MR 6
#define STEM_NV 4
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem512_5x5
#define STEM_MR 5
#define STEM_NV 5
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem512_4x6
#define STEM_MR 4
#define STEM_NV 6
#include "backends/host/conv_stem_tmpl.h"

#undef STEM_TARGET
#undef S_VEC
#undef S_T
#undef S_M
#undef S_ZERO
#undef S_LOAD
#undef S_BCAST
#undef S_SET1
#undef S_FMA
#undef S_ADD
#undef S_MASK
#undef S_MLOAD
#undef S_MSTORE
#undef S_RELU
#undef S_RELU6
#undef S_MAX
#undef S_MIN

/* --- AVX2 --------------------------------------------------------------------------------- */

/* Lanes below nc - from set. */
__attribute__((target("avx2,fma"))) static inline __m256i stem_mask256(size_t nc, size_t from)
{
  int left = nc <= from ? 0 : nc - from >= 8 ? 8 : (int)(nc - from);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) static inline __m256 relu256(__m256 v)
{
  __m256 z = _mm256_setzero_ps();
  return _mm256_blendv_ps(v, z, _mm256_cmp_ps(v, z, _CMP_LE_OQ));
}

__attribute__((target("avx2,fma"))) static inline __m256 relu6_256(__m256 v)
{
  __m256 z = _mm256_setzero_ps(), six = _mm256_set1_ps(6.0f);
  __m256 r = _mm256_blendv_ps(v, six, _mm256_cmp_ps(v, six, _CMP_GT_OQ));
  return _mm256_blendv_ps(r, z, _mm256_cmp_ps(v, z, _CMP_LT_OQ));
}

__attribute__((target("avx2,fma"))) static inline __m256 max256(__m256 v, __m256 s)
{
  return _mm256_blendv_ps(v, s, _mm256_cmp_ps(v, s, _CMP_LT_OQ));
}

__attribute__((target("avx2,fma"))) static inline __m256 min256(__m256 v, __m256 s)
{
  return _mm256_blendv_ps(v, s, _mm256_cmp_ps(s, v, _CMP_LT_OQ));
}

#define STEM_TARGET __attribute__((target("avx2,fma")))
#define S_VEC 8
#define S_T __m256
#define S_M __m256i
#define S_ZERO() _mm256_setzero_ps()
#define S_LOAD(p) _mm256_loadu_ps(p)
#define S_BCAST(p) _mm256_broadcast_ss(p)
#define S_SET1(x) _mm256_set1_ps(x)
#define S_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define S_ADD(a, b) _mm256_add_ps(a, b)
#define S_MASK(nc, from) stem_mask256(nc, from)
#define S_MLOAD(p, m) _mm256_maskload_ps(p, m)
#define S_MSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define S_RELU(v) relu256(v)
#define S_RELU6(v) relu6_256(v)
#define S_MAX(v, s) max256(v, s)
#define S_MIN(v, s) min256(v, s)

/* 12 accumulators of 16 registers (8 for one vector) */
#define STEM_FN stem256_8x1
#define STEM_MR 8
#define STEM_NV 1
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem256_6x2
#define STEM_MR 6
#define STEM_NV 2
#include "backends/host/conv_stem_tmpl.h"
#define STEM_FN stem256_4x3
#define STEM_MR 4
#define STEM_NV 3
#include "backends/host/conv_stem_tmpl.h"

/* Bytes of the filter a strip may read per tile: it stays in L1 while the tiles of a row run
 * (the whole L1 less room for the inputs; 32 KiB where sysconf does not say). */
static size_t strip_budget(void)
{
  long l1 = -1;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
#endif
  if (l1 < 16384 || l1 > (1L << 22))
    l1 = 32768;
  return (size_t)l1 / 5 * 4;
}

/* Of n kinds (narrowest first, kinds[i] i + 1 vectors wide) the one of least cost: the
 * padded columns, times (acc + 8) / acc for a tile of acc accumulators (fewer leave more of
 * the loads and the FMA latency exposed: 8 x 2 on AVX-512 ran 10% slower than 6 x 4 on
 * ResNet's stem), times 1.15 where a strip's filter does not fit L1 (then read from L2 per
 * tile: SqueezeNet's stem in one strip of 96, 56 KB, ran 15% slower than in two of 48). The
 * widest of equal costs. */
static stem_kind pick(const stem_kind *kinds, size_t n, size_t cout, size_t kdim)
{
  size_t budget = strip_budget(), best = 0;
  double best_cost = -1;
  for (size_t i = n; i-- > 0;) {
    size_t w = kinds[i].width, cols = (cout + w - 1) / w * w;
    double acc = (double)(kinds[i].mr * (i + 1)), cost = (double)cols * (acc + 8) / acc;
    if (kdim * w * sizeof(float) > budget)
      cost *= 1.15;
    if (best_cost < 0 || cost < best_cost)
      best = i, best_cost = cost;
  }
  return kinds[best];
}

#else
#define STEM_X86 0
#endif

/* The tile for g on this CPU's ISA choice; false: none (the base ISA). */
static bool kind_of(const clg_window *g, stem_kind *k)
{
#if STEM_X86
  size_t cout = (size_t)g->cout, kdim = (size_t)g->kdim;
  const char *isa = clg_host_matmul_portable_isa();
  if (strcmp(isa, "avx512") == 0) {
    static const stem_kind k512[6] = {{stem512_8x1, 8, 16}, {stem512_8x2, 8, 32},
                                      {stem512_8x3, 8, 48}, {stem512_6x4, 6, 64},
                                      {stem512_5x5, 5, 80}, {stem512_4x6, 4, 96}};
    *k = pick(k512, 6, cout, kdim);
    return true;
  }
  if (strcmp(isa, "avx2") == 0) {
    static const stem_kind k256[3] = {
        {stem256_8x1, 8, 8}, {stem256_6x2, 6, 16}, {stem256_4x3, 4, 24}};
    *k = pick(k256, 3, cout, kdim);
    return true;
  }
#endif
  (void)g;
  memset(k, 0, sizeof *k);
  return false;
}

bool clg_host_conv_stem_usable(const clg_window *g)
{
  stem_kind k;
  const char *env = getenv("CLGRAPH_CONV_STEM"); /* 0: the other paths (tests, A/B) */
  if (env && strcmp(env, "0") == 0)
    return false;
  return g->cout > 0 && g->c >= 1 && g->c <= STEM_MAX_C && g->kdim <= STEM_MAX_K &&
         !clg_conv_is_direct(g) && g->n * g->oh * g->ow > 0 && kind_of(g, &k);
}

typedef struct stem_job {
  const clg_window *g;
  const float *x;
  float *y;
  const clg_epilogue *e;
  const float *b; /* the filter, in place or packed into whole strips */
  size_t ldb, strips, items;
  stem_kind k;
} stem_job;

/* The strips' width over all of them, and whether the filter is read in place. */
static size_t packed_cols(const clg_window *g, const stem_kind *k)
{
  size_t cout = (size_t)g->cout;
  return (cout + k->width - 1) / k->width * k->width;
}

size_t clg_host_conv_stem_scratch(const clg_window *g)
{
  stem_kind k;
  if (!kind_of(g, &k))
    return 0;
  size_t cols = packed_cols(g, &k);
  return cols == (size_t)g->cout ? 0 : cols * (size_t)g->kdim * sizeof(float) + STEM_ALIGN;
}

/* Pixels [ow0, ow0 + mr) of output row (n, oh) gathered as im2col rows of K into buf (zeros
 * in the padding and for rows past mr). */
static void gather(const stem_job *j, int64_t n, int64_t oh, int64_t ow0, size_t mr, float *buf)
{
  const clg_window *g = j->g;
  size_t c = (size_t)g->c, K = (size_t)g->kdim;
  for (size_t r = 0; r < j->k.mr; r++) {
    float *dst = buf + r * K;
    if (r >= mr) {
      memset(dst, 0, K * sizeof(float));
      continue;
    }
    int64_t iw0 = (ow0 + (int64_t)r) * g->sw - g->pl;
    for (int64_t a = 0; a < g->kh; a++) {
      int64_t ih = oh * g->sh - g->pt + a * g->dh;
      for (int64_t b = 0; b < g->kw; b++, dst += c) {
        int64_t iw = iw0 + b * g->dw;
        if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
          memset(dst, 0, c * sizeof(float));
        else
          memcpy(dst, j->x + (size_t)((n * g->h + ih) * g->w + iw) * c, c * sizeof(float));
      }
    }
  }
}

static void stem_task(void *ctx, int item)
{
  const stem_job *j = ctx;
  const clg_window *g = j->g;
  size_t orows = (size_t)(g->n * g->oh), OW = (size_t)g->ow, MR = j->k.mr, W = j->k.width;
  size_t r0 = orows * (size_t)item / j->items, r1 = orows * (size_t)(item + 1) / j->items;
  size_t c = (size_t)g->c, K = (size_t)g->kdim, cout = (size_t)g->cout;
  float buf[STEM_MAX_MR * STEM_MAX_K];
  const float *rowp[STEM_MAX_K];
  /* a filter row is one run of the input where its taps are adjacent */
  bool runs = g->dw == 1 || g->kw == 1;
  stem_tile t = {.rowp = rowp, .kh = (size_t)g->kh, .L = (size_t)g->kw * c, .ldy = cout, .e = j->e};
  for (size_t orow = r0; orow < r1; orow++) {
    int64_t n = (int64_t)orow / g->oh, oh = (int64_t)orow % g->oh;
    int64_t ih0 = oh * g->sh - g->pt, ihl = ih0 + (g->kh - 1) * g->dh;
    bool rows_in = runs && ih0 >= 0 && ihl < g->h;
    /* strip by strip over the row: the strip's filter stays in L1 across its tiles */
    for (size_t st = 0; st < j->strips; st++) {
      t.col = st * W;
      t.nc = cout - t.col < W ? cout - t.col : W;
      t.b = j->b + t.col;
      t.ldb = j->ldb;
      for (size_t q = 0; q < OW; q += MR) {
        /* the last tile ends at the row's end, over some of the previous tile's pixels (the
         * same sums stored again) rather than gathered with rows left over */
        size_t ow0 = q + MR > OW && OW >= MR ? OW - MR : q, mr = OW - ow0 < MR ? OW - ow0 : MR;
        int64_t iw0 = (int64_t)ow0 * g->sw - g->pl;
        int64_t iwl = iw0 + (int64_t)(MR - 1) * g->sw + (g->kw - 1) * g->dw;
        if (rows_in && mr == MR && iw0 >= 0 && iwl < g->w) {
          for (int64_t a = 0; a < g->kh; a++)
            rowp[a] = j->x + (size_t)((n * g->h + ih0 + a * g->dh) * g->w + iw0) * c;
          t.s = (size_t)g->sw * c;
        } else {
          gather(j, n, oh, (int64_t)ow0, mr, buf);
          for (size_t a = 0; a < t.kh; a++)
            rowp[a] = buf + a * t.L;
          t.s = K;
        }
        t.mr = mr;
        t.row = orow * OW + ow0;
        t.y = j->y + t.row * cout + t.col;
        j->k.fn(&t);
      }
    }
  }
}

void clg_host_conv_stem(const float *x, const float *f, float *y, const clg_window *g,
                        const clg_epilogue *e, void *scratch)
{
  stem_job j = {.g = g, .x = x, .y = y, .e = e, .b = f, .ldb = (size_t)g->cout};
  if (!kind_of(g, &j.k))
    return;
  size_t K = (size_t)g->kdim, cout = (size_t)g->cout, cols = packed_cols(g, &j.k);
  j.strips = cols / j.k.width;
  if (cols != cout) { /* strips padded with zero columns (computed, not stored) */
    float *p = (float *)(((uintptr_t)scratch + STEM_ALIGN - 1) & ~(uintptr_t)(STEM_ALIGN - 1));
    for (size_t r = 0; r < K; r++) {
      memcpy(p + r * cols, f + r * cout, cout * sizeof(float));
      memset(p + r * cols + cout, 0, (cols - cout) * sizeof(float));
    }
    j.b = p;
    j.ldb = cols;
  }
  size_t orows = (size_t)(g->n * g->oh);
  double macs = (double)orows * (double)g->ow * (double)cout * (double)K;
  size_t threads = (size_t)clg_host_threads();
  if (macs < (double)(1 << 21)) /* microseconds of work: one thread (as the GEMM's rule) */
    threads = 1;
  /* about four items per thread: a thread the scheduler stops leaves its share to others */
  j.items = threads == 1 ? 1 : 4 * threads < orows ? 4 * threads : orows;
  clg_host_parallel((int)j.items, stem_task, &j);
}
