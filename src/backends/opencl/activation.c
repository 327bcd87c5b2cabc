/* Sigmoid, Tanh, Relu6, LeakyRelu, Abs, Sign and their gradient ops on OpenCL devices: one
 * work-item per element, the host's formulas. In place allowed. */
#include "backends/opencl/opencl.h"

static const clg_cl_text source = {
    "activation",
    "#define CLG_ACT1(name, EXPR)\\\n"
    "__kernel void name(__global const T *a, ulong ao, __global T *y, ulong yo, ulong n, T "
    "alpha)\\\n"
    "{ ulong i = get_global_id(0); if (i < n) { T v = a[ao + i]; y[yo + i] = EXPR; } }\n"
    "#define CLG_ACT2(name, EXPR)\\\n"
    "__kernel void name(__global const T *a, ulong ao, __global const T *b, ulong bo,\\\n"
    "                   __global T *y, ulong yo, ulong n, T alpha)\\\n"
    "{ ulong i = get_global_id(0); if (i < n) { T v = a[ao + i], w = b[bo + i]; y[yo + i] = EXPR; "
    "} }\n"
    "CLG_ACT1(clg_sigmoid, (T)1 / ((T)1 + exp(-v)))\n"
    "CLG_ACT1(clg_tanh, tanh(v))\n"
    "CLG_ACT1(clg_relu6, v < (T)0 ? (T)0 : v > (T)6 ? (T)6 : v)\n"
    "CLG_ACT1(clg_leaky, v > (T)0 ? v : v * alpha)\n"
    "CLG_ACT1(clg_abs, fabs(v))\n"
    "CLG_ACT1(clg_sign, v > (T)0 ? (T)1 : v < (T)0 ? (T)-1 : v)\n"
    "CLG_ACT2(clg_sigmoid_grad, w * (v * ((T)1 - v)))\n"
    "CLG_ACT2(clg_tanh_grad, w * ((T)1 - v * v))\n"
    "CLG_ACT2(clg_relu6_grad, w > (T)0 && w < (T)6 ? v : (T)0)\n"
    "CLG_ACT2(clg_leaky_grad, w > (T)0 ? v : v * alpha)\n"};

static const char *kernel_of(const clg_node *n)
{
  const clg_op_def *d = n->def;
  return d == &clg_op_Sigmoid       ? "clg_sigmoid"
         : d == &clg_op_Tanh        ? "clg_tanh"
         : d == &clg_op_Relu6       ? "clg_relu6"
         : d == &clg_op_LeakyRelu   ? "clg_leaky"
         : d == &clg_op_Abs         ? "clg_abs"
         : d == &clg_op_Sign        ? "clg_sign"
         : d == &clg_op_SigmoidGrad ? "clg_sigmoid_grad"
         : d == &clg_op_TanhGrad    ? "clg_tanh_grad"
         : d == &clg_op_Relu6Grad   ? "clg_relu6_grad"
                                    : "clg_leaky_grad";
}

static clg_code act_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (count == 0)
    return CLG_OK;
  bool leaky = n->def == &clg_op_LeakyRelu || n->def == &clg_op_LeakyReluGrad;
  double alpha = leaky ? clg_node_attr(n, 1)->f : 0;
  float alpha_f = (float)alpha;
  cl_mem mem[3];
  cl_ulong off[3];
  int k = 0;
  for (int i = 0; i < n->num_inputs; i++, k++) {
    mem[k] = clg_cl_mem(&c->in[i]);
    off[k] = c->in[i].offset / es;
  }
  mem[k] = clg_cl_mem(&c->out[0]);
  off[k] = c->out[0].offset / es;
  clg_cl_arg args[8];
  int na = 0;
  for (int i = 0; i <= k; i++) {
    args[na++] = (clg_cl_arg){sizeof(cl_mem), &mem[i]};
    args[na++] = (clg_cl_arg){sizeof(cl_ulong), &off[i]};
  }
  args[na++] = (clg_cl_arg){sizeof count, &count};
  args[na++] = dt == CLG_FLOAT64 ? (clg_cl_arg){sizeof alpha, &alpha}
                                 : (clg_cl_arg){sizeof alpha_f, &alpha_f};
  return clg_cl_launch(c->dev, dt, &source, kernel_of(n), args, na, (size_t)count);
}

#define ENTRY(OP)                                                                                  \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_OPENCL, clg_kernel_float_or_double, act_run, NULL, NULL }             \
  }
static const clg_kernel_entry entries[] = {
    ENTRY(Sigmoid), ENTRY(Tanh),        ENTRY(Relu6),    ENTRY(LeakyRelu), ENTRY(Abs),
    ENTRY(Sign),    ENTRY(SigmoidGrad), ENTRY(TanhGrad), ENTRY(Relu6Grad), ENTRY(LeakyReluGrad),
};
CLG_KERNEL_SET(clg_opencl_kernels_activation, entries);
