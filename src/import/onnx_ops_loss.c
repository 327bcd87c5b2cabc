/* ONNX's losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (reduction none, sum,
 * mean; class weights; ignore_index), composed without a gather: the labels compared with the
 * class numbers give a one-hot mask over axis 1 that picks each position's log-probability and
 * weight by a Sum. */
#include <string.h>

#include "import/onnx.h"

static clg_code sum_axes(clg_onnx *c, clg_output x, int k, const int64_t *axes, bool keep,
                         clg_output *y)
{
  clg_output ax = {0};
  clg_code code = clg_onnx_const_i32(c, k, axes, &ax);
  clg_attr kd = clg_attr_bool("keep_dims", keep);
  clg_output ins[2] = {x, ax};
  return code == CLG_OK ? clg_onnx_op(c, "Sum", 2, ins, 1, &kd, y) : code;
}

static clg_code cast_to(clg_onnx *c, clg_output x, clg_dtype dt, clg_output *y)
{
  if (clg_onnx_dtype(x) == dt) {
    *y = x;
    return CLG_OK;
  }
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, &x, 1, &a, y);
}

/* log_softmax of x [N, C, ...] over axis 1: (x - max) - log(sum(exp(x - max))). */
static clg_code log_softmax_1(clg_onnx *c, clg_output x, clg_output *y)
{
  static const int64_t one[1] = {1};
  clg_output ax = {0}, m = {0}, e = {0};
  clg_code code = clg_onnx_const_i32(c, 1, one, &ax);
  clg_attr kd = clg_attr_bool("keep_dims", 1);
  clg_output ins[2] = {x, ax};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Max", 2, ins, 1, &kd, &m);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", x, m, &m);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Exp", 1, &m, 0, NULL, &e);
  if (code == CLG_OK)
    code = sum_axes(c, e, 1, one, true, &e);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Log", 1, &e, 0, NULL, &e);
  return code == CLG_OK ? clg_onnx_binop(c, "Sub", m, e, y) : code;
}

/* The loss of log-probabilities lp [N, C, d...] against the labels of input `li` ([N, d...])
 * with the node's weights (input li + 1), reduction and ignore_index. */
static clg_code nll(clg_onnx *c, const clg_imp_node *n, clg_output lp, int li, clg_output *out)
{
  int rank = clg_onnx_rank(lp);
  clg_dtype dt = clg_onnx_dtype(lp);
  if (rank < 2 || (dt != CLG_FLOAT32 && dt != CLG_FLOAT64))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "input of rank %d and type %s: float [N, C, ...]", rank,
                         clg_dtype_name(dt));
  int64_t cls = clg_onnx_dim(lp, 1);
  const char *red = clg_onnx_attr_s(n, "reduction", "mean");
  if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "reduction '%s' is not none, sum or mean",
                         red);
  if (clg_onnx_in_rank(c, n, li) != rank - 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "labels of rank %d for an input of rank %d",
                         clg_onnx_in_rank(c, n, li), rank);
  for (int d = 0; d < rank - 1; d++)
    if (clg_onnx_in_dim(c, n, li, d) != clg_onnx_dim(lp, d ? d + 1 : 0))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "the labels' shape does not match the input's");
  clg_dtype lt = clg_onnx_in_dtype(c, n, li);
  if (lt != CLG_INT32 && lt != CLG_INT64)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "labels of type %s, not integers",
                         clg_dtype_name(lt));
  clg_output t, t1, classes, mask, picked, w, valid = {NULL, 0};
  int64_t d1[CLG_MAX_RANK], cd[CLG_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    d1[d] = d == 1 ? 1 : clg_onnx_dim(lp, d);
    cd[d] = d == 1 ? cls : 1;
  }
  /* labels as the input's dtype (exact for any class count a float counts), [N, 1, d...] */
  clg_code code = clg_onnx_in(c, n, li, &t);
  if (code == CLG_OK)
    code = cast_to(c, t, dt, &t);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, t, rank, d1, &t1);
  if (code == CLG_OK) {
    clg_tensor *k = clg_tensor_new(dt, rank, cd, NULL);
    if (!k)
      return clg_graph_record_error(c->g);
    for (int64_t i = 0; i < cls; i++) {
      if (dt == CLG_FLOAT32)
        ((float *)clg_tensor_data(k))[i] = (float)i;
      else
        ((double *)clg_tensor_data(k))[i] = (double)i;
    }
    code = clg_onnx_const(c, k, &classes);
    clg_tensor_free(k);
  }
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Equal", t1, classes, &mask);
  if (code == CLG_OK)
    code = cast_to(c, mask, dt, &mask);
  const clg_imp_attr *ii = clg_onnx_attr(n, "ignore_index");
  if (code == CLG_OK && ii) { /* valid = 1 - (t == ignore_index) */
    clg_output e = {0};
    code = clg_onnx_const_scalar(c, dt, (double)ii->i, &e);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Equal", t, e, &e);
    if (code == CLG_OK)
      code = cast_to(c, e, dt, &e);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Neg", 1, &e, 0, NULL, &e);
    if (code == CLG_OK)
      code = clg_onnx_scalar_op(c, "Add", e, 1, &valid);
  }
  static const int64_t one[1] = {1};
  clg_output pm = {0};
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", lp, mask, &pm);
  if (code == CLG_OK)
    code = sum_axes(c, pm, 1, one, false, &picked);
  /* w: each position's weight (its class's, or 1), 0 where ignored */
  if (code == CLG_OK && clg_onnx_has(n, li + 1)) {
    clg_output wc = {0};
    code = clg_onnx_in(c, n, li + 1, &wc);
    if (code == CLG_OK && (clg_onnx_rank(wc) != 1 || clg_onnx_dim(wc, 0) != cls))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "weights must hold %lld values",
                           (long long)cls);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, wc, rank, cd, &wc);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Mul", mask, wc, &wc);
    if (code == CLG_OK)
      code = sum_axes(c, wc, 1, one, false, &w);
    if (code == CLG_OK && valid.node)
      code = clg_onnx_binop(c, "Mul", w, valid, &w);
  } else if (code == CLG_OK) {
    if (valid.node)
      w = valid;
    else
      code = clg_onnx_op(c, "OnesLike", 1, &picked, 0, NULL, &w);
  }
  clg_output loss = {0};
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", picked, w, &loss);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Neg", 1, &loss, 0, NULL, &loss);
  if (code != CLG_OK || strcmp(red, "none") == 0) {
    *out = loss;
    return code;
  }
  int64_t all[CLG_MAX_RANK];
  for (int d = 0; d < rank - 1; d++)
    all[d] = d;
  code = sum_axes(c, loss, rank - 1, all, false, &loss);
  if (code == CLG_OK && strcmp(red, "mean") == 0) {
    clg_output ws = {0};
    code = sum_axes(c, w, rank - 1, all, false, &ws);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "RealDiv", loss, ws, &loss);
  }
  *out = loss;
  return code;
}

static clg_code nll_loss(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = nll(c, n, x, 1, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* SoftmaxCrossEntropyLoss: the NLL of log_softmax over axis 1, which is output 1 (log_prob). */
static clg_code sce_loss(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, lp = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK && clg_onnx_rank(x) < 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "scores of rank %d: [N, C, ...] needed",
                         clg_onnx_rank(x));
  if (code == CLG_OK)
    code = log_softmax_1(c, x, &lp);
  if (code == CLG_OK)
    code = nll(c, n, lp, 1, &y);
  if (code == CLG_OK)
    code = clg_onnx_out(c, n, 0, y);
  if (code == CLG_OK && n->num_outputs > 1 && n->outputs[1][0])
    code = clg_onnx_out(c, n, 1, lp);
  return code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_loss, {"NegativeLogLikelihoodLoss", 12, nll_loss, NULL},
                  {"SoftmaxCrossEntropyLoss", 12, sce_loss, NULL});
