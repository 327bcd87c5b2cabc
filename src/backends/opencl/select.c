/* Select on OpenCL devices: the chosen element's bytes, for elements of 1, 2, 4 or 8 bytes. */
#include "backends/opencl/opencl.h"

/* Built as the float program; T is unused (elements are moved as unsigned integers). */
static const clg_cl_text select_source = {
    "Select",
    "#define CLG_SELECT(name, TE)                                                          \\\n"
    "  __kernel void name(__global const uchar *c, ulong co, __global const TE *t, ulong to, \\\n"
    "                     __global const TE *e, ulong eo, __global TE *y, ulong yo, ulong n, \\\n"
    "                     ulong span)                                                      \\\n"
    "  {                                                                                   \\\n"
    "    ulong i = get_global_id(0);                                                       \\\n"
    "    if (i < n)                                                                        \\\n"
    "      y[yo + i] = c[co + i / span] ? t[to + i] : e[eo + i];                           \\\n"
    "  }\n"
    "CLG_SELECT(clg_select1, uchar)\n"
    "CLG_SELECT(clg_select2, ushort)\n"
    "CLG_SELECT(clg_select4, uint)\n"
    "CLG_SELECT(clg_select8, ulong)\n"};

static clg_code select_run(const clg_kernel_ctx *c)
{
  static const char *const names[9] = {
      NULL, "clg_select1", "clg_select2", NULL, "clg_select4", NULL, NULL, NULL, "clg_select8"};
  cl_ulong n = clg_out_count(&c->node->outs[0]);
  if (n == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  cl_ulong co = c->in[0].offset, to = c->in[1].offset / es, eo = c->in[2].offset / es,
           yo = c->out[0].offset / es, span = clg_select_span(c->node);
  cl_mem cm = clg_cl_mem(&c->in[0]), tm = clg_cl_mem(&c->in[1]), em = clg_cl_mem(&c->in[2]),
         ym = clg_cl_mem(&c->out[0]);
  clg_cl_arg args[] = {{sizeof cm, &cm}, {sizeof co, &co},    {sizeof tm, &tm}, {sizeof to, &to},
                       {sizeof em, &em}, {sizeof eo, &eo},    {sizeof ym, &ym}, {sizeof yo, &yo},
                       {sizeof n, &n},   {sizeof span, &span}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &select_source, names[es], args, 10, (size_t)n);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Select, {CLG_KIND_OPENCL, clg_select_supports, select_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_select, entries);
