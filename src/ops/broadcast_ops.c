/* SelectV2 and BroadcastTo: numpy broadcasting of whole tensors (issues 23 and 24).
 * SelectV2(condition, t, e) is TensorFlow 2's tf.where (and ONNX's Where): t where condition
 * is true, else e, the three broadcast against each other (shapes aligned at the right; each
 * dim equal or 1); t and e have one dtype (any), condition is bool. BroadcastTo(input, shape)
 * is tf.broadcast_to: input repeated along the dims where it has 1 (or lacks them) up to
 * `shape`, a Const int32/int64 vector (shapes are static here). Any dtype; no gradient here.
 * Kernels: backends/host/broadcast_ops.c, backends/opencl/broadcast_ops.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T };

static const clg_attr_def select_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code select_infer(clg_node *n)
{
  const clg_out_desc *c = clg_node_in(n, 0), *t = clg_node_in(n, 1), *e = clg_node_in(n, 2);
  if (c->dtype != CLG_BOOL)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "condition must be bool, not %s",
                          clg_dtype_name(c->dtype));
  if (t->dtype != e->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "'then' is %s but 'else' is %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(e->dtype));
  clg_out_desc te = {t->dtype, 0, {0}};
  clg_code code = clg_infer_broadcast(n, t, e, &te.rank, te.dims);
  int rank = 0;
  int64_t dims[CLG_MAX_RANK];
  if (code != CLG_OK || (code = clg_infer_broadcast(n, c, &te, &rank, dims)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, A_T, t->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, t->dtype, rank, dims);
}

const clg_op_def clg_op_SelectV2 = {
    .name = "SelectV2",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = select_attrs,
    .infer = select_infer,
    .inplace = -1,
};

static const clg_attr_def broadcast_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tidx", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code broadcast_to_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t dims[CLG_MAX_RANK];
  int rank = 0;
  clg_code code = clg_node_const_ints(n, 1, "shape", CLG_MAX_RANK, dims, &rank);
  if (code != CLG_OK)
    return code;
  if (clg_node_in(n, 1)->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape must be a vector, not a scalar");
  clg_out_desc want = {x->dtype, rank, {0}};
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape[%d] = %lld must be >= 0", k,
                            (long long)dims[k]);
    want.dims[k] = dims[k];
  }
  /* TensorFlow's BroadcastTo kernel: the input must broadcast to exactly `shape`. */
  bool ok = x->rank <= rank;
  for (int k = 0; ok && k < x->rank; k++) {
    int64_t d = x->dims[x->rank - 1 - k], w = dims[rank - 1 - k];
    ok = d == w || d == 1;
  }
  if (!ok) {
    char sx[192], sw[192];
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT, "Unable to broadcast tensor of shape %s to tensor of shape %s",
        clg_out_shape_string(x, sx, sizeof sx), clg_out_shape_string(&want, sw, sizeof sw));
  }
  if ((code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, rank, dims);
}

const clg_op_def clg_op_BroadcastTo = {
    .name = "BroadcastTo",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = broadcast_attrs,
    .infer = broadcast_to_infer,
    .inplace = -1,
};

clg_node *clg_select_v2(clg_graph *g, const char *name, clg_node *condition, clg_node *t,
                        clg_node *e)
{
  clg_output in[3] = {{condition, 0}, {t, 0}, {e, 0}};
  return clg_graph_build(g, &clg_op_SelectV2, name, 3, in, 0, NULL);
}

clg_node *clg_broadcast_to(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *shape)
{
  clg_output in[2] = {{x, 0}, {clg_const_ints(g, n, shape), 0}};
  return clg_graph_build(g, &clg_op_BroadcastTo, name, 2, in, 0, NULL);
}
