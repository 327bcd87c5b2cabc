/* ONNX elementwise ops: activations, arithmetic with numpy broadcasting (ONNX's and
 * TensorFlow's rules agree from opset 7), comparisons and logic. Each keeps its inputs' layout:
 * on NHWC inputs the result stays NHWC, so activations and residual adds between convolutions
 * add no transposes. */
#include <math.h>
#include <string.h>

#include "import/onnx.h"

/* --- layout --------------------------------------------------------------------------------- */

/* Input i for an elementwise op computing in NHWC (out rank 4): rank-4 inputs transposed, lower
 * ranks padded to rank 4 (numpy's broadcast aligns trailing dims) then transposed, scalars as
 * they are. */
static clg_code in_for_nhwc(clg_onnx *c, const clg_imp_node *n, int i, clg_output *out)
{
  int rank = clg_onnx_in_rank(c, n, i);
  if (rank == 4)
    return clg_onnx_in_nhwc(c, n, i, out);
  clg_output x = {0};
  clg_code code = clg_onnx_in(c, n, i, &x);
  if (code != CLG_OK || rank == 0 || clg_onnx_count(x) == 1)
    return code == CLG_OK ? (*out = x, CLG_OK) : code;
  int64_t dims[4] = {1, 1, 1, 1};
  for (int d = 0; d < rank; d++)
    dims[4 - rank + d] = clg_onnx_dim(x, d);
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  clg_output r = {0};
  if ((code = clg_onnx_reshape(c, x, 4, dims, &r)) != CLG_OK)
    return code;
  return clg_onnx_transpose(c, r, 4, to_nhwc, out);
}

/* Whether an elementwise node computes in NHWC: its result has rank 4 and an input is held in
 * NHWC only (the others follow it). */
static bool use_nhwc(clg_onnx *c, const clg_imp_node *n, int nin)
{
  int out_rank = 0;
  bool any = false;
  for (int i = 0; i < nin; i++) {
    int r = clg_onnx_in_rank(c, n, i);
    out_rank = r > out_rank ? r : out_rank;
    any = any || clg_onnx_in_is_nhwc(c, n, i);
  }
  return any && out_rank == 4;
}

/* The node's first nin inputs, all in the layout the node computes in (*nhwc). */
static clg_code gather(clg_onnx *c, const clg_imp_node *n, int nin, clg_output *ins, bool *nhwc)
{
  *nhwc = use_nhwc(c, n, nin);
  for (int i = 0; i < nin; i++) {
    clg_code code = *nhwc ? in_for_nhwc(c, n, i, &ins[i]) : clg_onnx_in(c, n, i, &ins[i]);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

static clg_code put(clg_onnx *c, const clg_imp_node *n, bool nhwc, clg_output y)
{
  return nhwc ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
}

/* --- rules ---------------------------------------------------------------------------------- */

/* One input, one clgraph op of the same meaning. */
static clg_code unary(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  clg_output x = {0}, y = {0};
  bool nhwc;
  clg_code code = gather(c, n, 1, &x, &nhwc);
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 1, &x, 0, NULL, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

/* Two inputs broadcast, one clgraph op. */
static clg_code binary(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  if (n->num_inputs != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 2", n->num_inputs);
  if (clg_onnx_attr(n, "broadcast") || clg_onnx_attr(n, "axis"))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "the legacy broadcast/axis attributes (opset < 7) are not supported");
  clg_output ins[2] = {0}, y = {0};
  bool nhwc;
  clg_code code = gather(c, n, 2, ins, &nhwc);
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 2, ins, 0, NULL, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

static clg_code cast_op(clg_onnx *c, clg_output x, clg_dtype dt, clg_output *y)
{
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, &x, 1, &a, y);
}

/* 1 in r's dtype where r is nonzero and a and b have different signs, else 0: what turns
 * FloorDiv's quotient and FloorMod's remainder into C's truncating / and %. */
static clg_code sign_fix(clg_onnx *c, clg_output r, clg_output a, clg_output b, clg_output *fix)
{
  clg_output zero = {0}, nz = {0}, an = {0}, bn = {0};
  clg_code code = clg_onnx_const_scalar(c, clg_onnx_dtype(r), 0, &zero);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "NotEqual", r, zero, &nz);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Less", a, zero, &an);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Less", b, zero, &bn);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "NotEqual", an, bn, fix);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "LogicalAnd", nz, *fix, fix);
  return code == CLG_OK ? cast_op(c, *fix, clg_onnx_dtype(r), fix) : code;
}

/* Signed integer division truncating toward zero (C's /, ONNX's integer Div) from FloorDiv:
 * q = FloorDiv(x, y), plus 1 where the remainder is nonzero and the signs differ. */
static clg_code int_truncdiv(clg_onnx *c, const clg_output *ins, clg_output *y)
{
  clg_output q = {0}, r = {0}, fix = {0};
  clg_code code = clg_onnx_op(c, "FloorDiv", 2, ins, 0, NULL, &q);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "FloorMod", 2, ins, 0, NULL, &r);
  if (code == CLG_OK)
    code = sign_fix(c, r, ins[0], ins[1], &fix);
  return code == CLG_OK ? clg_onnx_binop(c, "Add", q, fix, y) : code;
}

/* Div: RealDiv on floats; on integers ONNX's truncation toward zero: FloorDiv on unsigned
 * ones, FloorDiv corrected on signed ones. */
static clg_code div_op(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  if (clg_dtype_is_unsigned(dt))
    return binary(c, n, &(clg_onnx_rule){r->op, r->since, r->fn, "FloorDiv"});
  if (clg_dtype_is_integer(dt)) {
    if (n->num_inputs != 2)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 2", n->num_inputs);
    clg_output ins[2] = {0}, y = {0};
    bool nhwc;
    clg_code code = gather(c, n, 2, ins, &nhwc);
    if (code == CLG_OK)
      code = int_truncdiv(c, ins, &y);
    return code == CLG_OK ? put(c, n, nhwc, y) : code;
  }
  if (dt != CLG_FLOAT32 && dt != CLG_FLOAT64 && dt != CLG_FLOAT16)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "Div of %s is not supported", clg_dtype_name(dt));
  return binary(c, n, r);
}

/* Integer fmod (C's %: the dividend's sign) from FloorMod: r = FloorMod(x, y), less y where r
 * is nonzero and its sign differs from x's. */
static clg_code int_fmod(clg_onnx *c, const clg_output *ins, clg_output *y)
{
  clg_output r = {0}, fix = {0};
  clg_code code = clg_onnx_op(c, "FloorMod", 2, ins, 0, NULL, &r);
  if (code == CLG_OK)
    code = sign_fix(c, r, r, ins[0], &fix);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", fix, ins[1], &fix);
  return code == CLG_OK ? clg_onnx_binop(c, "Sub", r, fix, y) : code;
}

/* Mod: fmod 0 takes the divisor's sign (FloorMod); fmod 1 the dividend's, as C's fmod:
 * sign(x) * FloorMod(|x|, |y|). */
static clg_code mod_op(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  if (clg_onnx_attr_i(n, "fmod", 0) == 0)
    return binary(c, n, r);
  clg_output ins[2] = {0}, ax = {0}, ay = {0}, s = {0}, y = {0};
  bool nhwc;
  clg_code code = gather(c, n, 2, ins, &nhwc);
  clg_dtype dt = code == CLG_OK ? clg_onnx_dtype(ins[0]) : CLG_FLOAT32;
  if (code == CLG_OK && clg_dtype_is_integer(dt)) {
    code = int_fmod(c, ins, &y);
    return code == CLG_OK ? put(c, n, nhwc, y) : code;
  }
  /* half in float: fmod is exact in either, so the one rounding back is none */
  for (int i = 0; i < 2 && code == CLG_OK && dt == CLG_FLOAT16; i++)
    code = cast_op(c, ins[i], CLG_FLOAT32, &ins[i]);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Abs", 1, &ins[0], 0, NULL, &ax);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Abs", 1, &ins[1], 0, NULL, &ay);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Sign", 1, &ins[0], 0, NULL, &s);
  clg_output p[2] = {ax, ay};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "FloorMod", 2, p, 0, NULL, &y);
  p[0] = s;
  p[1] = y;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, p, 0, NULL, &y);
  if (code == CLG_OK && dt == CLG_FLOAT16)
    code = cast_op(c, y, CLG_FLOAT16, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

/* Sum, Max, Min, Mean of any number of inputs: a chain of the binary op (Mean: Sum / n). */
static clg_code variadic_of(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r, bool mean,
                            bool widen)
{
  int k = n->num_inputs;
  if (k < 1 || k > 64)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs", k);
  clg_output ins[64] = {0}, acc = {0};
  bool nhwc;
  clg_code code = gather(c, n, k, ins, &nhwc);
  if (code != CLG_OK)
    return code;
  /* Max and Min of half in float (exact: the result is one of the inputs) */
  bool half = widen && clg_onnx_dtype(ins[0]) == CLG_FLOAT16;
  for (int i = 0; i < k && half && code == CLG_OK; i++)
    code = cast_op(c, ins[i], CLG_FLOAT32, &ins[i]);
  const char *op = r->tf;
  acc = ins[0];
  for (int i = 1; i < k && code == CLG_OK; i++) {
    clg_output p[2] = {acc, ins[i]};
    code = clg_onnx_op(c, op, 2, p, 0, NULL, &acc);
  }
  if (code == CLG_OK && k == 1 && !mean) { /* a copy */
    clg_output x = acc;
    code = clg_onnx_op(c, "Identity", 1, &x, 0, NULL, &acc);
  }
  if (code == CLG_OK && mean) {
    clg_output s = {0}, p[2] = {0};
    code = clg_onnx_const_scalar(c, clg_onnx_dtype(acc), 1.0 / k, &s);
    p[0] = acc;
    p[1] = s;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Mul", 2, p, 0, NULL, &acc);
  }
  if (code == CLG_OK && half)
    code = cast_op(c, acc, CLG_FLOAT16, &acc);
  return code == CLG_OK ? put(c, n, nhwc, acc) : code;
}

/* Clip: min and max from attributes (opset < 11) or optional inputs; ReLU6 is Relu6. */
static clg_code clip(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  double lo = -INFINITY, hi = INFINITY;
  clg_code code = CLG_OK;
  if (c->m->opset < 11) {
    lo = clg_onnx_attr_f(n, "min", -INFINITY);
    hi = clg_onnx_attr_f(n, "max", INFINITY);
  } else {
    if (clg_onnx_has(n, 1))
      code = clg_onnx_in_scalar(c, n, 1, &lo);
    if (code == CLG_OK && clg_onnx_has(n, 2))
      code = clg_onnx_in_scalar(c, n, 2, &hi);
  }
  clg_output x = {0}, y = {0};
  bool nhwc;
  if (code == CLG_OK)
    code = gather(c, n, 1, &x, &nhwc);
  if (code != CLG_OK)
    return code;
  clg_dtype dt = clg_onnx_dtype(x);
  if (lo == 0 && hi == 6 && (dt == CLG_FLOAT32 || dt == CLG_FLOAT64))
    code = clg_onnx_op(c, "Relu6", 1, &x, 0, NULL, &y);
  else {
    y = x;
    bool floaty = dt == CLG_FLOAT32 || dt == CLG_FLOAT64;
    if (code == CLG_OK && (lo > -INFINITY || !floaty) && !isinf(lo))
      code = clg_onnx_scalar_op(c, "Maximum", y, lo, &y);
    if (code == CLG_OK && !isinf(hi))
      code = clg_onnx_scalar_op(c, "Minimum", y, hi, &y);
    if (code == CLG_OK && y.node == x.node && y.index == x.index)
      code = clg_onnx_op(c, "Identity", 1, &x, 0, NULL, &y);
  }
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

static clg_code leaky_relu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, y = {0};
  bool nhwc;
  clg_code code = gather(c, n, 1, &x, &nhwc);
  clg_attr a = clg_attr_float("alpha", clg_onnx_attr_f(n, "alpha", 0.01));
  if (code == CLG_OK)
    code = clg_onnx_op(c, "LeakyRelu", 1, &x, 1, &a, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

/* HardSigmoid: max(0, min(1, alpha x + beta)); HardSwish: x * HardSigmoid(x) at 1/6, 1/2. */
static clg_code hard_sigmoid_of(clg_onnx *c, const clg_imp_node *n, bool swish)
{
  double alpha = swish ? 1.0 / 6 : clg_onnx_attr_f(n, "alpha", 0.2);
  double beta = swish ? 0.5 : clg_onnx_attr_f(n, "beta", 0.5);
  clg_output x = {0}, y = {0};
  bool nhwc;
  clg_code code = gather(c, n, 1, &x, &nhwc);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Mul", x, alpha, &y);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Add", y, beta, &y);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Minimum", y, 1.0, &y);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Maximum", y, 0.0, &y);
  if (code == CLG_OK && swish) {
    clg_output p[2] = {x, y};
    code = clg_onnx_op(c, "Mul", 2, p, 0, NULL, &y);
  }
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

/* Elu with alpha, Celu, Selu with alpha and gamma, ThresholdedRelu: composed where the
 * clgraph op's constants differ from the node's. */
static clg_code exp_linear_of(clg_onnx *c, const clg_imp_node *n, bool selu, bool celu)
{
  double alpha = clg_onnx_attr_f(n, "alpha", selu ? 1.67326319217681884765625 : 1.0);
  double gamma = selu ? clg_onnx_attr_f(n, "gamma", 1.05070102214813232421875) : 1.0;
  clg_output x = {0}, y = {0}, pos = {0}, neg = {0}, zero = {0};
  bool nhwc;
  clg_code code = gather(c, n, 1, &x, &nhwc);
  /* gamma * (max(0, x) + min(0, alpha * (exp(x / k) - 1))), k = alpha for Celu, else 1 */
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Maximum", x, 0.0, &pos);
  neg = x;
  if (code == CLG_OK && celu)
    code = clg_onnx_scalar_op(c, "Mul", x, 1.0 / alpha, &neg);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Exp", 1, &neg, 0, NULL, &neg);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Sub", neg, 1.0, &neg);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Mul", neg, alpha, &neg);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Minimum", neg, 0.0, &zero);
  if (code == CLG_OK) {
    clg_output p[2] = {pos, zero};
    code = clg_onnx_op(c, "Add", 2, p, 0, NULL, &y);
  }
  if (code == CLG_OK && gamma != 1.0)
    code = clg_onnx_scalar_op(c, "Mul", y, gamma, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

static clg_code variadic(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  return variadic_of(c, n, r, false, false);
}

static clg_code min_max(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  return variadic_of(c, n, r, false, true);
}

static clg_code mean(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  return variadic_of(c, n, r, true, false);
}

static clg_code hard_sigmoid(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return hard_sigmoid_of(c, n, false);
}

static clg_code hard_swish(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return hard_sigmoid_of(c, n, true);
}

static clg_code elu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return exp_linear_of(c, n, false, false);
}

static clg_code selu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return exp_linear_of(c, n, true, false);
}

static clg_code celu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return exp_linear_of(c, n, false, true);
}

/* PRelu: slope broadcast to x (unidirectionally); clgraph's Prelu broadcasts alpha. */
static clg_code prelu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  return binary(c, n, r);
}

/* Where(cond, x, y): SelectV2 broadcasts all three. */
static clg_code where(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  clg_output ins[3] = {0}, y = {0};
  bool nhwc;
  if (n->num_inputs != 3)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 3", n->num_inputs);
  clg_code code = gather(c, n, 3, ins, &nhwc);
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 3, ins, 0, NULL, &y);
  return code == CLG_OK ? put(c, n, nhwc, y) : code;
}

/* BitShift: LeftShift or RightShift by the direction attribute. */
static clg_code bit_shift(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  const char *dir = clg_onnx_attr_s(n, "direction", "");
  bool left = strcmp(dir, "LEFT") == 0;
  if (!left && strcmp(dir, "RIGHT") != 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "direction '%s', not LEFT or RIGHT", dir);
  return binary(c, n, &(clg_onnx_rule){r->op, r->since, r->fn, left ? "LeftShift" : "RightShift"});
}

/* --- quantization ----------------------------------------------------------------------- */

/* Input i of a (De)QuantizeLinear, a scale or zero point: a scalar as it is, a 1-D tensor (per
 * axis) reshaped to x's rank with its values along axis, cast to dt. */
static clg_code quant_param(clg_onnx *c, const clg_imp_node *n, int i, clg_output x, clg_dtype dt,
                            clg_output *out)
{
  clg_output p = {0};
  clg_code code = clg_onnx_in(c, n, i, &p);
  if (code != CLG_OK)
    return code;
  int rank = clg_onnx_rank(x);
  int64_t axis = clg_onnx_attr_i(n, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (clg_onnx_rank(p) > 1)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "input %d of rank %d (blocked quantization)", i,
                         clg_onnx_rank(p));
  if (clg_onnx_rank(p) == 1 && rank > 1) {
    if (axis < 0 || axis >= rank || clg_onnx_dim(p, 0) != clg_onnx_dim(x, (int)axis))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "input %d has %lld values, not one per element of axis %lld", i,
                           (long long)clg_onnx_dim(p, 0), (long long)axis);
    int64_t dims[CLG_MAX_RANK];
    for (int d = 0; d < rank; d++)
      dims[d] = d == axis ? clg_onnx_dim(p, 0) : 1;
    if ((code = clg_onnx_reshape(c, p, rank, dims, &p)) != CLG_OK)
      return code;
  }
  if (clg_onnx_dtype(p) != dt && (code = cast_op(c, p, dt, &p)) != CLG_OK)
    return code;
  *out = p;
  return CLG_OK;
}

/* DequantizeLinear: (x - zero_point) * scale, in the scale's float type. */
static clg_code dequantize(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, xf = {0}, s = {0}, z = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  clg_dtype ft = clg_onnx_in_dtype(c, n, 1);
  if (code == CLG_OK && ft != CLG_FLOAT32 && ft != CLG_FLOAT64 && ft != CLG_FLOAT16)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a scale of %s", clg_dtype_name(ft));
  if (code == CLG_OK && !clg_dtype_is_integer(clg_onnx_dtype(x)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "dequantizing %s",
                         clg_dtype_name(clg_onnx_dtype(x)));
  if (code == CLG_OK)
    code = cast_op(c, x, ft, &xf);
  if (code == CLG_OK && clg_onnx_has(n, 2)) {
    if ((code = quant_param(c, n, 2, x, ft, &z)) == CLG_OK)
      code = clg_onnx_binop(c, "Sub", xf, z, &xf);
  }
  if (code == CLG_OK)
    code = quant_param(c, n, 1, x, ft, &s);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", xf, s, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* saturate(round(x / s) + z) as qt; z NULL: none. */
static clg_code quantize_with(clg_onnx *c, clg_output x, clg_output s, const clg_output *z,
                              clg_dtype qt, clg_output *y)
{
  clg_code code = clg_onnx_binop(c, "RealDiv", x, s, y);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Round", 1, y, 0, NULL, y);
  if (code == CLG_OK && z)
    code = clg_onnx_binop(c, "Add", *y, *z, y);
  return code == CLG_OK ? cast_op(c, *y, qt, y) : code;
}

/* QuantizeLinear: saturate(round(x / scale) + zero_point), rounding half to even (Round), the
 * saturation Cast's, into the zero point's type (uint8 without one). */
static clg_code quantize(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, s = {0}, z = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  clg_dtype ft = code == CLG_OK ? clg_onnx_dtype(x) : CLG_FLOAT32;
  clg_dtype qt = clg_onnx_has(n, 2) ? clg_onnx_in_dtype(c, n, 2) : CLG_UINT8;
  if (code == CLG_OK && ft != CLG_FLOAT32 && ft != CLG_FLOAT64)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "quantizing %s", clg_dtype_name(ft));
  if (code == CLG_OK && qt != CLG_UINT8 && qt != CLG_INT8 && qt != CLG_UINT16 && qt != CLG_INT16)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "quantizing to %s", clg_dtype_name(qt));
  if (code == CLG_OK)
    code = quant_param(c, n, 1, x, ft, &s);
  if (code == CLG_OK && clg_onnx_has(n, 2))
    code = quant_param(c, n, 2, x, ft, &z);
  if (code == CLG_OK)
    code = quantize_with(c, x, s, clg_onnx_has(n, 2) ? &z : NULL, qt, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code reduce_all(clg_onnx *c, const char *op, clg_output x, clg_output *y)
{
  int64_t all[CLG_MAX_RANK];
  for (int i = 0; i < clg_onnx_rank(x); i++)
    all[i] = i;
  clg_output ax = {0};
  clg_code code = clg_onnx_const_i32(c, clg_onnx_rank(x), all, &ax);
  clg_attr kd = clg_attr_bool("keep_dims", false);
  clg_output ins[2] = {x, ax};
  return code == CLG_OK ? clg_onnx_op(c, op, 2, ins, 1, &kd, y) : code;
}

/* DynamicQuantizeLinear, as ONNX's function body: the range [min(x, 0), max(x, 0)] over 255
 * steps; zero point round(clip(-min / scale, 0, 255)); y quantized by them to uint8. */
static clg_code dynamic_quantize(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, lo = {0}, hi = {0}, zero = {0}, s = {0}, z = {0}, zq = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK && clg_onnx_dtype(x) != CLG_FLOAT32)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "quantizing %s",
                         clg_dtype_name(clg_onnx_dtype(x)));
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_FLOAT32, 0, &zero);
  if (code == CLG_OK)
    code = reduce_all(c, "Min", x, &lo);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Minimum", lo, zero, &lo);
  if (code == CLG_OK)
    code = reduce_all(c, "Max", x, &hi);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Maximum", hi, zero, &hi);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", hi, lo, &s);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "RealDiv", s, 255, &s);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "RealDiv", lo, s, &z);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", zero, z, &z);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Maximum", z, zero, &z);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Minimum", z, 255, &z);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Round", 1, &z, 0, NULL, &z);
  if (code == CLG_OK)
    code = quantize_with(c, x, s, &z, CLG_UINT8, &y);
  if (code == CLG_OK)
    code = cast_op(c, z, CLG_UINT8, &zq);
  if (code == CLG_OK)
    code = clg_onnx_out(c, n, 0, y);
  if (code == CLG_OK && n->num_outputs > 1)
    code = clg_onnx_out(c, n, 1, s);
  if (code == CLG_OK && n->num_outputs > 2)
    code = clg_onnx_out(c, n, 2, zq);
  return code;
}

CLG_ONNX_RULE_SET(
    clg_onnx_rules_elem,
    /* activations */
    {"Relu", 1, unary, "Relu"}, {"Sigmoid", 1, unary, "Sigmoid"}, {"Tanh", 1, unary, "Tanh"},
    {"Softplus", 1, unary, "Softplus"}, {"Softsign", 1, unary, "Softsign"}, {"Clip", 1, clip, NULL},
    {"LeakyRelu", 1, leaky_relu, "LeakyRelu"}, {"HardSigmoid", 1, hard_sigmoid, NULL},
    {"HardSwish", 14, hard_swish, NULL}, {"Elu", 1, elu, NULL}, {"Selu", 1, selu, NULL},
    {"Celu", 12, celu, NULL}, {"PRelu", 7, prelu, "Prelu"},
    /* math */
    {"Abs", 1, unary, "Abs"}, {"Neg", 1, unary, "Neg"}, {"Exp", 1, unary, "Exp"},
    {"Log", 1, unary, "Log"}, {"Sqrt", 1, unary, "Sqrt"}, {"Floor", 1, unary, "Floor"},
    {"Ceil", 1, unary, "Ceil"}, {"Round", 11, unary, "Round"},
    {"Reciprocal", 1, unary, "Reciprocal"}, {"Sign", 9, unary, "Sign"}, {"Erf", 9, unary, "Erf"},
    {"Sin", 7, unary, "Sin"}, {"Cos", 7, unary, "Cos"}, {"Tan", 7, unary, "Tan"},
    {"Asin", 7, unary, "Asin"}, {"Acos", 7, unary, "Acos"}, {"Atan", 7, unary, "Atan"},
    {"Sinh", 9, unary, "Sinh"}, {"Cosh", 9, unary, "Cosh"}, {"Asinh", 9, unary, "Asinh"},
    {"Acosh", 9, unary, "Acosh"}, {"Atanh", 9, unary, "Atanh"}, {"IsNaN", 9, unary, "IsNan"},
    {"Not", 1, unary, "LogicalNot"},
    /* broadcasting binaries */
    {"Add", 7, binary, "Add"}, {"Sub", 7, binary, "Sub"}, {"Mul", 7, binary, "Mul"},
    {"Div", 7, div_op, "RealDiv"}, {"Pow", 7, binary, "Pow"}, {"Mod", 10, mod_op, "FloorMod"},
    {"Equal", 7, binary, "Equal"}, {"Less", 7, binary, "Less"}, {"Greater", 7, binary, "Greater"},
    {"LessOrEqual", 12, binary, "LessEqual"}, {"GreaterOrEqual", 12, binary, "GreaterEqual"},
    {"And", 7, binary, "LogicalAnd"}, {"Or", 7, binary, "LogicalOr"},
    {"Xor", 7, binary, "NotEqual"}, {"Where", 9, where, "SelectV2"},
    /* variadic */
    {"Sum", 8, variadic, "Add"}, {"Mean", 8, mean, "Add"}, {"Max", 8, min_max, "Maximum"},
    {"Min", 8, min_max, "Minimum"},
    /* quantization */
    {"QuantizeLinear", 10, quantize, NULL}, {"DequantizeLinear", 10, dequantize, NULL},
    {"DynamicQuantizeLinear", 11, dynamic_quantize, NULL}, {"BitShift", 11, bit_shift, NULL});
