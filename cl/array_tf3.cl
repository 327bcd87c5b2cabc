/* The index and order ops (src/backends/opencl/array_tf3.c). GatherNd, OneHot and ReverseV2
 * move elements as unsigned integers of their size, one work-item per output element,
 * launched from the float build. */
typedef struct { long q; long dims[8]; ulong slice, count; } clg_nd;
#define IDX(name, I)                                                              \
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
IDX(clg_tuple_int, int)
IDX(clg_tuple_long, long)
#define GATHER_ND(name, E, I)                                                     \
__kernel void name(__global const E *p, ulong po, __global const I *ix, ulong io, \
                   __global E *y, ulong yo, clg_nd m, ulong n)                   \
{                                                                                \
  ulong i = get_global_id(0);                                                    \
  if (i >= n)                                                                    \
    return;                                                                      \
  long o = clg_tuple_##I(&m, ix + io, i / m.slice);                              \
  y[yo + i] = o < 0 ? (E)0 : p[po + (ulong)o * m.slice + i % m.slice];           \
}
GATHER_ND(clg_gather_nd1_i32, uchar, int)
GATHER_ND(clg_gather_nd2_i32, ushort, int)
GATHER_ND(clg_gather_nd4_i32, uint, int)
GATHER_ND(clg_gather_nd8_i32, ulong, int)
GATHER_ND(clg_gather_nd1_i64, uchar, long)
GATHER_ND(clg_gather_nd2_i64, ushort, long)
GATHER_ND(clg_gather_nd4_i64, uint, long)
GATHER_ND(clg_gather_nd8_i64, ulong, long)
#define ONE_HOT(name, E, I)                                                       \
__kernel void name(__global const I *ix, ulong io, __global const E *on, ulong ono, \
                   __global const E *off, ulong offo, __global E *y, ulong yo,   \
                   ulong depth, ulong inner, ulong n)                            \
{                                                                                \
  ulong i = get_global_id(0);                                                    \
  if (i >= n)                                                                    \
    return;                                                                      \
  ulong t = i % inner, d = (i / inner) % depth, a = i / inner / depth;           \
  long v = (long)ix[io + a * inner + t];                                         \
  y[yo + i] = v == (long)d ? on[ono] : off[offo];                                \
}
ONE_HOT(clg_one_hot1_i32, uchar, int)
ONE_HOT(clg_one_hot2_i32, ushort, int)
ONE_HOT(clg_one_hot4_i32, uint, int)
ONE_HOT(clg_one_hot8_i32, ulong, int)
ONE_HOT(clg_one_hot1_i64, uchar, long)
ONE_HOT(clg_one_hot2_i64, ushort, long)
ONE_HOT(clg_one_hot4_i64, uint, long)
ONE_HOT(clg_one_hot8_i64, ulong, long)
typedef struct { long rank; long dims[8]; long rev[8]; } clg_rev;
#define REVERSE(name, E)                                                          \
__kernel void name(__global const E *x, ulong xo, __global E *y, ulong yo,        \
                   clg_rev m, ulong n)                                           \
{                                                                                \
  ulong i = get_global_id(0);                                                    \
  if (i >= n)                                                                    \
    return;                                                                      \
  ulong rest = i, src = 0, stride = 1;                                           \
  for (long k = m.rank - 1; k >= 0; k--) {                                       \
    ulong d = (ulong)m.dims[k], at = rest % d;                                   \
    rest /= d;                                                                   \
    src += (m.rev[k] ? d - 1 - at : at) * stride;                                \
    stride *= d;                                                                 \
  }                                                                              \
  y[yo + i] = x[xo + src];                                                       \
}
REVERSE(clg_reverse1, uchar)
REVERSE(clg_reverse2, ushort)
REVERSE(clg_reverse4, uint)
REVERSE(clg_reverse8, ulong)
/* Cumsum and ScatterNd: sums in T (float, or double with fp64) and in the integers, which
 * every build instantiates (the integer ones are launched from the float build). ScatterNd
 * finds its tuples with GatherNd's clg_tuple_*. */
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
/* TopKV2, one work-item per row: the host's heap (backends/host/array_tf3.c) step for step in
 * the row's output slots, so ties and NaN come out as on CPU:0. a is worse than b: smaller,
 * or equal at a larger index. */
#define TK_WORSE(va, ia, vb, ib) ((va) < (vb) || ((va) == (vb) && (ia) > (ib)))
#define TOP_K(name, E, I)                                                         \
static void name##_sift(__global E *v, __global I *ix, ulong size, ulong p)       \
{                                                                                \
  for (;;) {                                                                     \
    ulong l = 2 * p + 1, r = l + 1, w = p;                                       \
    if (l < size && TK_WORSE(v[l], ix[l], v[w], ix[w]))                          \
      w = l;                                                                     \
    if (r < size && TK_WORSE(v[r], ix[r], v[w], ix[w]))                          \
      w = r;                                                                     \
    if (w == p)                                                                  \
      return;                                                                    \
    E tv = v[p];                                                                 \
    v[p] = v[w];                                                                 \
    v[w] = tv;                                                                   \
    I ti = ix[p];                                                                \
    ix[p] = ix[w];                                                               \
    ix[w] = ti;                                                                  \
    p = w;                                                                       \
  }                                                                              \
}                                                                                \
__kernel void name(__global const E *x, ulong xo, __global E *v, ulong vo,        \
                   __global I *ix, ulong io, ulong len, ulong k, ulong rows)     \
{                                                                                \
  ulong row = get_global_id(0);                                                  \
  if (row >= rows)                                                               \
    return;                                                                      \
  __global const E *xr = x + xo + row * len;                                     \
  __global E *vr = v + vo + row * k;                                             \
  __global I *ir = ix + io + row * k;                                            \
  for (ulong i = 0; i < k; i++) {                                                \
    vr[i] = xr[i];                                                               \
    ir[i] = (I)i;                                                                \
  }                                                                              \
  for (ulong i = k / 2; i-- > 0;)                                                \
    name##_sift(vr, ir, k, i);                                                   \
  for (ulong i = k; i < len; i++)                                                \
    if (TK_WORSE(vr[0], ir[0], xr[i], (I)i)) {                                   \
      vr[0] = xr[i];                                                             \
      ir[0] = (I)i;                                                              \
      name##_sift(vr, ir, k, 0);                                                 \
    }                                                                            \
  for (ulong size = k; size > 1; size--) {                                       \
    E tv = vr[0];                                                                \
    vr[0] = vr[size - 1];                                                        \
    vr[size - 1] = tv;                                                           \
    I ti = ir[0];                                                                \
    ir[0] = ir[size - 1];                                                        \
    ir[size - 1] = ti;                                                           \
    name##_sift(vr, ir, size - 1, 0);                                            \
  }                                                                              \
}
TOP_K(clg_top_k_t_i32, T, int)
TOP_K(clg_top_k_t_i64, T, long)
TOP_K(clg_top_k_int_i32, int, int)
TOP_K(clg_top_k_int_i64, int, long)
TOP_K(clg_top_k_long_i32, long, int)
TOP_K(clg_top_k_long_i64, long, long)
