/* SparseToDense's scatter (src/backends/opencl/array_tf4.c): its indices are a Const, checked
 * at build (in bounds; under validate_indices sorted and distinct), so one work-item per index
 * writes its value; without validate_indices an index repeated later is left to the last one,
 * as the host's writes in order. Elements move as unsigned integers of their size. */
typedef struct { long nd; long dims[8]; } clg_sd;
#define SPARSE(name, E, I)                                                        \
static ulong name##_off(const clg_sd *m, __global const I *ix, ulong j)          \
{                                                                                \
  ulong o = 0;                                                                   \
  for (long d = 0; d < m->nd; d++)                                               \
    o = o * (ulong)m->dims[d] + (ulong)ix[j * (ulong)m->nd + (ulong)d];          \
  return o;                                                                      \
}                                                                                \
__kernel void name(__global const I *ix, ulong io, __global const E *v, ulong vo, \
                   ulong vstep, __global E *y, ulong yo, clg_sd m, uint last,    \
                   ulong n)                                                      \
{                                                                                \
  ulong j = get_global_id(0);                                                    \
  if (j >= n)                                                                    \
    return;                                                                      \
  ulong o = name##_off(&m, ix + io, j);                                          \
  for (ulong k = j + 1; last && k < n; k++)                                      \
    if (name##_off(&m, ix + io, k) == o)                                         \
      return;                                                                    \
  y[yo + o] = v[vo + j * vstep];                                                 \
}
SPARSE(clg_sparse_to_dense1_i32, uchar, int)
SPARSE(clg_sparse_to_dense2_i32, ushort, int)
SPARSE(clg_sparse_to_dense4_i32, uint, int)
SPARSE(clg_sparse_to_dense8_i32, ulong, int)
SPARSE(clg_sparse_to_dense1_i64, uchar, long)
SPARSE(clg_sparse_to_dense2_i64, ushort, long)
SPARSE(clg_sparse_to_dense4_i64, uint, long)
SPARSE(clg_sparse_to_dense8_i64, ulong, long)
