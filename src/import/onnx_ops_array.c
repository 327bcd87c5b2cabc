/* ONNX's shape and data-movement ops. clgraph's shapes are static, so shape operands (Reshape's
 * shape, Slice's starts, Squeeze's axes, ...) must be constants at import, which they are once
 * shape arithmetic folds; the results become static Reshapes, Slices and Pads. */
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

/* An axis in [-rank, rank) made non-negative; false when out of range. */
static bool norm_axis(int64_t *a, int rank)
{
  if (*a < 0)
    *a += rank;
  return *a >= 0 && *a < rank;
}

/* Identity, Dropout (inference, or training with a constant ratio 0: the input; its mask all
 * true). */
static clg_code identity(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (strcmp(n->op, "Dropout") == 0 && c->m->opset >= 12 && clg_onnx_has(n, 2)) {
    const clg_tensor *t = clg_onnx_in_const(c, n, 2);
    double ratio = 0.5; /* ONNX's default */
    bool zero = clg_onnx_has(n, 1) && clg_onnx_in_const(c, n, 1) &&
                clg_onnx_in_scalar(c, n, 1, &ratio) == CLG_OK && ratio == 0;
    if (!zero && (!t || clg_tensor_dtype(t) != CLG_BOOL ||
                  *(const uint8_t *)clg_tensor_data((clg_tensor *)t)))
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "Dropout in training mode is not supported");
  }
  clg_code code = clg_onnx_out_alias(c, n, 0, 0);
  if (code == CLG_OK && n->num_outputs > 1 && n->outputs[1][0]) {
    clg_output x = {0}, ones = {0};
    code = clg_onnx_in(c, n, 0, &x);
    int64_t dims[CLG_MAX_RANK];
    for (int i = 0; i < clg_onnx_rank(x); i++)
      dims[i] = clg_onnx_dim(x, i);
    clg_tensor *t = code == CLG_OK ? clg_tensor_new(CLG_BOOL, clg_onnx_rank(x), dims, NULL) : NULL;
    if (t) {
      memset(clg_tensor_data(t), 1, clg_tensor_count(t));
      code = clg_onnx_const(c, t, &ones);
      clg_tensor_free(t);
      if (code == CLG_OK)
        code = clg_onnx_out(c, n, 1, ones);
    } else if (code == CLG_OK)
      code = clg_graph_record_error(c->g);
  }
  return code;
}

/* Constant: value (a tensor) or one of value_float(s), value_int(s). */
static clg_code constant(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  const clg_imp_attr *a = clg_onnx_attr(n, "value");
  clg_output y = {0};
  clg_code code;
  if (a && a->kind == CLG_IMP_TENSOR) {
    if (!a->tensor.value)
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a constant of a dtype clgraph lacks");
    code = clg_onnx_const(c, a->tensor.value, &y);
  } else if ((a = clg_onnx_attr(n, "value_float")) && a->kind == CLG_IMP_F)
    code = clg_onnx_const_scalar(c, CLG_FLOAT32, a->f, &y);
  else if ((a = clg_onnx_attr(n, "value_int")) && a->kind == CLG_IMP_I)
    code = clg_onnx_const_scalar(c, CLG_INT64, (double)a->i, &y);
  else if ((a = clg_onnx_attr(n, "value_floats")) && a->kind == CLG_IMP_LIST) {
    int64_t d[1] = {a->n};
    clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 1, d, NULL);
    if (!t)
      return clg_graph_record_error(c->g);
    for (int i = 0; i < a->n; i++)
      ((float *)clg_tensor_data(t))[i] = a->floats ? (float)a->floats[i] : 0;
    code = clg_onnx_const(c, t, &y);
    clg_tensor_free(t);
  } else if ((a = clg_onnx_attr(n, "value_ints")) && a->kind == CLG_IMP_LIST) {
    int64_t d[1] = {a->n};
    clg_tensor *t = clg_tensor_new(CLG_INT64, 1, d, a->n ? a->ints : NULL);
    if (!t)
      return clg_graph_record_error(c->g);
    code = clg_onnx_const(c, t, &y);
    clg_tensor_free(t);
  } else
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a Constant without a value clgraph reads");
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code const_i64(clg_onnx *c, int n, const int64_t *v, bool scalar, clg_output *out)
{
  int64_t d[1] = {n};
  clg_tensor *t = clg_tensor_new(CLG_INT64, scalar ? 0 : 1, d, n ? v : NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  clg_code code = clg_onnx_const(c, t, out);
  clg_tensor_free(t);
  return code;
}

/* Shape (start and end from opset 15), Size: constants of the static shape. */
static clg_code shape_or_size(clg_onnx *c, const clg_imp_node *n, bool is_size)
{
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input 0 is required");
  int64_t dims[CLG_MAX_RANK], size = 1;
  for (int i = 0; i < rank; i++)
    size *= dims[i] = clg_onnx_in_dim(c, n, 0, i);
  clg_output y = {0};
  clg_code code;
  if (is_size)
    code = const_i64(c, 1, &size, true, &y);
  else {
    int64_t start = clg_onnx_attr_i(n, "start", 0), end = clg_onnx_attr_i(n, "end", rank);
    start = start < 0 ? start + rank : start;
    end = end < 0 ? end + rank : end;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < 0 ? 0 : end > rank ? rank : end;
    code = const_i64(c, end > start ? (int)(end - start) : 0, dims + start, false, &y);
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code shape(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return shape_or_size(c, n, false);
}

/* Its own rule function: Size is a registered op now, and op names are compared only in the
 * registry (tests/check_layering.sh). */
static clg_code size_rule(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return shape_or_size(c, n, true);
}

/* x reshaped to dims: the NHWC form reshaped directly where H = W = 1 (the same order). */
static clg_code reshape_to(clg_onnx *c, const clg_imp_node *n, int rank, const int64_t *dims)
{
  clg_output x = {0}, y = {0};
  clg_code code;
  if (clg_onnx_in_is_nhwc(c, n, 0) && clg_onnx_in_dim(c, n, 0, 2) == 1 &&
      clg_onnx_in_dim(c, n, 0, 3) == 1)
    code = clg_onnx_in_nhwc(c, n, 0, &x);
  else
    code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, rank, dims, &y);
  if (code == CLG_OK && y.node == x.node && y.index == x.index && !clg_onnx_in_is_nhwc(c, n, 0))
    return clg_onnx_out_alias(c, n, 0, 0);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code reshape(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t s[CLG_MAX_RANK + 1], dims[CLG_MAX_RANK];
  int k;
  clg_code code;
  if (c->m->opset < 5) {
    k = clg_onnx_attr_ints(n, "shape", s, CLG_MAX_RANK + 1);
    if (k < 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "no shape attribute");
  } else if ((code = clg_onnx_in_ints(c, n, 1, s, CLG_MAX_RANK + 1, &k)) != CLG_OK)
    return code;
  if (k > CLG_MAX_RANK)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a shape of %d dims", k);
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t total = 1, known = 1;
  int unknown = -1;
  bool allowzero = clg_onnx_attr_i(n, "allowzero", 0) != 0;
  for (int i = 0; i < rank; i++)
    total *= clg_onnx_in_dim(c, n, 0, i);
  for (int i = 0; i < k; i++) {
    dims[i] = s[i];
    if (s[i] == 0 && !allowzero) {
      if (i >= rank)
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                             "shape[%d] = 0 copies a dim the input "
                             "lacks",
                             i);
      dims[i] = clg_onnx_in_dim(c, n, 0, i);
    }
    if (dims[i] == -1) {
      if (unknown >= 0)
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "two -1 dims in the shape");
      unknown = i;
    } else if (dims[i] < 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "shape[%d] = %lld", i, (long long)dims[i]);
    else
      known *= dims[i];
  }
  if (unknown >= 0) {
    if (known == 0 || total % known)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "%lld elements do not reshape to the shape "
                           "given",
                           (long long)total);
    dims[unknown] = total / known;
  } else if (known != total)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "%lld elements do not reshape to a shape of %lld", (long long)total,
                         (long long)known);
  return reshape_to(c, n, k, dims);
}

static clg_code flatten(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld of a rank-%d input",
                         (long long)clg_onnx_attr_i(n, "axis", 1), rank);
  int64_t d[2] = {1, 1};
  for (int i = 0; i < rank; i++)
    d[i >= axis] *= clg_onnx_in_dim(c, n, 0, i);
  return reshape_to(c, n, 2, d);
}

/* Squeeze and Unsqueeze: axes from the attribute (opset < 13) or input 1; static Reshapes. */
static clg_code squeeze(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  bool un = strcmp(n->op, "Unsqueeze") == 0;
  int64_t axes[CLG_MAX_RANK + 1];
  int k = -1;
  clg_code code = CLG_OK;
  if (c->m->opset < 13)
    k = clg_onnx_attr_ints(n, "axes", axes, CLG_MAX_RANK + 1);
  else if (clg_onnx_has(n, 1))
    code = clg_onnx_in_ints(c, n, 1, axes, CLG_MAX_RANK + 1, &k);
  if (code != CLG_OK)
    return code;
  int rank = clg_onnx_in_rank(c, n, 0);
  int out_rank = un ? rank + (k < 0 ? 0 : k) : rank;
  if (un && k < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "Unsqueeze without axes");
  if (out_rank > CLG_MAX_RANK)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "rank %d", out_rank);
  bool mark[CLG_MAX_RANK + 1] = {false};
  for (int i = 0; i < k; i++) {
    if (!norm_axis(&axes[i], out_rank) || mark[axes[i]])
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld is out of range or repeated",
                           (long long)axes[i]);
    mark[axes[i]] = true;
  }
  int64_t dims[CLG_MAX_RANK];
  int nd = 0;
  if (un) {
    for (int i = 0, j = 0; i < out_rank; i++)
      dims[nd++] = mark[i] ? 1 : clg_onnx_in_dim(c, n, 0, j++);
  } else {
    for (int i = 0; i < rank; i++) {
      int64_t d = clg_onnx_in_dim(c, n, 0, i);
      if (mark[i] && d != 1)
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "dim %d is %lld, not 1", i, (long long)d);
      if (!(mark[i] || (k < 0 && d == 1)))
        dims[nd++] = d;
    }
  }
  return reshape_to(c, n, nd, dims);
}

static clg_code transpose(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t perm[CLG_MAX_RANK];
  int k = clg_onnx_attr_ints(n, "perm", perm, CLG_MAX_RANK);
  if (k < 0)
    for (int i = 0; i < rank; i++)
      perm[i] = rank - 1 - i;
  else if (k != rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "perm has %d values for rank %d", k, rank);
  clg_output x = {0}, y = {0};
  clg_code code;
  static const int64_t nchw_of_nhwc[4] = {0, 3, 1, 2};
  if (rank == 4 && clg_onnx_in_is_nhwc(c, n, 0)) { /* the NHWC form permuted at once */
    int64_t p2[4];
    for (int i = 0; i < 4; i++)
      p2[i] = nchw_of_nhwc[perm[i]];
    code = clg_onnx_in_nhwc(c, n, 0, &x);
    if (code == CLG_OK)
      code = clg_onnx_transpose(c, x, 4, p2, &y);
  } else {
    code = clg_onnx_in(c, n, 0, &x);
    if (code == CLG_OK)
      code = clg_onnx_transpose(c, x, rank, perm, &y);
  }
  if (code == CLG_OK && y.node == x.node && y.index == x.index)
    code = clg_onnx_op(c, "Identity", 1, &x, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Concat: in NHWC when every input is held so (the channel axis maps to 3). */
static clg_code concat(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int k = n->num_inputs, rank = clg_onnx_in_rank(c, n, 0);
  if (k < 1 || k > 255)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs", k);
  int64_t axis = clg_onnx_attr_i(n, "axis", c->m->opset < 4 ? 1 : 0x7fffffff);
  if (axis == 0x7fffffff || !norm_axis(&axis, rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis missing or out of range");
  bool nhwc = rank == 4;
  for (int i = 0; i < k; i++)
    nhwc = nhwc && clg_onnx_in_is_nhwc(c, n, i);
  static const int64_t nhwc_axis[4] = {0, 3, 1, 2};
  clg_output ins[256] = {0}, y = {0};
  clg_code code = CLG_OK;
  int m = 0;
  for (int i = 0; i < k && code == CLG_OK; i++) {
    if (!clg_onnx_has(n, i))
      continue;
    code = nhwc ? clg_onnx_in_nhwc(c, n, i, &ins[m]) : clg_onnx_in(c, n, i, &ins[m]);
    m++;
  }
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, 1, (int64_t[]){nhwc ? nhwc_axis[axis] : axis}, &ins[m]);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ConcatV2", m + 1, ins, 0, NULL, &y);
  if (code != CLG_OK)
    return code;
  return nhwc ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
}

/* Split: sizes from the attribute (opset < 13) or input 1, else equal parts. */
static clg_code split(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", 0);
  if (!norm_axis(&axis, rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  int parts = n->num_outputs;
  if (parts < 1 || parts > 64)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d outputs", parts);
  int64_t sizes[64], dim = clg_onnx_in_dim(c, n, 0, (int)axis);
  int k = -1;
  clg_code code = CLG_OK;
  if (c->m->opset < 13)
    k = clg_onnx_attr_ints(n, "split", sizes, 64);
  else if (clg_onnx_has(n, 1))
    code = clg_onnx_in_ints(c, n, 1, sizes, 64, &k);
  if (code != CLG_OK)
    return code;
  if (k < 0) {
    int64_t each = (dim + parts - 1) / parts;
    for (int i = 0; i < parts; i++) {
      int64_t left = dim - each * i;
      sizes[i] = left < each ? (left > 0 ? left : 0) : each;
    }
    k = parts;
  }
  int64_t sum = 0;
  for (int i = 0; i < k; i++)
    sum += sizes[i];
  if (k != parts || sum != dim)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "split sizes (%d, sum %lld) do not fit %d "
                         "outputs of a dim of %lld",
                         k, (long long)sum, parts, (long long)dim);
  clg_output x = {0};
  if ((code = clg_onnx_in(c, n, 0, &x)) != CLG_OK)
    return code;
  int64_t at = 0;
  for (int i = 0; i < parts && code == CLG_OK; i++) {
    int64_t b[CLG_MAX_RANK] = {0}, s[CLG_MAX_RANK];
    for (int d = 0; d < rank; d++)
      s[d] = d == axis ? sizes[i] : clg_onnx_dim(x, d);
    b[axis] = at;
    at += sizes[i];
    clg_output ins[3] = {x}, y;
    code = clg_onnx_const_i32(c, rank, b, &ins[1]);
    if (code == CLG_OK)
      code = clg_onnx_const_i32(c, rank, s, &ins[2]);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Slice", 3, ins, 0, NULL, &y);
    if (code == CLG_OK)
      code = clg_onnx_out(c, n, i, y);
  }
  return code;
}

/* Slice with ONNX's clamping: starts/ends/axes/steps from attributes (opset < 10) or inputs. */
static clg_code slice(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t st[CLG_MAX_RANK], en[CLG_MAX_RANK], ax[CLG_MAX_RANK], sp[CLG_MAX_RANK];
  int ns = -1, ne = -1, na = -1, np = -1;
  clg_code code = CLG_OK;
  if (c->m->opset < 10) {
    ns = clg_onnx_attr_ints(n, "starts", st, CLG_MAX_RANK);
    ne = clg_onnx_attr_ints(n, "ends", en, CLG_MAX_RANK);
    na = clg_onnx_attr_ints(n, "axes", ax, CLG_MAX_RANK);
  } else {
    code = clg_onnx_in_ints(c, n, 1, st, CLG_MAX_RANK, &ns);
    if (code == CLG_OK)
      code = clg_onnx_in_ints(c, n, 2, en, CLG_MAX_RANK, &ne);
    if (code == CLG_OK && clg_onnx_has(n, 3))
      code = clg_onnx_in_ints(c, n, 3, ax, CLG_MAX_RANK, &na);
    if (code == CLG_OK && clg_onnx_has(n, 4))
      code = clg_onnx_in_ints(c, n, 4, sp, CLG_MAX_RANK, &np);
  }
  if (code != CLG_OK)
    return code;
  if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "starts, ends, axes and steps disagree");
  int64_t begin[CLG_MAX_RANK], end[CLG_MAX_RANK], stride[CLG_MAX_RANK];
  int64_t end_mask = 0;
  bool seen[CLG_MAX_RANK] = {false};
  for (int d = 0; d < rank; d++) {
    begin[d] = 0;
    end[d] = clg_onnx_in_dim(c, n, 0, d);
    stride[d] = 1;
  }
  for (int i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? ax[i] : i, s = np >= 0 ? sp[i] : 1;
    if (!norm_axis(&a, rank) || seen[a] || s == 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "axis %lld (step %lld) is out of range, "
                           "repeated or zero-stepped",
                           (long long)(na >= 0 ? ax[i] : i), (long long)s);
    seen[a] = true;
    int64_t dim = clg_onnx_in_dim(c, n, 0, (int)a), b = st[i], e = en[i];
    b = b < 0 ? b + dim : b;
    e = e < 0 ? e + dim : e;
    if (s > 0) {
      b = b < 0 ? 0 : b > dim ? dim : b;
      e = e < 0 ? 0 : e > dim ? dim : e;
    } else {
      b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      if (e == -1)
        end_mask |= 1ll << a; /* through index 0 */
    }
    begin[a] = b;
    end[a] = e;
    stride[a] = s;
  }
  clg_output x = {0}, ins[4] = {0}, y = {0};
  code = clg_onnx_in(c, n, 0, &x);
  ins[0] = x;
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, rank, begin, &ins[1]);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, rank, end, &ins[2]);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, rank, stride, &ins[3]);
  clg_attr at[1] = {clg_attr_int("end_mask", end_mask)};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "StridedSlice", 4, ins, 1, at, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Gather along axis; negative constant indices count from the end (ONNX allows them). */
static clg_code gather(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", 0);
  if (!norm_axis(&axis, rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range");
  int64_t dim = clg_onnx_in_dim(c, n, 0, (int)axis);
  clg_output x = {0}, idx = {0}, y = {0}, ax = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &idx);
  if (code != CLG_OK)
    return code;
  const clg_tensor *k = clg_onnx_in_const(c, n, 1);
  if (k) { /* indices in range, negatives wrapped */
    int64_t dims[CLG_MAX_RANK];
    for (int i = 0; i < clg_tensor_rank(k); i++)
      dims[i] = clg_tensor_dim(k, i);
    clg_tensor *t = clg_tensor_new(CLG_INT64, clg_tensor_rank(k), dims, NULL);
    if (!t)
      return clg_graph_record_error(c->g);
    const void *src = clg_tensor_data((clg_tensor *)k);
    for (size_t i = 0; i < clg_tensor_count(k); i++) {
      int64_t v =
          clg_tensor_dtype(k) == CLG_INT64 ? ((const int64_t *)src)[i] : ((const int32_t *)src)[i];
      if (v < -dim || v >= dim) {
        clg_tensor_free(t);
        return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "index %lld is out of range [%lld, %lld)",
                             (long long)v, (long long)-dim, (long long)dim);
      }
      ((int64_t *)clg_tensor_data(t))[i] = v < 0 ? v + dim : v;
    }
    code = clg_onnx_const(c, t, &idx);
    clg_tensor_free(t);
  } else { /* negative indices wrapped at run time: FloorMod(i, dim) keeps [0, dim) */
    clg_output d = {0};
    code = clg_onnx_const_scalar(c, clg_onnx_dtype(idx), (double)dim, &d);
    clg_output p[2] = {idx, d};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "FloorMod", 2, p, 0, NULL, &idx);
  }
  if (code == CLG_OK) /* a scalar axis */
    code = clg_onnx_const_scalar(c, CLG_INT32, (double)axis, &ax);
  clg_output ins[3] = {x, idx, ax};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Edge padding of x: per padded axis, its first and last slices tiled before and after. */
static clg_code pad_edge(clg_onnx *c, const clg_imp_node *n, clg_output x, int rank,
                         const int64_t *p, clg_output *y)
{
  clg_code code = CLG_OK;
  for (int d = 0; d < rank && code == CLG_OK; d++) {
    if (!p[d] && !p[d + rank])
      continue;
    int64_t len = clg_onnx_dim(x, d);
    if (len == 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "edge padding of the empty axis %d", d);
    clg_output parts[4], k = x; /* before, x, after, the axis */
    int np = 0;
    for (int side = 0; side < 2 && code == CLG_OK; side++) {
      int64_t reps = p[d + side * rank];
      if (side == 1)
        parts[np++] = x;
      if (!reps)
        continue;
      int64_t begin[CLG_MAX_RANK] = {0}, size[CLG_MAX_RANK], mult[CLG_MAX_RANK];
      for (int e = 0; e < rank; e++) {
        size[e] = e == d ? 1 : clg_onnx_dim(x, e);
        mult[e] = e == d ? reps : 1;
      }
      begin[d] = side ? len - 1 : 0;
      clg_output b = {0}, s = {0}, m = {0}, sl = {0};
      code = clg_onnx_const_i32(c, rank, begin, &b);
      if (code == CLG_OK)
        code = clg_onnx_const_i32(c, rank, size, &s);
      if (code == CLG_OK)
        code = clg_onnx_const_i32(c, rank, mult, &m);
      clg_output si[3] = {x, b, s};
      if (code == CLG_OK)
        code = clg_onnx_op(c, "Slice", 3, si, 0, NULL, &sl);
      clg_output ti[2] = {sl, m};
      if (code == CLG_OK)
        code = clg_onnx_op(c, "Tile", 2, ti, 0, NULL, &parts[np++]);
    }
    clg_output ax = {0};
    if (code == CLG_OK)
      code = clg_onnx_const_scalar(c, CLG_INT32, d, &ax);
    parts[np] = ax;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "ConcatV2", np + 1, parts, 0, NULL, &k);
    x = k;
  }
  *y = x;
  return code;
}

/* Pad: constant (PadV2), reflect (MirrorPad REFLECT), edge (slices tiled); pads from the
 * attribute (opset < 11) or
 * input 1 ([x1_begin, x2_begin, ..., x1_end, ...]); negative pads are not supported. */
static clg_code pad(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t p[2 * CLG_MAX_RANK];
  int k = -1;
  double value = 0;
  clg_code code = CLG_OK;
  const char *mode = clg_onnx_attr_s(n, "mode", "constant");
  if (c->m->opset < 11) {
    k = clg_onnx_attr_ints(n, c->m->opset < 2 ? "paddings" : "pads", p, 2 * CLG_MAX_RANK);
    value = clg_onnx_attr_f(n, "value", 0);
  } else {
    code = clg_onnx_in_ints(c, n, 1, p, 2 * CLG_MAX_RANK, &k);
    if (code == CLG_OK && clg_onnx_has(n, 2))
      code = clg_onnx_in_scalar(c, n, 2, &value);
  }
  if (code != CLG_OK)
    return code;
  if (k != 2 * rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d pads for rank %d", k, rank);
  int64_t dims[2] = {rank, 2};
  clg_tensor *t = clg_tensor_new(CLG_INT32, 2, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  for (int d = 0; d < rank; d++) {
    if (p[d] < 0 || p[d + rank] < 0) {
      clg_tensor_free(t);
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "negative pads are not supported");
    }
    ((int32_t *)clg_tensor_data(t))[2 * d] = (int32_t)p[d];
    ((int32_t *)clg_tensor_data(t))[2 * d + 1] = (int32_t)p[d + rank];
  }
  clg_output x = {0}, pads = {0}, y = {0}, cv = {0};
  code = clg_onnx_const(c, t, &pads);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 0, &x);
  if (code != CLG_OK)
    return code;
  if (strcmp(mode, "constant") == 0) {
    code = clg_onnx_const_scalar(c, clg_onnx_dtype(x), value, &cv);
    clg_output ins[3] = {x, pads, cv};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "PadV2", 3, ins, 0, NULL, &y);
  } else if (strcmp(mode, "reflect") == 0) {
    clg_attr m = clg_attr_string("mode", "REFLECT");
    clg_output ins[2] = {x, pads};
    code = clg_onnx_op(c, "MirrorPad", 2, ins, 1, &m, &y);
  } else if (strcmp(mode, "edge") == 0)
    code = pad_edge(c, n, x, rank, p, &y);
  else
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "mode '%s' is not supported", mode);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* ConstantOfShape: a constant of the (constant) shape filled with value (float 0 default). */
static clg_code constant_of_shape(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t dims[CLG_MAX_RANK];
  int k;
  clg_code code = clg_onnx_in_ints(c, n, 0, dims, CLG_MAX_RANK, &k);
  if (code != CLG_OK)
    return code;
  const clg_imp_attr *a = clg_onnx_attr(n, "value");
  const clg_tensor *v = a && a->kind == CLG_IMP_TENSOR ? a->tensor.value : NULL;
  if (a && (!v || clg_tensor_count(v) != 1))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "value must be a one-element tensor");
  clg_dtype dt = v ? clg_tensor_dtype(v) : CLG_FLOAT32;
  clg_tensor *t = clg_tensor_new(dt, k, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  size_t es = clg_dtype_size(dt);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    if (v)
      memcpy((uint8_t *)clg_tensor_data(t) + i * es, clg_tensor_data((clg_tensor *)v), es);
  clg_output y = {0};
  code = clg_onnx_const(c, t, &y);
  clg_tensor_free(t);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Expand: x broadcast against the shape (numpy's rule, both ways). */
static clg_code expand(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  int64_t s[CLG_MAX_RANK];
  int k;
  clg_code code = clg_onnx_in_ints(c, n, 1, s, CLG_MAX_RANK, &k);
  if (code != CLG_OK)
    return code;
  int rank = clg_onnx_in_rank(c, n, 0), out = k > rank ? k : rank;
  int64_t dims[CLG_MAX_RANK];
  for (int i = 0; i < out; i++) {
    int64_t a = i - (out - rank) >= 0 ? clg_onnx_in_dim(c, n, 0, i - (out - rank)) : 1;
    int64_t b = i - (out - k) >= 0 ? s[i - (out - k)] : 1;
    if (a != b && a != 1 && b != 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "dim %d: %lld does not broadcast to %lld", i,
                           (long long)a, (long long)b);
    dims[i] = a == 1 ? b : a;
  }
  clg_output x = {0}, sh = {0}, y = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, out, dims, &sh);
  clg_output ins[2] = {x, sh};
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 2, ins, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code tile(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t m[CLG_MAX_RANK];
  int k;
  clg_code code = clg_onnx_in_ints(c, n, 1, m, CLG_MAX_RANK, &k);
  if (code != CLG_OK)
    return code;
  if (k != clg_onnx_in_rank(c, n, 0))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d repeats for rank %d", k,
                         clg_onnx_in_rank(c, n, 0));
  clg_output x = {0}, mk = {0}, y = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, k, m, &mk);
  clg_output ins[2] = {x, mk};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Tile", 2, ins, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code range(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output ins[3] = {0}, y = {0};
  clg_code code = CLG_OK;
  for (int i = 0; i < 3 && code == CLG_OK; i++)
    code = clg_onnx_in(c, n, i, &ins[i]);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Range", 3, ins, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_array, {"Identity", 1, identity, NULL},
                  {"Dropout", 1, identity, NULL}, {"Constant", 1, constant, NULL},
                  {"Shape", 1, shape, NULL}, {"Size", 1, size_rule, NULL},
                  {"Reshape", 1, reshape, "Reshape"}, {"Flatten", 1, flatten, "Reshape"},
                  {"Squeeze", 1, squeeze, "Reshape"}, {"Unsqueeze", 1, squeeze, "Reshape"},
                  {"Transpose", 1, transpose, "Transpose"}, {"Concat", 1, concat, "ConcatV2"},
                  {"Split", 2, split, "Slice"}, {"Slice", 1, slice, "StridedSlice"},
                  {"Gather", 1, gather, "GatherV2"}, {"Pad", 2, pad, "PadV2"},
                  {"ConstantOfShape", 9, constant_of_shape, NULL},
                  {"Expand", 8, expand, "BroadcastTo"}, {"Tile", 6, tile, "Tile"},
                  {"Range", 11, range, "Range"});
