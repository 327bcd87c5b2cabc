/* Reductions, one work-group per output: each work-item folds a strided share of the
 * reduced elements, then the group combines its partial results as a tree in local memory.
 * T is float or double. Maps as in cl/broadcast.cl (sa: the input's strides). */
typedef struct clg_map {
  ulong rank;
  ulong dims[8];
  ulong sa[8];
  ulong sb[8];
} clg_map;

#define WG 256

static ulong map_offset(ulong i, const clg_map *m)
{
  ulong off = 0;
  for (int k = (int)m->rank - 1; k >= 0; k--) {
    off += (i % m->dims[k]) * m->sa[k];
    i /= m->dims[k];
  }
  return off;
}

/* op: 0 sum, 1 mean, 2 max, 3 half the sum of squares (L2Loss), 4 min, 5 product. */
static T fold(uint op, T a, T b)
{
  return op == 2 ? (a < b ? b : a) : op == 4 ? (b < a ? b : a) : op == 5 ? a * b : a + b;
}

__kernel void clg_reduce(__global const T *x, ulong xo, __global T *y, ulong yo, ulong n_red,
                         clg_map keep, clg_map red, uint op)
{
  __local T buf[WG];
  ulong o = get_group_id(0);
  uint lid = get_local_id(0), ls = get_local_size(0);
  ulong base = xo + map_offset(o, &keep);
  T acc = op == 2 ? (T)(-INFINITY) : op == 4 ? (T)INFINITY : op == 5 ? (T)1 : (T)0;
  for (ulong r = lid; r < n_red; r += ls) {
    T v = x[base + map_offset(r, &red)];
    acc = fold(op, acc, op == 3 ? v * v : v);
  }
  buf[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = ls / 2; s > 0; s >>= 1) {
    if (lid < s) {
      buf[lid] = fold(op == 3 ? 0 : op, buf[lid], buf[lid + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    T v = buf[0];
    if (op == 1)
      v = v / (T)n_red;
    else if (op == 3)
      v = v / (T)2;
    y[yo + o] = v;
  }
}

/* ArgMax (BETTER >) or ArgMin (<) along one axis (red has one dim): the first index of the
 * largest (smallest) value. */
#define CLG_ARGMAX(name, TO, BETTER)                                                             \
  __kernel void name(__global const T *x, ulong xo, __global TO *y, ulong yo, ulong n_red,      \
                     clg_map keep, clg_map red)                                                  \
  {                                                                                              \
    __local T val[WG];                                                                           \
    __local ulong idx[WG];                                                                       \
    ulong o = get_group_id(0);                                                                   \
    uint lid = get_local_id(0), ls = get_local_size(0);                                          \
    ulong base = xo + map_offset(o, &keep);                                                      \
    T best = (T)(-INFINITY);                                                                     \
    ulong at = n_red;                                                                            \
    for (ulong r = lid; r < n_red; r += ls) {                                                    \
      T v = x[base + r * red.sa[0]];                                                             \
      if (at == n_red || v BETTER best) {                                                        \
        best = v;                                                                                \
        at = r;                                                                                  \
      }                                                                                          \
    }                                                                                            \
    val[lid] = best;                                                                             \
    idx[lid] = at;                                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (uint s = ls / 2; s > 0; s >>= 1) {                                                      \
      if (lid < s && idx[lid + s] != n_red &&                                                    \
          (idx[lid] == n_red || val[lid + s] BETTER val[lid] ||                                  \
           (val[lid + s] == val[lid] && idx[lid + s] < idx[lid]))) {                             \
        val[lid] = val[lid + s];                                                                 \
        idx[lid] = idx[lid + s];                                                                 \
      }                                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (lid == 0)                                                                                \
      y[yo + o] = (TO)(idx[0] == n_red ? 0 : idx[0]);                                            \
  }
CLG_ARGMAX(clg_argmax_i64, long, >)
CLG_ARGMAX(clg_argmax_i32, int, >)
CLG_ARGMAX(clg_argmin_i64, long, <)
CLG_ARGMAX(clg_argmin_i32, int, <)

/* The row's max and log-sum-exp, into *mx and *lse, by the whole group. */
static void row_stats(__global const T *row, ulong n, __local T *buf, T *mx, T *lse)
{
  uint lid = get_local_id(0), ls = get_local_size(0);
  T m = (T)(-INFINITY);
  for (ulong k = lid; k < n; k += ls)
    m = fmax(m, row[k]);
  buf[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = ls / 2; s > 0; s >>= 1) {
    if (lid < s)
      buf[lid] = fmax(buf[lid], buf[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  T sum = 0;
  for (ulong k = lid; k < n; k += ls)
    sum += exp(row[k] - m);
  buf[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = ls / 2; s > 0; s >>= 1) {
    if (lid < s)
      buf[lid] += buf[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *mx = m;
  *lse = m + log(buf[0]);
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* Softmax (log_out 0) or LogSoftmax (1) over rows of n. */
__kernel void clg_softmax(__global const T *x, ulong xo, __global T *y, ulong yo, ulong n,
                          uint log_out)
{
  __local T buf[WG];
  ulong row = get_group_id(0);
  __global const T *xr = x + xo + row * n;
  __global T *yr = y + yo + row * n;
  T m, lse;
  row_stats(xr, n, buf, &m, &lse);
  for (ulong k = get_local_id(0); k < n; k += get_local_size(0))
    yr[k] = log_out ? xr[k] - lse : exp(xr[k] - lse);
}

/* Sparse softmax cross entropy: loss = lse - x[label], backprop = softmax - onehot. Labels
 * were checked to be in [0, n) before the launch. */
#define CLG_XENT(name, TL)                                                                       \
  __kernel void name(__global const T *x, ulong xo, __global const TL *lab, ulong lo,           \
                     __global T *loss, ulong so, __global T *bp, ulong bo, ulong n)              \
  {                                                                                              \
    __local T buf[WG];                                                                           \
    ulong row = get_group_id(0);                                                                 \
    __global const T *xr = x + xo + row * n;                                                     \
    __global T *br = bp + bo + row * n;                                                          \
    T m, lse;                                                                                    \
    row_stats(xr, n, buf, &m, &lse);                                                             \
    ulong label = (ulong)lab[lo + row];                                                          \
    for (ulong k = get_local_id(0); k < n; k += get_local_size(0))                               \
      br[k] = exp(xr[k] - lse) - (k == label ? (T)1 : (T)0);                                     \
    if (get_local_id(0) == 0)                                                                    \
      loss[so + row] = lse - xr[label];                                                          \
  }
CLG_XENT(clg_xent_i32, int)
CLG_XENT(clg_xent_i64, long)

/* InTopKV2: whether fewer than k predictions of the row are strictly larger than the
 * target's (false for a target out of range or any non-finite prediction in the row). */
#define CLG_INTOPK(name, TL)                                                                     \
  __kernel void name(__global const T *x, ulong xo, __global const TL *tgt, ulong to,           \
                     __global uchar *y, ulong yo, ulong n, long k)                               \
  {                                                                                              \
    __local uint buf[WG], bad[WG];                                                               \
    ulong row = get_group_id(0);                                                                 \
    uint lid = get_local_id(0), ls = get_local_size(0);                                          \
    __global const T *xr = x + xo + row * n;                                                     \
    long t = (long)tgt[to + row];                                                                \
    bool valid = t >= 0 && (ulong)t < n;                                                         \
    T p = valid ? xr[t] : (T)0;                                                                  \
    uint more = 0, nonfinite = 0;                                                                \
    for (ulong c = lid; valid && c < n; c += ls) {                                               \
      more += xr[c] > p ? 1 : 0;                                                                 \
      nonfinite |= isfinite(xr[c]) ? 0 : 1;                                                      \
    }                                                                                            \
    buf[lid] = more;                                                                             \
    bad[lid] = nonfinite;                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (uint s = ls / 2; s > 0; s >>= 1) {                                                      \
      if (lid < s) {                                                                             \
        buf[lid] += buf[lid + s];                                                                \
        bad[lid] |= bad[lid + s];                                                                \
      }                                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (lid == 0)                                                                                \
      y[yo + row] = valid && !bad[0] && (long)buf[0] < k ? 1 : 0;                                \
  }
CLG_INTOPK(clg_intopk_i32, int)
CLG_INTOPK(clg_intopk_i64, long)
