/* Cumsum and ScatterNd (src/backends/opencl/array_tf3.c): sums in T (float, or double with
 * fp64) and in the integers, which every build instantiates. */
#define SCAN(name, E)                                                             \
__kernel void name(__global const E *x, ulong xo, __global E *y, ulong yo,        \
                   ulong len, ulong inner, uint ex, uint rev, ulong lines)       \
{                                                                                \
  ulong l = get_global_id(0);                                                    \
  if (l >= lines)                                                                \
    return;                                                                      \
  ulong a = l / inner, t = l % inner;                                            \
  E acc = (E)0;                                                                  \
  for (ulong s = 0; s < len; s++) {                                              \
    ulong at = (a * len + (rev ? len - 1 - s : s)) * inner + t;                  \
    E v = x[xo + at];                                                            \
    if (!ex)                                                                     \
      acc += v;                                                                  \
    y[yo + at] = acc;                                                            \
    if (ex)                                                                      \
      acc += v;                                                                  \
  }                                                                              \
}
SCAN(clg_cumsum_t, T)
SCAN(clg_cumsum_i32, int)
SCAN(clg_cumsum_i64, long)
typedef struct { long q; long dims[8]; ulong slice, count; } clg_nd;
#define TUPLE(name, I)                                                            \
static long name(const clg_nd *m, __global const I *ix, ulong j)                 \
{                                                                                \
  long o = 0;                                                                    \
  for (long d = 0; d < m->q; d++) {                                              \
    long v = (long)ix[j * (ulong)m->q + (ulong)d];                               \
    if (v < 0 || v >= m->dims[d])                                                \
      return -1;                                                                 \
    o = o * m->dims[d] + v;                                                      \
  }                                                                              \
  return o;                                                                      \
}
TUPLE(clg_tuple_int, int)
TUPLE(clg_tuple_long, long)
#define SCATTER(name, E, I)                                                       \
__kernel void name(__global const I *ix, ulong io, __global const E *u, ulong uo, \
                   __global E *y, ulong yo, clg_nd m)                            \
{                                                                                \
  ulong t = get_global_id(0);                                                    \
  if (t >= m.slice)                                                              \
    return;                                                                      \
  for (ulong j = 0; j < m.count; j++) {                                          \
    long o = clg_tuple_##I(&m, ix + io, j);                                      \
    if (o >= 0)                                                                  \
      y[yo + (ulong)o * m.slice + t] += u[uo + j * m.slice + t];                 \
  }                                                                              \
}
SCATTER(clg_scatter_nd_t_i32, T, int)
SCATTER(clg_scatter_nd_t_i64, T, long)
SCATTER(clg_scatter_nd_int_i32, int, int)
SCATTER(clg_scatter_nd_int_i64, int, long)
SCATTER(clg_scatter_nd_long_i32, long, int)
SCATTER(clg_scatter_nd_long_i64, long, long)
