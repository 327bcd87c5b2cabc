/* Numpy broadcasting and Transpose on the host: the strided walks over a clg_strided map. */
#include <math.h>

#include "backends/host/host.h"

/* The innermost dim's loop, input offsets pa and pb as expressions of j. */
#define INNER(PA, PB, BODY)                                                                        \
  do {                                                                                             \
    for (size_t j = 0; j < inner; j++) {                                                           \
      size_t i = base + j, pa = (PA), pb = (PB);                                                   \
      (void)pb;                                                                                    \
      BODY;                                                                                        \
    }                                                                                              \
  } while (0)

/* Walks the map: the innermost dim is a plain loop, the outer ones an odometer. */
#define WALK(BODY)                                                                                 \
  do {                                                                                             \
    size_t count = clg_strided_count(m), idx[CLG_MAX_RANK] = {0}, ia = 0, ib = 0;                  \
    int r = m->rank;                                                                               \
    size_t inner = m->dims[r - 1], sai = m->sa[r - 1], sbi = m->sb[r - 1];                         \
    for (size_t base = 0; base < count; base += inner) {                                           \
      if (sai == 1 && sbi == 1) /* unit or zero strides spelt out: these loops vectorise */        \
        INNER(ia + j, ib + j, BODY);                                                               \
      else if (sai == 1 && sbi == 0)                                                               \
        INNER(ia + j, ib, BODY);                                                                   \
      else if (sai == 0 && sbi == 1)                                                               \
        INNER(ia, ib + j, BODY);                                                                   \
      else                                                                                         \
        INNER(ia + j * sai, ib + j * sbi, BODY);                                                   \
      for (int k = r - 2; k >= 0; k--) {                                                           \
        ia += m->sa[k];                                                                            \
        ib += m->sb[k];                                                                            \
        if (++idx[k] < m->dims[k])                                                                 \
          break;                                                                                   \
        ia -= m->sa[k] * m->dims[k];                                                               \
        ib -= m->sb[k] * m->dims[k];                                                               \
        idx[k] = 0;                                                                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* Less, Greater, LessEqual, NotEqual of x[pa] and y[pb] into bytes 0/1, any element type. */
#define BCAST_COMPARE()                                                                            \
  do {                                                                                             \
    uint8_t *ob = out;                                                                             \
    if (op == CLG_BINOP_LESS)                                                                      \
      WALK(ob[i] = x[pa] < y[pb]);                                                                 \
    else if (op == CLG_BINOP_GREATER)                                                              \
      WALK(ob[i] = x[pa] > y[pb]);                                                                 \
    else if (op == CLG_BINOP_LESS_EQUAL)                                                           \
      WALK(ob[i] = x[pa] <= y[pb]);                                                                \
    else if (op == CLG_BINOP_NOT_EQUAL)                                                            \
      WALK(ob[i] = x[pa] != y[pb]);                                                                \
  } while (0)

#define BCAST_OPS(T)                                                                               \
  do {                                                                                             \
    const T *x = a, *y = b;                                                                        \
    T *o = out;                                                                                    \
    switch (op) {                                                                                  \
    case CLG_BINOP_ADD:                                                                            \
      WALK(o[i] = x[pa] + y[pb]);                                                                  \
      break;                                                                                       \
    case CLG_BINOP_SUB:                                                                            \
      WALK(o[i] = x[pa] - y[pb]);                                                                  \
      break;                                                                                       \
    case CLG_BINOP_MUL:                                                                            \
      WALK(o[i] = x[pa] * y[pb]);                                                                  \
      break;                                                                                       \
    case CLG_BINOP_DIV:                                                                            \
      WALK(o[i] = x[pa] / y[pb]);                                                                  \
      break;                                                                                       \
    case CLG_BINOP_MAX:                                                                            \
      WALK(o[i] = x[pa] < y[pb] ? y[pb] : x[pa]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_EQUAL:                                                                          \
      WALK(((uint8_t *)out)[i] = x[pa] == y[pb]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_GREATER_EQUAL:                                                                  \
      WALK(((uint8_t *)out)[i] = x[pa] >= y[pb]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_MIN:                                                                            \
      WALK(o[i] = y[pb] < x[pa] ? y[pb] : x[pa]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_PRELU:                                                                          \
      WALK(o[i] = x[pa] < 0 ? y[pb] * x[pa] : x[pa]);                                              \
      break;                                                                                       \
    case CLG_BINOP_FLOORDIV: /* TensorFlow's: floor of the rounded quotient */                     \
      WALK(o[i] = (T)floor((double)(x[pa] / y[pb])));                                              \
      break;                                                                                       \
    case CLG_BINOP_FLOORMOD: /* fmod is exact; moved to y's sign when they differ */               \
      WALK(o[i] = float_mod(x[pa], y[pb]));                                                        \
      break;                                                                                       \
    case CLG_BINOP_POW: /* in double, then rounded: within float's rounding of powf */             \
      WALK(o[i] = (T)pow(x[pa], y[pb]));                                                           \
      break;                                                                                       \
    case CLG_BINOP_ATAN2:                                                                          \
      WALK(o[i] = (T)atan2(x[pa], y[pb]));                                                         \
      break;                                                                                       \
    case CLG_BINOP_SQDIFF: /* the difference rounded to T, then squared, as TensorFlow's */        \
      WALK({                                                                                       \
        T d_ = x[pa] - y[pb];                                                                      \
        o[i] = d_ * d_;                                                                            \
      });                                                                                          \
      break;                                                                                       \
    default:                                                                                       \
      BCAST_COMPARE();                                                                             \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

static double float_mod(double x, double y)
{
  double r = fmod(x, y);
  return r != 0 && ((y < 0) != (r < 0)) ? r + y : r;
}

/* Integer floor division and modulo (y != 0: the kernels refuse a zero divisor first). y == -1
 * is apart: INT_MIN / -1 overflows in C, TensorFlow's result wraps. */
#define INT_FLOOR(T, UT)                                                                           \
  static T floordiv_##T(T x, T y)                                                                  \
  {                                                                                                \
    if (y == -1)                                                                                   \
      return (T)(0 - (UT)x);                                                                       \
    T q = x / y;                                                                                   \
    return x % y != 0 && ((x < 0) != (y < 0)) ? q - 1 : q;                                         \
  }                                                                                                \
  static T floormod_##T(T x, T y)                                                                  \
  {                                                                                                \
    if (y == -1)                                                                                   \
      return 0;                                                                                    \
    T r = x % y;                                                                                   \
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;                                             \
  }
INT_FLOOR(int8_t, uint32_t)
INT_FLOOR(int16_t, uint32_t)
INT_FLOOR(int32_t, uint32_t)
INT_FLOOR(int64_t, uint64_t)

/* Shifts by y outside [0, bits): 0, or -1 for a negative x shifted right (signed S). */
#define SHIFTS(T, UT, S)                                                                           \
  static T lshift_##T(T x, T y) { return (UT)y >= 8 * sizeof(T) ? 0 : (T)((UT)x << (UT)y); }       \
  static T rshift_##T(T x, T y)                                                                    \
  {                                                                                                \
    return (UT)y >= 8 * sizeof(T) ? (S ? (T)(x >> (8 * sizeof(T) - 1)) : 0) : (T)(x >> (UT)y);     \
  }
SHIFTS(int8_t, uint32_t, 1)
SHIFTS(int16_t, uint32_t, 1)
SHIFTS(int32_t, uint32_t, 1)
SHIFTS(int64_t, uint64_t, 1)
SHIFTS(uint8_t, uint32_t, 0)
SHIFTS(uint16_t, uint32_t, 0)
SHIFTS(uint32_t, uint32_t, 0)
SHIFTS(uint64_t, uint64_t, 0)

/* Unsigned: floor division is C's. */
#define UINT_FLOOR(T)                                                                              \
  static T floordiv_##T(T x, T y) { return (T)(x / y); }                                           \
  static T floormod_##T(T x, T y) { return (T)(x % y); }
UINT_FLOOR(uint8_t)
UINT_FLOOR(uint16_t)
UINT_FLOOR(uint32_t)
UINT_FLOOR(uint64_t)

/* Wrapping integer arithmetic, as TensorFlow's (signed overflow is undefined in C), in UT: at
 * least uint32_t, since an 8- or 16-bit type's promotion to int could overflow. */
#define BCAST_INT_OPS(T, UT)                                                                       \
  do {                                                                                             \
    const T *x = a, *y = b;                                                                        \
    T *o = out;                                                                                    \
    switch (op) {                                                                                  \
    case CLG_BINOP_ADD:                                                                            \
      WALK(o[i] = (T)((UT)x[pa] + (UT)y[pb]));                                                     \
      break;                                                                                       \
    case CLG_BINOP_SUB:                                                                            \
      WALK(o[i] = (T)((UT)x[pa] - (UT)y[pb]));                                                     \
      break;                                                                                       \
    case CLG_BINOP_MUL:                                                                            \
      WALK(o[i] = (T)((UT)x[pa] * (UT)y[pb]));                                                     \
      break;                                                                                       \
    case CLG_BINOP_MAX:                                                                            \
      WALK(o[i] = x[pa] < y[pb] ? y[pb] : x[pa]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_MIN:                                                                            \
      WALK(o[i] = y[pb] < x[pa] ? y[pb] : x[pa]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_FLOORDIV:                                                                       \
      WALK(o[i] = floordiv_##T(x[pa], y[pb]));                                                     \
      break;                                                                                       \
    case CLG_BINOP_FLOORMOD:                                                                       \
      WALK(o[i] = floormod_##T(x[pa], y[pb]));                                                     \
      break;                                                                                       \
    case CLG_BINOP_LSHIFT:                                                                         \
      WALK(o[i] = lshift_##T(x[pa], y[pb]));                                                       \
      break;                                                                                       \
    case CLG_BINOP_RSHIFT:                                                                         \
      WALK(o[i] = rshift_##T(x[pa], y[pb]));                                                       \
      break;                                                                                       \
    case CLG_BINOP_SQDIFF:                                                                         \
      WALK({                                                                                       \
        UT d_ = (UT)x[pa] - (UT)y[pb];                                                             \
        o[i] = (T)(d_ * d_);                                                                       \
      });                                                                                          \
      break;                                                                                       \
    case CLG_BINOP_EQUAL:                                                                          \
      WALK(((uint8_t *)out)[i] = x[pa] == y[pb]);                                                  \
      break;                                                                                       \
    case CLG_BINOP_GREATER_EQUAL:                                                                  \
      WALK(((uint8_t *)out)[i] = x[pa] >= y[pb]);                                                  \
      break;                                                                                       \
    default: /* RealDiv, Prelu, Pow and Atan2 are float only */                                    \
      BCAST_COMPARE();                                                                             \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

/* Float compiled twice on x86-64 (GCC, clang): for the baseline and for AVX2, picked at run
 * time (a channel vector of 16 is two AVX2 vectors, four of SSE2; Prelu's select a blend). */
#if defined(__GNUC__) || defined(__clang__)
#define BC_INLINE __attribute__((always_inline))
#else
#define BC_INLINE
#endif
/* Prelu's rows of the innermost dim where x is contiguous: alpha contiguous (per channel,
 * sal 1) or one value (sal 0). A plain loop stays a branch (GCC will not form the product
 * where the source does not, under -ftrapping-math), mispredicted where the sign varies: AVX2
 * selects between x and alpha * x explicitly (NaN is not < 0: it stays). */
static void prelu_row_base(size_t n, const float *x, const float *al, size_t sal, float *o)
{
  for (size_t j = 0; j < n; j++)
    o[j] = x[j] < 0 ? al[j * sal] * x[j] : x[j];
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static void
prelu_row_avx2(size_t n, const float *x, const float *al, size_t sal, float *o)
{
  size_t j = 0;
  __m256 zero = _mm256_setzero_ps(), a0 = _mm256_set1_ps(al[0]);
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j), a = sal ? _mm256_loadu_ps(al + j) : a0;
    __m256 neg = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
    _mm256_storeu_ps(o + j, _mm256_blendv_ps(v, _mm256_mul_ps(a, v), neg));
  }
  for (; j < n; j++)
    o[j] = x[j] < 0 ? al[j * sal] * x[j] : x[j];
}
#endif

/* The walk with Prelu's rows (inner strides 1 for x, 0 or 1 for alpha), or element by element. */
#define PRELU_WALK(row)                                                                            \
  do {                                                                                             \
    const float *x = a, *y = b;                                                                    \
    float *o = out;                                                                                \
    int r_ = m->rank;                                                                              \
    if (m->sa[r_ - 1] == 1 && m->sb[r_ - 1] <= 1) {                                                \
      size_t sbi_ = m->sb[r_ - 1];                                                                 \
      WALK(row(inner, x + pa, y + pb, sbi_, o + i); break); /* once per row */                     \
    } else {                                                                                       \
      WALK(o[i] = x[pa] < 0 ? y[pb] * x[pa] : x[pa]);                                              \
    }                                                                                              \
  } while (0)

static inline BC_INLINE void bcast_f32_body(clg_binop op, const void *a, const void *b, void *out,
                                            const clg_strided *m, bool avx2)
{
  if (op != CLG_BINOP_PRELU)
    BCAST_OPS(float);
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  else if (avx2)
    PRELU_WALK(prelu_row_avx2);
#endif
  else
    PRELU_WALK(prelu_row_base);
  (void)avx2;
}

static void bcast_f32_base(clg_binop op, const void *a, const void *b, void *out,
                           const clg_strided *m)
{
  bcast_f32_body(op, a, b, out, m, false);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void
bcast_f32_avx2(clg_binop op, const void *a, const void *b, void *out, const clg_strided *m)
{
  bcast_f32_body(op, a, b, out, m, true);
}
#endif

static void bcast_f32(clg_binop op, const void *a, const void *b, void *out, const clg_strided *m)
{
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  /* "avx2" or wider: the CPU runs AVX2 and FMA (within CLGRAPH_HOST_GEMM_ISA's limit) */
  if (clg_host_avx2()) {
    bcast_f32_avx2(op, a, b, out, m);
    return;
  }
#endif
  bcast_f32_base(op, a, b, out, m);
}

void clg_host_broadcast(clg_binop op, clg_dtype dtype, const void *a, const void *b, void *out,
                        const clg_strided *m)
{
  if (clg_strided_count(m) == 0)
    return;
  if (dtype == CLG_FLOAT32)
    bcast_f32(op, a, b, out, m);
  else if (dtype == CLG_FLOAT64)
    BCAST_OPS(double);
  else if (dtype == CLG_INT32)
    BCAST_INT_OPS(int32_t, uint32_t);
  else if (dtype == CLG_INT64)
    BCAST_INT_OPS(int64_t, uint64_t);
  else if (dtype == CLG_INT8)
    BCAST_INT_OPS(int8_t, uint32_t);
  else if (dtype == CLG_INT16)
    BCAST_INT_OPS(int16_t, uint32_t);
  else if (dtype == CLG_UINT8)
    BCAST_INT_OPS(uint8_t, uint32_t);
  else if (dtype == CLG_UINT16)
    BCAST_INT_OPS(uint16_t, uint32_t);
  else if (dtype == CLG_UINT32)
    BCAST_INT_OPS(uint32_t, uint32_t);
  else if (dtype == CLG_UINT64)
    BCAST_INT_OPS(uint64_t, uint64_t);
  else if (dtype == CLG_BOOL) {
    const uint8_t *x = a, *y = b;
    uint8_t *o = out;
    if (op == CLG_BINOP_AND)
      WALK(o[i] = x[pa] && y[pb]);
    else if (op == CLG_BINOP_OR)
      WALK(o[i] = x[pa] || y[pb]);
    else if (op == CLG_BINOP_EQUAL)
      WALK(o[i] = x[pa] == y[pb]);
    else if (op == CLG_BINOP_NOT_EQUAL)
      WALK(o[i] = x[pa] != y[pb]);
  }
}

void clg_host_gather(size_t es, const void *a, void *out, const clg_strided *m)
{
  if (clg_strided_count(m) == 0)
    return;
  const char *x = a;
  char *o = out;
  switch (es) {
  case 1:
    WALK(o[i] = x[pa]);
    break;
  case 2:
    WALK(((uint16_t *)o)[i] = ((const uint16_t *)x)[pa]);
    break;
  case 4:
    WALK(((uint32_t *)o)[i] = ((const uint32_t *)x)[pa]);
    break;
  case 8:
    WALK(((uint64_t *)o)[i] = ((const uint64_t *)x)[pa]);
    break;
  }
}
