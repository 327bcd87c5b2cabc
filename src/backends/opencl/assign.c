/* Assign, AssignAdd, AssignSub, ApplyGradientDescent and ApplyMomentum on OpenCL devices:
 * in place on the variable's buffer (in[0], and ApplyMomentum's accum in[1]); Assign is a
 * copy through the device's table. */
#include "backends/opencl/opencl.h"


static size_t count_of(const clg_kernel_ctx *c) { return clg_out_count(&c->node->outs[0]); }

/* No contraction into fma, so that the devices compute what the host loops compute. */
static const clg_cl_text updates_source = {
    "updates",
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void assign_add(__global T *v, ulong vo, __global const T *x, ulong xo, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] += x[xo + i]; }\n"
    "__kernel void assign_sub(__global T *v, ulong vo, __global const T *x, ulong xo, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] -= x[xo + i]; }\n"
    "__kernel void apply_gd(__global T *v, ulong vo, __global const T *a, ulong ao,\n"
    "                       __global const T *d, ulong dof, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] -= a[ao] * d[dof + i]; }\n"
    "__kernel void apply_momentum(__global T *v, ulong vo, __global T *acc, ulong aco,\n"
    "                             __global const T *lr, ulong lro, __global const T *g,\n"
    "                             ulong go, __global const T *m, ulong mo, ulong n, int nest)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  T a = acc[aco + i] * m[mo] + g[go + i];\n"
    "  acc[aco + i] = a;\n"
    "  if (nest) v[vo + i] -= g[go + i] * lr[lro] + a * m[mo] * lr[lro];\n"
    "  else v[vo + i] -= lr[lro] * a;\n"
    "}\n"};

static clg_code assign_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  /* v = v: one block (OpenCL refuses a copy onto itself: CL_MEM_COPY_OVERLAP). */
  if (!bytes ||
      (clg_cl_mem(&c->in[0]) == clg_cl_mem(&c->in[1]) && c->in[0].offset == c->in[1].offset))
    return CLG_OK;
  clg_event *done = NULL;
  clg_code code = clg_device_ops_of(c->dev)->copy_from_peer(c->dev, &c->in[0], c->dev, &c->in[1],
                                                            bytes, 0, NULL, &done);
  clg_event_release(done);
  return code;
}

/* Launches kernel `name` over the variable with blocks in[0..nblocks) as (mem, offset)
 * pairs, then extra arguments. */
static clg_code update_run(const clg_kernel_ctx *c, const char *name, int nblocks, int extra)
{
  size_t count = count_of(c);
  if (!count)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  cl_ulong off[5], n = count;
  cl_mem mem[5];
  cl_int nest = extra;
  clg_cl_arg args[12];
  int k = 0;
  for (int i = 0; i < nblocks; i++) {
    off[i] = c->in[i].offset / es;
    mem[i] = clg_cl_mem(&c->in[i]);
    args[k++] = (clg_cl_arg){sizeof mem[i], &mem[i]};
    args[k++] = (clg_cl_arg){sizeof off[i], &off[i]};
  }
  args[k++] = (clg_cl_arg){sizeof n, &n};
  if (nblocks == 5)
    args[k++] = (clg_cl_arg){sizeof nest, &nest};
  return clg_cl_launch(c->dev, dt, &updates_source, name, args, k, count);
}

static clg_code assign_add_run(const clg_kernel_ctx *c)
{
  return update_run(c, "assign_add", 2, 0);
}
static clg_code assign_sub_run(const clg_kernel_ctx *c)
{
  return update_run(c, "assign_sub", 2, 0);
}
static clg_code apply_gd_run(const clg_kernel_ctx *c) { return update_run(c, "apply_gd", 3, 0); }
static clg_code apply_momentum_run(const clg_kernel_ctx *c)
{
  return update_run(c, "apply_momentum", 5, c->node->attrs[2].b);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Assign, {CLG_KIND_OPENCL, NULL, assign_run, NULL, NULL}},
    {&clg_op_AssignAdd, {CLG_KIND_OPENCL, clg_kernel_float_or_double, assign_add_run, NULL, NULL}},
    {&clg_op_AssignSub, {CLG_KIND_OPENCL, clg_kernel_float_or_double, assign_sub_run, NULL, NULL}},
    {&clg_op_ApplyGradientDescent,
     {CLG_KIND_OPENCL, clg_kernel_float_or_double, apply_gd_run, NULL, NULL}},
    {&clg_op_ApplyMomentum,
     {CLG_KIND_OPENCL, clg_kernel_float_or_double, apply_momentum_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_assign, entries);
