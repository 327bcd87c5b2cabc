/* Sigmoid, Tanh, Relu6, LeakyRelu, Abs and Sign, element-wise (tf.sigmoid, tf.tanh,
 * tf.nn.relu6, tf.nn.leaky_relu, tf.abs, tf.sign), and the gradient ops TensorFlow builds for
 * them: SigmoidGrad(y, dy) = dy * y * (1 - y), TanhGrad(y, dy) = dy * (1 - y^2) (both from the
 * output, as TensorFlow's), Relu6Grad(gradients, features) = gradients where 0 < features < 6,
 * LeakyReluGrad(gradients, features) = gradients where features > 0, else alpha * gradients.
 * NaN stays NaN through the activations, as in TensorFlow. Float everywhere, double on the host
 * and on devices with fp64; outputs may reuse input 0's buffer.
 * Defined as math.c's unary ops are (ops.h's CLG_UNARY_DEF and CLG_OP_DEF1).
 * Kernels: backends/host/activation.c, backends/opencl/activation.c. */
#include "graph/graph.h"
#include "ops/ops.h"

static const clg_attr_def leaky_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "alpha", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 0.2},
};

/* The gradient ops: two inputs of one dtype and shape. */
static clg_code infer_pair(clg_node *n)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  bool same = a->dtype == b->dtype && a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++)
    same = a->dims[i] == b->dims[i];
  if (!same) {
    char sa[192], sb[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "inputs %s %s and %s %s must have one dtype and shape",
                          clg_dtype_name(a->dtype), clg_out_shape_string(a, sa, sizeof sa),
                          clg_dtype_name(b->dtype), clg_out_shape_string(b, sb, sizeof sb));
  }
  return clg_infer_elementwise_unary(n);
}

static clg_code sigmoid_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = clg_grad_build(g, &clg_op_SigmoidGrad, 2, (clg_output[]){clg_out(n, 0), dy[0]}, 0, NULL);
  return clg_graph_status(g);
}

static clg_code tanh_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = clg_grad_build(g, &clg_op_TanhGrad, 2, (clg_output[]){clg_out(n, 0), dy[0]}, 0, NULL);
  return clg_graph_status(g);
}

/* TensorFlow's _Relu6Grad passes the output: 0 < y < 6 exactly where 0 < x < 6. */
static clg_code relu6_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  dx[0] = clg_grad_build(g, &clg_op_Relu6Grad, 2, (clg_output[]){dy[0], clg_out(n, 0)}, 0, NULL);
  return clg_graph_status(g);
}

static clg_code leaky_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr alpha = clg_attr_float("alpha", clg_node_attr(n, 1)->f);
  dx[0] =
      clg_grad_build(g, &clg_op_LeakyReluGrad, 2, (clg_output[]){dy[0], n->inputs[0]}, 1, &alpha);
  return clg_graph_status(g);
}

/* d|x| = dy * sign(x) (0 at 0, as TensorFlow's). */
static clg_code abs_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output s = clg_grad_build(g, &clg_op_Sign, 1, &n->inputs[0], 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], s}, 0, NULL);
  return clg_graph_status(g);
}

/* Sign is flat: its gradient is zeros (TensorFlow's _SignGrad). */
static clg_code sign_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)dy;
  dx[0] = clg_grad_build(g, &clg_op_ZerosLike, 1, &n->inputs[0], 0, NULL);
  return clg_graph_status(g);
}

/* SigmoidGrad and TanhGrad: d/dy = dy-weighted terms; TensorFlow's second-order gradients
 * (_SigmoidGradGrad, _TanhGradGrad) from the same ops. */
static clg_code sigmoid_grad_grad(clg_graph *g, clg_node *n, const clg_output *ddx, clg_output *dx)
{
  /* x = SigmoidGrad(y, dy) = dy * y * (1 - y): d/dy_in = ddx * dy * (1 - 2y), d/ddy = ddx *
   * y * (1 - y) = SigmoidGrad(y, ddx). */
  clg_output y = n->inputs[0], d = n->inputs[1];
  clg_dtype t = n->outs[0].dtype;
  clg_output two_y =
      clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){clg_grad_scalar(g, t, 2.0), y}, 0, NULL);
  clg_output one_m =
      clg_grad_build(g, &clg_op_Sub, 2, (clg_output[]){clg_grad_scalar(g, t, 1.0), two_y}, 0, NULL);
  clg_output p = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){ddx[0], d}, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){p, one_m}, 0, NULL);
  dx[1] = clg_grad_build(g, &clg_op_SigmoidGrad, 2, (clg_output[]){y, ddx[0]}, 0, NULL);
  return clg_graph_status(g);
}

static clg_code tanh_grad_grad(clg_graph *g, clg_node *n, const clg_output *ddx, clg_output *dx)
{
  /* x = dy * (1 - y^2): d/dy_in = ddx * dy * -2y, d/ddy = TanhGrad(y, ddx). */
  clg_output y = n->inputs[0], d = n->inputs[1];
  clg_dtype t = n->outs[0].dtype;
  clg_output m2y =
      clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){clg_grad_scalar(g, t, -2.0), y}, 0, NULL);
  clg_output p = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){ddx[0], d}, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){p, m2y}, 0, NULL);
  dx[1] = clg_grad_build(g, &clg_op_TanhGrad, 2, (clg_output[]){y, ddx[0]}, 0, NULL);
  return clg_graph_status(g);
}

/* Relu6Grad and LeakyReluGrad: the gradient flows to `gradients` through the same mask;
 * features get none (TensorFlow's zeros). */
static clg_code mask_grad_grad(clg_graph *g, clg_node *n, const clg_output *ddx, clg_output *dx)
{
  clg_attr alpha = clg_attr_float("alpha", 0);
  int na = 0;
  if (n->def == &clg_op_LeakyReluGrad) {
    alpha = clg_attr_float("alpha", clg_node_attr(n, 1)->f);
    na = 1;
  }
  dx[0] = clg_grad_build(g, n->def, 2, (clg_output[]){ddx[0], n->inputs[1]}, na, &alpha);
  dx[1] = clg_grad_build(g, &clg_op_ZerosLike, 1, &n->inputs[1], 0, NULL);
  return clg_graph_status(g);
}

CLG_UNARY_DEF(Sigmoid, sigmoid_grad)
CLG_UNARY_DEF(Tanh, tanh_grad)
CLG_UNARY_DEF(Relu6, relu6_grad)
CLG_OP_DEF1(LeakyRelu, 1, 2, leaky_attrs, clg_infer_elementwise_unary, 0, leaky_grad)
CLG_UNARY_DEF(Abs, abs_grad)
CLG_UNARY_DEF(Sign, sign_grad)
CLG_OP_DEF1(SigmoidGrad, 2, 1, clg_attrs_T, infer_pair, 0, sigmoid_grad_grad)
CLG_OP_DEF1(TanhGrad, 2, 1, clg_attrs_T, infer_pair, 0, tanh_grad_grad)
CLG_OP_DEF1(Relu6Grad, 2, 1, clg_attrs_T, infer_pair, 0, mask_grad_grad)
CLG_OP_DEF1(LeakyReluGrad, 2, 2, leaky_attrs, infer_pair, 0, mask_grad_grad)

clg_node *clg_sigmoid(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Sigmoid, name, x);
}

clg_node *clg_tanh(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Tanh, name, x);
}

clg_node *clg_relu6(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Relu6, name, x);
}

clg_node *clg_abs(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Abs, name, x);
}

clg_node *clg_sign(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Sign, name, x);
}

clg_node *clg_leaky_relu(clg_graph *g, const char *name, clg_node *x, double alpha)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_float("alpha", alpha);
  return clg_graph_build(g, &clg_op_LeakyRelu, name, 1, &in, 1, &a);
}
