/* Strided copies: the maps of the data-movement ops of issue 23, shared by both kinds. Each
 * map is derived from the node's own descriptors (and StridedSlice's resolved spec), so a
 * kernel needs no attribute of its op. */
#include <string.h>

#include "backends/backend.h"

void clg_copy_map_merge(clg_copy_map *m)
{
  clg_copy_map r;
  memset(&r, 0, sizeof r);
  r.src0 = m->src0;
  r.dst0 = m->dst0;
  for (int k = 0; k < m->rank; k++) {
    if (m->dims[k] == 0) { /* nothing to copy: one empty dim says so */
      r.rank = 1;
      r.dims[0] = 0;
      r.ss[0] = r.ds[0] = 0;
      *m = r;
      return;
    }
    if (m->dims[k] == 1)
      continue;
    int j = r.rank - 1;
    if (j >= 0 && r.ss[j] == m->ss[k] * m->dims[k] && r.ds[j] == m->ds[k] * m->dims[k]) {
      r.dims[j] *= m->dims[k];
      r.ss[j] = m->ss[k];
      r.ds[j] = m->ds[k];
      continue;
    }
    r.dims[r.rank] = m->dims[k];
    r.ss[r.rank] = m->ss[k];
    r.ds[r.rank] = m->ds[k];
    r.rank++;
  }
  if (r.rank == 0) {
    r.rank = 1;
    r.dims[0] = 1;
  }
  *m = r;
}

size_t clg_copy_map_count(const clg_copy_map *m)
{
  size_t c = 1;
  for (int k = 0; k < m->rank; k++)
    c *= (size_t)m->dims[k];
  return c;
}

/* Row-major strides of a dense tensor. */
static void dense_strides(int rank, const int64_t *dims, int64_t *s)
{
  int64_t v = 1;
  for (int k = rank - 1; k >= 0; k--) {
    s[k] = v;
    v *= dims[k];
  }
}

void clg_copy_map_strided_slice(const clg_node *n, clg_copy_map *m)
{
  clg_slice_spec s;
  memset(m, 0, sizeof *m);
  if (clg_strided_slice_spec(n, &s) != CLG_OK) { /* checked at build: cannot fail here */
    m->rank = 1;
    return;
  }
  int64_t in[CLG_MAX_RANK], out[CLG_MAX_RANK];
  if (n->def != &clg_op_StridedSliceGrad)
    dense_strides(s.rank, clg_node_in(n, 0)->dims, in);
  dense_strides(s.rank, s.size, out); /* the output holds the ranges in the same order */
  /* StridedSliceGrad writes where StridedSlice reads, from the dense dy. */
  bool grad = n->def == &clg_op_StridedSliceGrad;
  if (grad)
    dense_strides(s.rank, clg_node_out(n, 0)->dims, in);
  m->rank = s.rank;
  for (int k = 0; k < s.rank; k++) {
    m->dims[k] = s.size[k];
    *(grad ? &m->ds[k] : &m->ss[k]) = s.stride[k] * in[k];
    *(grad ? &m->ss[k] : &m->ds[k]) = out[k];
    *(grad ? &m->dst0 : &m->src0) += s.begin[k] * in[k];
  }
  if (s.rank == 0) {
    m->rank = 1;
    m->dims[0] = 1;
  }
  clg_copy_map_merge(m);
}

void clg_copy_map_tile(const clg_node *n, clg_copy_map *m)
{
  const clg_out_desc *x = clg_node_in(n, 0), *y = clg_node_out(n, 0);
  int64_t xs[CLG_MAX_RANK], ys[CLG_MAX_RANK];
  dense_strides(x->rank, x->dims, xs);
  dense_strides(y->rank, y->dims, ys);
  memset(m, 0, sizeof *m);
  /* Output dim k as [multiple, x dim]: the repeats read the same source (stride 0). */
  for (int k = 0; k < x->rank; k++) {
    int64_t d = x->dims[k], rep = d ? y->dims[k] / d : 0;
    m->dims[m->rank] = rep;
    m->ss[m->rank] = 0;
    m->ds[m->rank++] = d * ys[k];
    m->dims[m->rank] = d;
    m->ss[m->rank] = xs[k];
    m->ds[m->rank++] = ys[k];
  }
  if (x->rank == 0) {
    m->rank = 1;
    m->dims[0] = 1;
  }
  clg_copy_map_merge(m);
}

void clg_copy_map_depth_to_space(const clg_node *n, clg_copy_map *m)
{
  const clg_out_desc *x = clg_node_in(n, 0), *y = clg_node_out(n, 0);
  memset(m, 0, sizeof *m);
  int64_t b = x->dims[1] ? y->dims[1] / x->dims[1] : 0, c = y->dims[3];
  int64_t h = x->dims[1], w = x->dims[2], cin = x->dims[3];
  /* Walk the output as [N, H, b, W, b, C']: y[n, h*b+i, w*b+j, c] = x[n, h, w, (i*b+j)*C'+c]. */
  const int64_t dims[6] = {x->dims[0], h, b, w, b, c};
  const int64_t ss[6] = {h * w * cin, w * cin, b * c, cin, c, 1};
  m->rank = 6;
  memcpy(m->dims, dims, sizeof dims);
  memcpy(m->ss, ss, sizeof ss);
  dense_strides(6, dims, m->ds);
  clg_copy_map_merge(m);
}

void clg_copy_map_part(const clg_out_desc *whole, int axis, int64_t at, int64_t len, bool into,
                       clg_copy_map *m)
{
  int64_t ws[CLG_MAX_RANK] = {0}, ps[CLG_MAX_RANK], pd[CLG_MAX_RANK];
  memset(m, 0, sizeof *m);
  memcpy(pd, whole->dims, sizeof(int64_t) * (size_t)whole->rank);
  pd[axis] = len;
  dense_strides(whole->rank, whole->dims, ws);
  dense_strides(whole->rank, pd, ps);
  m->rank = whole->rank;
  for (int k = 0; k < whole->rank; k++) {
    m->dims[k] = pd[k];
    m->ss[k] = into ? ps[k] : ws[k];
    m->ds[k] = into ? ws[k] : ps[k];
  }
  if (into)
    m->dst0 = at * ws[axis];
  else
    m->src0 = at * ws[axis];
  clg_copy_map_merge(m);
}

/* The space side is [batch, spatial..., rest] (SpaceToBatchND's input, BatchToSpaceND's
 * output), the batch side [batch * blocks, spatial / block..., rest]. Batch-side position o
 * of block offset f along dim k is space position o * block + f - before; the map covers the
 * o that land inside the space side, so padding (and crops) are never read or written. */
void clg_copy_map_space_batch(const clg_node *n, const clg_space_batch_spec *s, int64_t block,
                              clg_copy_map *m)
{
  bool s2b = n->def == &clg_op_SpaceToBatchND;
  const clg_out_desc *space = s2b ? clg_node_in(n, 0) : clg_node_out(n, 0);
  const clg_out_desc *batch = s2b ? clg_node_out(n, 0) : clg_node_in(n, 0);
  int64_t ss[CLG_MAX_RANK], bs[CLG_MAX_RANK], off[CLG_MAX_RANK];
  dense_strides(space->rank, space->dims, ss);
  dense_strides(batch->rank, batch->dims, bs);
  for (int64_t k = s->m - 1, rest = block; k >= 0; k--) {
    off[k] = rest % s->block[k];
    rest /= s->block[k];
  }
  int64_t depth = 1;
  for (int k = s->m + 1; k < space->rank; k++)
    depth *= space->dims[k];
  memset(m, 0, sizeof *m);
  int64_t *so = s2b ? &m->src0 : &m->dst0, *bo = s2b ? &m->dst0 : &m->src0;
  int64_t *sst = s2b ? m->ss : m->ds, *bst = s2b ? m->ds : m->ss;
  m->rank = s->m + 2;
  m->dims[0] = space->dims[0];
  sst[0] = ss[0];
  bst[0] = bs[0];
  /* This block offset's batches follow those of the offsets before it. */
  *bo = block * space->dims[0] * bs[0];
  for (int k = 0; k < s->m; k++) {
    int64_t b = s->block[k], f = off[k], lo_num = s->before[k] - f;
    int64_t lo = lo_num > 0 ? (lo_num + b - 1) / b : 0;
    int64_t last = space->dims[k + 1] - 1 + s->before[k] - f; /* o * b <= last */
    int64_t hi = last < 0 ? 0 : last / b + 1;
    if (hi > batch->dims[k + 1])
      hi = batch->dims[k + 1];
    m->dims[k + 1] = hi > lo ? hi - lo : 0;
    sst[k + 1] = b * ss[k + 1];
    bst[k + 1] = bs[k + 1];
    *so += (lo * b + f - s->before[k]) * ss[k + 1];
    *bo += lo * bs[k + 1];
  }
  m->dims[s->m + 1] = depth;
  sst[s->m + 1] = bst[s->m + 1] = 1;
  clg_copy_map_merge(m);
}
