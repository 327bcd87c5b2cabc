/* AddV2, Minimum, Prelu, FloorDiv and FloorMod, element-wise with numpy broadcasting as Add and
 * Maximum (binary.c). AddV2 is Add under the name TensorFlow 2's graphs use (tf.add builds it);
 * Minimum is y < x ? y : x (a NaN in x wins, as Eigen's min); Prelu(x, alpha) is tfjs's op
 * (tf.prelu, in tfjs graph models): x < 0 ? alpha * x : x. FloorDiv and FloorMod are TensorFlow's
 * floor division and Python-style modulo (the result has y's sign), also on int32 and int64 on the
 * host (integer division by zero is an error there, as TensorFlow's). Float everywhere, double on
 * the host and on devices with fp64. Kernels: backends/host/binary_tf.c,
 * backends/opencl/binary_tf.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T };

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code infer(clg_node *n)
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
  /* Prelu's kernels are float only: say so when the graph is built. */
  if (n->def == &clg_op_Prelu && a->dtype != CLG_FLOAT32 && a->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Prelu takes float32 or float64, not %s",
                          clg_dtype_name(a->dtype));
  t->set = true;
  t->dtype = a->dtype;
  return clg_node_set_output(n, 0, a->dtype, rank, dims);
}

/* d summed over the axes along which `input` was broadcast to `out`, reshaped to its shape
 * (TensorFlow's BroadcastGradientArgs, Sum and Reshape). */
static clg_output unbroadcast(clg_graph *g, clg_output d, const clg_out_desc *input,
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
  dx[0] = unbroadcast(g, da, clg_node_in(n, 0), &n->outs[0]);
  dx[1] = unbroadcast(g, db, clg_node_in(n, 1), &n->outs[0]);
  return clg_graph_status(g);
}

#define BINARY_TF_DEF(OP, GRAD)                                                                    \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 2,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = attrs,                                                                              \
      .infer = infer,                                                                              \
      .inplace = 0,                                                                                \
      .grad = GRAD,                                                                                \
  };
BINARY_TF_DEF(AddV2, grad)
BINARY_TF_DEF(Minimum, grad)
BINARY_TF_DEF(Prelu, grad)
/* No gradient, as TensorFlow's FloorDiv (and FloorMod's y). */
BINARY_TF_DEF(FloorDiv, NULL)
BINARY_TF_DEF(FloorMod, NULL)

static clg_node *build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *a,
                       clg_node *b)
{
  clg_output in[2] = {{a, 0}, {b, 0}};
  return clg_graph_build(g, def, name, 2, in, 0, NULL);
}

clg_node *clg_add_v2(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_AddV2, name, a, b);
}

clg_node *clg_minimum(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_Minimum, name, a, b);
}

clg_node *clg_floor_div(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_FloorDiv, name, a, b);
}

clg_node *clg_floor_mod(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_FloorMod, name, a, b);
}

clg_node *clg_prelu(clg_graph *g, const char *name, clg_node *x, clg_node *alpha)
{
  return build(g, &clg_op_Prelu, name, x, alpha);
}
