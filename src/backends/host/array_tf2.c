/* The host kernels of issue 23's array ops (ops/strided_slice.c, ops/array_tf2.c): strided
 * copies for the data movement (StridedSlice and its gradient, Pack, Unpack, Split, SplitV,
 * Tile, DepthToSpace, SpaceToBatchND, BatchToSpaceND), index gathers
 * (GatherV2), generated values (Range, Shape). */
#include <string.h>

#include "backends/host/host.h"
#include "graph/graph.h"

typedef struct copy_job {
  size_t es;
  const char *src;
  char *dst;
  const clg_copy_map *m;
} copy_job;

/* Rows of the map (all dims but the innermost) [begin, end): each row decomposed once, then
 * a plain loop along the innermost dim. */
#define ROWS(E)                                                                                    \
  do {                                                                                             \
    const E *s = (const E *)j->src;                                                                \
    E *d = (E *)j->dst;                                                                            \
    for (size_t row = begin; row < end; row++) {                                                   \
      int64_t so = m->src0, dof = m->dst0;                                                         \
      size_t rest = row;                                                                           \
      for (int k = r - 2; k >= 0; k--) {                                                           \
        int64_t c = (int64_t)(rest % (size_t)m->dims[k]);                                          \
        rest /= (size_t)m->dims[k];                                                                \
        so += c * m->ss[k];                                                                        \
        dof += c * m->ds[k];                                                                       \
      }                                                                                            \
      for (int64_t i = 0; i < inner; i++)                                                          \
        d[dof + i * dsi] = s[so + i * ssi];                                                        \
    }                                                                                              \
  } while (0)

static void copy_rows(void *ctx, size_t begin, size_t end)
{
  const copy_job *j = ctx;
  const clg_copy_map *m = j->m;
  int r = m->rank;
  int64_t inner = m->dims[r - 1], ssi = m->ss[r - 1], dsi = m->ds[r - 1];
  switch (j->es) {
  case 1:
    ROWS(uint8_t);
    break;
  case 2:
    ROWS(uint16_t);
    break;
  case 4:
    ROWS(uint32_t);
    break;
  default:
    ROWS(uint64_t);
    break;
  }
}

/* The copy of map m between host buffers of elements of es bytes. */
static void host_copy(size_t es, const void *src, void *dst, const clg_copy_map *m)
{
  size_t count = clg_copy_map_count(m);
  if (count == 0)
    return;
  copy_job j = {es, src, dst, m};
  size_t rows = count / (size_t)m->dims[m->rank - 1];
  size_t grain = (size_t)1 << 15;
  grain = grain / (size_t)m->dims[m->rank - 1] + 1;
  clg_host_parallel_for(rows, grain, copy_rows, &j);
}

static size_t elem_size(const clg_kernel_ctx *c) { return clg_dtype_size(c->node->outs[0].dtype); }

static clg_code strided_slice_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_strided_slice(c->node, &m);
  host_copy(elem_size(c), c->in[0].host, c->out[0].host, &m);
  return CLG_OK;
}

static clg_code strided_slice_grad_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_strided_slice(c->node, &m);
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes)
    memset(c->out[0].host, 0, bytes);
  host_copy(elem_size(c), c->in[4].host, c->out[0].host, &m);
  return CLG_OK;
}

/* Unpack, Split, SplitV: output i is the part of the value along the axis after the parts
 * before it (one element of it for Unpack, whose outputs lack the axis). */
static clg_code split_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  int axis;
  clg_code code = clg_split_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  bool unpack = n->def == &clg_op_Unpack;
  const clg_out_desc *x = clg_node_in(n, unpack || n->def == &clg_op_SplitV ? 0 : 1);
  const void *src = c->in[unpack || n->def == &clg_op_SplitV ? 0 : 1].host;
  int64_t at = 0;
  for (int i = 0; i < n->num_outputs; i++) {
    int64_t len = unpack ? 1 : n->outs[i].dims[axis];
    clg_copy_map m;
    clg_copy_map_part(x, axis, at, len, false, &m);
    host_copy(clg_dtype_size(x->dtype), src, c->out[i].host, &m);
    at += len;
  }
  return CLG_OK;
}

static clg_code tile_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_tile(c->node, &m);
  host_copy(elem_size(c), c->in[0].host, c->out[0].host, &m);
  return CLG_OK;
}

static clg_code d2s_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_depth_to_space(c->node, &m);
  host_copy(elem_size(c), c->in[0].host, c->out[0].host, &m);
  return CLG_OK;
}

/* SpaceToBatchND (zeros where padded) and BatchToSpaceND: one strided copy per block
 * offset. */
static clg_code space_batch_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_space_batch_spec s;
  clg_code code = clg_space_batch_spec_of(n, &s); /* checked at build: cannot fail here */
  if (code != CLG_OK)
    return code;
  size_t bytes = clg_node_out_bytes(n, 0);
  if (n->def == &clg_op_SpaceToBatchND && bytes)
    memset(c->out[0].host, 0, bytes);
  for (int64_t b = 0; b < s.blocks; b++) {
    clg_copy_map m;
    clg_copy_map_space_batch(n, &s, b, &m);
    host_copy(elem_size(c), c->in[0].host, c->out[0].host, &m);
  }
  return CLG_OK;
}

/* Pack's axis, normalised (checked at build). */
static int pack_axis(const clg_node *n)
{
  int64_t axis = clg_node_attr(n, 2)->i;
  return (int)(axis < 0 ? axis + n->outs[0].rank : axis);
}

static clg_code pack_run(const clg_kernel_ctx *c)
{
  int axis = pack_axis(c->node);
  for (int k = 0; k < c->node->num_inputs; k++) {
    clg_copy_map m;
    clg_copy_map_part(&c->node->outs[0], axis, k, 1, true, &m);
    host_copy(elem_size(c), c->in[k].host, c->out[0].host, &m);
  }
  return CLG_OK;
}

static clg_code shape_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  for (int k = 0; k < x->rank; k++) {
    if (c->node->outs[0].dtype == CLG_INT32)
      ((int32_t *)c->out[0].host)[k] = (int32_t)x->dims[k];
    else
      ((int64_t *)c->out[0].host)[k] = x->dims[k];
  }
  return CLG_OK;
}

#define RANGE(T)                                                                                   \
  do {                                                                                             \
    T *y = c->out[0].host;                                                                         \
    for (int64_t i = 0; i < count; i++)                                                            \
      y[i] = (T)((T)start + (T)i * (T)delta);                                                      \
  } while (0)

static clg_code range_run(const clg_kernel_ctx *c)
{
  double start, delta;
  int64_t count;
  clg_code code = clg_range_values(c->node, &start, &delta, &count);
  if (code != CLG_OK)
    return code;
  switch (c->node->outs[0].dtype) {
  case CLG_INT32:
    RANGE(int32_t);
    break;
  case CLG_INT64:
    RANGE(int64_t);
    break;
  case CLG_FLOAT64:
    RANGE(double);
    break;
  default:
    RANGE(float);
    break;
  }
  return CLG_OK;
}

/* out[o, j, t] = params[o, indices[j], t] over [outer, nidx, inner]. */
#define GATHER(E, I)                                                                               \
  do {                                                                                             \
    const E *p = c->in[0].host;                                                                    \
    const I *ix = c->in[1].host;                                                                   \
    E *y = c->out[0].host;                                                                         \
    for (size_t j = 0; j < nidx; j++)                                                              \
      if (ix[j] < 0 || (int64_t)ix[j] >= axis_dim)                                                 \
        return clg_node_error(c->node, CLG_INVALID_ARGUMENT,                                       \
                              "indices[%zu] = %lld is not in [0, %lld)", j, (long long)ix[j],      \
                              (long long)axis_dim);                                                \
    for (size_t o = 0; o < outer; o++)                                                             \
      for (size_t j = 0; j < nidx; j++)                                                            \
        memcpy(y + (o * nidx + j) * inner, p + (o * (size_t)axis_dim + (size_t)ix[j]) * inner,     \
               inner * sizeof(E));                                                                 \
  } while (0)

static clg_code gather_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *p = clg_node_in(n, 0);
  int axis;
  clg_code code = clg_gather_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  size_t outer = 1, inner = 1, nidx = clg_out_count(clg_node_in(n, 1));
  for (int k = 0; k < axis; k++)
    outer *= (size_t)p->dims[k];
  for (int k = axis + 1; k < p->rank; k++)
    inner *= (size_t)p->dims[k];
  int64_t axis_dim = p->dims[axis];
  if (clg_out_count(&n->outs[0]) == 0)
    return CLG_OK; /* nothing to read (an empty buffer may have no address) */
  bool i64 = clg_node_in(n, 1)->dtype == CLG_INT64;
  switch (clg_dtype_size(p->dtype) * (i64 ? 16 : 1)) {
  case 1:
    GATHER(uint8_t, int32_t);
    break;
  case 2:
    GATHER(uint16_t, int32_t);
    break;
  case 4:
    GATHER(uint32_t, int32_t);
    break;
  case 8:
    GATHER(uint64_t, int32_t);
    break;
  case 16:
    GATHER(uint8_t, int64_t);
    break;
  case 32:
    GATHER(uint16_t, int64_t);
    break;
  case 64:
    GATHER(uint32_t, int64_t);
    break;
  default:
    GATHER(uint64_t, int64_t);
    break;
  }
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_StridedSlice, {CLG_KIND_HOST, NULL, strided_slice_run, NULL, NULL}},
    {&clg_op_Pack, {CLG_KIND_HOST, NULL, pack_run, NULL, NULL}},
    {&clg_op_Shape, {CLG_KIND_HOST, NULL, shape_run, NULL, NULL}},
    {&clg_op_DepthToSpace, {CLG_KIND_HOST, NULL, d2s_run, NULL, NULL}},
    {&clg_op_GatherV2, {CLG_KIND_HOST, NULL, gather_run, NULL, NULL}},
    {&clg_op_Range, {CLG_KIND_HOST, NULL, range_run, NULL, NULL}},
    {&clg_op_Tile, {CLG_KIND_HOST, NULL, tile_run, NULL, NULL}},
    {&clg_op_StridedSliceGrad, {CLG_KIND_HOST, NULL, strided_slice_grad_run, NULL, NULL}},
    {&clg_op_Unpack, {CLG_KIND_HOST, NULL, split_run, NULL, NULL}},
    {&clg_op_Split, {CLG_KIND_HOST, NULL, split_run, NULL, NULL}},
    {&clg_op_SplitV, {CLG_KIND_HOST, NULL, split_run, NULL, NULL}},
    {&clg_op_SpaceToBatchND, {CLG_KIND_HOST, NULL, space_batch_run, NULL, NULL}},
    {&clg_op_BatchToSpaceND, {CLG_KIND_HOST, NULL, space_batch_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_array_tf2, entries);
