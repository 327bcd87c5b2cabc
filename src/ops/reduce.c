/* Sum, Mean, Max, Min, Prod over constant axes (negative counts from the end; keep_dims keeps
 * them as 1), L2Loss (sum(t^2) / 2, a scalar) and ArgMax, ArgMin (the first index of the
 * largest, smallest value along one axis; int64 or int32). Empty reductions give TensorFlow's
 * identities: 0, -inf (Max), +inf (Min), 1 (Prod). Float, and double where the device has it.
 * Kernels: backends/host/reduce.c (accumulating in double), backends/opencl/reduce.c (one
 * work-group per output folds its elements as a tree in local memory, cl/reduce.cl). */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"


/* The reduced axes of n's input 0 (all for L2Loss, the const axes otherwise). */
clg_code clg_reduce_axes(const clg_node *n, bool *red)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  memset(red, 0, sizeof(bool) * CLG_MAX_RANK);
  if (n->def == &clg_op_L2Loss) {
    for (int k = 0; k < x->rank; k++)
      red[k] = true;
    return CLG_OK;
  }
  int64_t axes[CLG_MAX_RANK * 2];
  int count = 0;
  bool arg = n->def == &clg_op_ArgMax || n->def == &clg_op_ArgMin;
  const char *what = arg ? "dimension" : "reduction_indices";
  clg_code code = clg_node_const_ints(n, 1, what, CLG_MAX_RANK * 2, axes, &count);
  if (code != CLG_OK)
    return code;
  if (arg && count != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dimension must be a scalar, not %d values",
                          count);
  for (int i = 0; i < count; i++) {
    int64_t a = axes[i];
    if (a < -x->rank || a >= x->rank) {
      if (arg)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Expected dimension in the range [%d, %d), but got %lld", -x->rank,
                              x->rank, (long long)a);
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Invalid reduction dimension (%lld for input with %d dimension(s)",
                            (long long)a, x->rank);
    }
    red[a < 0 ? a + x->rank : a] = true;
  }
  return CLG_OK;
}

/* --- Sum, Mean, Max, Min, Prod, L2Loss
 * ---------------------------------------------------------------- */

enum { A_T, A_TIDX, A_KEEP_DIMS };

static const clg_attr_def reduce_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "keep_dims", .type = CLG_ATTR_BOOL, .has_default = true},
};

static clg_code reduce_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  bool red[CLG_MAX_RANK];
  clg_code code = clg_reduce_axes(n, red);
  if (code != CLG_OK)
    return code;
  int rank = 0;
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    if (!red[k])
      dims[rank++] = x->dims[k];
    else if (n->attrs[A_KEEP_DIMS].b)
      dims[rank++] = 1;
  }
  n->attrs[A_T].set = n->attrs[A_TIDX].set = true;
  n->attrs[A_T].dtype = x->dtype;
  n->attrs[A_TIDX].dtype = clg_node_in(n, 1)->dtype;
  return clg_node_set_output(n, 0, x->dtype, rank, dims);
}

static clg_code l2_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  n->attrs[0].set = true;
  n->attrs[0].dtype = x->dtype;
  return clg_node_set_output(n, 0, x->dtype, 0, NULL);
}

/* The gradients: dy reshaped to the input's rank (reduced dims as 1, TensorFlow's keep_dims
 * shape) and broadcast back over the input: Sum as is, Mean divided by the reduced count;
 * Max (and Min) to the elements equal to the result, shared among ties (TensorFlow's
 * _MaxGrad, _MinGrad); L2Loss x * dy. The axes input gets none; Prod has no gradient here. */
static clg_code reduce_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_output xin = n->inputs[0];
  if (n->def == &clg_op_L2Loss) {
    dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){xin, dy[0]}, 0, NULL);
    return clg_graph_status(g);
  }
  bool red[CLG_MAX_RANK];
  clg_code code = clg_reduce_axes(n, red);
  if (code != CLG_OK)
    return code;
  int64_t kd[CLG_MAX_RANK], axes[CLG_MAX_RANK];
  int naxes = 0;
  size_t nred = 1;
  for (int k = 0; k < x->rank; k++) {
    kd[k] = red[k] ? 1 : x->dims[k];
    if (red[k]) {
      axes[naxes++] = k;
      nred *= (size_t)x->dims[k];
    }
  }
  clg_output d = dy[0];
  if (!n->attrs[A_KEEP_DIMS].b)
    d = clg_grad_build(g, &clg_op_Reshape, 2,
                       (clg_output[]){d, clg_out(clg_const_ints(g, x->rank, kd), 0)}, 0, NULL);
  if (n->def == &clg_op_Max || n->def == &clg_op_Min) {
    clg_output y = clg_out(n, 0);
    if (!n->attrs[A_KEEP_DIMS].b)
      y = clg_grad_build(g, &clg_op_Reshape, 2,
                         (clg_output[]){y, clg_out(clg_const_ints(g, x->rank, kd), 0)}, 0, NULL);
    clg_output eq = clg_grad_build(g, &clg_op_Equal, 2, (clg_output[]){xin, y}, 0, NULL);
    clg_attr dst = clg_attr_dtype("DstT", x->dtype);
    clg_output ind = clg_grad_build(g, &clg_op_Cast, 1, &eq, 1, &dst);
    clg_attr keep = clg_attr_bool("keep_dims", true);
    clg_output cnt =
        clg_grad_build(g, &clg_op_Sum, 2,
                       (clg_output[]){ind, clg_out(clg_const_ints(g, naxes, axes), 0)}, 1, &keep);
    clg_output share = clg_grad_build(g, &clg_op_RealDiv, 2, (clg_output[]){ind, cnt}, 0, NULL);
    dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){share, d}, 0, NULL);
    return clg_graph_status(g);
  }
  if (n->def == &clg_op_Mean)
    d = clg_grad_build(
        g, &clg_op_Mul, 2,
        (clg_output[]){d, clg_grad_scalar(g, x->dtype, nred ? 1.0 / (double)nred : 0.0)}, 0, NULL);
  clg_output ones = clg_grad_build(g, &clg_op_OnesLike, 1, &xin, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){d, ones}, 0, NULL);
  return clg_graph_status(g);
}

#define REDUCE_DEF(OP, GRAD)                                                                       \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 2,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 3,                                                                              \
      .attrs = reduce_attrs,                                                                       \
      .infer = reduce_infer,                                                                       \
      .inplace = -1,                                                                               \
      .grad = GRAD,                                                                                \
  };
REDUCE_DEF(Sum, reduce_grad)
REDUCE_DEF(Mean, reduce_grad)
REDUCE_DEF(Max, reduce_grad)
REDUCE_DEF(Min, reduce_grad)
REDUCE_DEF(Prod, NULL)

const clg_op_def clg_op_L2Loss = {
    .name = "L2Loss",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = clg_attrs_T,
    .infer = l2_infer,
    .inplace = -1,
    .grad = reduce_grad,
};

/* --- ArgMax, ArgMin -----------------------------------------------------------------------------
 */

enum { AM_T, AM_TIDX, AM_OUTPUT_TYPE };

static const clg_attr_def argmax_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "output_type", .type = CLG_ATTR_DTYPE, .inferred = true}, /* int64 unless given */
};

static clg_code argmax_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  bool red[CLG_MAX_RANK];
  clg_code code = clg_reduce_axes(n, red);
  if (code != CLG_OK)
    return code;
  clg_attr_value *ot = &n->attrs[AM_OUTPUT_TYPE];
  if (!ot->set) {
    ot->set = true;
    ot->dtype = CLG_INT64;
  }
  if (ot->dtype != CLG_INT64 && ot->dtype != CLG_INT32)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "output_type must be int32 or int64, not %s",
                          clg_dtype_name(ot->dtype));
  int rank = 0;
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    if (red[k] && x->dims[k] == 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "Reduction axis %d is empty in shape of %d dimension(s)", k, x->rank);
    if (!red[k])
      dims[rank++] = x->dims[k];
  }
  n->attrs[AM_T].set = n->attrs[AM_TIDX].set = true;
  n->attrs[AM_T].dtype = x->dtype;
  n->attrs[AM_TIDX].dtype = clg_node_in(n, 1)->dtype;
  return clg_node_set_output(n, 0, ot->dtype, rank, dims);
}

const clg_op_def clg_op_ArgMax = {
    .name = "ArgMax",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = argmax_attrs,
    .infer = argmax_infer,
    .inplace = -1,
};

const clg_op_def clg_op_ArgMin = {
    .name = "ArgMin",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = argmax_attrs,
    .infer = argmax_infer,
    .inplace = -1,
};

/* --- builders ------------------------------------------------------------------------------ */

static clg_node *reduce(clg_graph *g, const clg_op_def *def, const char *name, clg_node *x,
                        int naxes, const int64_t *axes, bool keep_dims)
{
  clg_node *a = clg_const_ints(g, naxes, axes);
  clg_output in[2] = {{x, 0}, {a, 0}};
  clg_attr at = clg_attr_bool("keep_dims", keep_dims);
  return clg_graph_build(g, def, name, 2, in, 1, &at);
}

clg_node *clg_sum(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                  bool keep_dims)
{
  return reduce(g, &clg_op_Sum, name, x, naxes, axes, keep_dims);
}

clg_node *clg_mean(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                   bool keep_dims)
{
  return reduce(g, &clg_op_Mean, name, x, naxes, axes, keep_dims);
}

clg_node *clg_max(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                  bool keep_dims)
{
  return reduce(g, &clg_op_Max, name, x, naxes, axes, keep_dims);
}

clg_node *clg_l2_loss(clg_graph *g, const char *name, clg_node *t)
{
  clg_output in = {t, 0};
  return clg_graph_build(g, &clg_op_L2Loss, name, 1, &in, 0, NULL);
}

clg_node *clg_argmax(clg_graph *g, const char *name, clg_node *x, int axis)
{
  clg_tensor *t = clg_tensor_new(CLG_INT32, 0, NULL, (int32_t[]){(int32_t)axis});
  clg_node *dim = clg_const(g, NULL, t);
  clg_tensor_free(t);
  clg_output in[2] = {{x, 0}, {dim, 0}};
  return clg_graph_build(g, &clg_op_ArgMax, name, 2, in, 0, NULL);
}
