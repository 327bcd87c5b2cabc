/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg and ops/math_tf.c's ops on OpenCL devices: OpenCL
 * C's built-ins element-wise, one program per op, the host's formulas. */
#include "backends/opencl/opencl.h"

/* Constants as a float pair (hi + lo): a double program gets them to ~1e-15, and no double
 * literal reaches a device without fp64. SELU's scale and scale * alpha. */
#define SELU_SCALE "((T)0x1.0cfabep+0f + (T)-0x1.2adddap-25f)"
#define SELU_SCALE_ALPHA "((T)0x1.c212ccp+0f + (T)0x1.903c0cp-26f)"
/* Softplus's threshold log(eps) + 2 of T (math_tf.c). */
#define SOFTPLUS_TH "(log(sizeof(T) == 8 ? (T)0x1p-52f : (T)0x1p-23f) + (T)2)"

/* Indexed by clg_unop. */
static const clg_cl_text sources[CLG_UNOP_COUNT] = {
    {"Exp", "T clg_op(T x) { return exp(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Log", "T clg_op(T x) { return log(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Sqrt", "T clg_op(T x) { return sqrt(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Rsqrt", "T clg_op(T x) { return (T)1 / sqrt(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Square", "T clg_op(T x) { return x * x; }\n" CLG_CL_UNARY_TEMPLATE},
    {"Floor", "T clg_op(T x) { return floor(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Neg", "T clg_op(T x) { return -x; }\n" CLG_CL_UNARY_TEMPLATE},
    {"Erf", "T clg_op(T x) { return erf(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Ceil", "T clg_op(T x) { return ceil(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Round", "T clg_op(T x) { return rint(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Reciprocal", "T clg_op(T x) { return (T)1 / x; }\n" CLG_CL_UNARY_TEMPLATE},
    {"Sin", "T clg_op(T x) { return sin(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Cos", "T clg_op(T x) { return cos(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Tan", "T clg_op(T x) { return tan(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Asin", "T clg_op(T x) { return asin(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Acos", "T clg_op(T x) { return acos(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Atan", "T clg_op(T x) { return atan(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Sinh", "T clg_op(T x) { return sinh(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Cosh", "T clg_op(T x) { return cosh(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Asinh", "T clg_op(T x) { return asinh(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Acosh", "T clg_op(T x) { return acosh(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Atanh", "T clg_op(T x) { return atanh(x); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Softplus", "T clg_op(T x) { T th = " SOFTPLUS_TH "; return x > -th ? x : x < th ? exp(x) : "
                 "log1p(exp(x)); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Softsign", "T clg_op(T x) { return x / ((T)1 + fabs(x)); }\n" CLG_CL_UNARY_TEMPLATE},
    {"Elu", "T clg_op(T x) { return x < (T)0 ? expm1(x) : x; }\n" CLG_CL_UNARY_TEMPLATE},
    {"Selu", "T clg_op(T x) { return x < (T)0 ? " SELU_SCALE_ALPHA " * expm1(x) : " SELU_SCALE
             " * x; }\n" CLG_CL_UNARY_TEMPLATE}};

static clg_code math_run(const clg_kernel_ctx *c)
{
  return clg_cl_unary(c->dev, &sources[clg_unop_of(c->node)], c->node->outs[0].dtype, &c->in[0],
                      &c->out[0], clg_out_count(&c->node->outs[0]));
}

#define ENTRY(OP)                                                                                  \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_OPENCL, clg_kernel_float_or_double, math_run, NULL, NULL }            \
  }
static const clg_kernel_entry entries[] = {CLG_UNOP_OPS(ENTRY)};
CLG_KERNEL_SET(clg_opencl_kernels_math, entries);
