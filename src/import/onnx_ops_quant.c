/* ONNX's integer and quantized linear algebra: MatMulInteger, ConvInteger, QLinearMatMul,
 * QLinearConv, and MaxPool of integers. Each runs the float rule (MatMul, Conv, MaxPool) on
 * inputs cast to double, where every integer sum of products is exact below 2^53 (and a max
 * is one of its inputs), then casts back: to int32, or requantized (round half to even, the
 * zero point added, Cast's saturation) as ONNX's reference does. */
#include <string.h>

#include "import/onnx.h"

/* The names the float node reads and writes (one node at a time uses them). */
static char name_in[4][16] = {"\001quant:0", "\001quant:1", "\001quant:2", "\001quant:3"};
static char name_out[] = "\001quant:y";

static clg_code cast_to(clg_onnx *c, clg_output x, clg_dtype dt, clg_output *y)
{
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, &x, 1, &a, y);
}

/* Rule `op` on n's attributes and the inputs ins (a NULL node: absent); its output 0 in *y. */
static clg_code run_rule(clg_onnx *c, const clg_imp_node *n, char *op, int nin,
                         const clg_output *ins, clg_output *y)
{
  const clg_onnx_rule *r = clg_onnx_rule_find(op, (int)c->m->opset);
  if (!r)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "no %s at opset %lld", op,
                         (long long)c->m->opset);
  char *in_names[4], *out_names[1] = {name_out};
  clg_code code = CLG_OK;
  for (int i = 0; i < nin && code == CLG_OK; i++) {
    in_names[i] = ins[i].node ? name_in[i] : "";
    if (ins[i].node)
      code = clg_onnx_set_value(c, name_in[i], ins[i]);
  }
  clg_imp_node t = *n;
  t.op = op;
  t.inputs = in_names;
  t.num_inputs = nin;
  t.outputs = out_names;
  t.num_outputs = 1;
  if (code == CLG_OK)
    code = r->fn(c, &t, r);
  char *back[1] = {name_out};
  clg_imp_node b = {.name = n->name, .op = n->op, .num_inputs = 1, .inputs = back, .domain = ""};
  return code == CLG_OK ? clg_onnx_in(c, &b, 0, y) : code;
}

/* Input i as double; with a zero point (input zi, or -1 for none) subtracted. A 1-D zero
 * point is per row of a matrix (axis -2: MatMul's A) or per output channel (Conv's W, axis
 * 0), reshaped to broadcast along that axis; per column (B) it broadcasts as it is. */
static clg_code centred(clg_onnx *c, const clg_imp_node *n, int i, int zi, int axis, clg_output *x)
{
  clg_output z = {0};
  clg_code code = clg_onnx_in(c, n, i, x);
  if (code == CLG_OK && !clg_dtype_is_integer(clg_onnx_dtype(*x)))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d is %s, not an integer", i,
                         clg_dtype_name(clg_onnx_dtype(*x)));
  if (code == CLG_OK)
    code = cast_to(c, *x, CLG_FLOAT64, x);
  if (code != CLG_OK || zi < 0 || !clg_onnx_has(n, zi))
    return code;
  if ((code = clg_onnx_in(c, n, zi, &z)) != CLG_OK || (code = cast_to(c, z, CLG_FLOAT64, &z)))
    return code;
  int rank = clg_onnx_rank(*x);
  if (clg_onnx_rank(z) == 1 && clg_onnx_count(z) > 1 && axis != INT32_MAX) {
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || clg_onnx_dim(*x, a) != clg_onnx_dim(z, 0))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "zero point %d: %lld values for axis %d", zi,
                           (long long)clg_onnx_dim(z, 0), axis);
    int64_t d[CLG_MAX_RANK];
    for (int k = a; k < rank; k++)
      d[k - a] = k == a ? clg_onnx_dim(z, 0) : 1;
    if ((code = clg_onnx_reshape(c, z, rank - a, d, &z)) != CLG_OK)
      return code;
  } else if (clg_onnx_rank(z) > 1) {
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "zero point %d of rank %d", zi, clg_onnx_rank(z));
  }
  return clg_onnx_binop(c, "Sub", *x, z, x);
}

/* Input i (a scale or a zero point) as double, a 1-D one reshaped to [C, 1, ..] for `trail`
 * trailing dims. */
static clg_code param(clg_onnx *c, const clg_imp_node *n, int i, int trail, clg_output *p)
{
  clg_code code = clg_onnx_in(c, n, i, p);
  if (code == CLG_OK && clg_onnx_rank(*p) == 1 && clg_onnx_count(*p) > 1 && trail > 0) {
    int64_t d[CLG_MAX_RANK] = {clg_onnx_dim(*p, 0), 1, 1, 1, 1, 1, 1, 1};
    code = clg_onnx_reshape(c, *p, trail + 1, d, p);
  }
  return code == CLG_OK ? cast_to(c, *p, CLG_FLOAT64, p) : code;
}

/* acc * (xs * ws / ys), rounded, plus yz, saturated to yz's dtype: inputs xs, ws, ys, yz. */
static clg_code requantize(clg_onnx *c, const clg_imp_node *n, clg_output acc, const int *idx,
                           int trail, clg_output *y)
{
  clg_output xs = {0}, ws = {0}, ys = {0}, yz = {0};
  clg_code code = param(c, n, idx[0], 0, &xs);
  if (code == CLG_OK)
    code = param(c, n, idx[1], trail, &ws);
  if (code == CLG_OK)
    code = param(c, n, idx[2], 0, &ys);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", xs, ws, &xs);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "RealDiv", xs, ys, &xs);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", acc, xs, y);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Round", 1, y, 0, NULL, y);
  clg_dtype qt = clg_onnx_has(n, idx[3]) ? clg_onnx_in_dtype(c, n, idx[3]) : CLG_UINT8;
  if (code == CLG_OK && clg_onnx_has(n, idx[3])) {
    if ((code = param(c, n, idx[3], 0, &yz)) == CLG_OK)
      code = clg_onnx_binop(c, "Add", *y, yz, y);
  }
  return code == CLG_OK ? cast_to(c, *y, qt, y) : code;
}

/* MatMulInteger(A, B, a_zero_point, b_zero_point): int32 (A - a_zp) @ (B - b_zp). */
static clg_code matmul_integer(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output ins[2] = {0}, y = {0};
  clg_code code = centred(c, n, 0, 2, -2, &ins[0]);
  if (code == CLG_OK)
    code = centred(c, n, 1, 3, INT32_MAX, &ins[1]);
  if (code == CLG_OK)
    code = run_rule(c, n, "MatMul", 2, ins, &y);
  if (code == CLG_OK)
    code = cast_to(c, y, CLG_INT32, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
static clg_code qlinear_matmul(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (n->num_inputs != 8)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 8", n->num_inputs);
  clg_output ins[2] = {0}, y = {0};
  clg_code code = centred(c, n, 0, 2, -2, &ins[0]);
  if (code == CLG_OK)
    code = centred(c, n, 3, 5, INT32_MAX, &ins[1]);
  if (code == CLG_OK)
    code = run_rule(c, n, "MatMul", 2, ins, &y);
  if (code == CLG_OK)
    code = requantize(c, n, y, (const int[]){1, 4, 6, 7}, 0, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* ConvInteger(x, w, x_zero_point, w_zero_point): int32 Conv(x - x_zp, w - w_zp), zeros
 * padding the centred x as ONNX's reference pads. */
static clg_code conv_integer(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output ins[2] = {0}, y = {0};
  clg_code code = centred(c, n, 0, 2, INT32_MAX, &ins[0]);
  if (code == CLG_OK)
    code = centred(c, n, 1, 3, 0, &ins[1]);
  if (code == CLG_OK)
    code = run_rule(c, n, "Conv", 2, ins, &y);
  if (code == CLG_OK)
    code = cast_to(c, y, CLG_INT32, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): the int32 bias added to
 * the accumulator, a per-channel w_scale along the output channels. */
static clg_code qlinear_conv(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (n->num_inputs < 8)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 8 or 9", n->num_inputs);
  clg_output ins[3] = {0}, y = {0};
  clg_code code = centred(c, n, 0, 2, INT32_MAX, &ins[0]);
  if (code == CLG_OK)
    code = centred(c, n, 3, 5, 0, &ins[1]);
  if (code == CLG_OK && clg_onnx_has(n, 8)) {
    code = clg_onnx_in(c, n, 8, &ins[2]);
    if (code == CLG_OK)
      code = cast_to(c, ins[2], CLG_FLOAT64, &ins[2]);
  }
  if (code == CLG_OK)
    code = run_rule(c, n, "Conv", 3, ins, &y);
  int trail = code == CLG_OK ? clg_onnx_rank(y) - 2 : 0;
  if (code == CLG_OK)
    code = requantize(c, n, y, (const int[]){1, 4, 6, 7}, trail, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

clg_code clg_onnx_int_max_pool(clg_onnx *c, const clg_imp_node *n)
{
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  clg_dtype dt = code == CLG_OK ? clg_onnx_dtype(x) : CLG_UINT8;
  if (code == CLG_OK && clg_dtype_size(dt) > 2)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "MaxPool of %s", clg_dtype_name(dt));
  if (n->num_outputs > 1 && n->outputs[1][0])
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "MaxPool's indices of integers");
  if (code == CLG_OK) /* float holds every 8- and 16-bit integer exactly */
    code = cast_to(c, x, CLG_FLOAT32, &x);
  if (code == CLG_OK)
    code = run_rule(c, n, "MaxPool", 1, &x, &y);
  if (code == CLG_OK)
    code = cast_to(c, y, dt, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_quant, {"MatMulInteger", 10, matmul_integer, NULL},
                  {"QLinearMatMul", 10, qlinear_matmul, NULL},
                  {"ConvInteger", 10, conv_integer, NULL}, {"QLinearConv", 10, qlinear_conv, NULL});
