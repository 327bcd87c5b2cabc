/* Softmax and LogSoftmax over the last axis (the row's max subtracted first),
 * SparseSoftmaxCrossEntropyWithLogits (loss [B] = logsumexp - logits[label], backprop [B,K] =
 * softmax - onehot; a label outside [0, K) is TensorFlow's INVALID_ARGUMENT) and InTopKV2.
 * Float, and double where the device has it. Kernels: backends/host/softmax.c,
 * backends/opencl/softmax.c (one work-group per row, its max and sum folded as trees in local
 * memory, cl/reduce.cl). */
#include "graph/graph.h"
#include "ops/ops.h"


/* --- Softmax, LogSoftmax -------------------------------------------------------------------- */

static clg_code softmax_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (x->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "logits must have >= 1 dimension, got shape []");
  return clg_infer_elementwise_unary(n);
}

/* The sum over the last axis of v, kept as a dim of 1 (it broadcasts back over the row). */
static clg_output row_sum(clg_graph *g, const clg_node *n, clg_output v)
{
  int64_t axis = clg_node_in(n, 0)->rank - 1;
  clg_attr keep = clg_attr_bool("keep_dims", true);
  return clg_grad_build(g, &clg_op_Sum, 2,
                        (clg_output[]){v, clg_out(clg_const_ints(g, 1, &axis), 0)}, 1, &keep);
}

/* Softmax: (dy - sum(dy * y)) * y. LogSoftmax: dy - exp(y) * sum(dy). */
static clg_code softmax_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output y = clg_out(n, 0);
  if (n->def == &clg_op_LogSoftmax) {
    clg_output p = clg_grad_build(g, &clg_op_Exp, 1, &y, 0, NULL);
    clg_output t =
        clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){p, row_sum(g, n, dy[0])}, 0, NULL);
    dx[0] = clg_grad_build(g, &clg_op_Sub, 2, (clg_output[]){dy[0], t}, 0, NULL);
    return clg_graph_status(g);
  }
  clg_output gy = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], y}, 0, NULL);
  clg_output d =
      clg_grad_build(g, &clg_op_Sub, 2, (clg_output[]){dy[0], row_sum(g, n, gy)}, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){d, y}, 0, NULL);
  return clg_graph_status(g);
}

#define SOFTMAX_DEF(OP)                                                                            \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 1,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = clg_attrs_T,                                                                        \
      .infer = softmax_infer,                                                                      \
      .inplace = -1,                                                                               \
      .grad = softmax_grad,                                                                        \
  };
SOFTMAX_DEF(Softmax)
SOFTMAX_DEF(LogSoftmax)

/* --- SparseSoftmaxCrossEntropyWithLogits ---------------------------------------------------- */

enum { X_T, X_TLABELS };

static const clg_attr_def xent_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tlabels", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static clg_code xent_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0), *l = clg_node_in(n, 1);
  char sx[192], sl[192];
  clg_out_shape_string(x, sx, sizeof sx);
  clg_out_shape_string(l, sl, sizeof sl);
  if (x->rank != 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s", sx);
  if (l->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "labels must be 1-D, but got shape %s", sl);
  if (x->dims[0] != l->dims[0])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "logits and labels must have the same first dimension, got logits "
                          "shape %s and labels shape %s",
                          sx, sl);
  if (l->dtype != CLG_INT32 && l->dtype != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "labels must be int32 or int64, not %s",
                          clg_dtype_name(l->dtype));
  if (x->dtype != CLG_FLOAT32 && x->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "logits must be float or double, not %s",
                          clg_dtype_name(x->dtype));
  n->attrs[X_T].set = n->attrs[X_TLABELS].set = true;
  n->attrs[X_T].dtype = x->dtype;
  n->attrs[X_TLABELS].dtype = l->dtype;
  clg_code code = clg_node_set_output(n, 0, x->dtype, 1, x->dims);
  return code == CLG_OK ? clg_node_set_output(n, 1, x->dtype, 2, x->dims) : code;
}

static int64_t label_at(const void *labels, clg_dtype t, size_t i)
{
  return t == CLG_INT32 ? ((const int32_t *)labels)[i] : ((const int64_t *)labels)[i];
}

/* TensorFlow's error for the first label outside [0, k), listing the batch's labels. */
clg_code clg_xent_check_labels(const clg_node *n, const void *labels, clg_dtype t, size_t b,
                               size_t k)
{
  for (size_t i = 0; i < b; i++) {
    int64_t v = label_at(labels, t, i);
    if (v >= 0 && (size_t)v < k)
      continue;
    clg_strbuf s;
    clg_strbuf_init(&s);
    for (size_t j = 0; j < b && j < 32; j++)
      clg_strbuf_printf(&s, "%s%lld", j ? " " : "", (long long)label_at(labels, t, j));
    if (b > 32)
      clg_strbuf_append(&s, " ...");
    clg_code code = clg_node_error(
        n, CLG_INVALID_ARGUMENT,
        "Received a label value of %lld which is outside the valid range of [0, %zu).  Label "
        "values: %s",
        (long long)v, k, s.buf ? s.buf : "");
    clg_strbuf_free(&s);
    return code;
  }
  return CLG_OK;
}

/* dlogits = dloss[:, None] * backprop (TensorFlow's gradient); the labels get none. A
 * gradient through the backprop output (a second derivative) is not supported. */
static clg_code xent_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  if (dy[1].node)
    return clg_node_error(n, CLG_UNIMPLEMENTED,
                          "no gradient through output 1 (backprop): second derivatives of "
                          "SparseSoftmaxCrossEntropyWithLogits are not supported");
  if (!dy[0].node)
    return CLG_OK;
  int64_t col[2] = {clg_node_in(n, 0)->dims[0], 1};
  clg_output d = clg_grad_build(
      g, &clg_op_Reshape, 2, (clg_output[]){dy[0], clg_out(clg_const_ints(g, 2, col), 0)}, 0, NULL);
  dx[0] = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){d, clg_out(n, 1)}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_SparseSoftmaxCrossEntropyWithLogits = {
    .name = "SparseSoftmaxCrossEntropyWithLogits",
    .num_inputs = 2,
    .num_outputs = 2,
    .num_attrs = 2,
    .attrs = xent_attrs,
    .infer = xent_infer,
    .inplace = -1,
    .grad = xent_grad,
};

/* --- InTopKV2 ------------------------------------------------------------------------------- */

static const clg_attr_def intopk_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code intopk_k(const clg_node *n, int64_t *k)
{
  int count = 0;
  clg_code code = clg_node_const_ints(n, 2, "k", 1, k, &count);
  if (code == CLG_OK && count != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "k must be a scalar");
  return code;
}

static clg_code intopk_infer(clg_node *n)
{
  const clg_out_desc *p = clg_node_in(n, 0), *t = clg_node_in(n, 1);
  char sp[192], st[192];
  if (p->rank != 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "predictions must be 2-dimensional, not %s",
                          clg_out_shape_string(p, sp, sizeof sp));
  if (t->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "targets must be 1-dimensional, not %s",
                          clg_out_shape_string(t, st, sizeof st));
  if (p->dims[0] != t->dims[0])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "First dimension of predictions %lld must match length of targets %lld",
                          (long long)p->dims[0], (long long)t->dims[0]);
  if (t->dtype != CLG_INT32 && t->dtype != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "targets must be int32 or int64, not %s",
                          clg_dtype_name(t->dtype));
  if (p->dtype != CLG_FLOAT32 && p->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "predictions must be float or double, not %s",
                          clg_dtype_name(p->dtype));
  int64_t k;
  clg_code code = intopk_k(n, &k);
  if (code != CLG_OK)
    return code;
  n->attrs[0].set = true;
  n->attrs[0].dtype = t->dtype;
  return clg_node_set_output(n, 0, CLG_BOOL, 1, t->dims);
}

int64_t clg_in_top_k_k(const clg_node *n)
{
  int64_t k = 0;
  intopk_k(n, &k); /* checked at build */
  return k;
}

const clg_op_def clg_op_InTopKV2 = {
    .name = "InTopKV2",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = intopk_attrs,
    .infer = intopk_infer,
    .inplace = -1,
};

/* --- builders ------------------------------------------------------------------------------ */

clg_node *clg_softmax(clg_graph *g, const char *name, clg_node *logits)
{
  clg_output in = {logits, 0};
  return clg_graph_build(g, &clg_op_Softmax, name, 1, &in, 0, NULL);
}

clg_node *clg_log_softmax(clg_graph *g, const char *name, clg_node *logits)
{
  clg_output in = {logits, 0};
  return clg_graph_build(g, &clg_op_LogSoftmax, name, 1, &in, 0, NULL);
}

clg_node *clg_sparse_softmax_cross_entropy_with_logits(clg_graph *g, const char *name,
                                                       clg_node *logits, clg_node *labels)
{
  clg_output in[2] = {{logits, 0}, {labels, 0}};
  return clg_graph_build(g, &clg_op_SparseSoftmaxCrossEntropyWithLogits, name, 2, in, 0, NULL);
}

clg_node *clg_in_top_k(clg_graph *g, const char *name, clg_node *predictions, clg_node *targets,
                       int64_t k)
{
  clg_output in[3] = {{predictions, 0}, {targets, 0}, {clg_const_int(g, k), 0}};
  return clg_graph_build(g, &clg_op_InTopKV2, name, 3, in, 0, NULL);
}
