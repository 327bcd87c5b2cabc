/* Softmax and LogSoftmax over the last axis (the row's max subtracted first),
 * SparseSoftmaxCrossEntropyWithLogits (loss [B] = logsumexp - logits[label], backprop [B,K] =
 * softmax - onehot; a label outside [0, K) is TensorFlow's INVALID_ARGUMENT) and InTopKV2.
 * Float, and double where the device has it. OpenCL: one work-group per row, its max and sum
 * folded as trees in local memory (cl/reduce.cl). */
#include <math.h>
#include <stdlib.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

static const clg_cl_text source = {"reduce", NULL};

static bool float_input0(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = clg_node_in(n, 0)->dtype;
  if (t == CLG_FLOAT64)
    return clg_device_ops_of(dev)->kind == CLG_KIND_HOST || dev->info.has_fp64;
  return t == CLG_FLOAT32;
}

/* The row's max and log-sum-exp, in double. */
#define ROW_STATS(row, k, mx, lse)                                                                 \
  do {                                                                                             \
    mx = -INFINITY;                                                                                \
    for (size_t j = 0; j < k; j++)                                                                 \
      mx = fmax(mx, (double)row[j]);                                                               \
    double sum_ = 0;                                                                               \
    for (size_t j = 0; j < k; j++)                                                                 \
      sum_ += exp((double)row[j] - mx);                                                            \
    lse = mx + log(sum_);                                                                          \
  } while (0)

/* --- Softmax, LogSoftmax -------------------------------------------------------------------- */

static clg_code softmax_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  if (x->rank < 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "logits must have >= 1 dimension, got shape []");
  return clg_infer_elementwise_unary(n);
}

#define SOFTMAX_LOOP(T)                                                                            \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t r = 0; r < rows; r++) {                                                            \
      const T *xr = x + r * k;                                                                     \
      double mx, lse;                                                                              \
      ROW_STATS(xr, k, mx, lse);                                                                   \
      for (size_t j = 0; j < k; j++)                                                               \
        y[r * k + j] = (T)(log_out ? xr[j] - lse : exp(xr[j] - lse));                              \
    }                                                                                              \
  } while (0)

static void softmax_dims(const clg_node *n, size_t *rows, size_t *k)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  *k = (size_t)x->dims[x->rank - 1];
  *rows = *k ? clg_out_count(x) / *k : 0;
}

static clg_code softmax_host(const clg_kernel_ctx *c)
{
  size_t rows, k;
  softmax_dims(c->node, &rows, &k);
  bool log_out = c->node->def == &clg_op_LogSoftmax;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    SOFTMAX_LOOP(double);
  else
    SOFTMAX_LOOP(float);
  return CLG_OK;
}

static clg_code softmax_cl(const clg_kernel_ctx *c)
{
  size_t rows, k;
  softmax_dims(c->node, &rows, &k);
  if (rows == 0)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es, n = k;
  cl_uint log_out = c->node->def == &clg_op_LogSoftmax;
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n},
                       {sizeof log_out, &log_out}};
  return clg_cl_launch_groups(c->dev, dt, &source, "clg_softmax", args, 6, rows, k);
}

static const clg_kernel_def softmax_kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, softmax_host, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, softmax_cl, NULL, NULL}};

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
      .kernels = softmax_kernels,                                                                  \
      .num_kernels = 2,                                                                            \
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
static clg_code check_labels(const clg_node *n, const void *labels, clg_dtype t, size_t b, size_t k)
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

#define XENT_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *loss = c->out[0].host, *bp = c->out[1].host;                                                \
    for (size_t r = 0; r < b; r++) {                                                               \
      const T *xr = x + r * k;                                                                     \
      double mx, lse;                                                                              \
      ROW_STATS(xr, k, mx, lse);                                                                   \
      size_t label = (size_t)label_at(c->in[1].host, lt, r);                                       \
      for (size_t j = 0; j < k; j++)                                                               \
        bp[r * k + j] = (T)(exp(xr[j] - lse) - (j == label ? 1.0 : 0.0));                          \
      loss[r] = (T)(lse - xr[label]);                                                              \
    }                                                                                              \
  } while (0)

static clg_code xent_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  size_t b = (size_t)x->dims[0], k = (size_t)x->dims[1];
  clg_dtype lt = clg_node_in(c->node, 1)->dtype;
  clg_code code = check_labels(c->node, c->in[1].host, lt, b, k);
  if (code != CLG_OK)
    return code;
  if (x->dtype == CLG_FLOAT64)
    XENT_LOOP(double);
  else
    XENT_LOOP(float);
  return CLG_OK;
}

static clg_code xent_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  size_t b = (size_t)x->dims[0], k = (size_t)x->dims[1];
  if (b == 0)
    return CLG_OK;
  clg_dtype lt = clg_node_in(c->node, 1)->dtype;
  size_t lbytes = b * clg_dtype_size(lt);
  /* The labels are checked on the host (a small read that waits for their producer): a
   * kernel cannot raise TensorFlow's error. */
  void *labels = malloc(lbytes);
  if (!labels)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the labels of '%s'",
                     c->node->name);
  clg_code code = clg_device_download(c->dev, c->in[1].mem, c->in[1].offset, labels, lbytes);
  if (code == CLG_OK)
    code = check_labels(c->node, labels, lt, b, k);
  free(labels);
  if (code != CLG_OK)
    return code;
  size_t es = clg_dtype_size(x->dtype);
  cl_ulong xo = c->in[0].offset / es, lo = c->in[1].offset / clg_dtype_size(lt),
           so = c->out[0].offset / es, bo = c->out[1].offset / es, n = k;
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &c->in[1].mem},
                       {sizeof lo, &lo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof so, &so},
                       {sizeof(cl_mem), &c->out[1].mem},
                       {sizeof bo, &bo},
                       {sizeof n, &n}};
  return clg_cl_launch_groups(c->dev, x->dtype, &source,
                              lt == CLG_INT32 ? "clg_xent_i32" : "clg_xent_i64", args, 9, b, k);
}

static const clg_kernel_def xent_kernels[] = {{CLG_KIND_HOST, float_input0, xent_host, NULL, NULL},
                                              {CLG_KIND_OPENCL, float_input0, xent_cl, NULL, NULL}};

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
    .kernels = xent_kernels,
    .num_kernels = 2,
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

#define INTOPK_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    for (size_t r = 0; r < b; r++) {                                                               \
      const T *xr = x + r * nk;                                                                    \
      int64_t t = label_at(c->in[1].host, tt, r);                                                  \
      bool ok = t >= 0 && (size_t)t < nk;                                                          \
      int64_t more = 0;                                                                            \
      for (size_t j = 0; ok && j < nk; j++) {                                                      \
        ok = isfinite(xr[j]);                                                                      \
        more += xr[j] > xr[t];                                                                     \
      }                                                                                            \
      out[r] = ok && more < k;                                                                     \
    }                                                                                              \
  } while (0)

static clg_code intopk_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *p = clg_node_in(c->node, 0);
  size_t b = (size_t)p->dims[0], nk = (size_t)p->dims[1];
  clg_dtype tt = clg_node_in(c->node, 1)->dtype;
  int64_t k;
  intopk_k(c->node, &k);
  uint8_t *out = c->out[0].host;
  if (p->dtype == CLG_FLOAT64)
    INTOPK_LOOP(double);
  else
    INTOPK_LOOP(float);
  return CLG_OK;
}

static clg_code intopk_cl(const clg_kernel_ctx *c)
{
  const clg_out_desc *p = clg_node_in(c->node, 0);
  size_t b = (size_t)p->dims[0], nk = (size_t)p->dims[1];
  if (b == 0)
    return CLG_OK;
  clg_dtype tt = clg_node_in(c->node, 1)->dtype;
  int64_t kv;
  intopk_k(c->node, &kv);
  cl_long k = kv;
  cl_ulong xo = c->in[0].offset / clg_dtype_size(p->dtype),
           to = c->in[1].offset / clg_dtype_size(tt), yo = c->out[0].offset, n = nk;
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &c->in[1].mem},
                       {sizeof to, &to},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n},
                       {sizeof k, &k}};
  return clg_cl_launch_groups(c->dev, p->dtype, &source,
                              tt == CLG_INT32 ? "clg_intopk_i32" : "clg_intopk_i64", args, 8, b,
                              nk);
}

static const clg_kernel_def intopk_kernels[] = {
    {CLG_KIND_HOST, float_input0, intopk_host, NULL, NULL},
    {CLG_KIND_OPENCL, float_input0, intopk_cl, NULL, NULL}};

const clg_op_def clg_op_InTopKV2 = {
    .name = "InTopKV2",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = intopk_attrs,
    .infer = intopk_infer,
    .kernels = intopk_kernels,
    .num_kernels = 2,
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
