/* The OpenCL kernels of issue 23's array ops (ops/strided_slice.c, ops/array_tf2.c): one
 * strided copy kernel per element size serves StridedSlice, Pack, Tile, DepthToSpace,
 * SpaceToBatchND and BatchToSpaceND;
 * GatherV2, Range and Shape have their own. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "graph/graph.h"

/* The map's layout matches clg_cl_copy_map below; rank is at most CLG_COPY_MAX_RANK. */
#define CLG_CL_COPY_RANK 16

typedef struct clg_cl_copy_map {
  cl_long rank;
  cl_long dims[CLG_CL_COPY_RANK];
  cl_long ss[CLG_CL_COPY_RANK];
  cl_long ds[CLG_CL_COPY_RANK];
  cl_long src0, dst0;
} clg_cl_copy_map;

/* Elements are moved as unsigned integers of their size, so the program's T is unused and
 * one float build serves every dtype. The gathers' out-of-range indices give zeros, as
 * TensorFlow's GPU kernel does (the host kernel refuses them). */
static const clg_cl_text source = {
    "array_tf2",
    "typedef struct { long rank; long dims[16]; long ss[16]; long ds[16]; long src0, dst0; }\n"
    "  copy_map;\n"
    "#define COPY(name, E)                                                              \\\n"
    "__kernel void name(__global const E *src, ulong so, __global E *dst, ulong dof,   \\\n"
    "                   ulong n, copy_map m)                                           \\\n"
    "{                                                                                 \\\n"
    "  ulong i = get_global_id(0);                                                     \\\n"
    "  if (i >= n)                                                                     \\\n"
    "    return;                                                                       \\\n"
    "  long s = m.src0, d = m.dst0;                                                    \\\n"
    "  ulong r = i;                                                                    \\\n"
    "  for (int k = (int)m.rank - 1; k >= 0; k--) {                                    \\\n"
    "    long c = (long)(r % (ulong)m.dims[k]);                                        \\\n"
    "    r /= (ulong)m.dims[k];                                                        \\\n"
    "    s += c * m.ss[k];                                                             \\\n"
    "    d += c * m.ds[k];                                                             \\\n"
    "  }                                                                               \\\n"
    "  dst[dof + d] = src[so + s];                                                     \\\n"
    "}\n"
    "COPY(clg_copy1, uchar)\n"
    "COPY(clg_copy2, ushort)\n"
    "COPY(clg_copy4, uint)\n"
    "COPY(clg_copy8, ulong)\n"
    "#define GATHER(name, E, I)                                                         \\\n"
    "__kernel void name(__global const E *p, ulong po, __global const I *ix, ulong io, \\\n"
    "                   __global E *y, ulong yo, ulong nidx, ulong inner, long axis_dim, \\\n"
    "                   ulong n)                                                       \\\n"
    "{                                                                                 \\\n"
    "  ulong i = get_global_id(0);                                                     \\\n"
    "  if (i >= n)                                                                     \\\n"
    "    return;                                                                       \\\n"
    "  ulong t = i % inner, j = (i / inner) % nidx, o = i / inner / nidx;              \\\n"
    "  long v = (long)ix[io + j];                                                      \\\n"
    "  y[yo + i] = v >= 0 && v < axis_dim ? p[po + (o * (ulong)axis_dim + (ulong)v) * inner + t] "
    "\\\n"
    "                                     : (E)0;                                      \\\n"
    "}\n"
    "GATHER(clg_gather1_i32, uchar, int)\n"
    "GATHER(clg_gather2_i32, ushort, int)\n"
    "GATHER(clg_gather4_i32, uint, int)\n"
    "GATHER(clg_gather8_i32, ulong, int)\n"
    "GATHER(clg_gather1_i64, uchar, long)\n"
    "GATHER(clg_gather2_i64, ushort, long)\n"
    "GATHER(clg_gather4_i64, uint, long)\n"
    "GATHER(clg_gather8_i64, ulong, long)\n"
    "__kernel void clg_range_i32(__global int *y, ulong yo, int start, int delta, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = start + (int)i * delta; }\n"
    "__kernel void clg_range_i64(__global long *y, ulong yo, long start, long delta, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = start + (long)i * delta; }\n"};

/* Range's kernel on T (float, or double with fp64). */
static const clg_cl_text typed_source = {
    "array_tf2_typed",
    "__kernel void clg_range_t(__global T *y, ulong yo, T start, T delta, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) y[yo + i] = start + (T)i * delta; }\n"};

static clg_code cl_copy(clg_device *dev, size_t es, const clg_block *src, const clg_block *dst,
                        const clg_copy_map *m)
{
  cl_ulong n = clg_copy_map_count(m);
  if (n == 0)
    return CLG_OK;
  static const char *const names[9] = {NULL, "clg_copy1", "clg_copy2", NULL,       "clg_copy4",
                                       NULL, NULL,        NULL,        "clg_copy8"};
  clg_cl_copy_map cm;
  memset(&cm, 0, sizeof cm);
  cm.rank = m->rank;
  for (int k = 0; k < m->rank; k++) {
    cm.dims[k] = m->dims[k];
    cm.ss[k] = m->ss[k];
    cm.ds[k] = m->ds[k];
  }
  cm.src0 = m->src0;
  cm.dst0 = m->dst0;
  cl_mem sm = clg_cl_mem(src), dm = clg_cl_mem(dst);
  cl_ulong so = src->offset / es, dof = dst->offset / es;
  clg_cl_arg args[] = {{sizeof sm, &sm},   {sizeof so, &so}, {sizeof dm, &dm},
                       {sizeof dof, &dof}, {sizeof n, &n},   {sizeof cm, &cm}};
  return clg_cl_launch(dev, CLG_FLOAT32, &source, names[es], args, 6, (size_t)n);
}

static size_t elem_size(const clg_kernel_ctx *c) { return clg_dtype_size(c->node->outs[0].dtype); }

static clg_code strided_slice_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_strided_slice(c->node, &m);
  return cl_copy(c->dev, elem_size(c), &c->in[0], &c->out[0], &m);
}

static clg_code strided_slice_grad_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_strided_slice(c->node, &m);
  size_t es = elem_size(c);
  uint64_t zero = 0;
  clg_code code = clg_cl_fill(c->dev, &c->out[0], &zero, es, clg_node_out_bytes(c->node, 0));
  return code != CLG_OK ? code : cl_copy(c->dev, es, &c->in[4], &c->out[0], &m);
}

/* As the host's: output i is the part after the parts before it. */
static clg_code split_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  int axis;
  clg_code code = clg_split_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  bool unpack = n->def == &clg_op_Unpack;
  int vi = unpack || n->def == &clg_op_SplitV ? 0 : 1;
  const clg_out_desc *x = clg_node_in(n, vi);
  int64_t at = 0;
  for (int i = 0; i < n->num_outputs && code == CLG_OK; i++) {
    int64_t len = unpack ? 1 : n->outs[i].dims[axis];
    clg_copy_map m;
    clg_copy_map_part(x, axis, at, len, false, &m);
    code = cl_copy(c->dev, clg_dtype_size(x->dtype), &c->in[vi], &c->out[i], &m);
    at += len;
  }
  return code;
}

static clg_code tile_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_tile(c->node, &m);
  return cl_copy(c->dev, elem_size(c), &c->in[0], &c->out[0], &m);
}

static clg_code d2s_run(const clg_kernel_ctx *c)
{
  clg_copy_map m;
  clg_copy_map_depth_to_space(c->node, &m);
  return cl_copy(c->dev, elem_size(c), &c->in[0], &c->out[0], &m);
}

/* As the host's: zeros (SpaceToBatchND with padding), then one copy per block offset. */
static clg_code space_batch_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_space_batch_spec s;
  clg_code code = clg_space_batch_spec_of(n, &s); /* checked at build: cannot fail here */
  size_t es = elem_size(c);
  uint64_t zero = 0;
  if (code == CLG_OK && n->def == &clg_op_SpaceToBatchND)
    code = clg_cl_fill(c->dev, &c->out[0], &zero, es, clg_node_out_bytes(n, 0));
  for (int64_t b = 0; code == CLG_OK && b < s.blocks; b++) {
    clg_copy_map m;
    clg_copy_map_space_batch(n, &s, b, &m);
    code = cl_copy(c->dev, es, &c->in[0], &c->out[0], &m);
  }
  return code;
}

static clg_code pack_run(const clg_kernel_ctx *c)
{
  int64_t axis = clg_node_attr(c->node, 2)->i;
  int ax = (int)(axis < 0 ? axis + c->node->outs[0].rank : axis);
  for (int k = 0; k < c->node->num_inputs; k++) {
    clg_copy_map m;
    clg_copy_map_part(&c->node->outs[0], ax, k, 1, true, &m);
    clg_code code = cl_copy(c->dev, elem_size(c), &c->in[k], &c->out[0], &m);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

/* Each dim is one fill of one element (the pattern is copied at the enqueue). */
static clg_code shape_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  bool i32 = c->node->outs[0].dtype == CLG_INT32;
  size_t es = i32 ? 4 : 8;
  for (int k = 0; k < x->rank; k++) {
    int32_t v32 = (int32_t)x->dims[k];
    int64_t v64 = x->dims[k];
    clg_block b = c->out[0];
    b.offset += (size_t)k * es;
    clg_code code = clg_cl_fill(c->dev, &b, i32 ? (const void *)&v32 : (const void *)&v64, es, es);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

static clg_code range_run(const clg_kernel_ctx *c)
{
  double start, delta;
  int64_t count;
  clg_code code = clg_range_values(c->node, &start, &delta, &count);
  if (code != CLG_OK || count == 0)
    return code;
  clg_dtype dt = c->node->outs[0].dtype;
  cl_mem ym = clg_cl_mem(&c->out[0]);
  cl_ulong yo = c->out[0].offset / clg_dtype_size(dt), n = (cl_ulong)count;
  cl_int s32 = (cl_int)start, d32 = (cl_int)delta;
  cl_long s64 = (cl_long)start, d64 = (cl_long)delta;
  cl_float sf = (cl_float)start, df = (cl_float)delta;
  cl_double sd = start, dd = delta;
  clg_cl_arg args[5] = {{sizeof ym, &ym}, {sizeof yo, &yo}, {0, NULL}, {0, NULL}, {sizeof n, &n}};
  const clg_cl_text *src = &source;
  const char *kernel = "clg_range_t";
  if (dt == CLG_INT32) {
    args[2] = (clg_cl_arg){sizeof s32, &s32};
    args[3] = (clg_cl_arg){sizeof d32, &d32};
    kernel = "clg_range_i32";
  } else if (dt == CLG_INT64) {
    args[2] = (clg_cl_arg){sizeof s64, &s64};
    args[3] = (clg_cl_arg){sizeof d64, &d64};
    kernel = "clg_range_i64";
  } else if (dt == CLG_FLOAT64) {
    args[2] = (clg_cl_arg){sizeof sd, &sd};
    args[3] = (clg_cl_arg){sizeof dd, &dd};
    src = &typed_source;
  } else {
    args[2] = (clg_cl_arg){sizeof sf, &sf};
    args[3] = (clg_cl_arg){sizeof df, &df};
    src = &typed_source;
  }
  return clg_cl_launch(c->dev, src == &source ? CLG_FLOAT32 : dt, src, kernel, args, 5,
                       (size_t)count);
}

static bool range_supports(const clg_node *n, const clg_device *dev)
{
  return n->outs[0].dtype != CLG_FLOAT64 || dev->info.has_fp64;
}

static clg_code gather_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *p = clg_node_in(n, 0);
  int axis;
  clg_code code = clg_gather_axis(n, &axis);
  if (code != CLG_OK)
    return code;
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (count == 0)
    return CLG_OK;
  cl_ulong inner = 1, nidx = clg_out_count(clg_node_in(n, 1));
  for (int k = axis + 1; k < p->rank; k++)
    inner *= (cl_ulong)p->dims[k];
  cl_long axis_dim = p->dims[axis];
  size_t es = clg_dtype_size(p->dtype), is = clg_dtype_size(clg_node_in(n, 1)->dtype);
  char kernel[32];
  snprintf(kernel, sizeof kernel, "clg_gather%zu_i%d", es, is == 8 ? 64 : 32);
  cl_mem pm = clg_cl_mem(&c->in[0]), im = clg_cl_mem(&c->in[1]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong po = c->in[0].offset / es, io = c->in[1].offset / is, yo = c->out[0].offset / es;
  clg_cl_arg args[] = {{sizeof pm, &pm},      {sizeof po, &po},       {sizeof im, &im},
                       {sizeof io, &io},      {sizeof ym, &ym},       {sizeof yo, &yo},
                       {sizeof nidx, &nidx},  {sizeof inner, &inner}, {sizeof axis_dim, &axis_dim},
                       {sizeof count, &count}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, kernel, args, 10, (size_t)count);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_StridedSlice, {CLG_KIND_OPENCL, NULL, strided_slice_run, NULL, NULL}},
    {&clg_op_Pack, {CLG_KIND_OPENCL, NULL, pack_run, NULL, NULL}},
    {&clg_op_Shape, {CLG_KIND_OPENCL, NULL, shape_run, NULL, NULL}},
    {&clg_op_DepthToSpace, {CLG_KIND_OPENCL, NULL, d2s_run, NULL, NULL}},
    {&clg_op_GatherV2, {CLG_KIND_OPENCL, NULL, gather_run, NULL, NULL}},
    {&clg_op_Range, {CLG_KIND_OPENCL, range_supports, range_run, NULL, NULL}},
    {&clg_op_Tile, {CLG_KIND_OPENCL, NULL, tile_run, NULL, NULL}},
    {&clg_op_StridedSliceGrad, {CLG_KIND_OPENCL, NULL, strided_slice_grad_run, NULL, NULL}},
    {&clg_op_Unpack, {CLG_KIND_OPENCL, NULL, split_run, NULL, NULL}},
    {&clg_op_Split, {CLG_KIND_OPENCL, NULL, split_run, NULL, NULL}},
    {&clg_op_SplitV, {CLG_KIND_OPENCL, NULL, split_run, NULL, NULL}},
    {&clg_op_SpaceToBatchND, {CLG_KIND_OPENCL, NULL, space_batch_run, NULL, NULL}},
    {&clg_op_BatchToSpaceND, {CLG_KIND_OPENCL, NULL, space_batch_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_array_tf2, entries);
