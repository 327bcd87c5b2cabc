/* DepthwiseConv2dNative and its gradients on OpenCL devices: one work-item per output element
 * (of y, dx or df), each a direct loop over its taps (a gather: no atomics). */
#include "backends/opencl/opencl.h"

static const clg_cl_text source = {
    "depthwise",
    "typedef struct clg_dw { long n, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, cout, kdim; "
    "}\n"
    "  clg_dw;\n"
    "__kernel void clg_dw_forward(__global const T *x, ulong xo, __global const T *f, ulong fo,\n"
    "                             __global T *y, ulong yo, ulong count, clg_dw g, long M)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count)\n"
    "    return;\n"
    "  long q = (long)(i % (ulong)g.cout), r = (long)(i / (ulong)g.cout);\n"
    "  long ow = r % g.ow, oh = (r / g.ow) % g.oh, b = r / g.ow / g.oh, ch = q / M;\n"
    "  T s = (T)0;\n"
    "  for (long a = 0; a < g.kh; a++) {\n"
    "    long ih = oh * g.sh - g.pt + a * g.dh;\n"
    "    if (ih < 0 || ih >= g.h)\n"
    "      continue;\n"
    "    for (long e = 0; e < g.kw; e++) {\n"
    "      long iw = ow * g.sw - g.pl + e * g.dw;\n"
    "      if (iw < 0 || iw >= g.w)\n"
    "        continue;\n"
    "      s += x[xo + ((b * g.h + ih) * g.w + iw) * g.c + ch] * f[fo + (a * g.kw + e) * g.cout + "
    "q];\n"
    "    }\n"
    "  }\n"
    "  y[yo + i] = s;\n"
    "}\n"
    "__kernel void clg_dw_input(__global const T *f, ulong fo, __global const T *dy, ulong dyo,\n"
    "                           __global T *dx, ulong dxo, ulong count, clg_dw g, long M)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count)\n"
    "    return;\n"
    "  long ch = (long)(i % (ulong)g.c), r = (long)(i / (ulong)g.c);\n"
    "  long iw = r % g.w, ih = (r / g.w) % g.h, b = r / g.w / g.h;\n"
    "  T s = (T)0;\n"
    "  for (long a = 0; a < g.kh; a++) {\n"
    "    long t = ih + g.pt - a * g.dh;\n"
    "    if (t < 0 || t % g.sh != 0 || t / g.sh >= g.oh)\n"
    "      continue;\n"
    "    long oh = t / g.sh;\n"
    "    for (long e = 0; e < g.kw; e++) {\n"
    "      long u = iw + g.pl - e * g.dw;\n"
    "      if (u < 0 || u % g.sw != 0 || u / g.sw >= g.ow)\n"
    "        continue;\n"
    "      long ow = u / g.sw;\n"
    "      for (long k = 0; k < M; k++)\n"
    "        s += dy[dyo + ((b * g.oh + oh) * g.ow + ow) * g.cout + ch * M + k] *\n"
    "             f[fo + (a * g.kw + e) * g.cout + ch * M + k];\n"
    "    }\n"
    "  }\n"
    "  dx[dxo + i] = s;\n"
    "}\n"
    "__kernel void clg_dw_filter(__global const T *x, ulong xo, __global const T *dy, ulong dyo,\n"
    "                            __global T *df, ulong dfo, ulong count, clg_dw g, long M)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count)\n"
    "    return;\n"
    "  long q = (long)(i % (ulong)g.cout), r = (long)(i / (ulong)g.cout);\n"
    "  long e = r % g.kw, a = r / g.kw, ch = q / M;\n"
    "  T s = (T)0;\n"
    "  for (long b = 0; b < g.n; b++)\n"
    "    for (long oh = 0; oh < g.oh; oh++) {\n"
    "      long ih = oh * g.sh - g.pt + a * g.dh;\n"
    "      if (ih < 0 || ih >= g.h)\n"
    "        continue;\n"
    "      for (long ow = 0; ow < g.ow; ow++) {\n"
    "        long iw = ow * g.sw - g.pl + e * g.dw;\n"
    "        if (iw < 0 || iw >= g.w)\n"
    "          continue;\n"
    "        s += x[xo + ((b * g.h + ih) * g.w + iw) * g.c + ch] *\n"
    "             dy[dyo + ((b * g.oh + oh) * g.ow + ow) * g.cout + q];\n"
    "      }\n"
    "    }\n"
    "  df[dfo + i] = s;\n"
    "}\n"};

/* The layout of clg_dw above (clg_window's fields in its order). */
typedef struct cl_dw {
  cl_long v[16];
} cl_dw;

static clg_code dw_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_window g;
  int64_t mult = 0;
  clg_code code = clg_depthwise_geometry(n, &g, &mult);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (code != CLG_OK || count == 0)
    return code;
  cl_dw w = {{g.n, g.h, g.w, g.c, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl,
              g.cout, g.kdim}};
  cl_long m = mult;
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  const char *kernel = "clg_dw_forward";
  int a = 0, b = 1; /* the float operands */
  if (n->def == &clg_op_DepthwiseConv2dNativeBackpropInput)
    kernel = "clg_dw_input", a = 1, b = 2;
  else if (n->def == &clg_op_DepthwiseConv2dNativeBackpropFilter)
    kernel = "clg_dw_filter", a = 0, b = 2;
  cl_mem am = clg_cl_mem(&c->in[a]), bm = clg_cl_mem(&c->in[b]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong ao = c->in[a].offset / es, bo = c->in[b].offset / es, yo = c->out[0].offset / es;
  clg_cl_arg args[] = {{sizeof am, &am},       {sizeof ao, &ao}, {sizeof bm, &bm},
                       {sizeof bo, &bo},       {sizeof ym, &ym}, {sizeof yo, &yo},
                       {sizeof count, &count}, {sizeof w, &w},   {sizeof m, &m}};
  return clg_cl_launch(c->dev, dt, &source, kernel, args, 9, (size_t)count);
}

static bool dw_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  return t == CLG_FLOAT32 || (t == CLG_FLOAT64 && dev->info.has_fp64);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_DepthwiseConv2dNative, {CLG_KIND_OPENCL, dw_supports, dw_run, NULL, NULL}},
    {&clg_op_DepthwiseConv2dNativeBackpropInput,
     {CLG_KIND_OPENCL, dw_supports, dw_run, NULL, NULL}},
    {&clg_op_DepthwiseConv2dNativeBackpropFilter,
     {CLG_KIND_OPENCL, dw_supports, dw_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_depthwise, entries);
