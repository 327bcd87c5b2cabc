/* ONNX's index ops: GatherElements, ScatterElements/Scatter, ScatterND, GatherND, OneHot,
 * CumSum, ReverseSequence, Einsum, and the constant-only Compress and NonZero.
 *
 * Index tensors may be graph inputs, so the translations compute linear indices at run time
 * (int64 Add/Mul/Select run on the host; soft placement puts them there) and move data with one
 * GatherV2 over the flattened tensor. Scatters compare every linear index with every position
 * (an Equal of [K, 1] against [1, P]) and pick or sum the updates through that mask: O(K * P),
 * which suits the small index tensors ONNX models scatter with. Constant indices fold away.
 * CumSum is TensorFlow's Cumsum. */
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

#define TRY(e)                                                                                     \
  do {                                                                                             \
    clg_code try_code_ = (e);                                                                      \
    if (try_code_ != CLG_OK)                                                                       \
      return try_code_;                                                                            \
  } while (0)

static clg_code cast_to(clg_onnx *c, clg_output x, clg_dtype dt, clg_output *y)
{
  if (clg_onnx_dtype(x) == dt) {
    *y = x;
    return CLG_OK;
  }
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, &x, 1, &a, y);
}

/* A Const of dtype dt and shape dims holding v (int64 values), or zeros when v is NULL. */
static clg_code const_of(clg_onnx *c, clg_dtype dt, int rank, const int64_t *dims, const int64_t *v,
                         clg_output *y)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  void *d = clg_tensor_data(t);
  for (size_t i = 0; i < clg_tensor_count(t); i++) {
    int64_t x = v ? v[i] : 0;
    switch (dt) {
    case CLG_INT64:
      ((int64_t *)d)[i] = x;
      break;
    case CLG_INT32:
      ((int32_t *)d)[i] = (int32_t)x;
      break;
    case CLG_FLOAT64:
      ((double *)d)[i] = (double)x;
      break;
    case CLG_FLOAT32:
      ((float *)d)[i] = (float)x;
      break;
    default:
      ((uint8_t *)d)[i] = x != 0;
      break;
    }
  }
  clg_code code = clg_onnx_const(c, t, y);
  clg_tensor_free(t);
  return code;
}

static clg_code reduce(clg_onnx *c, const char *op, clg_output x, int k, const int64_t *axes,
                       clg_output *y)
{
  clg_output ins[2] = {x};
  TRY(clg_onnx_const_i32(c, k, axes, &ins[1]));
  return clg_onnx_op(c, op, 2, ins, 0, NULL, y);
}

static bool norm_axis(int64_t *a, int rank)
{
  if (*a < 0)
    *a += rank;
  return *a >= 0 && *a < rank;
}

static int64_t count_of(int rank, const int64_t *dims)
{
  int64_t k = 1;
  for (int i = 0; i < rank; i++)
    k *= dims[i];
  return k;
}

/* Input i as int64 with negative entries counted from the end of a dim of size dim. */
static clg_code index_in(clg_onnx *c, const clg_imp_node *n, int i, int64_t dim, clg_output *y)
{
  clg_dtype dt = clg_onnx_in_dtype(c, n, i);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') is %s, not int32 or int64", i,
                         clg_onnx_has(n, i) ? n->inputs[i] : "", clg_dtype_name(dt));
  clg_output x = {0}, zero = {0}, nonneg = {0}, wrapped = {0}, ins[3] = {0};
  TRY(clg_onnx_in(c, n, i, &x));
  TRY(cast_to(c, x, CLG_INT64, &x));
  TRY(clg_onnx_const_scalar(c, CLG_INT64, 0, &zero));
  TRY(clg_onnx_binop(c, "GreaterEqual", x, zero, &nonneg));
  TRY(clg_onnx_scalar_op(c, "Add", x, (double)dim, &wrapped));
  ins[0] = nonneg, ins[1] = x, ins[2] = wrapped;
  return clg_onnx_op(c, "Select", 3, ins, 0, NULL, y);
}

/* The int64 constant of shape idims whose entry at each coordinate j is sum_d j_d * stride[d]
 * over d != skip: the linear position of an element whose axis skip is still to be added. */
static clg_code base_index(clg_onnx *c, int rank, const int64_t *idims, const int64_t *stride,
                           int skip, clg_output *y)
{
  int64_t k = count_of(rank, idims);
  int64_t *v = malloc(sizeof *v * (size_t)(k ? k : 1));
  if (!v)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < k; i++) {
    int64_t rest = i, lin = 0;
    for (int d = rank - 1; d >= 0; d--) {
      if (d != skip)
        lin += (rest % idims[d]) * stride[d];
      rest /= idims[d];
    }
    v[i] = lin;
  }
  clg_code code = const_of(c, CLG_INT64, rank, idims, v, y);
  free(v);
  return code;
}

static void strides_of(int rank, const int64_t *dims, int64_t *stride)
{
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    stride[d] = s;
    s *= dims[d];
  }
}

/* out[p, :] for data [P, S], linear indices lin [K] and updates upd [K, S]: updates written
 * (reduction "none"), added ("add") or multiplied in ("mul") at their positions. */
static clg_code scatter_rows(clg_onnx *c, const clg_imp_node *n, clg_output data, clg_output lin,
                             clg_output upd, const char *reduction, clg_output *y)
{
  int64_t p = clg_onnx_dim(data, 0), k = clg_onnx_dim(lin, 0);
  if (k == 0) /* no updates */
    return clg_onnx_op(c, "Identity", 1, &data, 0, NULL, y);
  int64_t *pos = malloc(sizeof *pos * (size_t)(p ? p : 1));
  if (!pos)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < p; i++)
    pos[i] = i;
  clg_output rng = {0}, col = {0}, eq = {0}, eqf = {0}, ins[3] = {0};
  clg_code code = const_of(c, CLG_INT64, 2, (int64_t[]){1, p}, pos, &rng);
  free(pos);
  TRY(code);
  TRY(clg_onnx_reshape(c, lin, 2, (int64_t[]){k, 1}, &col));
  TRY(clg_onnx_binop(c, "Equal", col, rng, &eq)); /* [K, P]: update k lands on position p */
  clg_dtype dt = clg_onnx_dtype(data);
  if (strcmp(reduction, "none") == 0) {
    clg_output which = {0}, hit = {0}, one = {0}, hitb = {0}, picked = {0}, dim0 = {0};
    TRY(cast_to(c, eq, CLG_FLOAT32, &eqf));
    TRY(clg_onnx_const_scalar(c, CLG_INT32, 0, &dim0));
    TRY(clg_onnx_binop(c, "ArgMax", eqf, dim0, &which));
    TRY(reduce(c, "Max", eqf, 1, (int64_t[]){0}, &hit));
    TRY(clg_onnx_const_scalar(c, CLG_FLOAT32, 1, &one));
    TRY(clg_onnx_binop(c, "GreaterEqual", hit, one, &hitb));
    ins[0] = upd, ins[1] = which, ins[2] = dim0;
    TRY(clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &picked));
    ins[0] = hitb, ins[1] = picked, ins[2] = data;
    return clg_onnx_op(c, "Select", 3, ins, 0, NULL, y);
  }
  bool mul = strcmp(reduction, "mul") == 0;
  if (strcmp(reduction, "add") != 0 && !mul)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "reduction '%s' is not supported", reduction);
  clg_dtype ft = dt == CLG_FLOAT32 || dt == CLG_FLOAT64 ? dt : CLG_FLOAT64;
  clg_output updf = {0}, sum = {0};
  if (mul) { /* data * prod_k (mask ? upd : 1): each factor exact (0 * upd + 1 or upd + 0) */
    int64_t s = clg_onnx_dim(upd, 1);
    clg_output m3 = {0}, u3 = {0}, inv = {0}, f = {0}, one = {0};
    TRY(cast_to(c, eq, ft, &eqf));
    TRY(clg_onnx_reshape(c, eqf, 3, (int64_t[]){k, p, 1}, &m3));
    TRY(cast_to(c, upd, ft, &updf));
    TRY(clg_onnx_reshape(c, updf, 3, (int64_t[]){k, 1, s}, &u3));
    TRY(clg_onnx_const_scalar(c, ft, 1, &one));
    TRY(clg_onnx_binop(c, "Sub", one, m3, &inv));
    TRY(clg_onnx_binop(c, "Mul", m3, u3, &f));
    TRY(clg_onnx_binop(c, "Add", f, inv, &f)); /* [K, P, S] */
    TRY(reduce(c, "Prod", f, 1, (int64_t[]){0}, &f));
    TRY(cast_to(c, f, dt, &f));
    return clg_onnx_binop(c, "Mul", data, f, y);
  }
  /* The sum of the updates per position as a GEMM of the mask; integers in float64, exact to
   * 2^53. */
  TRY(cast_to(c, eq, ft, &eqf));
  TRY(cast_to(c, upd, ft, &updf));
  clg_attr ta = clg_attr_bool("transpose_a", 1);
  ins[0] = eqf, ins[1] = updf;
  TRY(clg_onnx_op(c, "MatMul", 2, ins, 1, &ta, &sum));
  TRY(cast_to(c, sum, dt, &sum));
  return clg_onnx_binop(c, "Add", data, sum, y);
}

/* GatherElements, ScatterElements and Scatter (opset < 11's name of ScatterElements). */
static clg_code elements(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  bool scatter = strcmp(n->op, "GatherElements") != 0;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", 0);
  if (rank < 1 || !norm_axis(&axis, rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld of a rank-%d input",
                         (long long)clg_onnx_attr_i(n, "axis", 0), rank);
  if (clg_onnx_in_rank(c, n, 1) != rank || (scatter && clg_onnx_in_rank(c, n, 2) != rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "indices (rank %d) must have data's rank %d",
                         clg_onnx_in_rank(c, n, 1), rank);
  int64_t dims[CLG_MAX_RANK], idims[CLG_MAX_RANK], stride[CLG_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    dims[d] = clg_onnx_in_dim(c, n, 0, d);
    idims[d] = clg_onnx_in_dim(c, n, 1, d);
    if ((d != axis && idims[d] > dims[d]) || (scatter && clg_onnx_in_dim(c, n, 2, d) != idims[d]))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "dim %d: indices %lld against data %lld (updates must match indices)", d,
                           (long long)idims[d], (long long)dims[d]);
  }
  strides_of(rank, dims, stride);
  clg_output x = {0}, idx = {0}, base = {0}, lin = {0}, flat = {0}, y = {0}, ax = {0};
  TRY(clg_onnx_in(c, n, 0, &x));
  TRY(index_in(c, n, 1, dims[axis], &idx));
  TRY(base_index(c, rank, idims, stride, (int)axis, &base));
  TRY(clg_onnx_scalar_op(c, "Mul", idx, (double)stride[axis], &lin));
  TRY(clg_onnx_binop(c, "Add", base, lin, &lin));
  int64_t total = count_of(rank, dims), k = count_of(rank, idims);
  if (!scatter) {
    TRY(clg_onnx_reshape(c, x, 1, &total, &flat));
    TRY(clg_onnx_const_scalar(c, CLG_INT32, 0, &ax));
    clg_output ins[3] = {flat, lin, ax};
    TRY(clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &y));
    return clg_onnx_out(c, n, 0, y);
  }
  clg_output upd = {0};
  TRY(clg_onnx_in(c, n, 2, &upd));
  TRY(clg_onnx_reshape(c, x, 2, (int64_t[]){total, 1}, &flat));
  TRY(clg_onnx_reshape(c, lin, 1, &k, &lin));
  TRY(clg_onnx_reshape(c, upd, 2, (int64_t[]){k, 1}, &upd));
  TRY(scatter_rows(c, n, flat, lin, upd, clg_onnx_attr_s(n, "reduction", "none"), &y));
  TRY(clg_onnx_reshape(c, y, rank, dims, &y));
  return clg_onnx_out(c, n, 0, y);
}

/* The linear index of the last axis of indices (int64 [..., k], each entry counted from the
 * end when negative) into dims[0..k), plus base (shape indices[:-1]) when given. */
static clg_code linear_nd(clg_onnx *c, clg_output idx, int k, const int64_t *dims, clg_output *base,
                          clg_output *y)
{
  int q = clg_onnx_rank(idx);
  int64_t st[CLG_MAX_RANK], b[CLG_MAX_RANK] = {0}, s[CLG_MAX_RANK], out[CLG_MAX_RANK];
  strides_of(k, dims, st);
  for (int d = 0; d < q; d++)
    s[d] = out[d] = clg_onnx_dim(idx, d);
  s[q - 1] = 1;
  clg_output acc = base ? *base : (clg_output){0};
  if (!base)
    TRY(const_of(c, CLG_INT64, q - 1, out, NULL, &acc));
  for (int j = 0; j < k; j++) {
    clg_output ins[3] = {idx}, col, zero, nonneg, wrapped;
    b[q - 1] = j;
    TRY(clg_onnx_const_i32(c, q, b, &ins[1]));
    TRY(clg_onnx_const_i32(c, q, s, &ins[2]));
    TRY(clg_onnx_op(c, "Slice", 3, ins, 0, NULL, &col));
    TRY(clg_onnx_reshape(c, col, q - 1, out, &col));
    TRY(clg_onnx_const_scalar(c, CLG_INT64, 0, &zero));
    TRY(clg_onnx_binop(c, "GreaterEqual", col, zero, &nonneg));
    TRY(clg_onnx_scalar_op(c, "Add", col, (double)dims[j], &wrapped));
    ins[0] = nonneg, ins[1] = col, ins[2] = wrapped;
    TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &col));
    TRY(clg_onnx_scalar_op(c, "Mul", col, (double)st[j], &col));
    TRY(clg_onnx_binop(c, "Add", acc, col, &acc));
  }
  *y = acc;
  return CLG_OK;
}

/* GatherND (batch_dims leading dims shared by data and indices) and ScatterND. */
static clg_code nd(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  bool scatter = strcmp(n->op, "ScatterND") == 0;
  int rank = clg_onnx_in_rank(c, n, 0), q = clg_onnx_in_rank(c, n, 1);
  int64_t bd = scatter ? 0 : clg_onnx_attr_i(n, "batch_dims", 0);
  int64_t k = q >= 1 ? clg_onnx_in_dim(c, n, 1, q - 1) : -1;
  if (q < 1 || bd < 0 || bd >= q || k < 0 || bd + k > rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "indices of rank %d (last dim %lld, batch_dims %lld) do not index data "
                         "of rank %d",
                         q, (long long)k, (long long)bd, rank);
  if (clg_onnx_in_dtype(c, n, 1) != CLG_INT64 && clg_onnx_in_dtype(c, n, 1) != CLG_INT32)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "indices are %s, not int64",
                         clg_dtype_name(clg_onnx_in_dtype(c, n, 1)));
  int64_t dims[CLG_MAX_RANK], batch = 1, pk = 1, s = 1, odims[CLG_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < rank; d++) {
    dims[d] = clg_onnx_in_dim(c, n, 0, d);
    if (d < bd) {
      if (clg_onnx_in_dim(c, n, 1, d) != dims[d])
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "batch dim %d: indices %lld, data %lld", d,
                             (long long)clg_onnx_in_dim(c, n, 1, d), (long long)dims[d]);
      batch *= dims[d];
    } else if (d < bd + k)
      pk *= dims[d];
    else
      s *= dims[d];
  }
  for (int d = 0; d < q - 1; d++)
    odims[orank++] = clg_onnx_in_dim(c, n, 1, d);
  int64_t m = count_of(orank, odims);
  for (int d = (int)(bd + k); d < rank; d++)
    odims[orank++] = dims[d];
  if (orank > CLG_MAX_RANK)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "an output of rank %d", orank);
  clg_output x, idx, lin, flat, y, base = {0};
  TRY(clg_onnx_in(c, n, 0, &x));
  TRY(clg_onnx_in(c, n, 1, &idx));
  TRY(cast_to(c, idx, CLG_INT64, &idx));
  if (bd > 0) { /* each batch's rows start at batch * pk */
    int64_t idims[CLG_MAX_RANK], st[CLG_MAX_RANK] = {0};
    for (int d = 0; d < q - 1; d++)
      idims[d] = clg_onnx_in_dim(c, n, 1, d);
    int64_t w = pk;
    for (int d = (int)bd - 1; d >= 0; d--) {
      st[d] = w;
      w *= dims[d];
    }
    TRY(base_index(c, q - 1, idims, st, -1, &base));
  }
  TRY(linear_nd(c, idx, (int)k, dims + bd, bd > 0 ? &base : NULL, &lin));
  TRY(clg_onnx_reshape(c, x, 2, (int64_t[]){batch * pk, s}, &flat));
  TRY(clg_onnx_reshape(c, lin, 1, &m, &lin));
  if (!scatter) {
    clg_output ax = {0}, ins[3] = {0};
    TRY(clg_onnx_const_scalar(c, CLG_INT32, 0, &ax));
    ins[0] = flat, ins[1] = lin, ins[2] = ax;
    TRY(clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &y));
    TRY(clg_onnx_reshape(c, y, orank, odims, &y));
    return clg_onnx_out(c, n, 0, y);
  }
  if (clg_onnx_in_rank(c, n, 2) != orank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "updates of rank %d, not %d",
                         clg_onnx_in_rank(c, n, 2), orank);
  for (int d = 0; d < orank; d++)
    if (clg_onnx_in_dim(c, n, 2, d) != odims[d])
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "updates dim %d is %lld, not %lld", d,
                           (long long)clg_onnx_in_dim(c, n, 2, d), (long long)odims[d]);
  clg_output upd = {0};
  TRY(clg_onnx_in(c, n, 2, &upd));
  TRY(clg_onnx_reshape(c, upd, 2, (int64_t[]){m, s}, &upd));
  TRY(scatter_rows(c, n, flat, lin, upd, clg_onnx_attr_s(n, "reduction", "none"), &y));
  TRY(clg_onnx_reshape(c, y, rank, dims, &y));
  return clg_onnx_out(c, n, 0, y);
}

/* The declared size of dim d of the node's output 0 when it is a graph output (-1: unknown). */
static int64_t declared_dim(clg_onnx *c, const clg_imp_node *n, int d)
{
  for (int i = 0; i < c->m->num_sig_outputs; i++) {
    const clg_imp_sig *s = &c->m->sig_outputs[i];
    if (n->num_outputs > 0 && strcmp(s->name, n->outputs[0]) == 0)
      return d < s->shape.rank ? s->shape.dims[d] : -1;
  }
  return -1;
}

/* OneHot: off + (on - off) where an index (counted from the end when negative) equals the
 * position along axis. depth sets the output's shape, so it must be a constant, or read from
 * the output's declared shape. */
static clg_code one_hot(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", -1);
  if (rank < 0 || rank + 1 > CLG_MAX_RANK || !norm_axis(&axis, rank + 1))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld of a rank-%d output",
                         (long long)clg_onnx_attr_i(n, "axis", -1), rank + 1);
  double dv;
  int64_t depth;
  if (clg_onnx_in_const(c, n, 1)) {
    TRY(clg_onnx_in_scalar(c, n, 1, &dv));
    depth = (int64_t)dv;
  } else if ((depth = declared_dim(c, n, (int)axis)) < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "depth must be a constant (or the output's shape declared): clgraph's "
                         "shapes are static");
  if (depth < 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "depth %lld", (long long)depth);
  if (clg_onnx_in_rank(c, n, 2) != 1 || clg_onnx_in_dim(c, n, 2, 0) != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "values must hold [off, on]");
  int64_t idims[CLG_MAX_RANK], rdims[CLG_MAX_RANK];
  for (int d = 0, j = 0; d <= rank; d++) {
    idims[d] = d == axis ? 1 : clg_onnx_in_dim(c, n, 0, j++);
    rdims[d] = d == axis ? depth : 1;
  }
  int64_t *pos = malloc(sizeof *pos * (size_t)depth);
  if (!pos)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < depth; i++)
    pos[i] = i;
  clg_output x = {0}, zero = {0}, nonneg = {0}, wrapped = {0}, ins[3] = {0}, rng = {0}, eq = {0},
             vals = {0}, on = {0}, off = {0}, mask = {0}, y = {0};
  clg_code code = const_of(c, CLG_INT64, rank + 1, rdims, pos, &rng);
  free(pos);
  TRY(code);
  TRY(clg_onnx_in(c, n, 0, &x));
  TRY(cast_to(c, x, CLG_INT64, &x)); /* ONNX casts non-integer indices */
  TRY(clg_onnx_const_scalar(c, CLG_INT64, 0, &zero));
  TRY(clg_onnx_binop(c, "GreaterEqual", x, zero, &nonneg));
  TRY(clg_onnx_scalar_op(c, "Add", x, (double)depth, &wrapped));
  ins[0] = nonneg, ins[1] = x, ins[2] = wrapped;
  TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &x));
  TRY(clg_onnx_reshape(c, x, rank + 1, idims, &x));
  TRY(clg_onnx_binop(c, "Equal", x, rng, &eq));
  TRY(clg_onnx_in(c, n, 2, &vals));
  clg_dtype dt = clg_onnx_dtype(vals);
  for (int i = 0; i < 2; i++) {
    clg_output sl[3] = {vals};
    TRY(clg_onnx_const_i32(c, 1, (int64_t[]){i}, &sl[1]));
    TRY(clg_onnx_const_i32(c, 1, (int64_t[]){1}, &sl[2]));
    TRY(clg_onnx_op(c, "Slice", 3, sl, 0, NULL, i ? &on : &off));
    TRY(clg_onnx_reshape(c, i ? on : off, 0, NULL, i ? &on : &off));
  }
  /* mask * on + (1 - mask) * off: exact for finite values (one term is zero) */
  clg_output inv = {0}, a = {0}, b = {0}, one = {0};
  TRY(cast_to(c, eq, dt, &mask));
  TRY(clg_onnx_const_scalar(c, dt, 1, &one));
  TRY(clg_onnx_binop(c, "Sub", one, mask, &inv));
  TRY(clg_onnx_binop(c, "Mul", mask, on, &a));
  TRY(clg_onnx_binop(c, "Mul", inv, off, &b));
  TRY(clg_onnx_binop(c, "Add", a, b, &y));
  return clg_onnx_out(c, n, 0, y);
}

/* Cumulative sum of x along axis: TensorFlow's Cumsum has ONNX's exclusive and reverse. */
static clg_code cumsum_along(clg_onnx *c, clg_output x, int axis, bool exclusive, bool reverse,
                             clg_output *y)
{
  clg_output ins[2] = {x};
  clg_attr at[2] = {clg_attr_bool("exclusive", exclusive), clg_attr_bool("reverse", reverse)};
  TRY(clg_onnx_const_scalar(c, CLG_INT32, axis, &ins[1]));
  return clg_onnx_op(c, "Cumsum", 2, ins, 2, at, y);
}

/* CumSum: a constant axis builds one sum; an axis known only at run time builds one per axis
 * and selects by its value (each has x's shape). */
static clg_code cumsum(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  bool excl = clg_onnx_attr_i(n, "exclusive", 0) != 0, rev = clg_onnx_attr_i(n, "reverse", 0) != 0;
  clg_dtype at = clg_onnx_in_dtype(c, n, 1);
  if (rank < 1 || clg_onnx_in_rank(c, n, 1) > 1 || (at != CLG_INT32 && at != CLG_INT64))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "a rank-%d input and a %s axis of rank %d: want rank >= 1 and an "
                         "integer scalar",
                         rank, clg_dtype_name(at), clg_onnx_in_rank(c, n, 1));
  clg_output x = {0}, y = {0};
  TRY(clg_onnx_in(c, n, 0, &x));
  if (clg_onnx_in_const(c, n, 1) || rank == 1) {
    int64_t a = 0;
    int k = 1;
    if (rank > 1)
      TRY(clg_onnx_in_ints(c, n, 1, &a, 1, &k));
    if (k != 1 || !norm_axis(&a, rank))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld of a rank-%d input", (long long)a,
                           rank);
    TRY(cumsum_along(c, x, (int)a, excl, rev, &y));
    return clg_onnx_out(c, n, 0, y);
  }
  clg_output ax = {0}, an = {0};
  TRY(clg_onnx_in(c, n, 1, &ax));
  TRY(cast_to(c, ax, CLG_INT64, &ax));
  TRY(clg_onnx_reshape(c, ax, 0, NULL, &ax));
  TRY(clg_onnx_scalar_op(c, "FloorMod", ax, rank, &an)); /* -rank..rank-1 to 0..rank-1 */
  for (int a = 0; a < rank; a++) {
    clg_output ya = {0}, is = {0}, ins[3] = {0};
    TRY(cumsum_along(c, x, a, excl, rev, &ya));
    if (a == 0) {
      y = ya;
      continue;
    }
    TRY(clg_onnx_scalar_op(c, "Equal", an, a, &is));
    ins[0] = is, ins[1] = ya, ins[2] = y;
    TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &y));
  }
  return clg_onnx_out(c, n, 0, y);
}

/* ReverseSequence: for batch b and time t < lens[b], element lens[b] - 1 - t; later ones stay.
 * The source positions are computed from lens at run time and gathered in one GatherV2. */
static clg_code reverse_sequence(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t ta = clg_onnx_attr_i(n, "time_axis", 0), ba = clg_onnx_attr_i(n, "batch_axis", 1);
  if (rank < 2 || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "time_axis %lld and batch_axis %lld of a rank-%d input (want 0 and 1)",
                         (long long)ta, (long long)ba, rank);
  int64_t dims[CLG_MAX_RANK], tl = clg_onnx_in_dim(c, n, 0, (int)ta),
                              bl = clg_onnx_in_dim(c, n, 0, (int)ba);
  for (int d = 0; d < rank; d++)
    dims[d] = clg_onnx_in_dim(c, n, 0, d);
  if (clg_onnx_in_rank(c, n, 1) != 1 || clg_onnx_in_dim(c, n, 1, 0) != bl)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "sequence_lens must hold %lld lengths",
                         (long long)bl);
  int64_t rest = count_of(rank - 2, dims + 2);
  int64_t *tv = malloc(sizeof *tv * (size_t)(tl * bl > 0 ? tl * bl : 1));
  if (!tv)
    return clg_graph_record_error(c->g);
  for (int64_t b = 0; b < bl; b++)
    for (int64_t t = 0; t < tl; t++)
      tv[b * tl + t] = t;
  clg_output tt = {0}, lens = {0}, late = {0}, back = {0}, src = {0}, ins[3] = {0}, x = {0},
             y = {0}, ofs = {0};
  clg_code code = const_of(c, CLG_INT64, 2, (int64_t[]){bl, tl}, tv, &tt);
  free(tv);
  TRY(code);
  TRY(clg_onnx_in(c, n, 1, &lens));
  TRY(cast_to(c, lens, CLG_INT64, &lens));
  TRY(clg_onnx_reshape(c, lens, 2, (int64_t[]){bl, 1}, &lens));
  TRY(clg_onnx_binop(c, "GreaterEqual", tt, lens, &late));
  TRY(clg_onnx_scalar_op(c, "Sub", lens, 1, &back));
  TRY(clg_onnx_binop(c, "Sub", back, tt, &back));
  ins[0] = late, ins[1] = tt, ins[2] = back;
  TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &src)); /* [B, T] source times */
  int64_t strides[2] = {dims[1], 1}, bdims[2] = {dims[0], dims[1]};
  if (ta == 0)
    TRY(clg_onnx_transpose(c, src, 2, (int64_t[]){1, 0}, &src));
  TRY(clg_onnx_scalar_op(c, "Mul", src, (double)strides[ta], &src));
  TRY(base_index(c, 2, bdims, strides, (int)ta, &ofs));
  TRY(clg_onnx_binop(c, "Add", src, ofs, &src));
  TRY(clg_onnx_in(c, n, 0, &x));
  TRY(clg_onnx_reshape(c, x, 2, (int64_t[]){dims[0] * dims[1], rest}, &x));
  ins[0] = x, ins[1] = src;
  TRY(clg_onnx_const_scalar(c, CLG_INT32, 0, &ins[2]));
  TRY(clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &y));
  TRY(clg_onnx_reshape(c, y, rank, dims, &y));
  return clg_onnx_out(c, n, 0, y);
}

/* --- Einsum ---------------------------------------------------------------------------------- */

#define EIN_MAX 8       /* operands */
#define EIN_LABELS 64   /* a-z, A-Z, then the ellipsis' dims */
#define EIN_ELLIPSIS 52 /* label of the ellipsis' first (outermost) dim */

typedef struct ein_term {
  int n;
  int labels[CLG_MAX_RANK];
} ein_term;

static int ein_label(char ch)
{
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a';
  if (ch >= 'A' && ch <= 'Z')
    return 26 + ch - 'A';
  return -1;
}

/* One term of the equation (s to end) with its ellipsis spread over ell dims, right-aligned
 * against the widest ellipsis (width): false when it is malformed. */
static bool ein_parse(const char *s, const char *end, int rank, int width, ein_term *t,
                      int *ell_out)
{
  int letters = 0, dots = 0;
  for (const char *p = s; p < end; p++)
    if (*p == '.')
      dots++;
    else if (*p != ' ')
      letters++;
  if (dots != 0 && dots != 3)
    return false;
  int ell = dots ? rank - letters : 0;
  if (ell < 0 || (rank >= 0 && !dots && letters != rank) || letters + ell > CLG_MAX_RANK)
    return false;
  if (ell_out)
    *ell_out = ell;
  t->n = 0;
  for (const char *p = s; p < end; p++) {
    if (*p == ' ')
      continue;
    if (*p == '.') { /* the one "..." (three dots counted above) */
      if (strncmp(p, "...", 3) != 0)
        return false;
      for (int e = 0; e < ell; e++)
        t->labels[t->n++] = EIN_ELLIPSIS + width - ell + e;
      p += 2;
      continue;
    }
    int l = ein_label(*p);
    if (l < 0)
      return false;
    t->labels[t->n++] = l;
  }
  return true;
}

/* x's repeated label at axes p < q reduced to its diagonal: x * eye, summed over q. */
static clg_code ein_diagonal(clg_onnx *c, clg_output *x, ein_term *t, int p, int q)
{
  int rank = t->n;
  int64_t dims[CLG_MAX_RANK], len = clg_onnx_dim(*x, p);
  for (int d = 0; d < rank; d++)
    dims[d] = d == p || d == q ? len : 1;
  int64_t *eye = calloc((size_t)(len > 0 ? len * len : 1), sizeof *eye);
  if (!eye)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < len; i++)
    eye[i * len + i] = 1;
  clg_output m = {0};
  clg_code code = const_of(c, clg_onnx_dtype(*x), rank, dims, eye, &m);
  free(eye);
  TRY(code);
  TRY(clg_onnx_binop(c, "Mul", *x, m, x));
  TRY(reduce(c, "Sum", *x, 1, (int64_t[]){q}, x));
  for (int d = q; d + 1 < rank; d++)
    t->labels[d] = t->labels[d + 1];
  t->n--;
  return CLG_OK;
}

static bool ein_has(const ein_term *t, int l)
{
  for (int d = 0; d < t->n; d++)
    if (t->labels[d] == l)
      return true;
  return false;
}

static int64_t ein_dim(clg_output x, const ein_term *t, int l)
{
  for (int d = 0; d < t->n; d++)
    if (t->labels[d] == l)
      return clg_onnx_dim(x, d);
  return 1;
}

/* Two operands as one BatchMatMulV2 where every label is a batch (both operands and the
 * output, one size), free (one operand and the output) or contracted (both, not the output):
 * [batch, free a, summed] times [batch, summed, free b], reshaped and transposed to the output.
 * *done false: the equation has another form (or a dtype GEMM lacks); the caller broadcasts. */
static clg_code ein_matmul(clg_onnx *c, const clg_output *xs, const ein_term *t,
                           const ein_term *out, bool *done, clg_output *y)
{
  clg_dtype dt = clg_onnx_dtype(xs[0]);
  *done = false;
  if ((dt != CLG_FLOAT32 && dt != CLG_FLOAT64) || clg_onnx_dtype(xs[1]) != dt)
    return CLG_OK;
  int batch[CLG_MAX_RANK], fa[CLG_MAX_RANK], fb[CLG_MAX_RANK], sum[CLG_MAX_RANK];
  int nb = 0, na = 0, nf = 0, ns = 0;
  for (int d = 0; d < out->n; d++) {
    int l = out->labels[d];
    bool a = ein_has(&t[0], l), b = ein_has(&t[1], l);
    if (a && b && ein_dim(xs[0], &t[0], l) != ein_dim(xs[1], &t[1], l))
      return CLG_OK; /* a broadcast batch label */
    if (a && b)
      batch[nb++] = l;
    else if (a)
      fa[na++] = l;
    else
      fb[nf++] = l;
  }
  for (int i = 0; i < 2; i++)
    for (int d = 0; d < t[i].n; d++) {
      int l = t[i].labels[d];
      if (ein_has(out, l))
        continue;
      if (!ein_has(&t[1 - i], l) || ein_dim(xs[0], &t[0], l) != ein_dim(xs[1], &t[1], l))
        return CLG_OK; /* summed within one operand, or broadcast */
      if (i == 0)
        sum[ns++] = l;
    }
  int64_t bt = 1, ma = 1, kk = 1, nn = 1, cdims[CLG_MAX_RANK];
  int nc = 0, cur[CLG_MAX_RANK];
  for (int j = 0; j < nb; j++)
    bt *= cdims[nc] = ein_dim(xs[0], &t[0], batch[j]), cur[nc++] = batch[j];
  for (int j = 0; j < na; j++)
    ma *= cdims[nc] = ein_dim(xs[0], &t[0], fa[j]), cur[nc++] = fa[j];
  for (int j = 0; j < nf; j++)
    nn *= cdims[nc] = ein_dim(xs[1], &t[1], fb[j]), cur[nc++] = fb[j];
  for (int j = 0; j < ns; j++)
    kk *= ein_dim(xs[0], &t[0], sum[j]);
  clg_output m[2] = {0};
  for (int i = 0; i < 2; i++) {
    int order[CLG_MAX_RANK], no = 0;
    for (int j = 0; j < nb; j++)
      order[no++] = batch[j];
    if (i == 1)
      for (int j = 0; j < ns; j++)
        order[no++] = sum[j];
    for (int j = 0; j < (i ? nf : na); j++)
      order[no++] = i ? fb[j] : fa[j];
    if (i == 0)
      for (int j = 0; j < ns; j++)
        order[no++] = sum[j];
    int64_t perm[CLG_MAX_RANK];
    for (int j = 0; j < no; j++)
      for (int d = 0; d < t[i].n; d++)
        if (t[i].labels[d] == order[j])
          perm[j] = d;
    TRY(clg_onnx_transpose(c, xs[i], no, perm, &m[i]));
    int64_t d3[3] = {bt, i ? kk : ma, i ? nn : kk};
    TRY(clg_onnx_reshape(c, m[i], 3, d3, &m[i]));
  }
  clg_output prod = {0};
  TRY(clg_onnx_binop(c, "BatchMatMulV2", m[0], m[1], &prod));
  TRY(clg_onnx_reshape(c, prod, nc, cdims, &prod));
  int64_t perm[CLG_MAX_RANK];
  for (int d = 0; d < out->n; d++)
    for (int j = 0; j < nc; j++)
      if (cur[j] == out->labels[d])
        perm[d] = j;
  TRY(clg_onnx_transpose(c, prod, out->n, perm, y));
  *done = true;
  return CLG_OK;
}

/* Einsum's output term: the explicit one after the arrow (the ellipsis spans the widest
 * operand's), or the implicit one. */
static clg_code ein_out_term(clg_onnx *c, const clg_imp_node *n, const char *eq, const char *arrow,
                             int width, const int *uses, ein_term *out_term)
{
  ein_term out;
  if (arrow) { /* explicit: the ellipsis spans the widest operand's */
    out.n = 0;
    for (const char *p = arrow + 2; *p; p++) {
      if (*p == ' ')
        continue;
      if (strncmp(p, "...", 3) == 0 && out.n + width <= CLG_MAX_RANK) {
        for (int e = 0; e < width; e++)
          out.labels[out.n++] = EIN_ELLIPSIS + e;
        p += 2;
      } else if (ein_label(*p) >= 0 && out.n < CLG_MAX_RANK)
        out.labels[out.n++] = ein_label(*p);
      else
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the output of equation '%s'", eq);
    }
  } else { /* implicit: the ellipsis, then the labels used once, in alphabetical order */
    out.n = 0;
    for (int e = 0; e < width; e++)
      out.labels[out.n++] = EIN_ELLIPSIS + e;
    for (int l = 0; l < EIN_ELLIPSIS; l++)
      if (uses[l] == 1 && out.n < CLG_MAX_RANK)
        out.labels[out.n++] = l;
  }
  *out_term = out;
  return CLG_OK;
}

/* Einsum's operands, each with the diagonal of its repeated labels taken (t[i] shifts). */
static clg_code ein_operands(clg_onnx *c, const clg_imp_node *n, int k, ein_term *t, clg_output *xs)
{
  for (int i = 0; i < k; i++) {
    clg_output x = {0};
    TRY(clg_onnx_in(c, n, i, &x));
    for (int p = 0; p < t[i].n; p++)
      for (int q = p + 1; q < t[i].n; q++)
        if (t[i].labels[p] == t[i].labels[q]) {
          if (clg_onnx_dim(x, p) != clg_onnx_dim(x, q))
            return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                                 "a repeated label of operand %d spans dims of %lld and %lld", i,
                                 (long long)clg_onnx_dim(x, p), (long long)clg_onnx_dim(x, q));
          TRY(ein_diagonal(c, &x, &t[i], p, q));
          q = p; /* the term shifted: look again from p + 1 */
        }
    xs[i] = x;
  }
  return CLG_OK;
}

/* The product of Einsum's operands, each transposed into the labels' order and reshaped with
 * 1s for the labels it lacks, so that Mul broadcasts them. */
static clg_code ein_product(clg_onnx *c, int k, const clg_output *xs, const ein_term *t,
                            const int *order, int g, clg_output *prod_out)
{
  clg_output prod = {0};
  for (int i = 0; i < k; i++) {
    clg_output x = xs[i];
    int64_t perm[CLG_MAX_RANK], dims[CLG_MAX_RANK];
    int m = 0;
    for (int j = 0; j < g; j++)
      for (int d = 0; d < t[i].n; d++)
        if (t[i].labels[d] == order[j])
          perm[m++] = d;
    TRY(clg_onnx_transpose(c, x, m, perm, &x));
    /* the transposed operand's dims, in order, with 1s for the labels it lacks */
    for (int j = 0, d = 0; j < g; j++) {
      bool has = false;
      for (int e = 0; e < t[i].n; e++)
        has = has || t[i].labels[e] == order[j];
      dims[j] = has ? clg_onnx_dim(x, d++) : 1;
    }
    TRY(clg_onnx_reshape(c, x, g, dims, &x));
    if (i == 0)
      prod = x;
    else
      TRY(clg_onnx_binop(c, "Mul", prod, x, &prod));
  }
  *prod_out = prod;
  return CLG_OK;
}

/* Einsum: two operands of a matmul form as one BatchMatMulV2 (ein_matmul); otherwise by
 * broadcasting: each operand's axes transposed into one order of every label (the output's
 * first), with 1s for the labels it lacks; their product summed over the labels the output
 * lacks. Repeated labels in one operand take its diagonal first. */
static clg_code einsum(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  const char *eq = clg_onnx_attr_s(n, "equation", NULL);
  int k = n->num_inputs;
  if (!eq || k < 1 || k > EIN_MAX)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "an equation and 1 to %d operands", EIN_MAX);
  const char *arrow = strstr(eq, "->"), *lhs_end = arrow ? arrow : eq + strlen(eq);
  ein_term t[EIN_MAX], out = {0}; /* set by ein_out_term */
  int width = 0, ell[EIN_MAX];
  const char *s = eq;
  for (int i = 0; i < k; i++) { /* first pass: each ellipsis' width */
    const char *e = memchr(s, ',', (size_t)(lhs_end - s));
    if ((i + 1 < k) != (e != NULL))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "equation '%s' does not have %d operands",
                           eq, k);
    e = e ? e : lhs_end;
    if (!ein_parse(s, e, clg_onnx_in_rank(c, n, i), 0, &t[i], &ell[i]))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "term %d of equation '%s' does not fit a rank-%d input", i, eq,
                           clg_onnx_in_rank(c, n, i));
    width = ell[i] > width ? ell[i] : width;
    s = e + 1;
  }
  s = eq;
  int64_t size[EIN_LABELS];
  int uses[EIN_LABELS] = {0};
  for (int l = 0; l < EIN_LABELS; l++)
    size[l] = 1;
  for (int i = 0; i < k; i++) {
    const char *e = memchr(s, ',', (size_t)(lhs_end - s));
    e = e ? e : lhs_end;
    ein_parse(s, e, clg_onnx_in_rank(c, n, i), width, &t[i], NULL);
    s = e + 1;
    for (int d = 0; d < t[i].n; d++) {
      int l = t[i].labels[d];
      int64_t dim = clg_onnx_in_dim(c, n, i, d);
      if (size[l] != 1 && dim != 1 && dim != size[l])
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                             "label '%c' is %lld in one operand and %lld in another",
                             l < 26   ? 'a' + l
                             : l < 52 ? 'A' + l - 26
                                      : '.',
                             (long long)size[l], (long long)dim);
      size[l] = dim != 1 ? dim : size[l];
      uses[l]++;
    }
  }
  TRY(ein_out_term(c, n, eq, arrow, width, uses, &out));
  /* the order of all labels: the output's, then the summed ones */
  int order[EIN_LABELS], g = 0, pos[EIN_LABELS];
  for (int l = 0; l < EIN_LABELS; l++)
    pos[l] = -1;
  for (int d = 0; d < out.n; d++) {
    int l = out.labels[d];
    if (pos[l] >= 0 || !uses[l])
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "output label %d of equation '%s' is repeated or in no operand", d, eq);
    pos[l] = g;
    order[g++] = l;
  }
  for (int l = 0; l < EIN_LABELS; l++)
    if (uses[l] && pos[l] < 0) {
      pos[l] = g;
      order[g++] = l;
    }
  if (g > CLG_MAX_RANK)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "equation '%s' has %d labels, at most %d", eq, g,
                         CLG_MAX_RANK);
  clg_output prod = {0}, xs[EIN_MAX];
  TRY(ein_operands(c, n, k, t, xs));
  if (k == 2) {
    bool done = false;
    TRY(ein_matmul(c, xs, t, &out, &done, &prod));
    if (done)
      return clg_onnx_out(c, n, 0, prod);
  }
  TRY(ein_product(c, k, xs, t, order, g, &prod));
  if (g > out.n) {
    int64_t axes[CLG_MAX_RANK];
    for (int j = out.n; j < g; j++)
      axes[j - out.n] = j;
    TRY(reduce(c, "Sum", prod, g - out.n, axes, &prod));
  } else if (k == 1 && g == out.n) /* a transpose, or x itself */
    TRY(clg_onnx_op(c, "Identity", 1, &prod, 0, NULL, &prod));
  int64_t odims[CLG_MAX_RANK]; /* broadcast dims of 1 grow to the output's size */
  for (int d = 0; d < out.n; d++)
    odims[d] = size[out.labels[d]];
  if (clg_onnx_count(prod) != count_of(out.n, odims)) {
    clg_output zeros = {0};
    TRY(const_of(c, clg_onnx_dtype(prod), out.n, odims, NULL, &zeros));
    TRY(clg_onnx_binop(c, "Add", prod, zeros, &prod));
  }
  return clg_onnx_out(c, n, 0, prod);
}

/* --- constant-only ops ----------------------------------------------------------------------- */

static bool truthy(const clg_tensor *t, size_t i)
{
  const void *d = clg_tensor_data((clg_tensor *)t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT32:
    return ((const float *)d)[i] != 0;
  case CLG_FLOAT64:
    return ((const double *)d)[i] != 0;
  case CLG_INT32:
    return ((const int32_t *)d)[i] != 0;
  case CLG_INT64:
    return ((const int64_t *)d)[i] != 0;
  default:
    return ((const uint8_t *)d)[i] != 0;
  }
}

/* Compress with a constant condition: a Gather of the positions it keeps (axis absent: of the
 * flattened input). */
static clg_code compress(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  const clg_tensor *cond = clg_onnx_in_const(c, n, 1);
  if (!cond)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "the condition must be a constant: the output's shape depends on it and "
                         "clgraph's shapes are static");
  int rank = clg_onnx_in_rank(c, n, 0);
  const clg_imp_attr *aa = clg_onnx_attr(n, "axis");
  int64_t axis = aa ? clg_onnx_attr_i(n, "axis", 0) : 0;
  if (aa && !norm_axis(&axis, rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld of a rank-%d input",
                         (long long)clg_onnx_attr_i(n, "axis", 0), rank);
  clg_output x = {0}, idx = {0}, y = {0}, ins[3] = {0};
  TRY(clg_onnx_in(c, n, 0, &x));
  if (!aa) {
    int64_t total = clg_onnx_count(x);
    TRY(clg_onnx_reshape(c, x, 1, &total, &x));
  }
  int64_t dim = clg_onnx_dim(x, (int)axis), kept = 0;
  size_t nc = clg_tensor_count(cond);
  if (clg_tensor_rank(cond) != 1 || (int64_t)nc > dim)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "the condition holds %zu values for a dim of %lld", nc, (long long)dim);
  int64_t *keep = malloc(sizeof *keep * (nc ? nc : 1));
  if (!keep)
    return clg_graph_record_error(c->g);
  for (size_t i = 0; i < nc; i++)
    if (truthy(cond, i))
      keep[kept++] = (int64_t)i;
  clg_code code = const_of(c, CLG_INT64, 1, &kept, keep, &idx);
  free(keep);
  TRY(code);
  ins[0] = x, ins[1] = idx;
  TRY(clg_onnx_const_scalar(c, CLG_INT32, (double)axis, &ins[2]));
  TRY(clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &y));
  return clg_onnx_out(c, n, 0, y);
}

/* NonZero of a constant: the [rank, count] coordinates of its nonzero entries, folded. */
static clg_code non_zero(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  const clg_tensor *t = clg_onnx_in_const(c, n, 0);
  if (!t)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "the input must be a constant: the output's shape depends on it and "
                         "clgraph's shapes are static");
  int rank = clg_tensor_rank(t);
  size_t total = clg_tensor_count(t);
  int64_t nz = 0, dims[2];
  for (size_t i = 0; i < total; i++)
    nz += truthy(t, i);
  dims[0] = rank > 0 ? rank : 1;
  dims[1] = nz;
  int64_t *v = malloc(sizeof *v * (size_t)(dims[0] * nz > 0 ? dims[0] * nz : 1));
  if (!v)
    return clg_graph_record_error(c->g);
  int64_t j = 0;
  for (size_t i = 0; i < total; i++) {
    if (!truthy(t, i))
      continue;
    size_t rest = i;
    for (int d = rank - 1; d >= 0; d--) {
      v[d * nz + j] = (int64_t)(rest % (size_t)clg_tensor_dim(t, d));
      rest /= (size_t)clg_tensor_dim(t, d);
    }
    if (rank == 0)
      v[j] = 0;
    j++;
  }
  clg_output y = {0};
  clg_code code = const_of(c, CLG_INT64, 2, dims, v, &y);
  free(v);
  TRY(code);
  return clg_onnx_out(c, n, 0, y);
}

CLG_ONNX_RULE_SET(clg_onnx_rules_index, {"GatherElements", 11, elements, "GatherV2"},
                  {"ScatterElements", 11, elements, "GatherV2"},
                  {"Scatter", 9, elements, "GatherV2"}, {"ScatterND", 11, nd, "GatherV2"},
                  {"GatherND", 11, nd, "GatherV2"}, {"OneHot", 9, one_hot, "Select"},
                  {"CumSum", 11, cumsum, "Cumsum"},
                  {"ReverseSequence", 10, reverse_sequence, "GatherV2"},
                  {"Einsum", 12, einsum, "BatchMatMulV2"}, {"Compress", 9, compress, "GatherV2"},
                  {"NonZero", 9, non_zero, NULL});
