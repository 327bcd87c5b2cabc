/* Add, Sub, Mul, RealDiv, Maximum, Equal and GreaterEqual, and Less, Greater, LessEqual,
 * NotEqual, Pow and Atan2 (tf.math.pow, tf.math.atan2(y, x)): element-wise with numpy
 * broadcasting (shapes aligned at the right; each dim equal or 1). Float everywhere, double on
 * the host and on devices with fp64; the comparisons also take int32 and int64 and output
 * bool, Pow and Atan2 are float only. The arithmetic ops'
 * output may reuse input 0's buffer (only when input 0 has the output's shape).
 * Their inference, gradients' reduction to an input's shape and builder serve binary_tf.c's
 * ops too, all defined by ops.h's CLG_BINARY_DEF.
 * Kernels: backends/host/binary.c, backends/opencl/binary.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T };

static bool is_comparison(const clg_op_def *def)
{
  return def == &clg_op_Equal || def == &clg_op_GreaterEqual || def == &clg_op_Less ||
         def == &clg_op_Greater || def == &clg_op_LessEqual || def == &clg_op_NotEqual;
}

/* The broadcast shape of a and b, or TensorFlow's "Incompatible shapes" error. */
clg_code clg_infer_broadcast(clg_node *n, const clg_out_desc *a, const clg_out_desc *b, int *rank,
                             int64_t *dims)
{
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int k = 0; k < r; k++) {
    int ka = k - (r - a->rank), kb = k - (r - b->rank);
    int64_t x = ka >= 0 ? a->dims[ka] : 1, y = kb >= 0 ? b->dims[kb] : 1;
    if (x != y && x != 1 && y != 1) {
      char sa[192], sb[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                            clg_out_shape_string(a, sa, sizeof sa),
                            clg_out_shape_string(b, sb, sizeof sb));
    }
    dims[k] = x == 1 ? y : x;
  }
  *rank = r;
  return CLG_OK;
}

/* Every binary op's (binary_tf.c's too): one place for their shared rules. */
clg_code clg_infer_binary(clg_node *n)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  if (a->dtype != b->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(a->dtype), clg_dtype_name(b->dtype));
  int rank = 0;
  int64_t dims[CLG_MAX_RANK];
  clg_code code = clg_infer_broadcast(n, a, b, &rank, dims);
  if (code != CLG_OK)
    return code;
  clg_attr_value *t = &n->attrs[A_T];
  if (t->set && t->dtype != a->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the inputs are %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(a->dtype));
  /* Pow's and Atan2's kernels are float only, and Prelu's: say so when the graph is built. */
  if ((n->def == &clg_op_Pow || n->def == &clg_op_Atan2 || n->def == &clg_op_Prelu) &&
      a->dtype != CLG_FLOAT32 && a->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes float32 or float64, not %s",
                          n->def->name, clg_dtype_name(a->dtype));
  if ((n->def == &clg_op_LeftShift || n->def == &clg_op_RightShift) &&
      !clg_dtype_is_integer(a->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes integers, not %s", n->def->name,
                          clg_dtype_name(a->dtype));
  t->set = true;
  t->dtype = a->dtype;
  return clg_node_set_output(n, 0, is_comparison(n->def) ? CLG_BOOL : a->dtype, rank, dims);
}

/* Add: both get dy; Sub: dy and -dy; Mul: dy * b and dy * a; RealDiv and Maximum below. An input
 * that was broadcast gets its gradient summed over the axes it was broadcast along, then reshaped
 * to its own shape (TensorFlow's BroadcastGradientArgs + Sum + Reshape). */
clg_output clg_grad_unbroadcast(clg_graph *g, clg_output d, const clg_out_desc *input,
                                const clg_out_desc *out)
{
  int64_t axes[CLG_MAX_RANK];
  int naxes = 0;
  for (int k = 0; k < out->rank; k++) {
    int ki = k - (out->rank - input->rank);
    if (ki < 0 || (input->dims[ki] == 1 && out->dims[k] != 1))
      axes[naxes++] = k;
  }
  if (naxes == 0)
    return d;
  clg_output sum_in[2] = {d, clg_out(clg_const_ints(g, naxes, axes), 0)};
  clg_output sum = clg_grad_build(g, &clg_op_Sum, 2, sum_in, 0, NULL);
  clg_output shape_in[2] = {sum, clg_out(clg_const_ints(g, input->rank, input->dims), 0)};
  return clg_grad_build(g, &clg_op_Reshape, 2, shape_in, 0, NULL);
}

static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_op_def *def = n->def;
  clg_output a = n->inputs[0], b = n->inputs[1];
  clg_output da = dy[0], db = dy[0];
  if (def == &clg_op_Sub)
    db = clg_grad_build(g, &clg_op_Neg, 1, &dy[0], 0, NULL);
  else if (def == &clg_op_RealDiv) { /* dy / b and -dy * a / b / b */
    da = clg_grad_build(g, &clg_op_RealDiv, 2, (clg_output[]){dy[0], b}, 0, NULL);
    clg_output q = clg_grad_build(g, &clg_op_RealDiv, 2, (clg_output[]){a, b}, 0, NULL);
    q = clg_grad_build(g, &clg_op_RealDiv, 2, (clg_output[]){q, b}, 0, NULL);
    q = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], q}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Neg, 1, &q, 0, NULL);
  } else if (def == &clg_op_Maximum) {
    /* TensorFlow's _MaximumGrad: a gets dy where a >= b (ties to a; false with a NaN), b the
     * rest, by a select: a product with a 0/1 mask would turn an infinite dy into NaN. */
    clg_output mask = clg_grad_build(g, &clg_op_GreaterEqual, 2, (clg_output[]){a, b}, 0, NULL);
    clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &dy[0], 0, NULL);
    da = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){mask, dy[0], zeros}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){mask, zeros, dy[0]}, 0, NULL);
  } else if (def == &clg_op_Mul) {
    da = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], b}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){a, dy[0]}, 0, NULL);
  } else if (def == &clg_op_Pow) {
    /* TensorFlow's _PowGrad: dy * b * a^(b - 1), and dy * a^b * log(a) where a > 0, else 0
     * (a select: log's NaN for a negative a is never chosen). */
    clg_dtype t = n->outs[0].dtype;
    clg_output bm1 =
        clg_grad_build(g, &clg_op_Sub, 2, (clg_output[]){b, clg_grad_scalar(g, t, 1.0)}, 0, NULL);
    clg_output p = clg_grad_build(g, &clg_op_Pow, 2, (clg_output[]){a, bm1}, 0, NULL);
    p = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){b, p}, 0, NULL);
    da = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], p}, 0, NULL);
    clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &a, 0, NULL);
    clg_output pos = clg_grad_build(g, &clg_op_Greater, 2, (clg_output[]){a, zeros}, 0, NULL);
    clg_output log_a = clg_grad_build(g, &clg_op_Log, 1, &a, 0, NULL);
    log_a = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){pos, log_a, zeros}, 0, NULL);
    clg_output q = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], clg_out(n, 0)}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){q, log_a}, 0, NULL);
  }
  dx[0] = clg_grad_unbroadcast(g, da, clg_node_in(n, 0), &n->outs[0]);
  dx[1] = clg_grad_unbroadcast(g, db, clg_node_in(n, 1), &n->outs[0]);
  return clg_graph_status(g);
}

/* The comparisons have no gradient (GRAD NULL), as TensorFlow's; nor has Atan2 here. */
CLG_BINARY_DEF(Add, 0, grad)
CLG_BINARY_DEF(Sub, 0, grad)
CLG_BINARY_DEF(Mul, 0, grad)
CLG_BINARY_DEF(RealDiv, 0, grad)
CLG_BINARY_DEF(Maximum, 0, grad)
CLG_BINARY_DEF(Equal, -1, NULL)
CLG_BINARY_DEF(GreaterEqual, -1, NULL)
CLG_BINARY_DEF(Less, -1, NULL)
CLG_BINARY_DEF(Greater, -1, NULL)
CLG_BINARY_DEF(LessEqual, -1, NULL)
CLG_BINARY_DEF(NotEqual, -1, NULL)
CLG_BINARY_DEF(Pow, 0, grad)
CLG_BINARY_DEF(Atan2, 0, NULL)

clg_node *clg_binary_build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *a,
                           clg_node *b)
{
  clg_output in[2] = {{a, 0}, {b, 0}};
  return clg_graph_build(g, def, name, 2, in, 0, NULL);
}

clg_node *clg_add(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Add, name, a, b);
}

clg_node *clg_sub(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Sub, name, a, b);
}

clg_node *clg_mul(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Mul, name, a, b);
}

clg_node *clg_real_div(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_RealDiv, name, a, b);
}

clg_node *clg_maximum(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Maximum, name, a, b);
}

clg_node *clg_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Equal, name, a, b);
}

clg_node *clg_greater_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_GreaterEqual, name, a, b);
}

clg_node *clg_less(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Less, name, a, b);
}

clg_node *clg_greater(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Greater, name, a, b);
}

clg_node *clg_less_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_LessEqual, name, a, b);
}

clg_node *clg_not_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_NotEqual, name, a, b);
}

clg_node *clg_pow(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return clg_binary_build(g, &clg_op_Pow, name, a, b);
}

clg_node *clg_atan2(clg_graph *g, const char *name, clg_node *y, clg_node *x)
{
  return clg_binary_build(g, &clg_op_Atan2, name, y, x);
}
