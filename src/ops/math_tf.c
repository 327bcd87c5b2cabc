/* Element-wise math of TensorFlow graphs and ONNX (issues 23, 24), as tf.math and tf.nn define
 * them: Erf, Ceil, Round (half to even: 2.5 -> 2, -0.5 -> -0), Reciprocal (1 / x), Sin, Cos,
 * Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Softplus (log(1 + e^x), returning x
 * and e^x where TensorFlow's thresholds do), Softsign (x / (1 + |x|)), Elu (x > 0 ? x :
 * e^x - 1) and Selu (scale * (x > 0 ? x : alpha * (e^x - 1)), TensorFlow's constants). IEEE
 * results at the edges (NaN outside a domain, NaN stays NaN). Float everywhere, double on the
 * host and on devices with fp64; the output may reuse the input's buffer. Gradients where they
 * are a product with a known op: Sin, Cos, Reciprocal, Softplus, Elu; the others have none
 * here. Kernels: backends/host/math.c, backends/opencl/math.c (clg_unop from CLG_UNOP_ERF). */
#include "graph/graph.h"
#include "ops/ops.h"

static clg_output mul(clg_graph *g, clg_output a, clg_output b)
{
  return clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){a, b}, 0, NULL);
}

/* Sin: dy * cos(x). Cos: dy * -sin(x). */
static clg_code sin_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = mul(g, dy[0], clg_grad_build(g, &clg_op_Cos, 1, &n->inputs[0], 0, NULL));
  return clg_graph_status(g);
}

static clg_code cos_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output s = clg_grad_build(g, &clg_op_Sin, 1, &n->inputs[0], 0, NULL);
  dx[0] = mul(g, dy[0], clg_grad_build(g, &clg_op_Neg, 1, &s, 0, NULL));
  return clg_graph_status(g);
}

/* TensorFlow's ReciprocalGrad from the output: -dy * y^2. */
static clg_code reciprocal_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output y = clg_out(n, 0);
  clg_output y2 = clg_grad_build(g, &clg_op_Square, 1, &y, 0, NULL);
  clg_output p = mul(g, dy[0], y2);
  dx[0] = clg_grad_build(g, &clg_op_Neg, 1, &p, 0, NULL);
  return clg_graph_status(g);
}

/* TensorFlow's SoftplusGrad: dy * sigmoid(x). */
static clg_code softplus_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = mul(g, dy[0], clg_grad_build(g, &clg_op_Sigmoid, 1, &n->inputs[0], 0, NULL));
  return clg_graph_status(g);
}

/* TensorFlow's EluGrad from the output: dy * (y + 1) where y < 0, else dy. */
static clg_code elu_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output y = clg_out(n, 0);
  clg_dtype t = n->outs[0].dtype;
  clg_output neg =
      clg_grad_build(g, &clg_op_Less, 2, (clg_output[]){y, clg_grad_scalar(g, t, 0.0)}, 0, NULL);
  clg_output y1 =
      clg_grad_build(g, &clg_op_Add, 2, (clg_output[]){y, clg_grad_scalar(g, t, 1.0)}, 0, NULL);
  dx[0] =
      clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){neg, mul(g, dy[0], y1), dy[0]}, 0, NULL);
  return clg_graph_status(g);
}

#define MATH_TF_DEF(OP, GRAD)                                                                      \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 1,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = clg_attrs_T,                                                                        \
      .infer = clg_infer_elementwise_unary,                                                        \
      .inplace = 0,                                                                                \
      .grad = GRAD,                                                                                \
  };
MATH_TF_DEF(Erf, NULL)
MATH_TF_DEF(Ceil, NULL)
MATH_TF_DEF(Round, NULL)
MATH_TF_DEF(Reciprocal, reciprocal_grad)
MATH_TF_DEF(Sin, sin_grad)
MATH_TF_DEF(Cos, cos_grad)
MATH_TF_DEF(Tan, NULL)
MATH_TF_DEF(Asin, NULL)
MATH_TF_DEF(Acos, NULL)
MATH_TF_DEF(Atan, NULL)
MATH_TF_DEF(Sinh, NULL)
MATH_TF_DEF(Cosh, NULL)
MATH_TF_DEF(Asinh, NULL)
MATH_TF_DEF(Acosh, NULL)
MATH_TF_DEF(Atanh, NULL)
MATH_TF_DEF(Softplus, softplus_grad)
MATH_TF_DEF(Softsign, NULL)
MATH_TF_DEF(Elu, elu_grad)
MATH_TF_DEF(Selu, NULL)

static clg_node *build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, def, name, 1, &in, 0, NULL);
}

#define MATH_TF_BUILDER(FN, OP)                                                                    \
  clg_node *FN(clg_graph *g, const char *name, clg_node *x)                                        \
  {                                                                                                \
    return build(g, &clg_op_##OP, name, x);                                                        \
  }
MATH_TF_BUILDER(clg_erf, Erf)
MATH_TF_BUILDER(clg_ceil, Ceil)
MATH_TF_BUILDER(clg_round, Round)
MATH_TF_BUILDER(clg_reciprocal, Reciprocal)
MATH_TF_BUILDER(clg_sin, Sin)
MATH_TF_BUILDER(clg_cos, Cos)
MATH_TF_BUILDER(clg_tan, Tan)
MATH_TF_BUILDER(clg_asin, Asin)
MATH_TF_BUILDER(clg_acos, Acos)
MATH_TF_BUILDER(clg_atan, Atan)
MATH_TF_BUILDER(clg_sinh, Sinh)
MATH_TF_BUILDER(clg_cosh, Cosh)
MATH_TF_BUILDER(clg_asinh, Asinh)
MATH_TF_BUILDER(clg_acosh, Acosh)
MATH_TF_BUILDER(clg_atanh, Atanh)
MATH_TF_BUILDER(clg_softplus, Softplus)
MATH_TF_BUILDER(clg_softsign, Softsign)
MATH_TF_BUILDER(clg_elu, Elu)
MATH_TF_BUILDER(clg_selu, Selu)
