/* ResizeBilinear and ResizeBilinearGrad on OpenCL devices, in float as TensorFlow's: one
 * work-item per output element; the gradient gathers, per input element, the outputs whose
 * rows and columns weigh it (the rows' weights first, so most rows are skipped cheaply). T is
 * the images' type; the arithmetic is float. */
#include "backends/opencl/opencl.h"

static const clg_cl_text source = {
    "resize",
    "typedef struct clg_rs { long n, h, w, c, oh, ow; float hs, ws; int hp; } clg_rs;\n"
    "static float clg_src(int hp, long i, float scale)\n"
    "{\n"
    "  return hp ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;\n"
    "}\n"
    "static void clg_weights(int hp, long i, float scale, long in, long *lo, long *hi,\n"
    "                        float *lerp)\n"
    "{\n"
    "  float s = clg_src(hp, i, scale), f = floor(s);\n"
    "  long fl = (long)f, ce = (long)ceil(s);\n"
    "  *lo = fl > 0 ? fl : 0;\n"
    "  *hi = ce < in - 1 ? ce : in - 1;\n"
    "  *lerp = s - f;\n"
    "}\n"
    "__kernel void clg_resize_bilinear(__global const T *x, ulong xo, __global float *y, ulong "
    "yo,\n"
    "                                  ulong count, clg_rs r)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count)\n"
    "    return;\n"
    "  long ch = (long)(i % (ulong)r.c), q = (long)(i / (ulong)r.c);\n"
    "  long ox = q % r.ow, oy = (q / r.ow) % r.oh, b = q / r.ow / r.oh;\n"
    "  long ylo, yhi, xlo, xhi;\n"
    "  float yl, xl;\n"
    "  clg_weights(r.hp, oy, r.hs, r.h, &ylo, &yhi, &yl);\n"
    "  clg_weights(r.hp, ox, r.ws, r.w, &xlo, &xhi, &xl);\n"
    "  __global const T *top = x + xo + (b * r.h + ylo) * r.w * r.c;\n"
    "  __global const T *bot = x + xo + (b * r.h + yhi) * r.w * r.c;\n"
    "  float tl = (float)top[xlo * r.c + ch], tr = (float)top[xhi * r.c + ch];\n"
    "  float bl = (float)bot[xlo * r.c + ch], br = (float)bot[xhi * r.c + ch];\n"
    "  float t = tl + (tr - tl) * xl, bo = bl + (br - bl) * xl;\n"
    "  y[yo + i] = t + (bo - t) * yl;\n"
    "}\n"
    "__kernel void clg_resize_bilinear_grad(__global const float *dy, ulong dyo, __global T *dx,\n"
    "                                       ulong dxo, ulong count, clg_rs r)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count)\n"
    "    return;\n"
    "  long ch = (long)(i % (ulong)r.c), q = (long)(i / (ulong)r.c);\n"
    "  long ix = q % r.w, iy = (q / r.w) % r.h, b = q / r.w / r.h;\n"
    "  T s = (T)0;\n"
    "  for (long oy = 0; oy < r.oh; oy++) {\n"
    "    long ylo, yhi;\n"
    "    float yl;\n"
    "    clg_weights(r.hp, oy, r.hs, r.h, &ylo, &yhi, &yl);\n"
    "    if (ylo != iy && yhi != iy)\n"
    "      continue;\n"
    "    for (long ox = 0; ox < r.ow; ox++) {\n"
    "      long xlo, xhi;\n"
    "      float xl;\n"
    "      clg_weights(r.hp, ox, r.ws, r.w, &xlo, &xhi, &xl);\n"
    "      if (xlo != ix && xhi != ix)\n"
    "        continue;\n"
    "      float g = dy[dyo + ((b * r.oh + oy) * r.ow + ox) * r.c + ch];\n"
    "      float wy0 = 1.0f - yl, wx0 = 1.0f - xl;\n"
    "      if (ylo == iy && xlo == ix)\n"
    "        s += (T)(g * wy0 * wx0);\n"
    "      if (ylo == iy && xhi == ix)\n"
    "        s += (T)(g * wy0 * xl);\n"
    "      if (yhi == iy && xlo == ix)\n"
    "        s += (T)(g * yl * wx0);\n"
    "      if (yhi == iy && xhi == ix)\n"
    "        s += (T)(g * yl * xl);\n"
    "    }\n"
    "  }\n"
    "  dx[dxo + i] = s;\n"
    "}\n"};

/* ResizeNearestNeighbor: one work-item per output element, moved as an unsigned integer of
 * its size (one float build serves every dtype); the source index as
 * clg_resize_nearest_source, in float. */
static const clg_cl_text nearest_source = {
    "resize_nearest",
    "typedef struct clg_rs { long n, h, w, c, oh, ow; float hs, ws; int hp; int align; } "
    "clg_rs;\n"
    "static long clg_near(const clg_rs *r, long i, float scale, long in)\n"
    "{\n"
    "  float s = r->hp ? ((float)i + 0.5f) * scale : (float)i * scale;\n"
    "  long v = (long)(r->align ? round(s) : floor(s));\n"
    "  v = v < in - 1 ? v : in - 1;\n"
    "  return r->hp && v < 0 ? 0 : v;\n"
    "}\n"
    "#define NEAREST(name, E)                                                           \\\n"
    "__kernel void name(__global const E *x, ulong xo, __global E *y, ulong yo,         \\\n"
    "                   ulong count, clg_rs r)                                          \\\n"
    "{                                                                                 \\\n"
    "  ulong i = get_global_id(0);                                                     \\\n"
    "  if (i >= count)                                                                 \\\n"
    "    return;                                                                       \\\n"
    "  long ch = (long)(i % (ulong)r.c), q = (long)(i / (ulong)r.c);                   \\\n"
    "  long ox = q % r.ow, oy = (q / r.ow) % r.oh, b = q / r.ow / r.oh;                \\\n"
    "  long iy = clg_near(&r, oy, r.hs, r.h), ix = clg_near(&r, ox, r.ws, r.w);        \\\n"
    "  y[yo + i] = x[xo + ((b * r.h + iy) * r.w + ix) * r.c + ch];                     \\\n"
    "}\n"
    "NEAREST(clg_nearest1, uchar)\n"
    "NEAREST(clg_nearest2, ushort)\n"
    "NEAREST(clg_nearest4, uint)\n"
    "NEAREST(clg_nearest8, ulong)\n"};

/* The layout of clg_rs above. */
typedef struct cl_rs {
  cl_long n, h, w, c, oh, ow;
  cl_float hs, ws;
  cl_int half;
  cl_int align; /* nearest's; padding for the bilinear kernels */
} cl_rs;

static clg_code resize_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_resize r;
  clg_resize_geometry(n, &r);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (count == 0)
    return CLG_OK;
  cl_rs rs = {r.n, r.h, r.w, r.c, r.oh, r.ow, r.hs, r.ws, r.half_pixel, 0};
  bool fwd = n->def == &clg_op_ResizeBilinear;
  clg_dtype img = fwd ? clg_node_in(n, 0)->dtype : n->outs[0].dtype;
  size_t ies = clg_dtype_size(img), fes = sizeof(float);
  cl_mem am = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong ao = c->in[0].offset / (fwd ? ies : fes), yo = c->out[0].offset / (fwd ? fes : ies);
  clg_cl_arg args[] = {{sizeof am, &am}, {sizeof ao, &ao},       {sizeof ym, &ym},
                       {sizeof yo, &yo}, {sizeof count, &count}, {sizeof rs, &rs}};
  return clg_cl_launch(c->dev, img, &source,
                       fwd ? "clg_resize_bilinear" : "clg_resize_bilinear_grad", args, 6,
                       (size_t)count);
}

static clg_code nearest_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_resize r;
  clg_resize_geometry(n, &r);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (count == 0)
    return CLG_OK;
  cl_rs rs = {r.n, r.h, r.w, r.c, r.oh, r.ow, r.hs, r.ws, r.half_pixel, r.align};
  size_t es = clg_dtype_size(n->outs[0].dtype);
  static const char *const names[9] = {
      NULL, "clg_nearest1", "clg_nearest2", NULL, "clg_nearest4", NULL, NULL, NULL, "clg_nearest8"};
  cl_mem xm = clg_cl_mem(&c->in[0]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es;
  clg_cl_arg args[] = {{sizeof xm, &xm}, {sizeof xo, &xo},       {sizeof ym, &ym},
                       {sizeof yo, &yo}, {sizeof count, &count}, {sizeof rs, &rs}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &nearest_source, names[es], args, 6, (size_t)count);
}

static bool resize_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->def == &clg_op_ResizeBilinear ? clg_node_in(n, 0)->dtype : n->outs[0].dtype;
  return t == CLG_FLOAT32 || (t == CLG_FLOAT64 && dev->info.has_fp64);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_ResizeBilinear, {CLG_KIND_OPENCL, resize_supports, resize_run, NULL, NULL}},
    {&clg_op_ResizeBilinearGrad, {CLG_KIND_OPENCL, resize_supports, resize_run, NULL, NULL}},
    {&clg_op_ResizeNearestNeighbor, {CLG_KIND_OPENCL, NULL, nearest_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_resize, entries);
