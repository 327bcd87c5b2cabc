/* The host kernels of the index and order ops (ops/array_tf3.c): GatherNd and ScatterNd
 * (index tuples checked, TensorFlow's INVALID_ARGUMENT for one out of range), OneHot,
 * ReverseV2, Cumsum (accumulating in the dtype, in scan order, as TensorFlow's scan) and
 * TopKV2 (a heap of the k best per row: larger values first, among equal values the lower
 * index, as TensorFlow's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "graph/graph.h"

static int64_t index_at(const void *ix, bool i64, size_t at)
{
  return i64 ? ((const int64_t *)ix)[at] : ((const int32_t *)ix)[at];
}

/* The element offset of tuple j's slice, or INVALID_ARGUMENT naming the tuple. */
static clg_code tuple_offset(const clg_node *n, const clg_nd_index *ix, const void *idx, bool i64,
                             size_t j, const char *what, size_t *off)
{
  size_t o = 0;
  for (int d = 0; d < ix->q; d++) {
    int64_t v = index_at(idx, i64, j * (size_t)ix->q + (size_t)d);
    if (v < 0 || v >= ix->dims[d]) {
      char tup[256], s[192];
      size_t len = (size_t)snprintf(tup, sizeof tup, "[");
      for (int e = 0; e < ix->q && len < sizeof tup; e++)
        len += (size_t)snprintf(tup + len, sizeof tup - len, "%s%lld", e ? ", " : "",
                                (long long)index_at(idx, i64, j * (size_t)ix->q + (size_t)e));
      if (len < sizeof tup)
        snprintf(tup + len, sizeof tup - len, "]");
      const clg_out_desc *space = n->def == &clg_op_GatherNd ? clg_node_in(n, 0) : &n->outs[0];
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "indices[%zu] = %s does not index into %s %s",
                            j, tup, what, clg_out_shape_string(space, s, sizeof s));
    }
    o = o * (size_t)ix->dims[d] + (size_t)v;
  }
  *off = o * ix->slice;
  return CLG_OK;
}

static clg_code gather_nd_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_nd_index ix;
  clg_nd_index_of(n, &ix);
  size_t es = clg_dtype_size(n->outs[0].dtype), bytes = ix.slice * es;
  if (clg_out_count(&n->outs[0]) == 0)
    return CLG_OK;
  bool i64 = clg_node_in(n, 1)->dtype == CLG_INT64;
  for (size_t j = 0; j < ix.count; j++) {
    size_t off = 0;
    clg_code code = tuple_offset(n, &ix, c->in[1].host, i64, j, "param shape", &off);
    if (code != CLG_OK)
      return code;
    memcpy((char *)c->out[0].host + j * bytes, (const char *)c->in[0].host + off * es, bytes);
  }
  return CLG_OK;
}

#define SCATTER(T)                                                                                 \
  do {                                                                                             \
    T *y = c->out[0].host;                                                                         \
    const T *u = c->in[1].host;                                                                    \
    for (size_t t = 0; t < ix.slice; t++)                                                          \
      y[off + t] += u[j * ix.slice + t];                                                           \
  } while (0)

/* Duplicate tuples add, in tuple order. */
static clg_code scatter_nd_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_nd_index ix;
  clg_nd_index_of(n, &ix);
  clg_dtype dt = n->outs[0].dtype;
  size_t bytes = clg_node_out_bytes(n, 0);
  if (bytes == 0)
    return CLG_OK;
  memset(c->out[0].host, 0, bytes); /* zero in every dtype here */
  bool i64 = clg_node_in(n, 0)->dtype == CLG_INT64;
  for (size_t j = 0; j < ix.count; j++) {
    size_t off = 0;
    clg_code code = tuple_offset(n, &ix, c->in[0].host, i64, j, "shape", &off);
    if (code != CLG_OK)
      return code;
    switch (dt) {
    case CLG_FLOAT64:
      SCATTER(double);
      break;
    case CLG_INT32:
      SCATTER(int32_t);
      break;
    case CLG_INT64:
      SCATTER(int64_t);
      break;
    default:
      SCATTER(float);
      break;
    }
  }
  return CLG_OK;
}

/* out[o, d, t] = indices[o, t] == d ? on : off over [outer, depth, inner]. */
static clg_code one_hot_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *o = &n->outs[0];
  int axis = clg_one_hot_axis(n);
  size_t outer = 1, inner = 1, depth = (size_t)o->dims[axis];
  for (int k = 0; k < axis; k++)
    outer *= (size_t)o->dims[k];
  for (int k = axis + 1; k < o->rank; k++)
    inner *= (size_t)o->dims[k];
  size_t es = clg_dtype_size(o->dtype);
  bool i64 = clg_node_in(n, 0)->dtype == CLG_INT64;
  const char *on = c->in[2].host, *off = c->in[3].host;
  char *y = c->out[0].host;
  for (size_t a = 0; a < outer; a++)
    for (size_t d = 0; d < depth; d++)
      for (size_t t = 0; t < inner; t++) {
        int64_t v = index_at(c->in[0].host, i64, a * inner + t);
        memcpy(y + ((a * depth + d) * inner + t) * es, v == (int64_t)d ? on : off, es);
      }
  return CLG_OK;
}

static clg_code reverse_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  bool rev[CLG_MAX_RANK];
  clg_code code = clg_reverse_axes(n, rev);
  if (code != CLG_OK)
    return code;
  size_t count = clg_out_count(x), es = clg_dtype_size(x->dtype);
  for (size_t i = 0; i < count; i++) {
    size_t rest = i, src = 0, stride = 1;
    for (int k = x->rank - 1; k >= 0; k--) {
      size_t d = (size_t)x->dims[k], at = rest % d;
      rest /= d;
      src += (rev[k] ? d - 1 - at : at) * stride;
      stride *= d;
    }
    memcpy((char *)c->out[0].host + i * es, (const char *)c->in[0].host + src * es, es);
  }
  return CLG_OK;
}

#define SCAN(T)                                                                                    \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t a = 0; a < outer; a++)                                                             \
      for (size_t t = 0; t < inner; t++) {                                                         \
        T acc = 0;                                                                                 \
        for (size_t s = 0; s < len; s++) {                                                         \
          size_t at = (a * len + (rev ? len - 1 - s : s)) * inner + t;                             \
          T v = x[at];                                                                             \
          if (!ex)                                                                                 \
            acc += v;                                                                              \
          y[at] = acc;                                                                             \
          if (ex)                                                                                  \
            acc += v;                                                                              \
        }                                                                                          \
      }                                                                                            \
  } while (0)

static clg_code cumsum_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  int axis;
  bool ex, rev;
  clg_code code = clg_cumsum_params(n, &axis, &ex, &rev);
  if (code != CLG_OK)
    return code;
  size_t outer = 1, inner = 1, len = (size_t)x->dims[axis];
  for (int k = 0; k < axis; k++)
    outer *= (size_t)x->dims[k];
  for (int k = axis + 1; k < x->rank; k++)
    inner *= (size_t)x->dims[k];
  switch (x->dtype) {
  case CLG_FLOAT64:
    SCAN(double);
    break;
  case CLG_INT32:
    SCAN(int32_t);
    break;
  case CLG_INT64:
    SCAN(int64_t);
    break;
  default:
    SCAN(float);
    break;
  }
  return CLG_OK;
}

/* The heap's order: a is worse than b (smaller, or equal at a larger index). The root is the
 * worst kept, so a later element equal to it never displaces it. */
#define WORSE(T, va, ia, vb, ib) ((va) < (vb) || ((va) == (vb) && (ia) > (ib)))

#define SIFT(T, vals, idx, size, at)                                                               \
  do {                                                                                             \
    size_t p_ = (at);                                                                              \
    for (;;) {                                                                                     \
      size_t l_ = 2 * p_ + 1, r_ = l_ + 1, w_ = p_;                                                \
      if (l_ < (size) && WORSE(T, vals[l_], idx[l_], vals[w_], idx[w_]))                           \
        w_ = l_;                                                                                   \
      if (r_ < (size) && WORSE(T, vals[r_], idx[r_], vals[w_], idx[w_]))                           \
        w_ = r_;                                                                                   \
      if (w_ == p_)                                                                                \
        break;                                                                                     \
      T tv_ = vals[p_];                                                                            \
      vals[p_] = vals[w_];                                                                         \
      vals[w_] = tv_;                                                                              \
      int64_t ti_ = idx[p_];                                                                       \
      idx[p_] = idx[w_];                                                                           \
      idx[w_] = ti_;                                                                               \
      p_ = w_;                                                                                     \
    }                                                                                              \
  } while (0)

/* Per row: the first k elements make a heap, each later one better than the root replaces
 * it; then the heap is emptied worst first into the row's slots from the back. */
#define TOPK(T)                                                                                    \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *vals = c->out[0].host;                                                                      \
    for (size_t row = 0; row < rows; row++) {                                                      \
      const T *xr = x + row * len;                                                                 \
      T *v = vals + row * k;                                                                       \
      for (size_t i = 0; i < k; i++) {                                                             \
        v[i] = xr[i];                                                                              \
        idx[i] = (int64_t)i;                                                                       \
      }                                                                                            \
      for (size_t i = k / 2; i-- > 0;)                                                             \
        SIFT(T, v, idx, k, i);                                                                     \
      for (size_t i = k; i < len; i++)                                                             \
        if (k && WORSE(T, v[0], idx[0], xr[i], (int64_t)i)) {                                      \
          v[0] = xr[i];                                                                            \
          idx[0] = (int64_t)i;                                                                     \
          SIFT(T, v, idx, k, 0);                                                                   \
        }                                                                                          \
      for (size_t size = k; size > 1; size--) {                                                    \
        T tv = v[0];                                                                               \
        v[0] = v[size - 1];                                                                        \
        v[size - 1] = tv;                                                                          \
        int64_t ti = idx[0];                                                                       \
        idx[0] = idx[size - 1];                                                                    \
        idx[size - 1] = ti;                                                                        \
        SIFT(T, v, idx, size - 1, 0);                                                              \
      }                                                                                            \
      for (size_t i = 0; i < k; i++) {                                                             \
        if (i64)                                                                                   \
          ((int64_t *)c->out[1].host)[row * k + i] = idx[i];                                       \
        else                                                                                       \
          ((int32_t *)c->out[1].host)[row * k + i] = (int32_t)idx[i];                              \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static clg_code top_k_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  size_t k = (size_t)clg_top_k_k(n), len = (size_t)x->dims[x->rank - 1];
  size_t rows = len ? clg_out_count(x) / len : 0;
  if (k == 0 || rows == 0)
    return CLG_OK;
  int64_t *idx = malloc(sizeof(int64_t) * k);
  if (!idx)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  bool i64 = n->outs[1].dtype == CLG_INT64;
  switch (x->dtype) {
  case CLG_FLOAT64:
    TOPK(double);
    break;
  case CLG_INT32:
    TOPK(int32_t);
    break;
  case CLG_INT64:
    TOPK(int64_t);
    break;
  default:
    TOPK(float);
    break;
  }
  free(idx);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_GatherNd, {CLG_KIND_HOST, NULL, gather_nd_run, NULL, NULL}},
    {&clg_op_ScatterNd, {CLG_KIND_HOST, NULL, scatter_nd_run, NULL, NULL}},
    {&clg_op_OneHot, {CLG_KIND_HOST, NULL, one_hot_run, NULL, NULL}},
    {&clg_op_ReverseV2, {CLG_KIND_HOST, NULL, reverse_run, NULL, NULL}},
    {&clg_op_Cumsum, {CLG_KIND_HOST, NULL, cumsum_run, NULL, NULL}},
    {&clg_op_TopKV2, {CLG_KIND_HOST, NULL, top_k_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_array_tf3, entries);
