/* Host (CPU:0) kernels: MatMul through CBLAS or the portable blocked kernel, element-wise
 * binary ops with scalar broadcasting, and AddN. Inputs are validated by the caller (the
 * executor checks shapes and clg_kernels_supported first); an unsupported dtype leaves the
 * output untouched. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/host/host.h"

#ifdef CLG_HAVE_CBLAS
#include <cblas.h>
#endif

/* Cache blocking of the portable kernel: a KC x NR strip of B (16 KiB for float) stays in
 * L1 while the micro-kernel runs; the MC x KC panel of A in L2; the KC x NC panel of B in
 * L2/L3. */
#define GEMM_KC 256
#define GEMM_MC 128
#define GEMM_NC 2048

/* On x86-64 with GCC or clang the micro-kernel is also compiled for AVX2+FMA and for
 * AVX-512, and the widest one the CPU runs is picked at run time (__builtin_cpu_supports),
 * so the portable kernel is fast without -march=native (CLGRAPH_HOST_GEMM_ISA=base|avx2
 * lowers the choice). Plain functions and a pointer, not
 * target_clones: ifunc resolvers run before sanitizer runtimes start (TSan crashes in
 * them) and do not exist on every libc. Elsewhere it is plain C that the compiler
 * vectorises for the target's baseline. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CLG_GEMM_X86_DISPATCH 1
#define CLG_GEMM_INLINE __attribute__((always_inline))
#elif defined(__GNUC__)
#define CLG_GEMM_INLINE __attribute__((always_inline))
#else
#define CLG_GEMM_INLINE
#endif

enum { GEMM_ISA_BASE, GEMM_ISA_AVX2, GEMM_ISA_AVX512 };
static const char *const gemm_isa_names[] = {"base", "avx2", "avx512"};
static int gemm_isa_level;
static pthread_once_t gemm_isa_once = PTHREAD_ONCE_INIT;

/* Decided once per process: what the CPU runs, lowered by CLGRAPH_HOST_GEMM_ISA (base,
 * avx2 or avx512), which lets tests cover every variant on one machine. */
static void gemm_isa_init(void)
{
  int level = GEMM_ISA_BASE;
#ifdef CLG_GEMM_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
    level = GEMM_ISA_AVX512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    level = GEMM_ISA_AVX2;
#endif
  const char *want = getenv("CLGRAPH_HOST_GEMM_ISA");
  if (want && *want) {
    int limit = -1;
    for (int i = 0; i < 3; i++)
      if (strcmp(want, gemm_isa_names[i]) == 0)
        limit = i;
    if (limit < 0)
      clg_log(CLG_LOG_WARNING, "CLGRAPH_HOST_GEMM_ISA='%s' ignored: want base, avx2 or avx512",
              want);
    else if (limit < level)
      level = limit;
  }
  gemm_isa_level = level;
}

static int gemm_isa(void)
{
  pthread_once(&gemm_isa_once, gemm_isa_init);
  return gemm_isa_level;
}

const char *clg_host_matmul_portable_isa(void) { return gemm_isa_names[gemm_isa()]; }

bool clg_host_avx2(void) { return gemm_isa() >= GEMM_ISA_AVX2; }

#define GEMM_T float
#define GEMM_FN(name) name##_f32
#define GEMM_MR 8
#define GEMM_NR 16
#include "backends/host/gemm_tmpl.h"
#undef GEMM_T
#undef GEMM_FN
#undef GEMM_MR
#undef GEMM_NR

#define GEMM_T double
#define GEMM_FN(name) name##_f64
#define GEMM_MR 8
#define GEMM_NR 8
#include "backends/host/gemm_tmpl.h"
#undef GEMM_T
#undef GEMM_FN
#undef GEMM_MR
#undef GEMM_NR

void clg_host_matmul_portable(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                              const void *a, const void *b, void *c)
{
  if (dtype == CLG_FLOAT32)
    gemm_f32(ta, tb, m, n, k, a, b, c);
  else if (dtype == CLG_FLOAT64)
    gemm_f64(ta, tb, m, n, k, a, b, c);
}

#ifdef CLG_HAVE_CBLAS
/* OpenBLAS's pthread build runs a call on threads of its own that then spin (sched_yield) for
 * about 2^28 cycles, some 0.1 s, before they sleep, and do the same from the library's start:
 * on few cores they take the core that the host team's worker needs for the next op (a
 * model's op at batch 1 is 0.1-1 ms). So clgraph sets OpenBLAS to one thread, as engines that
 * keep a team of their own do, and splits its calls across the team like every other host
 * kernel; CLGRAPH_OPENBLAS_THREADS=keep leaves OpenBLAS's threads as they are (its calls then
 * run whole, outside tasks). */
static bool blas_split;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_setup(void)
{
  const char *env = getenv("CLGRAPH_OPENBLAS_THREADS");
  if (env && strcmp(env, "keep") == 0)
    return;
  openblas_set_num_threads(1);
  blas_split = true;
}

#if defined(__GNUC__) || defined(__clang__)
/* OpenBLAS's own (its fork handler's), not in cblas.h; weak, so a build without it links. */
extern int blas_thread_shutdown_(void) __attribute__((weak));
#endif
#endif

void clg_host_blas_setup(void)
{
#ifdef CLG_HAVE_CBLAS
  pthread_once(&blas_once, blas_setup);
#endif
}

void clg_host_blas_stop_threads(void)
{
  clg_host_blas_setup();
#if defined(CLG_HAVE_CBLAS) && (defined(__GNUC__) || defined(__clang__))
  if (blas_split && openblas_get_parallel() == 1 && blas_thread_shutdown_)
    (void)blas_thread_shutdown_();
#endif
}

/* A GEMM on the AVX-512 (or AVX2) kernel, or on CBLAS (fn NULL: one-thread OpenBLAS, float or
 * double), its rows (or, for few rows, its columns) split across the cores in whole tiles;
 * each element is computed by one task in one order. */
typedef bool (*sgemm_fn)(bool, bool, size_t, size_t, size_t, const float *, size_t, const float *,
                         size_t, float *, size_t, bool, float *);

typedef struct split_gemm {
  bool ta, tb, by_rows, failed[64];
  size_t m, n, k, parts, col_unit, es; /* es: bytes an element (8: CBLAS's dgemm) */
  const char *a, *b;
  char *c;
  sgemm_fn fn;
} split_gemm;

/* m x n of C at c from op(A) at a and op(B) at b (j's k, strides and transposes). */
static bool gemm_part(const split_gemm *j, size_t m, size_t n, const char *a, size_t lda,
                      const char *b, size_t ldb, char *c)
{
  if (j->fn)
    return j->fn(j->ta, j->tb, m, n, j->k, (const float *)(const void *)a, lda,
                 (const float *)(const void *)b, ldb, (float *)(void *)c, j->n, false, NULL);
#ifdef CLG_HAVE_CBLAS
  enum CBLAS_TRANSPOSE opa = j->ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE opb = j->tb ? CblasTrans : CblasNoTrans;
  if (j->es == sizeof(double))
    cblas_dgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)j->k, 1.0,
                (const double *)(const void *)a, (int)lda, (const double *)(const void *)b,
                (int)ldb, 0.0, (double *)(void *)c, (int)j->n);
  else
    cblas_sgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)j->k, 1.0f,
                (const float *)(const void *)a, (int)lda, (const float *)(const void *)b, (int)ldb,
                0.0f, (float *)(void *)c, (int)j->n);
  return true;
#else
  return false;
#endif
}

static void split_gemm_task(void *ctx, int t)
{
  split_gemm *j = ctx;
  size_t unit = j->by_rows ? 6 : j->col_unit, total = j->by_rows ? j->m : j->n;
  size_t tiles = (total + unit - 1) / unit;
  size_t s0 = tiles * (size_t)t / j->parts * unit, s1 = tiles * (size_t)(t + 1) / j->parts * unit;
  s1 = s1 < total ? s1 : total;
  if (s0 >= s1)
    return;
  size_t lda = j->ta ? j->m : j->k, ldb = j->tb ? j->k : j->n, es = j->es;
  bool ok;
  if (j->by_rows) /* rows s0..s1 of op(A) */
    ok = gemm_part(j, s1 - s0, j->n, j->a + (j->ta ? s0 : s0 * lda) * es, lda, j->b, ldb,
                   j->c + s0 * j->n * es);
  else /* columns s0..s1 of op(B) */
    ok = gemm_part(j, j->m, s1 - s0, j->a, lda, j->b + (j->tb ? s0 * ldb : s0) * es, ldb,
                   j->c + s0 * es);
  j->failed[t] = !ok;
}

static bool matmul_split(sgemm_fn fn, size_t col_unit, size_t es, bool ta, bool tb, size_t m,
                         size_t n, size_t k, const void *a, const void *b, void *c)
{
  int threads = clg_host_threads(); /* also sets OpenBLAS up (clg_host_blas_setup) */
  split_gemm j = {.ta = ta,
                  .tb = tb,
                  .m = m,
                  .n = n,
                  .k = k,
                  .es = es,
                  .a = a,
                  .b = b,
                  .c = c,
                  .fn = fn,
                  .col_unit = col_unit};
  j.parts = (size_t)(threads < 64 ? threads : 64);
  if ((double)m * (double)n * (double)k < (double)(1 << 21))
    j.parts = 1; /* a few microseconds of work: not worth starting a thread */
#ifdef CLG_HAVE_CBLAS
  if (!fn && !blas_split) /* OpenBLAS keeps its threads: one whole call */
    j.parts = 1;
#endif
  /* Rows when each part gets a few tiles of them, else columns. */
  j.by_rows = m >= 6 * 4 * j.parts || n < col_unit * 2 * j.parts;
  clg_host_parallel((int)j.parts, split_gemm_task, &j);
  for (size_t t = 0; t < j.parts; t++)
    if (j.failed[t])
      return false;
  return true;
}

void clg_host_matmul(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k, const void *a,
                     const void *b, void *c)
{
  /* Where OpenBLAS runs AVX2 kernels on an AVX-512 CPU, the AVX-512 kernel is 1.5-2x as fast
   * at every shape (one core, 392-1568 rows of squeezenet's and mobilenet's 1x1s and n = 1024:
   * 180-235 against 105-120 GFLOP/s); it avoids OpenBLAS's threads spinning beside the host
   * kernels' teams (on Intel, usable, that decides); where OpenBLAS has AVX-512 kernels on AMD,
   * it keeps the thin products
   * (a side of 128 or less: a model's batch, its fully connected layers), where its tiles pad.
   * On AVX2 the AVX2 kernel takes the thin ones (one core: as fast as OpenBLAS's Haswell kernels
   * to 2.4x, at 16-32 columns). Tasks that fail to allocate their packs leave the product to
   * the paths below. One row reads op(B) once, in order, without packing it (gemv.c). */
  if (dtype == CLG_FLOAT32 && m == 1 && n > 0) {
    clg_host_gemv(tb, n, k, a, b, c);
    return;
  }
  if (dtype == CLG_FLOAT32 && m > 0 && n > 0 && k > 0) {
    if ((clg_host_sgemm512_usable() || clg_host_sgemm512_thin(m, n, k)) &&
        matmul_split(clg_host_sgemm512, 64, sizeof(float), ta, tb, m, n, k, a, b, c))
      return;
    bool thin = m <= 128 || n <= 128 || k <= 128;
    if (thin && clg_host_sgemm256_usable() &&
        matmul_split(clg_host_sgemm256, 16, sizeof(float), ta, tb, m, n, k, a, b, c))
      return;
  }
#ifdef CLG_HAVE_CBLAS
  /* CBLAS takes int dimensions; anything larger goes to the portable kernel. k == 0 is
   * handled there too (BLAS would accept it, but an lda of 0 is rejected with a message
   * on stderr). */
  bool fits = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX;
  if (fits && m > 0 && n > 0 && k > 0) {
    if (dtype == CLG_FLOAT32 || dtype == CLG_FLOAT64) {
      (void)matmul_split(NULL, 16, clg_dtype_size(dtype), ta, tb, m, n, k, a, b, c);
      return;
    }
  }
#endif
  clg_host_matmul_portable(dtype, ta, tb, m, n, k, a, b, c);
}

/* rows x cols floats, or NULL when that many bytes cannot exist or be allocated. */
static float *float_array(size_t rows, size_t cols)
{
  size_t count = rows * cols;
  if (rows != 0 && count / rows != cols)
    return NULL;
  if (count > SIZE_MAX / sizeof(float))
    return NULL;
  return malloc(count ? count * sizeof(float) : 1);
}

clg_code clg_host_matmul_half(bool ta, bool tb, size_t m, size_t n, size_t k, const uint16_t *a,
                              const uint16_t *b, uint16_t *c)
{
  /* Every half is exactly a float, so the only rounding besides sgemm's is the last one. */
  float *fa = float_array(m, k), *fb = float_array(k, n), *fc = float_array(m, n);
  if (!fa || !fb || !fc) {
    free(fa);
    free(fb);
    free(fc);
    return clg_error(CLG_RESOURCE_EXHAUSTED,
                     "out of host memory for the float copies of a half MatMul "
                     "[%zu,%zu]x[%zu,%zu]",
                     m, k, k, n);
  }
  for (size_t i = 0; i < m * k; i++)
    fa[i] = (float)clg_half_to_double(a[i]);
  for (size_t i = 0; i < k * n; i++)
    fb[i] = (float)clg_half_to_double(b[i]);
  clg_host_matmul(CLG_FLOAT32, ta, tb, m, n, k, fa, fb, fc);
  for (size_t i = 0; i < m * n; i++)
    c[i] = clg_half_from_double(fc[i]);
  free(fa);
  free(fb);
  free(fc);
  return CLG_OK;
}

const char *clg_host_matmul_backend(void)
{
#ifdef CLG_HAVE_CBLAS
  return "OpenBLAS";
#else
  return "portable";
#endif
}

/* One loop per (op, broadcast) pair keeps every inner loop a plain vectorisable stream.
 * out may alias a or b exactly (each element is read before it is written). */
/* Computed in W, stored as T: the 8- and 16-bit integers compute in uint32_t (in int, their
 * promotion, a uint16 product overflows) and keep the low bits, wrapping. */
#define BINARY_LOOPS(T, W, OP)                                                                     \
  do {                                                                                             \
    const T *x = a, *y = b;                                                                        \
    T *o = out;                                                                                    \
    if (na == count && nb == count) {                                                              \
      for (size_t i = 0; i < count; i++)                                                           \
        o[i] = (T)((W)x[i] OP(W) y[i]);                                                            \
    } else if (na == count) {                                                                      \
      W s = (W)y[0];                                                                               \
      for (size_t i = 0; i < count; i++)                                                           \
        o[i] = (T)((W)x[i] OP s);                                                                  \
    } else if (nb == count) {                                                                      \
      W s = (W)x[0];                                                                               \
      for (size_t i = 0; i < count; i++)                                                           \
        o[i] = (T)(s OP(W) y[i]);                                                                  \
    } else {                                                                                       \
      T s = (T)((W)x[0] OP(W) y[0]);                                                               \
      for (size_t i = 0; i < count; i++)                                                           \
        o[i] = s;                                                                                  \
    }                                                                                              \
  } while (0)

#define BINARY_OPS(T, W)                                                                           \
  do {                                                                                             \
    switch (op) {                                                                                  \
    case CLG_BINOP_ADD:                                                                            \
      BINARY_LOOPS(T, W, +);                                                                       \
      break;                                                                                       \
    case CLG_BINOP_SUB:                                                                            \
      BINARY_LOOPS(T, W, -);                                                                       \
      break;                                                                                       \
    case CLG_BINOP_MUL:                                                                            \
      BINARY_LOOPS(T, W, *);                                                                       \
      break;                                                                                       \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

void clg_host_binary(clg_binop op, clg_dtype dtype, const void *a, size_t na, const void *b,
                     size_t nb, void *out, size_t count)
{
  if (count == 0)
    return;
  if (dtype == CLG_FLOAT32)
    BINARY_OPS(float, float);
  else if (dtype == CLG_FLOAT64)
    BINARY_OPS(double, double);
  else if (dtype == CLG_INT32 || dtype == CLG_UINT32) /* wrapping, as TensorFlow's (signed */
    BINARY_OPS(uint32_t, uint32_t);                   /* overflow is undefined in C) */
  else if (dtype == CLG_INT64 || dtype == CLG_UINT64)
    BINARY_OPS(uint64_t, uint64_t);
  else if (dtype == CLG_INT16 || dtype == CLG_UINT16)
    BINARY_OPS(uint16_t, uint32_t);
  else if (dtype == CLG_INT8 || dtype == CLG_UINT8)
    BINARY_OPS(uint8_t, uint32_t);
}

/* Sums in chunks that stay in L1: each output chunk is accumulated over all inputs, in
 * input order (so the result equals ((x0 + x1) + x2) + ..., as on OpenCL devices), then
 * stored once. out may alias an input exactly. */
#define ADDN_CHUNK 512
#define ADDN_LOOP(T)                                                                               \
  do {                                                                                             \
    T acc[ADDN_CHUNK];                                                                             \
    for (size_t s = 0; s < count; s += ADDN_CHUNK) {                                               \
      size_t len = count - s < ADDN_CHUNK ? count - s : ADDN_CHUNK;                                \
      const T *x0 = (const T *)inputs[0] + s;                                                      \
      for (size_t i = 0; i < len; i++)                                                             \
        acc[i] = x0[i];                                                                            \
      for (int j = 1; j < n; j++) {                                                                \
        const T *xj = (const T *)inputs[j] + s;                                                    \
        for (size_t i = 0; i < len; i++)                                                           \
          acc[i] += xj[i];                                                                         \
      }                                                                                            \
      memcpy((T *)out + s, acc, len * sizeof(T));                                                  \
    }                                                                                              \
  } while (0)

void clg_host_addn(clg_dtype dtype, const void *const *inputs, int n, void *out, size_t count)
{
  if (n < 1 || count == 0)
    return;
  if (dtype == CLG_FLOAT32)
    ADDN_LOOP(float);
  else if (dtype == CLG_FLOAT64)
    ADDN_LOOP(double);
}

/* Against an OpenBLAS with AVX-512 kernels (Cooperlake's on Zen 4), on one core of a loaded
 * Zen 4: 1.01-1.35x on 18 thin shapes of convolutions and fully connected layers (m 49-16384,
 * n 16-512, k 16-512; most at 1.1-1.3, the 16- and 32-wide ones most, where its tiles pad), and
 * 1.03-2.8x against it threaded. */
bool clg_host_sgemm512_thin(size_t m, size_t n, size_t k)
{
  return (m <= 128 || n <= 128 || k <= 128) && gemm_isa() == GEMM_ISA_AVX512;
}

bool clg_host_sgemm512_usable(void)
{
  if (gemm_isa() != GEMM_ISA_AVX512)
    return false;
#ifdef CLG_HAVE_CBLAS
    /* On Intel the kernel serves every float GEMM: against OpenBLAS's SkylakeX kernels on a 2-core
     * Xeon with AVX-512 (loaded by other work; the shapes of resnet18's, mobilenet_v2's and
     * squeezenet1_0's 1x1 convolutions and classifiers at batch 1 and 8), on one core it is
     * 1.1-2.1x as fast on the thin ones and 0.87-1.07x on the large ones (m 49-1568, n and k
     * 96-1280), and OpenBLAS on 2 threads took 10-300x its one-core time on most shapes (its
     * threads wait for the scheduler) where the host team's took 0.8-1x; with this rule forced,
     * squeezenet's classifier conv went 1681 -> 813 us on 2 threads, squeezenet1_0 b1 15.7 ->
     * 13.6 ms, mobilenet_v2 b8 55.7 -> 44.0 ms. On AMD, an OpenBLAS that picked an AVX-512 core
     * is as fast on one core (Zen 4) and threads itself; one that fell back to AVX2 (Zen 4/5 on
     * OpenBLAS < 0.3.22) is half as fast. */
#ifdef CLG_GEMM_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel"))
    return true;
#endif
  const char *core = openblas_get_corename();
  static const char *const avx512_cores[] = {"skylakex", "cooperlake", "sapphirerapids", "zen4",
                                             "zen5"};
  for (size_t i = 0; core && i < sizeof avx512_cores / sizeof *avx512_cores; i++)
    if (strncasecmp(core, avx512_cores[i], strlen(avx512_cores[i])) == 0)
      return false;
#endif
  return true;
}

bool clg_host_sgemm256_usable(void) { return gemm_isa() == GEMM_ISA_AVX2; }
