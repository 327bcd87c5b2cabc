/* Numpy broadcasting and Transpose on the host: the strided walks over a clg_strided map. */
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
  else if (op == CLG_BINOP_EQUAL && dtype == CLG_INT32) {
    const int32_t *x = a, *y = b;
    WALK(((uint8_t *)out)[i] = x[pa] == y[pb]);
  } else if (op == CLG_BINOP_EQUAL && dtype == CLG_INT64) {
    const int64_t *x = a, *y = b;
    WALK(((uint8_t *)out)[i] = x[pa] == y[pb]);
  } else if (op == CLG_BINOP_GREATER_EQUAL && dtype == CLG_INT32) {
    const int32_t *x = a, *y = b;
    WALK(((uint8_t *)out)[i] = x[pa] >= y[pb]);
  } else if (op == CLG_BINOP_GREATER_EQUAL && dtype == CLG_INT64) {
    const int64_t *x = a, *y = b;
    WALK(((uint8_t *)out)[i] = x[pa] >= y[pb]);
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
