/* Numpy broadcasting and Transpose on the host: the strided walks over a clg_strided map. */
#include <math.h>
#include <string.h>

#include "backends/host/host.h"

/* Walks the map: the innermost dim is a plain loop, the outer ones an odometer. */
#define WALK(BODY)                                                                                 \
  do {                                                                                             \
    size_t count = clg_strided_count(m), idx[CLG_MAX_RANK] = {0}, ia = 0, ib = 0;                  \
    int r = m->rank;                                                                               \
    size_t inner = m->dims[r - 1], sai = m->sa[r - 1], sbi = m->sb[r - 1];                         \
    for (size_t base = 0; base < count; base += inner) {                                           \
      for (size_t j = 0; j < inner; j++) {                                                         \
        size_t i = base + j, pa = ia + j * sai, pb = ib + j * sbi;                                 \
        (void)pb;                                                                                  \
        BODY;                                                                                      \
      }                                                                                            \
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
INT_FLOOR(int32_t, uint32_t)
INT_FLOOR(int64_t, uint64_t)

/* Wrapping integer arithmetic, as TensorFlow's (signed overflow is undefined in C). */
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

void clg_host_broadcast(clg_binop op, clg_dtype dtype, const void *a, const void *b, void *out,
                        const clg_strided *m)
{
  if (clg_strided_count(m) == 0)
    return;
  if (dtype == CLG_FLOAT32)
    BCAST_OPS(float);
  else if (dtype == CLG_FLOAT64)
    BCAST_OPS(double);
  else if (dtype == CLG_INT32)
    BCAST_INT_OPS(int32_t, uint32_t);
  else if (dtype == CLG_INT64)
    BCAST_INT_OPS(int64_t, uint64_t);
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
