/* Strided element maps: numpy broadcasting for binary ops and the permuted reads of
 * Transpose, on the host and on OpenCL devices (cl/broadcast.cl). Dims are merged first, so
 * the common cases (equal shapes, a scalar, a bias row) walk one or two dims. */
#include <string.h>

#include "kernels/kernels.h"

void clg_strided_merge(clg_strided *m)
{
  clg_strided r;
  memset(&r, 0, sizeof r);
  for (int k = 0; k < m->rank; k++) {
    if (m->dims[k] == 1 && m->rank > 1)
      continue; /* a dim of one element moves no stride */
    if (r.rank > 0) {
      int j = r.rank - 1;
      if (r.sa[j] == m->sa[k] * m->dims[k] && r.sb[j] == m->sb[k] * m->dims[k]) {
        r.dims[j] *= m->dims[k];
        r.sa[j] = m->sa[k];
        r.sb[j] = m->sb[k];
        continue;
      }
    }
    r.dims[r.rank] = m->dims[k];
    r.sa[r.rank] = m->sa[k];
    r.sb[r.rank] = m->sb[k];
    r.rank++;
  }
  if (r.rank == 0) {
    r.rank = 1;
    r.dims[0] = 1;
  }
  *m = r;
}

/* Strides of an input of rank ri aligned right against an output of rank ro. */
static void input_strides(size_t *s, int ri, const int64_t *di, int ro)
{
  size_t stride = 1;
  for (int k = ro - 1; k >= 0; k--) {
    int ki = k - (ro - ri);
    if (ki < 0) {
      s[k] = 0;
      continue;
    }
    s[k] = di[ki] == 1 ? 0 : stride;
    stride *= (size_t)di[ki];
  }
}

void clg_strided_broadcast(clg_strided *m, int ra, const int64_t *da, int rb, const int64_t *db,
                           int ro, const int64_t *dout)
{
  memset(m, 0, sizeof *m);
  m->rank = ro;
  for (int k = 0; k < ro; k++)
    m->dims[k] = (size_t)dout[k];
  input_strides(m->sa, ra, da, ro);
  input_strides(m->sb, rb, db, ro);
  clg_strided_merge(m);
}

size_t clg_strided_offset(const clg_strided *m, size_t i)
{
  size_t off = 0;
  for (int k = m->rank - 1; k >= 0; k--) {
    off += (i % m->dims[k]) * m->sa[k];
    i /= m->dims[k];
  }
  return off;
}

static size_t strided_count(const clg_strided *m)
{
  size_t c = 1;
  for (int k = 0; k < m->rank; k++)
    c *= m->dims[k];
  return c;
}

/* Walks the map: the innermost dim is a plain loop, the outer ones an odometer. */
#define WALK(BODY)                                                                                 \
  do {                                                                                             \
    size_t count = strided_count(m), idx[CLG_MAX_RANK] = {0}, ia = 0, ib = 0;                      \
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
    }                                                                                              \
  } while (0)

void clg_host_broadcast(clg_binop op, clg_dtype dtype, const void *a, const void *b, void *out,
                        const clg_strided *m)
{
  if (strided_count(m) == 0)
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
  if (strided_count(m) == 0)
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

/* --- OpenCL ------------------------------------------------------------------------------ */

/* The layout of clg_map in cl/broadcast.cl. */
static const clg_cl_text source = {"broadcast", NULL};

void clg_strided_to_cl(const clg_strided *m, clg_cl_map *c)
{
  memset(c, 0, sizeof *c);
  c->rank = (cl_ulong)m->rank;
  for (int k = 0; k < m->rank; k++) {
    c->dims[k] = m->dims[k];
    c->sa[k] = m->sa[k];
    c->sb[k] = m->sb[k];
  }
}

clg_code clg_cl_broadcast(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                          const clg_block *b, const clg_block *out, const clg_strided *m)
{
  static const char *const names[] = {"clg_bc_add", "clg_bc_sub",   "clg_bc_mul", "clg_bc_div",
                                      "clg_bc_max", "clg_bc_equal", "clg_bc_ge"};
  static const char *const int_names[2][2] = {{"clg_bc_equal_i32", "clg_bc_equal_i64"},
                                              {"clg_bc_ge_i32", "clg_bc_ge_i64"}};
  bool compare = op == CLG_BINOP_EQUAL || op == CLG_BINOP_GREATER_EQUAL;
  size_t es = clg_dtype_size(dtype), oes = compare ? 1 : es;
  const char *kernel = names[op];
  clg_dtype prog = dtype;
  if (compare && (dtype == CLG_INT32 || dtype == CLG_INT64)) {
    kernel = int_names[op == CLG_BINOP_GREATER_EQUAL][dtype == CLG_INT64];
    prog = CLG_FLOAT32;
  }
  clg_cl_map cm;
  clg_strided_to_cl(m, &cm);
  cl_ulong ao = a->offset / es, bo = b->offset / es, oo = out->offset / oes, n = strided_count(m);
  clg_cl_arg args[] = {{sizeof(cl_mem), &a->mem},
                       {sizeof ao, &ao},
                       {sizeof(cl_mem), &b->mem},
                       {sizeof bo, &bo},
                       {sizeof(cl_mem), &out->mem},
                       {sizeof oo, &oo},
                       {sizeof n, &n},
                       {sizeof cm, &cm}};
  return clg_cl_launch(dev, prog, &source, kernel, args, 8, (size_t)n);
}

clg_code clg_cl_gather(clg_device *dev, size_t es, const clg_block *a, const clg_block *out,
                       const clg_strided *m)
{
  const char *kernel = es == 1   ? "clg_gather1"
                       : es == 2 ? "clg_gather2"
                       : es == 4 ? "clg_gather4"
                                 : "clg_gather8";
  clg_cl_map cm;
  clg_strided_to_cl(m, &cm);
  cl_ulong ao = a->offset / es, oo = out->offset / es, n = strided_count(m);
  clg_cl_arg args[] = {{sizeof(cl_mem), &a->mem}, {sizeof ao, &ao}, {sizeof(cl_mem), &out->mem},
                       {sizeof oo, &oo},          {sizeof n, &n},   {sizeof cm, &cm}};
  return clg_cl_launch(dev, CLG_FLOAT32, &source, kernel, args, 6, (size_t)n);
}

clg_code clg_cl_fill(clg_device *dev, const clg_block *out, const void *pattern, size_t es,
                     size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err =
      clEnqueueFillBuffer(dev->queue, out->mem, pattern, es, out->offset, bytes, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueFillBuffer", " on %s", dev->info.name);
  return CLG_OK;
}
