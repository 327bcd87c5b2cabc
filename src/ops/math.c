/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg: element-wise (tf.exp, tf.log, tf.sqrt, tf.rsqrt,
 * tf.square, tf.floor, tf.negative), with IEEE results at the edges (log(0) = -inf, log and sqrt of
 * a negative = NaN). Float everywhere, double on the host and on devices with fp64; the output may
 * reuse the input's buffer. Floor's gradient is None, as TensorFlow registers it (0 almost
 * everywhere). Defined by ops.h's CLG_UNARY_DEF, as activation.c's are. Kernels:
 * backends/host/math.c, backends/opencl/math.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { M_EXP, M_LOG, M_SQRT, M_RSQRT, M_SQUARE, M_FLOOR, M_NEG };

static int which(const clg_node *n)
{
  return n->def == &clg_op_Exp      ? M_EXP
         : n->def == &clg_op_Log    ? M_LOG
         : n->def == &clg_op_Sqrt   ? M_SQRT
         : n->def == &clg_op_Square ? M_SQUARE
         : n->def == &clg_op_Floor  ? M_FLOOR
         : n->def == &clg_op_Neg    ? M_NEG
                                    : M_RSQRT;
}

static clg_output mul(clg_graph *g, clg_output a, clg_output b)
{
  return clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){a, b}, 0, NULL);
}

/* Exp: dy * y. Log: dy / x. Sqrt: dy * 0.5 / y. Rsqrt: dy * -0.5 * y^3 (from the outputs where
 * TensorFlow uses them). Square: dy * 2x. Floor: None. Neg: -dy. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output x = n->inputs[0], y = clg_out(n, 0);
  clg_dtype t = n->outs[0].dtype;
  switch (which(n)) {
  case M_EXP:
    dx[0] = mul(g, dy[0], y);
    break;
  case M_LOG:
    dx[0] = clg_grad_build(g, &clg_op_RealDiv, 2, (clg_output[]){dy[0], x}, 0, NULL);
    break;
  case M_SQRT:
    dx[0] = clg_grad_build(g, &clg_op_RealDiv, 2,
                           (clg_output[]){mul(g, dy[0], clg_grad_scalar(g, t, 0.5)), y}, 0, NULL);
    break;
  case M_SQUARE:
    dx[0] = mul(g, dy[0], mul(g, clg_grad_scalar(g, t, 2.0), x));
    break;
  case M_FLOOR:
    dx[0] = clg_out(NULL, 0);
    break;
  case M_NEG:
    dx[0] = clg_grad_build(g, &clg_op_Neg, 1, &dy[0], 0, NULL);
    break;
  default: {
    clg_output y2 = clg_grad_build(g, &clg_op_Square, 1, &y, 0, NULL);
    dx[0] = mul(g, mul(g, dy[0], mul(g, y2, y)), clg_grad_scalar(g, t, -0.5));
    break;
  }
  }
  return clg_graph_status(g);
}

CLG_UNARY_DEF(Exp, grad)
CLG_UNARY_DEF(Log, grad)
CLG_UNARY_DEF(Sqrt, grad)
CLG_UNARY_DEF(Rsqrt, grad)
CLG_UNARY_DEF(Square, grad)
CLG_UNARY_DEF(Floor, grad)
CLG_UNARY_DEF(Neg, grad)

/* Every one-input op's typed builder (activation.c's too). */
clg_node *clg_unary_build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, def, name, 1, &in, 0, NULL);
}

clg_node *clg_exp(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Exp, name, x);
}

clg_node *clg_log_e(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Log, name, x);
}

clg_node *clg_sqrt(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Sqrt, name, x);
}

clg_node *clg_rsqrt(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Rsqrt, name, x);
}

clg_node *clg_square(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Square, name, x);
}

clg_node *clg_floor(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Floor, name, x);
}

clg_node *clg_neg(clg_graph *g, const char *name, clg_node *x)
{
  return clg_unary_build(g, &clg_op_Neg, name, x);
}
