/* Squeeze, ExpandDims, Slice, Pad, PadV2 and ConcatV2 on OpenCL devices, for elements of any
 * size: buffer copies (none when the output reuses the input), cl/broadcast.cl's strided
 * gather (Slice), one work-item per output element (Pad) and per element of each value
 * (ConcatV2). */
#include <string.h>

#include "backends/opencl/opencl.h"

static clg_code copy_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_out_count(&c->node->outs[0]) * clg_dtype_size(c->node->outs[0].dtype);
  if (!bytes ||
      (clg_cl_mem(&c->out[0]) == clg_cl_mem(&c->in[0]) && c->out[0].offset == c->in[0].offset))
    return CLG_OK;
  return clg_device_copy(c->dev, clg_cl_mem(&c->out[0]), c->out[0].offset, c->dev,
                         clg_cl_mem(&c->in[0]), c->in[0].offset, bytes, NULL, NULL);
}

static clg_code slice_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *o = &c->node->outs[0];
  clg_strided m;
  size_t base;
  clg_code code = clg_slice_map(c->node, &m, &base);
  if (code != CLG_OK || clg_out_count(o) == 0)
    return code;
  size_t es = clg_dtype_size(o->dtype);
  clg_block from = c->in[0];
  from.offset += base * es;
  return clg_cl_gather(c->dev, es, &from, &c->out[0], &m);
}

static const clg_cl_text source = {
    "array_tf",
    "typedef struct clg_pad_map { ulong rank; ulong odims[8]; ulong idims[8]; ulong before[8]; }\n"
    "  clg_pad_map;\n"
    "#define CLG_PAD(name, TE)\\\n"
    "__kernel void name(__global const TE *x, ulong xo, __global const TE *cv, ulong co,\\\n"
    "                   ulong use_cv, __global TE *y, ulong yo, ulong n, clg_pad_map m)\\\n"
    "{\\\n"
    "  ulong i = get_global_id(0);\\\n"
    "  if (i >= n)\\\n"
    "    return;\\\n"
    "  ulong r = i, src = 0, stride = 1;\\\n"
    "  bool inside = true;\\\n"
    "  for (int k = (int)m.rank - 1; k >= 0; k--) {\\\n"
    "    ulong d = r % m.odims[k];\\\n"
    "    r /= m.odims[k];\\\n"
    "    inside = inside && d >= m.before[k] && d - m.before[k] < m.idims[k];\\\n"
    "    src += (d - m.before[k]) * stride;\\\n"
    "    stride *= m.idims[k];\\\n"
    "  }\\\n"
    "  y[yo + i] = inside ? x[xo + src] : use_cv ? cv[co] : (TE)0;\\\n"
    "}\n"
    "CLG_PAD(clg_pad1, uchar)\n"
    "CLG_PAD(clg_pad2, ushort)\n"
    "CLG_PAD(clg_pad4, uint)\n"
    "CLG_PAD(clg_pad8, ulong)\n"
    "#define CLG_CONCAT(name, TE)\\\n"
    "__kernel void name(__global const TE *x, ulong xo, __global TE *y, ulong yo, ulong n,\\\n"
    "                   ulong in_row, ulong out_row)\\\n"
    "{\\\n"
    "  ulong i = get_global_id(0);\\\n"
    "  if (i < n)\\\n"
    "    y[yo + (i / in_row) * out_row + i % in_row] = x[xo + i];\\\n"
    "}\n"
    "CLG_CONCAT(clg_concat1, uchar)\n"
    "CLG_CONCAT(clg_concat2, ushort)\n"
    "CLG_CONCAT(clg_concat4, uint)\n"
    "CLG_CONCAT(clg_concat8, ulong)\n"};

/* The layout of clg_pad_map above. */
typedef struct pad_map {
  cl_ulong rank;
  cl_ulong odims[8];
  cl_ulong idims[8];
  cl_ulong before[8];
} pad_map;

static const char *sized(const char *const names[4], size_t es)
{
  return names[es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3];
}

static clg_code pad_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0), *o = &n->outs[0];
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  cl_ulong count = clg_out_count(o);
  if (code != CLG_OK || count == 0)
    return code;
  static const char *const names[4] = {"clg_pad1", "clg_pad2", "clg_pad4", "clg_pad8"};
  size_t es = clg_dtype_size(o->dtype);
  pad_map m;
  memset(&m, 0, sizeof m);
  m.rank = (cl_ulong)x->rank;
  for (int k = 0; k < x->rank; k++) {
    m.odims[k] = (cl_ulong)o->dims[k];
    m.idims[k] = (cl_ulong)x->dims[k];
    m.before[k] = (cl_ulong)before[k];
  }
  bool has_cv = n->num_inputs > 2;
  const clg_block *cv = has_cv ? &c->in[2] : &c->in[0];
  cl_mem xm = clg_cl_mem(&c->in[0]), cm = clg_cl_mem(cv), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, co = cv->offset / es, use = has_cv,
           yo = c->out[0].offset / es;
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo},       {sizeof cm, &cm},
                       {sizeof co, &co}, {sizeof use, &use},     {sizeof ym, &ym},
                       {sizeof yo, &yo}, {sizeof count, &count}, {sizeof m, &m}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, sized(names, es), args, 9, (size_t)count);
}

/* ConcatV2: one work-item per element of each value. */
static clg_code concat_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *o = &n->outs[0];
  int axis = 0, values = n->num_inputs - 1;
  clg_code code = clg_concat_axis(n, &axis);
  if (code != CLG_OK || clg_out_count(o) == 0)
    return code;
  static const char *const names[4] = {"clg_concat1", "clg_concat2", "clg_concat4", "clg_concat8"};
  size_t es = clg_dtype_size(o->dtype), inner = 1;
  for (int k = axis + 1; k < o->rank; k++)
    inner *= (size_t)o->dims[k];
  cl_ulong out_row = (cl_ulong)o->dims[axis] * inner, col = 0;
  cl_mem ym = clg_cl_mem(&c->out[0]);
  for (int i = 0; i < values && code == CLG_OK; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    cl_ulong in_row = (cl_ulong)x->dims[axis] * inner, count = clg_out_count(x);
    cl_ulong xo = c->in[i].offset / es, yo = c->out[0].offset / es + col;
    cl_mem xm = clg_cl_mem(&c->in[i]);
    col += in_row;
    if (count == 0)
      continue;
    clg_cl_arg args[] = {{sizeof xm, &xm},          {sizeof xo, &xo},
                         {sizeof ym, &ym},          {sizeof yo, &yo},
                         {sizeof count, &count},    {sizeof in_row, &in_row},
                         {sizeof out_row, &out_row}};
    code = clg_cl_launch(c->dev, CLG_FLOAT32, &source, sized(names, es), args, 7, (size_t)count);
  }
  return code;
}

static const clg_cl_text mirror_source = {
    "mirror_pad",
    "typedef struct clg_mp { long rank; long odims[8]; long idims[8]; long before[8];\n"
    "  long after[8]; long sym; } clg_mp;\n"
    "static long clg_mirror_src(long o, long before, long d, long sym)\n"
    "{\n"
    "  long i = o - before;\n"
    "  if (i < 0)\n"
    "    return sym ? -i - 1 : -i;\n"
    "  if (i >= d)\n"
    "    return sym ? 2 * d - 1 - i : 2 * d - 2 - i;\n"
    "  return i;\n"
    "}\n"
    "__kernel void clg_mirror_pad(__global const T *x, ulong xo, __global T *y, ulong yo,\n"
    "                             ulong count, clg_mp m)\n"
    "{\n"
    "  ulong q = get_global_id(0);\n"
    "  if (q >= count)\n"
    "    return;\n"
    "  ulong rem = q, src = 0, stride = 1;\n"
    "  for (int k = (int)m.rank - 1; k >= 0; k--) {\n"
    "    long ok = (long)(rem % (ulong)m.odims[k]);\n"
    "    rem /= (ulong)m.odims[k];\n"
    "    src += (ulong)clg_mirror_src(ok, m.before[k], m.idims[k], m.sym) * stride;\n"
    "    stride *= (ulong)m.idims[k];\n"
    "  }\n"
    "  y[yo + q] = x[xo + src];\n"
    "}\n"
    "__kernel void clg_mirror_pad_grad(__global const T *x, ulong xo, __global T *y, ulong yo,\n"
    "                                  ulong count, clg_mp m)\n"
    "{\n"
    "  ulong q = get_global_id(0);\n"
    "  if (q >= count)\n"
    "    return;\n"
    "  long cand[8][3], nc[8], pick[8];\n"
    "  ulong rem = q;\n"
    "  for (int k = (int)m.rank - 1; k >= 0; k--) {\n"
    "    long i = (long)(rem % (ulong)m.odims[k]), d = m.odims[k], b = m.before[k], n = 0;\n"
    "    rem /= (ulong)m.odims[k];\n"
    "    cand[k][n++] = i + b;\n"
    "    long l = m.sym ? b - i - 1 : b - i;\n"
    "    if (l >= 0 && l < b && (m.sym || i >= 1))\n"
    "      cand[k][n++] = l;\n"
    "    long r = m.sym ? 2 * d - 1 - i : 2 * d - 2 - i;\n"
    "    if (r >= d && r < d + m.after[k])\n"
    "      cand[k][n++] = r + b;\n"
    "    nc[k] = n;\n"
    "    pick[k] = 0;\n"
    "  }\n"
    "  T sum = (T)0;\n"
    "  for (;;) {\n"
    "    ulong off = 0;\n"
    "    for (int k = 0; k < (int)m.rank; k++)\n"
    "      off = off * (ulong)m.idims[k] + (ulong)cand[k][pick[k]];\n"
    "    sum += x[xo + off];\n"
    "    int k = (int)m.rank - 1;\n"
    "    for (; k >= 0; k--) {\n"
    "      if (++pick[k] < nc[k])\n"
    "        break;\n"
    "      pick[k] = 0;\n"
    "    }\n"
    "    if (k < 0)\n"
    "      break;\n"
    "  }\n"
    "  y[yo + q] = sum;\n"
    "}\n"};

/* The layout of clg_mp above. */
typedef struct cl_mp {
  cl_long rank, odims[8], idims[8], before[8], after[8], sym;
} cl_mp;

static clg_code mirror_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0), *o = &n->outs[0];
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  cl_ulong count = clg_out_count(o);
  if (code != CLG_OK || count == 0)
    return code;
  cl_mp m;
  memset(&m, 0, sizeof m);
  m.rank = x->rank;
  m.sym = clg_mirror_symmetric(n);
  for (int k = 0; k < x->rank; k++) {
    m.odims[k] = o->dims[k];
    m.idims[k] = x->dims[k];
    m.before[k] = before[k];
    m.after[k] = after[k];
  }
  size_t es = clg_dtype_size(o->dtype);
  cl_mem xm = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es;
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo},       {sizeof ym, &ym},
                       {sizeof yo, &yo}, {sizeof count, &count}, {sizeof m, &m}};
  return clg_cl_launch(c->dev, o->dtype, &mirror_source,
                       n->def == &clg_op_MirrorPad ? "clg_mirror_pad" : "clg_mirror_pad_grad", args,
                       6, (size_t)count);
}

static bool mirror_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  return t == CLG_FLOAT32 || (t == CLG_FLOAT64 && dev->info.has_fp64) ||
         (n->def == &clg_op_MirrorPad && (t == CLG_INT32 || t == CLG_INT64));
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Squeeze, {CLG_KIND_OPENCL, NULL, copy_run, NULL, NULL}},
    {&clg_op_ExpandDims, {CLG_KIND_OPENCL, NULL, copy_run, NULL, NULL}},
    {&clg_op_Slice, {CLG_KIND_OPENCL, NULL, slice_run, NULL, NULL}},
    {&clg_op_Pad, {CLG_KIND_OPENCL, NULL, pad_run, NULL, NULL}},
    {&clg_op_PadV2, {CLG_KIND_OPENCL, NULL, pad_run, NULL, NULL}},
    {&clg_op_ConcatV2, {CLG_KIND_OPENCL, NULL, concat_run, NULL, NULL}},
    {&clg_op_MirrorPad, {CLG_KIND_OPENCL, mirror_supports, mirror_run, NULL, NULL}},
    {&clg_op_MirrorPadGrad, {CLG_KIND_OPENCL, mirror_supports, mirror_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_array_tf, entries);
