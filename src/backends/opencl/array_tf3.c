/* The OpenCL kernels of the index and order ops (ops/array_tf3.c): GatherNd, OneHot and
 * ReverseV2 move elements as unsigned integers of their size (one float build serves every
 * dtype), one work-item per output element; GatherNd's out-of-range tuples give zeros, as
 * TensorFlow's GPU kernel. Cumsum scans each line in one work-item, in the host's order (so
 * the same sums); ScatterNd zeroes its output, then one work-item per slice element adds
 * the tuples' updates in tuple order (no atomics; a tuple out of range is skipped). TopKV2
 * runs the host's heap in one work-item per row (k is static: read from the output's shape),
 * so its ties and NaN match CPU:0's. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "graph/graph.h"

typedef struct cl_nd {
  cl_long q;
  cl_long dims[8];
  cl_ulong slice, count;
} cl_nd;

/* One program for all: the element movers are launched from the float build; Cumsum's and
 * ScatterNd's sums in T (float, or double with fp64) and the integers, instantiated in each
 * build (the integer kernels are launched from the float one). */
static const clg_cl_text source = {"array_tf3", NULL};

static cl_nd nd_of(const clg_nd_index *ix)
{
  cl_nd m;
  memset(&m, 0, sizeof m);
  m.q = ix->q;
  for (int k = 0; k < ix->q; k++)
    m.dims[k] = ix->dims[k];
  m.slice = ix->slice;
  m.count = ix->count;
  return m;
}

static cl_ulong off_of(const clg_block *b, size_t es) { return b->offset / es; }

static clg_code gather_nd_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_nd_index ix;
  clg_nd_index_of(n, &ix);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (count == 0)
    return CLG_OK;
  cl_nd m = nd_of(&ix);
  size_t es = clg_dtype_size(n->outs[0].dtype), is = clg_dtype_size(clg_node_in(n, 1)->dtype);
  char kernel[32];
  snprintf(kernel, sizeof kernel, "clg_gather_nd%zu_i%d", es, is == 8 ? 64 : 32);
  cl_mem pm = clg_cl_mem(&c->in[0]), im = clg_cl_mem(&c->in[1]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong po = off_of(&c->in[0], es), io = off_of(&c->in[1], is), yo = off_of(&c->out[0], es);
  clg_cl_arg args[] = {{sizeof pm, &pm}, {sizeof po, &po},      {sizeof im, &im},
                       {sizeof io, &io}, {sizeof ym, &ym},      {sizeof yo, &yo},
                       {sizeof m, &m},   {sizeof count, &count}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, kernel, args, 8, (size_t)count);
}

static clg_code one_hot_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *o = &n->outs[0];
  cl_ulong count = clg_out_count(o);
  if (count == 0)
    return CLG_OK;
  int axis = clg_one_hot_axis(n);
  cl_ulong inner = 1, depth = (cl_ulong)o->dims[axis];
  for (int k = axis + 1; k < o->rank; k++)
    inner *= (cl_ulong)o->dims[k];
  size_t es = clg_dtype_size(o->dtype), is = clg_dtype_size(clg_node_in(n, 0)->dtype);
  char kernel[32];
  snprintf(kernel, sizeof kernel, "clg_one_hot%zu_i%d", es, is == 8 ? 64 : 32);
  cl_mem im = clg_cl_mem(&c->in[0]), onm = clg_cl_mem(&c->in[2]), offm = clg_cl_mem(&c->in[3]);
  cl_mem ym = clg_cl_mem(&c->out[0]);
  cl_ulong io = off_of(&c->in[0], is), ono = off_of(&c->in[2], es), offo = off_of(&c->in[3], es);
  cl_ulong yo = off_of(&c->out[0], es);
  clg_cl_arg args[] = {{sizeof im, &im},       {sizeof io, &io},      {sizeof onm, &onm},
                       {sizeof ono, &ono},     {sizeof offm, &offm},  {sizeof offo, &offo},
                       {sizeof ym, &ym},       {sizeof yo, &yo},      {sizeof depth, &depth},
                       {sizeof inner, &inner}, {sizeof count, &count}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, kernel, args, 11, (size_t)count);
}

typedef struct cl_rev {
  cl_long rank;
  cl_long dims[8];
  cl_long rev[8];
} cl_rev;

static clg_code reverse_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  bool rev[CLG_MAX_RANK];
  clg_code code = clg_reverse_axes(n, rev);
  cl_ulong count = clg_out_count(x);
  if (code != CLG_OK || count == 0)
    return code;
  cl_rev m;
  memset(&m, 0, sizeof m);
  m.rank = x->rank;
  for (int k = 0; k < x->rank; k++) {
    m.dims[k] = x->dims[k];
    m.rev[k] = rev[k];
  }
  size_t es = clg_dtype_size(x->dtype);
  static const char *const names[9] = {
      NULL, "clg_reverse1", "clg_reverse2", NULL, "clg_reverse4", NULL, NULL, NULL, "clg_reverse8"};
  cl_mem xm = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = off_of(&c->in[0], es), yo = off_of(&c->out[0], es);
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo}, {sizeof ym, &ym},
                       {sizeof yo, &yo}, {sizeof m, &m},   {sizeof count, &count}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, names[es], args, 6, (size_t)count);
}

/* The build and kernel name of a sum kernel `base` for dtype t. */
static clg_dtype typed_kernel(clg_dtype t, const char *base, const char *suffix, char *name,
                              size_t size)
{
  const char *ty = t == CLG_INT32 ? "int" : t == CLG_INT64 ? "long" : "t";
  snprintf(name, size, "%s%s%s", base, ty, suffix);
  return t == CLG_INT32 || t == CLG_INT64 ? CLG_FLOAT32 : t;
}

static clg_code cumsum_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  int axis;
  bool ex, rev;
  clg_code code = clg_cumsum_params(n, &axis, &ex, &rev);
  if (code != CLG_OK || clg_out_count(x) == 0)
    return code;
  cl_ulong len = (cl_ulong)x->dims[axis], inner = 1;
  for (int k = axis + 1; k < x->rank; k++)
    inner *= (cl_ulong)x->dims[k];
  cl_ulong lines = clg_out_count(x) / len;
  cl_uint cex = ex, crev = rev;
  size_t es = clg_dtype_size(x->dtype);
  char kernel[40];
  const char *ty = x->dtype == CLG_INT32 ? "i32" : x->dtype == CLG_INT64 ? "i64" : "t";
  snprintf(kernel, sizeof kernel, "clg_cumsum_%s", ty);
  clg_dtype build = x->dtype == CLG_INT32 || x->dtype == CLG_INT64 ? CLG_FLOAT32 : x->dtype;
  cl_mem xm = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = off_of(&c->in[0], es), yo = off_of(&c->out[0], es);
  clg_cl_arg args[] = {{sizeof xm, &xm},   {sizeof xo, &xo},     {sizeof ym, &ym},
                       {sizeof yo, &yo},   {sizeof len, &len},   {sizeof inner, &inner},
                       {sizeof cex, &cex}, {sizeof crev, &crev}, {sizeof lines, &lines}};
  return clg_cl_launch(c->dev, build, &source, kernel, args, 9, (size_t)lines);
}

static clg_code scatter_nd_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_nd_index ix;
  clg_nd_index_of(n, &ix);
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt), is = clg_dtype_size(clg_node_in(n, 0)->dtype);
  size_t bytes = clg_node_out_bytes(n, 0);
  if (bytes == 0)
    return CLG_OK;
  uint64_t zero = 0;
  clg_code code = clg_cl_fill(c->dev, &c->out[0], &zero, es, bytes);
  if (code != CLG_OK || ix.count == 0 || ix.slice == 0)
    return code;
  cl_nd m = nd_of(&ix);
  char kernel[48];
  clg_dtype build =
      typed_kernel(dt, "clg_scatter_nd_", is == 8 ? "_i64" : "_i32", kernel, sizeof kernel);
  cl_mem im = clg_cl_mem(&c->in[0]), um = clg_cl_mem(&c->in[1]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong io = off_of(&c->in[0], is), uo = off_of(&c->in[1], es), yo = off_of(&c->out[0], es);
  clg_cl_arg args[] = {{sizeof im, &im}, {sizeof io, &io}, {sizeof um, &um}, {sizeof uo, &uo},
                       {sizeof ym, &ym}, {sizeof yo, &yo}, {sizeof m, &m}};
  return clg_cl_launch(c->dev, build, &source, kernel, args, 7, (size_t)ix.slice);
}

static clg_code top_k_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  cl_ulong k = (cl_ulong)clg_top_k_k(n), len = (cl_ulong)x->dims[x->rank - 1];
  cl_ulong rows = len ? clg_out_count(x) / len : 0;
  if (k == 0 || rows == 0)
    return CLG_OK;
  clg_dtype dt = x->dtype;
  size_t es = clg_dtype_size(dt), is = clg_dtype_size(n->outs[1].dtype);
  char kernel[40];
  clg_dtype build =
      typed_kernel(dt, "clg_top_k_", is == 8 ? "_i64" : "_i32", kernel, sizeof kernel);
  cl_mem xm = clg_cl_mem(&c->in[0]), vm = clg_cl_mem(&c->out[0]), im = clg_cl_mem(&c->out[1]);
  cl_ulong xo = off_of(&c->in[0], es), vo = off_of(&c->out[0], es), io = off_of(&c->out[1], is);
  clg_cl_arg args[] = {{sizeof xm, &xm},   {sizeof xo, &xo}, {sizeof vm, &vm},
                       {sizeof vo, &vo},   {sizeof im, &im}, {sizeof io, &io},
                       {sizeof len, &len}, {sizeof k, &k},   {sizeof rows, &rows}};
  return clg_cl_launch(c->dev, build, &source, kernel, args, 9, (size_t)rows);
}

/* Double (Cumsum's and ScatterNd's sums, TopKV2's values) needs fp64. */
static bool add_supports(const clg_node *n, const clg_device *dev)
{
  return n->outs[0].dtype != CLG_FLOAT64 || dev->info.has_fp64;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_GatherNd, {CLG_KIND_OPENCL, NULL, gather_nd_run, NULL, NULL}},
    {&clg_op_OneHot, {CLG_KIND_OPENCL, NULL, one_hot_run, NULL, NULL}},
    {&clg_op_ReverseV2, {CLG_KIND_OPENCL, NULL, reverse_run, NULL, NULL}},
    {&clg_op_Cumsum, {CLG_KIND_OPENCL, add_supports, cumsum_run, NULL, NULL}},
    {&clg_op_ScatterNd, {CLG_KIND_OPENCL, add_supports, scatter_nd_run, NULL, NULL}},
    {&clg_op_TopKV2, {CLG_KIND_OPENCL, add_supports, top_k_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_array_tf3, entries);
