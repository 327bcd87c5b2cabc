/* AddV2, Minimum, Prelu, FloorDiv and FloorMod, element-wise with numpy broadcasting as Add and
 * Maximum (binary.c). AddV2 is Add under the name TensorFlow 2's graphs use (tf.add builds it);
 * Minimum is y < x ? y : x (a NaN in x wins, as Eigen's min); Prelu(x, alpha) is tfjs's op
 * (tf.prelu, in tfjs graph models): x < 0 ? alpha * x : x. FloorDiv and FloorMod are TensorFlow's
 * floor division and Python-style modulo (the result has y's sign), also on int32 and int64 on the
 * host (integer division by zero is an error there, as TensorFlow's). SquaredDifference is
 * (x - y) * (x - y), also on int32 and int64 (wrapping) on both kinds. Float everywhere, double
 * on the host and on devices with fp64. Kernels: backends/host/binary_tf.c,
 * backends/opencl/binary_tf.c. */
#include "graph/graph.h"
#include "ops/ops.h"

/* AddV2: dy to both. Minimum: TensorFlow's _MinimumGrad, x gets dy where x <= y (ties to x;
 * false with a NaN, written y >= x), y the rest, by a select (a 0/1 product would turn an
 * infinite dy into NaN). */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output a = n->inputs[0], b = n->inputs[1], da = dy[0], db = dy[0];
  if (n->def == &clg_op_Minimum) {
    clg_output mask = clg_grad_build(g, &clg_op_GreaterEqual, 2, (clg_output[]){b, a}, 0, NULL);
    clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &dy[0], 0, NULL);
    da = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){mask, dy[0], zeros}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){mask, zeros, dy[0]}, 0, NULL);
  }
  if (n->def == &clg_op_Prelu) {
    /* tfjs's prelu gradient: x gets dy where x > 0, else dy * alpha; alpha gets dy * x where
     * x <= 0 (both summed back to their own shapes). */
    /* The mask x <= 0 of the output's shape (zeros of dy's shape against x, broadcast). */
    clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &dy[0], 0, NULL);
    clg_output neg = clg_grad_build(g, &clg_op_GreaterEqual, 2, (clg_output[]){zeros, a}, 0, NULL);
    clg_output dya = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], b}, 0, NULL);
    clg_output dyx = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], a}, 0, NULL);
    da = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){neg, dya, dy[0]}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){neg, dyx, zeros}, 0, NULL);
  }
  if (n->def == &clg_op_SquaredDifference) {
    /* TensorFlow's _SquaredDifferenceGrad: g = 2 * dy * (x - y) to x, -g to y (each summed
     * back to its own shape first). */
    clg_output two = clg_grad_scalar(g, n->outs[0].dtype, 2.0);
    clg_output diff = clg_grad_build(g, &clg_op_Sub, 2, (clg_output[]){a, b}, 0, NULL);
    clg_output g2 = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){two, dy[0]}, 0, NULL);
    da = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){g2, diff}, 0, NULL);
    dx[0] = clg_grad_unbroadcast(g, da, clg_node_in(n, 0), &n->outs[0]);
    db = clg_grad_unbroadcast(g, da, clg_node_in(n, 1), &n->outs[0]);
    dx[1] = clg_grad_build(g, &clg_op_Neg, 1, &db, 0, NULL);
    return clg_graph_status(g);
  }
  dx[0] = clg_grad_unbroadcast(g, da, clg_node_in(n, 0), &n->outs[0]);
  dx[1] = clg_grad_unbroadcast(g, db, clg_node_in(n, 1), &n->outs[0]);
  return clg_graph_status(g);
}

CLG_BINARY_DEF(AddV2, 0, grad)
CLG_BINARY_DEF(Minimum, 0, grad)
CLG_BINARY_DEF(Prelu, 0, grad)
/* No gradient, as TensorFlow's FloorDiv (and FloorMod's y). */
CLG_BINARY_DEF(FloorDiv, 0, NULL)
CLG_BINARY_DEF(FloorMod, 0, NULL)
CLG_BINARY_DEF(SquaredDifference, 0, grad)
/* TensorFlow's bitwise shifts, integers only; no gradient. */
CLG_BINARY_DEF(LeftShift, 0, NULL)
CLG_BINARY_DEF(RightShift, 0, NULL)

clg_node *clg_add_v2(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_AddV2, name, a, b);
}

clg_node *clg_minimum(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Minimum, name, a, b);
}

clg_node *clg_floor_div(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_FloorDiv, name, a, b);
}

clg_node *clg_floor_mod(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_FloorMod, name, a, b);
}

clg_node *clg_prelu(clg_graph *g, const char *name, clg_node *x, clg_node *alpha)
{
  return clg_binary_build(g, &clg_op_Prelu, name, x, alpha);
}

clg_node *clg_squared_difference(clg_graph *g, const char *name, clg_node *x, clg_node *y)
{
  return clg_binary_build(g, &clg_op_SquaredDifference, name, x, y);
}
