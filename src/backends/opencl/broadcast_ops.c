/* SelectV2 (a three-input strided kernel) and BroadcastTo (cl/broadcast.cl's gather) on OpenCL
 * devices, for elements of 1, 2, 4 or 8 bytes. */
#include <string.h>

#include "backends/opencl/opencl.h"

/* The layout of clg_select_map as the kernel takes it. */
typedef struct clg_cl_select_map {
  cl_ulong rank;
  cl_ulong dims[CLG_MAX_RANK];
  cl_ulong s[3][CLG_MAX_RANK];
} clg_cl_select_map;

/* Built as the float program; T is unused (elements are moved as unsigned integers). */
static const clg_cl_text source = {
    "SelectV2",
    "typedef struct { ulong rank; ulong dims[8]; ulong s[3][8]; } clg_select_map;\n"
    "#define CLG_SELECT_V2(name, TE)                                                        \\\n"
    "  __kernel void name(__global const uchar *c, ulong co, __global const TE *t, ulong to, \\\n"
    "                     __global const TE *e, ulong eo, __global TE *y, ulong yo, ulong n, \\\n"
    "                     clg_select_map m)                                                  \\\n"
    "  {                                                                                     \\\n"
    "    ulong i = get_global_id(0);                                                         \\\n"
    "    if (i >= n)                                                                         \\\n"
    "      return;                                                                           \\\n"
    "    ulong ic = 0, it = 0, ie = 0, r = i;                                                \\\n"
    "    for (int k = (int)m.rank - 1; k >= 0; k--) {                                        \\\n"
    "      ulong d = r % m.dims[k];                                                          \\\n"
    "      r /= m.dims[k];                                                                   \\\n"
    "      ic += d * m.s[0][k];                                                              \\\n"
    "      it += d * m.s[1][k];                                                              \\\n"
    "      ie += d * m.s[2][k];                                                              \\\n"
    "    }                                                                                   \\\n"
    "    y[yo + i] = c[co + ic] ? t[to + it] : e[eo + ie];                                   \\\n"
    "  }\n"
    "CLG_SELECT_V2(clg_select_v2_1, uchar)\n"
    "CLG_SELECT_V2(clg_select_v2_2, ushort)\n"
    "CLG_SELECT_V2(clg_select_v2_4, uint)\n"
    "CLG_SELECT_V2(clg_select_v2_8, ulong)\n"};

static clg_code select_v2_run(const clg_kernel_ctx *c)
{
  static const char *const names[9] = {
      NULL, "clg_select_v2_1", "clg_select_v2_2", NULL, "clg_select_v2_4", NULL, NULL,
      NULL, "clg_select_v2_8"};
  cl_ulong n = clg_out_count(&c->node->outs[0]);
  if (n == 0)
    return CLG_OK;
  clg_select_map m;
  clg_select_v2_map(c->node, &m);
  clg_cl_select_map cm;
  memset(&cm, 0, sizeof cm);
  cm.rank = (cl_ulong)m.rank;
  for (int k = 0; k < m.rank; k++) {
    cm.dims[k] = m.dims[k];
    for (int q = 0; q < 3; q++)
      cm.s[q][k] = m.s[q][k];
  }
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  cl_ulong co = c->in[0].offset, to = c->in[1].offset / es, eo = c->in[2].offset / es,
           yo = c->out[0].offset / es;
  cl_mem cmem = clg_cl_mem(&c->in[0]), tm = clg_cl_mem(&c->in[1]), em = clg_cl_mem(&c->in[2]),
         ym = clg_cl_mem(&c->out[0]);
  clg_cl_arg args[] = {{sizeof cmem, &cmem}, {sizeof co, &co}, {sizeof tm, &tm}, {sizeof to, &to},
                       {sizeof em, &em},     {sizeof eo, &eo}, {sizeof ym, &ym}, {sizeof yo, &yo},
                       {sizeof n, &n},       {sizeof cm, &cm}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, names[es], args, 10, (size_t)n);
}

static clg_code broadcast_to_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0), *o = &c->node->outs[0];
  if (clg_out_count(o) == 0)
    return CLG_OK;
  clg_strided m;
  clg_strided_broadcast(&m, x->rank, x->dims, 0, NULL, o->rank, o->dims);
  return clg_cl_gather(c->dev, clg_dtype_size(o->dtype), &c->in[0], &c->out[0], &m);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_SelectV2, {CLG_KIND_OPENCL, clg_select_supports, select_v2_run, NULL, NULL}},
    {&clg_op_BroadcastTo, {CLG_KIND_OPENCL, clg_select_supports, broadcast_to_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_broadcast_ops, entries);
