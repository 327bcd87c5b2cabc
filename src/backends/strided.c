/* Strided element maps: numpy broadcasting for binary ops and the permuted reads of
 * Transpose, on the host and on OpenCL devices (cl/broadcast.cl). Dims are merged first, so
 * the common cases (equal shapes, a scalar, a bias row) walk one or two dims. */
#include <string.h>

#include "backends/backend.h"

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

size_t clg_strided_count(const clg_strided *m)
{
  size_t c = 1;
  for (int k = 0; k < m->rank; k++)
    c *= m->dims[k];
  return c;
}
