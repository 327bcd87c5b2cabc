/* ONNX ops whose types or modes the other families leave out: Pow with an exponent of another
 * type (opset 12), Neg and Abs on integers (opset 6), the window functions, DFT and STFT
 * (opset 17), MaxUnpool, Det, and pools beyond MaxPool/AvgPool, each composed of clgraph ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"

#define CLG_PI 3.14159265358979323846

static bool is_float(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || t == CLG_FLOAT16;
}

static bool is_int(clg_dtype t) { return clg_dtype_is_integer(t); }

static clg_code cast_to(clg_onnx *c, clg_output x, clg_dtype dt, clg_output *y)
{
  if (clg_onnx_dtype(x) == dt) {
    *y = x;
    return CLG_OK;
  }
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, &x, 1, &a, y);
}

/* Pow (opset 12: base and exponent of different types, integers too). Both float of one type:
 * Pow itself, in the inputs' layout as the elementwise family keeps it. Otherwise ONNX's
 * reference is numpy's power(x, y).astype(x.dtype): both are cast to double, raised, and cast
 * to the base's type (float to integer truncates toward zero). Integer powers are exact while
 * |x^y| < 2^53; numpy's wrap-around past int64 is not reproduced (Cast saturates). */
static clg_code pow_op(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (n->num_inputs != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d inputs, not 2", n->num_inputs);
  clg_dtype xt = clg_onnx_in_dtype(c, n, 0), yt = clg_onnx_in_dtype(c, n, 1);
  if (!(is_float(xt) || is_int(xt)) || !(is_float(yt) || is_int(yt)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "Pow of %s by %s is not supported",
                         clg_dtype_name(xt), clg_dtype_name(yt));
  clg_output x = {0}, e = {0}, y = {0};
  clg_code code;
  if (xt == yt && xt != CLG_FLOAT16 && is_float(xt)) {
    int64_t ecount = 1; /* a scalar exponent broadcasts the same in either layout */
    for (int d = 0; d < clg_onnx_in_rank(c, n, 1); d++)
      ecount *= clg_onnx_in_dim(c, n, 1, d);
    bool nhwc = ecount == 1 && clg_onnx_in_rank(c, n, 1) <= 4 && clg_onnx_in_is_nhwc(c, n, 0);
    code = nhwc ? clg_onnx_in_nhwc(c, n, 0, &x) : clg_onnx_in(c, n, 0, &x);
    if (code == CLG_OK)
      code = clg_onnx_in(c, n, 1, &e);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Pow", x, e, &y);
    if (code != CLG_OK)
      return code;
    return nhwc ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
  }
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &e);
  if (code == CLG_OK)
    code = cast_to(c, x, CLG_FLOAT64, &x);
  if (code == CLG_OK)
    code = cast_to(c, e, CLG_FLOAT64, &e);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Pow", x, e, &y);
  if (code == CLG_OK)
    code = cast_to(c, y, xt, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Neg and Abs (opset 6: integers too). Floats: the op itself, in the input's layout. Integers,
 * where clgraph's Neg and Abs take floats only: 0 - x, and max(x, 0 - x) (the most negative
 * value stays itself, as numpy's wrap-around gives). */
static clg_code neg_abs(clg_onnx *c, const clg_imp_node *n, bool abs)
{
  clg_output x = {0}, y = {0};
  clg_code code;
  if (!is_int(clg_onnx_in_dtype(c, n, 0))) {
    bool nhwc = clg_onnx_in_is_nhwc(c, n, 0);
    code = nhwc ? clg_onnx_in_nhwc(c, n, 0, &x) : clg_onnx_in(c, n, 0, &x);
    if (code == CLG_OK)
      code = clg_onnx_op(c, abs ? "Abs" : "Neg", 1, &x, 0, NULL, &y);
    if (code != CLG_OK)
      return code;
    return nhwc ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
  }
  clg_output zero = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, clg_onnx_dtype(x), 0, &zero);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", zero, x, &y);
  if (code == CLG_OK && abs)
    code = clg_onnx_binop(c, "Maximum", x, y, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code neg_op(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return neg_abs(c, n, false);
}

static clg_code abs_op(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return neg_abs(c, n, true);
}

/* --- window functions ------------------------------------------------------------------------
 * HannWindow, HammingWindow, BlackmanWindow of a constant size (a shape: bound at import):
 * a - b cos(2 pi k / N) + d cos(4 pi k / N), k = 0..size-1, N = size (periodic, the default)
 * or size - 1 (symmetric), computed in double as ONNX's reference does and cast to
 * output_datatype (float by default). */
enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

static clg_code window(clg_onnx *c, const clg_imp_node *n, int kind)
{
  int64_t size;
  int k;
  clg_code code = clg_onnx_in_ints(c, n, 0, &size, 1, &k);
  if (code != CLG_OK)
    return code;
  if (k != 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "size holds %d values, not 1", k);
  if (size < 0 || size > (int64_t)1 << 28)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "size %lld is not in [0, 2^28]",
                         (long long)size);
  clg_dtype dt;
  int64_t odt = clg_onnx_attr_i(n, "output_datatype", 1);
  if (!clg_onnx_dtype_of(odt, &dt) || (!is_float(dt) && !is_int(dt)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "output_datatype %lld is not supported",
                         (long long)odt);
  double a = 0.5, b = 0.5, d = 0;
  if (kind == WIN_HAMMING) {
    a = 25.0 / 46.0;
    b = 1 - a;
  } else if (kind == WIN_BLACKMAN) {
    a = 0.42;
    d = 0.08;
  }
  double len = (double)(clg_onnx_attr_i(n, "periodic", 1) ? size : size - 1);
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, 1, &size, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  double *v = clg_tensor_data(t);
  for (int64_t i = 0; i < size; i++) {
    double x = 2 * CLG_PI * (double)i / len;
    v[i] = a - b * cos(x) + d * cos(2 * x);
  }
  clg_output y = {0};
  code = clg_onnx_const(c, t, &y);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = cast_to(c, y, dt, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

static clg_code hann(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return window(c, n, WIN_HANN);
}

static clg_code hamming(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return window(c, n, WIN_HAMMING);
}

static clg_code blackman(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  return window(c, n, WIN_BLACKMAN);
}

/* MaxUnpool: X's values scattered into zeros at I's flat indices (over the whole unpooled
 * tensor, as MaxPool's Indices count them) by one ScatterNd, of the shape with per spatial dim
 * (in - 1) * stride + kernel - pad_begin - pad_end; an output_shape (input 2, constant) larger
 * than that pads zeros after each dim, as ONNX's reference and ONNX Runtime place the indices.
 * A repeated index (windows that overlap and share a maximum) adds its values where ONNX's
 * reference keeps one. */
static clg_code max_unpool(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 3 || clg_onnx_in_rank(c, n, 1) != rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "X of rank %d and I of rank %d: [N, C, ...]",
                         rank, clg_onnx_in_rank(c, n, 1));
  for (int d = 0; d < rank; d++)
    if (clg_onnx_in_dim(c, n, 1, d) != clg_onnx_in_dim(c, n, 0, d))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "I's shape differs from X's at dim %d", d);
  if (!is_int(clg_onnx_in_dtype(c, n, 1)))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "I is %s, not int64",
                         clg_dtype_name(clg_onnx_in_dtype(c, n, 1)));
  int sp = rank - 2;
  int64_t inf[CLG_MAX_RANK], out[CLG_MAX_RANK], kern[CLG_MAX_RANK], strides[CLG_MAX_RANK],
      pads[2 * CLG_MAX_RANK];
  if (clg_onnx_attr_ints(n, "kernel_shape", kern, CLG_MAX_RANK) != sp)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "kernel_shape must hold %d values", sp);
  int ks = clg_onnx_attr_ints(n, "strides", strides, CLG_MAX_RANK);
  int kp = clg_onnx_attr_ints(n, "pads", pads, 2 * CLG_MAX_RANK);
  if ((ks >= 0 && ks != sp) || (kp >= 0 && kp != 2 * sp))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "strides or pads of the wrong length");
  inf[0] = clg_onnx_in_dim(c, n, 0, 0);
  inf[1] = clg_onnx_in_dim(c, n, 0, 1);
  for (int d = 0; d < sp; d++) {
    int64_t st = ks < 0 ? 1 : strides[d], pb = kp < 0 ? 0 : pads[d], pe = kp < 0 ? 0 : pads[d + sp];
    inf[d + 2] = (clg_onnx_in_dim(c, n, 0, d + 2) - 1) * st + kern[d] - pb - pe;
  }
  memcpy(out, inf, (size_t)rank * sizeof out[0]);
  clg_code code = CLG_OK;
  if (clg_onnx_has(n, 2)) {
    int k;
    code = clg_onnx_in_ints(c, n, 2, out, CLG_MAX_RANK, &k);
    if (code == CLG_OK && k != rank)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "output_shape holds %d values for rank %d",
                           k, rank);
  }
  if (code != CLG_OK)
    return code;
  int64_t total = 1, count = 1;
  for (int d = 0; d < rank; d++) {
    if (inf[d] < 1 || inf[d] > INT32_MAX || out[d] < inf[d] || out[d] > INT32_MAX ||
        (d < 2 && out[d] != inf[d]))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "output dim %d is %lld, the unpooled size %lld", d, (long long)out[d],
                           (long long)inf[d]);
    total *= inf[d];
    count *= clg_onnx_in_dim(c, n, 0, d);
    if (total > INT32_MAX)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the output holds over 2^31 elements");
  }
  int64_t idims[2] = {count, 1};
  clg_output x = {0}, ix = {0}, shape = {0}, y = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 1, &count, &x);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &ix);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, ix, 2, idims, &ix);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, 1, &total, &shape);
  clg_output ins[3] = {ix, x, shape};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ScatterNd", 3, ins, 0, NULL, &y);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, y, rank, inf, &y);
  bool grow = false;
  for (int d = 0; d < rank; d++)
    grow = grow || out[d] != inf[d];
  if (code == CLG_OK && grow) {
    int64_t pd[2 * CLG_MAX_RANK], pdims[2] = {rank, 2};
    for (int d = 0; d < rank; d++) {
      pd[2 * d] = 0;
      pd[2 * d + 1] = out[d] - inf[d];
    }
    clg_output p = {0};
    code = clg_onnx_const_i32(c, 2 * rank, pd, &p);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, p, 2, pdims, &p);
    clg_output pi[2] = {y, p};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Pad", 2, pi, 0, NULL, &y);
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* x [.., k] times a constant [k, m] of float dtype dt: one MatMul on x flattened to 2-D. */
static clg_code times(clg_onnx *c, clg_output x, const double *m, int64_t k, int64_t cols,
                      clg_output *y)
{
  int rank = clg_onnx_rank(x);
  int64_t dims[CLG_MAX_RANK], rows = 1, flat[2], md[2] = {k, cols};
  for (int d = 0; d < rank; d++) {
    dims[d] = clg_onnx_dim(x, d);
    rows *= d < rank - 1 ? dims[d] : 1;
  }
  flat[0] = rows;
  flat[1] = k;
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, 2, md, m);
  if (!t)
    return clg_graph_record_error(c->g);
  clg_output w = {0}, x2 = {0};
  clg_code code = clg_onnx_const(c, t, &w);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = cast_to(c, w, clg_onnx_dtype(x), &w);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 2, flat, &x2);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "MatMul", x2, w, y);
  dims[rank - 1] = cols;
  return code == CLG_OK ? clg_onnx_reshape(c, *y, rank, dims, y) : code;
}

/* The transform of part[0] (real) and, when parts is 2, part[1] (imaginary), each [.., used],
 * over a period of len into cols frequencies, by the constant matrices C = cos(2 pi j k / len)
 * and S = sin(2 pi j k / len) (j k reduced mod len, in double): re = xr C + xi S,
 * im = xi C - xr S. The inverse negates S and scales both by 1 / len. */
static clg_code dft_product(clg_onnx *c, const clg_output *part, int64_t parts, int64_t used,
                            int64_t len, int64_t cols, bool inverse, clg_output *re, clg_output *im)
{
  double *cm = malloc((size_t)(used * cols) * sizeof *cm),
         *sm = malloc((size_t)(used * cols) * sizeof *sm);
  if (!cm || !sm) {
    free(cm);
    free(sm);
    return clg_graph_record_error(c->g);
  }
  double scale = inverse ? 1.0 / (double)len : 1.0, sgn = inverse ? -1 : 1;
  for (int64_t j = 0; j < used; j++)
    for (int64_t k = 0; k < cols; k++) {
      double a = 2 * CLG_PI * (double)((j * k) % len) / (double)len;
      cm[j * cols + k] = cos(a) * scale;
      sm[j * cols + k] = sgn * sin(a) * scale;
    }
  clg_output rc = {0}, rs = {0}, ic = {0}, is = {0};
  clg_code code = times(c, part[0], cm, used, cols, &rc);
  if (code == CLG_OK)
    code = times(c, part[0], sm, used, cols, &rs);
  if (code == CLG_OK && parts == 2)
    code = times(c, part[1], cm, used, cols, &ic);
  if (code == CLG_OK && parts == 2)
    code = times(c, part[1], sm, used, cols, &is);
  free(cm);
  free(sm);
  if (code == CLG_OK && parts == 2) {
    code = clg_onnx_binop(c, "Add", rc, is, re);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Sub", ic, rs, im);
  } else if (code == CLG_OK) {
    *re = rc;
    code = clg_onnx_op(c, "Neg", 1, &rs, 0, NULL, im);
  }
  return code;
}

/* DFT (opset 17): along `axis` of a real [..., 1] or complex [..., 2] signal, by two constant
 * matrices cos(2 pi j k / n) and sin(2 pi j k / n) (j k reduced mod n, in double): for the
 * forward transform re = xr C + xi S, im = xi C - xr S; the inverse takes the other sign and
 * divides by n. dft_length (constant) truncates the signal or pads it with zeros; onesided
 * keeps the n / 2 + 1 first frequencies. */
static clg_code dft(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  if (rank < 2 || (dt != CLG_FLOAT32 && dt != CLG_FLOAT64))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d and type %s", rank,
                         clg_dtype_name(dt));
  int64_t parts = clg_onnx_in_dim(c, n, 0, rank - 1);
  if (parts != 1 && parts != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the last dim is %lld, not 1 or 2",
                         (long long)parts);
  int64_t axis = clg_onnx_attr_i(n, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld is not a signal axis",
                         (long long)clg_onnx_attr_i(n, "axis", 1));
  bool inverse = clg_onnx_attr_i(n, "inverse", 0) != 0,
       onesided = clg_onnx_attr_i(n, "onesided", 0) != 0;
  int64_t nin = clg_onnx_in_dim(c, n, 0, (int)axis), len = nin;
  clg_code code = CLG_OK;
  if (clg_onnx_has(n, 1)) {
    int k;
    code = clg_onnx_in_ints(c, n, 1, &len, 1, &k);
    if (code == CLG_OK && k != 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "dft_length holds %d values", k);
  }
  if (code != CLG_OK)
    return code;
  if (len < 1 || len > 1 << 14)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "dft_length %lld is not in [1, 16384]",
                         (long long)len);
  if (onesided && inverse)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "an inverse onesided DFT is not supported");
  int64_t used = nin < len ? nin : len, cols = onesided ? len / 2 + 1 : len;
  /* the signal's axis moved last, the complex parts apart */
  int64_t perm[CLG_MAX_RANK];
  int sr = rank - 1;
  for (int d = 0; d < sr; d++)
    perm[d] = d;
  perm[axis] = sr - 1;
  perm[sr - 1] = axis;
  clg_output x, part[2] = {{NULL, 0}, {NULL, 0}};
  code = clg_onnx_in(c, n, 0, &x);
  for (int p = 0; p < parts && code == CLG_OK; p++) {
    int64_t begin[CLG_MAX_RANK] = {0}, size[CLG_MAX_RANK], sq[CLG_MAX_RANK];
    for (int d = 0; d < rank; d++)
      size[d] = d == rank - 1 ? 1 : d == axis ? used : clg_onnx_in_dim(c, n, 0, d);
    begin[rank - 1] = p;
    clg_output b = {0}, sz = {0}, sl = {0};
    code = clg_onnx_const_i32(c, rank, begin, &b);
    if (code == CLG_OK)
      code = clg_onnx_const_i32(c, rank, size, &sz);
    clg_output si[3] = {x, b, sz};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Slice", 3, si, 0, NULL, &sl);
    for (int d = 0; d < sr; d++)
      sq[d] = size[d];
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, sl, sr, sq, &sl);
    if (code == CLG_OK)
      code = clg_onnx_transpose(c, sl, sr, perm, &part[p]);
  }
  if (code != CLG_OK)
    return code;
  clg_output re = {0}, im = {0};
  code = dft_product(c, part, parts, used, len, cols, inverse, &re, &im);
  int64_t od[CLG_MAX_RANK];
  for (int d = 0; d < sr; d++)
    od[d] = d == axis ? cols : clg_onnx_in_dim(c, n, 0, d);
  od[sr] = 1;
  clg_output both[3] = {0};
  for (int p = 0; p < 2 && code == CLG_OK; p++) {
    code = clg_onnx_transpose(c, p ? im : re, sr, perm, &both[p]);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, both[p], rank, od, &both[p]);
  }
  clg_output y = {0};
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, rank - 1, &both[2]);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ConcatV2", 3, both, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* STFT (opset 17): signal [B, L, 1 or 2], frames of frame_length (input 3, or the window's
 * length) every frame_step (input 1, constant) gathered by one GatherV2 of constant positions,
 * times the window (input 2, any values), then the DFT of each frame by the cos/sin matrices
 * as DFT above; onesided (the default) keeps frame_length / 2 + 1 frequencies. */
static clg_code stft(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  if (rank != 3 || (dt != CLG_FLOAT32 && dt != CLG_FLOAT64))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "signal of rank %d and type %s: [B, L, 1|2]",
                         rank, clg_dtype_name(dt));
  int64_t batch = clg_onnx_in_dim(c, n, 0, 0), len = clg_onnx_in_dim(c, n, 0, 1),
          parts = clg_onnx_in_dim(c, n, 0, 2), step, flen = -1;
  if (parts != 1 && parts != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the last dim is %lld, not 1 or 2",
                         (long long)parts);
  int k;
  clg_code code = clg_onnx_in_ints(c, n, 1, &step, 1, &k);
  if (code == CLG_OK && clg_onnx_has(n, 3))
    code = clg_onnx_in_ints(c, n, 3, &flen, 1, &k);
  if (code != CLG_OK)
    return code;
  bool window = clg_onnx_has(n, 2);
  if (window) {
    if (clg_onnx_in_rank(c, n, 2) != 1 || (flen >= 0 && clg_onnx_in_dim(c, n, 2, 0) != flen))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "the window must be a vector of frame_length values");
    flen = clg_onnx_in_dim(c, n, 2, 0);
  }
  if (flen < 1 || flen > len || flen > 1 << 14 || step < 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "frame_length %lld and frame_step %lld for a signal of %lld",
                         (long long)flen, (long long)step, (long long)len);
  bool onesided = clg_onnx_attr_i(n, "onesided", 1) != 0;
  int64_t frames = (len - flen) / step + 1, cols = onesided ? flen / 2 + 1 : flen;
  if (frames * flen > (int64_t)1 << 26)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%lld frames of %lld: too many",
                         (long long)frames, (long long)flen);
  int64_t gd[2] = {frames, flen};
  clg_tensor *gi = clg_tensor_new(CLG_INT32, 2, gd, NULL);
  if (!gi)
    return clg_graph_record_error(c->g);
  for (int64_t f = 0; f < frames; f++)
    for (int64_t j = 0; j < flen; j++)
      ((int32_t *)clg_tensor_data(gi))[f * flen + j] = (int32_t)(f * step + j);
  clg_output x, idx, ax, w = {NULL, 0}, part[2];
  code = clg_onnx_const(c, gi, &idx);
  clg_tensor_free(gi);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, 1, &ax);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK && window)
    code = clg_onnx_in(c, n, 2, &w);
  if (code == CLG_OK && window)
    code = cast_to(c, w, dt, &w);
  for (int p = 0; p < parts && code == CLG_OK; p++) {
    int64_t begin[3] = {0, 0, p}, size[3] = {batch, len, 1}, flat[2] = {batch, len};
    clg_output bc = {0}, sc = {0}, sl = {0};
    code = clg_onnx_const_i32(c, 3, begin, &bc);
    if (code == CLG_OK)
      code = clg_onnx_const_i32(c, 3, size, &sc);
    clg_output si[3] = {x, bc, sc};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Slice", 3, si, 0, NULL, &sl);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, sl, 2, flat, &sl);
    clg_output gin[3] = {sl, idx, ax};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "GatherV2", 3, gin, 0, NULL, &part[p]);
    if (code == CLG_OK && window)
      code = clg_onnx_binop(c, "Mul", part[p], w, &part[p]);
  }
  if (code != CLG_OK)
    return code;
  clg_output re = {0}, im = {0};
  code = dft_product(c, part, parts, flen, flen, cols, false, &re, &im);
  int64_t od[4] = {batch, frames, cols, 1};
  clg_output both[3] = {0};
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, re, 4, od, &both[0]);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, im, 4, od, &both[1]);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, 3, &both[2]);
  clg_output y = {0};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ConcatV2", 3, both, 0, NULL, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Element (i, j) of each matrix of x [B, m * m] as [B, 1]. */
static clg_code det_elem(clg_onnx *c, clg_output x, int64_t m, int64_t i, int64_t j, clg_output *y)
{
  int64_t begin[2] = {0, i * m + j}, size[2] = {clg_onnx_dim(x, 0), 1};
  clg_output b = {0}, sz = {0};
  clg_code code = clg_onnx_const_i32(c, 2, begin, &b);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, 2, size, &sz);
  clg_output ins[3] = {x, b, sz};
  return code == CLG_OK ? clg_onnx_op(c, "Slice", 3, ins, 0, NULL, y) : code;
}

/* a d - b c */
static clg_code det2(clg_onnx *c, clg_output a, clg_output b, clg_output cc, clg_output d,
                     clg_output *y)
{
  clg_output ad = {0}, bc = {0};
  clg_code code = clg_onnx_binop(c, "Mul", a, d, &ad);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", b, cc, &bc);
  return code == CLG_OK ? clg_onnx_binop(c, "Sub", ad, bc, y) : code;
}

/* Det of [..., M, M] for M up to 3 by the cofactor expansion along the first row (products
 * and sums of the elements; larger matrices need a pivoted factorisation clgraph lacks). */
static clg_code det(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  if (rank < 2 || (dt != CLG_FLOAT32 && dt != CLG_FLOAT64))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d and type %s", rank,
                         clg_dtype_name(dt));
  int64_t m = clg_onnx_in_dim(c, n, 0, rank - 1);
  if (clg_onnx_in_dim(c, n, 0, rank - 2) != m)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "matrices of %lld x %lld are not square",
                         (long long)clg_onnx_in_dim(c, n, 0, rank - 2), (long long)m);
  if (m < 1 || m > 3)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "Det of %lld x %lld matrices: only 1 x 1 to 3 x 3 are supported",
                         (long long)m, (long long)m);
  int64_t batch = 1, bd[CLG_MAX_RANK];
  for (int d = 0; d < rank - 2; d++)
    batch *= bd[d] = clg_onnx_in_dim(c, n, 0, d);
  int64_t flat[2] = {batch, m * m};
  clg_output x = {0}, e[9] = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 2, flat, &x);
  for (int64_t k = 0; k < m * m && code == CLG_OK; k++)
    code = det_elem(c, x, m, k / m, k % m, &e[k]);
  if (code != CLG_OK)
    return code;
  if (m == 1)
    y = e[0];
  else if (m == 2)
    code = det2(c, e[0], e[1], e[2], e[3], &y);
  else {
    clg_output m0 = {0}, m1 = {0}, m2 = {0};
    code = det2(c, e[4], e[5], e[7], e[8], &m0);
    if (code == CLG_OK)
      code = det2(c, e[3], e[5], e[6], e[8], &m1);
    if (code == CLG_OK)
      code = det2(c, e[3], e[4], e[6], e[7], &m2);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Mul", e[0], m0, &m0);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Mul", e[1], m1, &m1);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Mul", e[2], m2, &m2);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Sub", m0, m1, &y);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Add", y, m2, &y);
  }
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, y, rank - 2, bd, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* --- pools by strided slices ---------------------------------------------------------------
 * MaxPool and AveragePool where clgraph's MaxPool/AvgPool do not reach (3-D and wider, dilations,
 * MaxPool's Indices): the input padded (max: -inf, average: 0), then for every offset of the
 * kernel one StridedSlice of the window's elements at that offset, combined by Maximum or Add.
 * Indices: where a slice is strictly greater than the maximum so far (the first of a tie wins,
 * as ONNX's reference scans the window), its flat index into the unpadded input (row-major,
 * or column-major over the spatial axes for storage_order 1). Average: the sum divided by the
 * kernel size, or (count_include_pad 0) by a constant map of the window's elements inside the
 * input. ceil_mode is not taken here. */
#define POOL_MAX_OFFSETS 4096

/* A pool's shape: kernel, strides, dilations, the pads before/after each spatial axis (auto_pad
 * resolved), the input's and output's spatial sizes and the element counts. */
typedef struct {
  int rank, sp;
  bool col_major;
  int64_t k[CLG_MAX_RANK], st[CLG_MAX_RANK], dl[CLG_MAX_RANK];
  int64_t in[CLG_MAX_RANK], out[CLG_MAX_RANK], pb[CLG_MAX_RANK], pe[CLG_MAX_RANK];
  int64_t offsets, total_in, total_out, nc;
} pool_geom;

/* Reads and checks the pool's attributes into g (rank already checked). */
static clg_code pool_geometry(clg_onnx *c, const clg_imp_node *n, pool_geom *g)
{
  int sp = g->sp;
  int64_t *k = g->k, *st = g->st, *dl = g->dl, *in = g->in, *out = g->out, *pb = g->pb, *pe = g->pe;
  int64_t pads[2 * CLG_MAX_RANK] = {0};
  g->col_major = clg_onnx_attr_i(n, "storage_order", 0) != 0;
  if (clg_onnx_attr_i(n, "ceil_mode", 0))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "ceil_mode 1 with dilations, indices or %d spatial dims is not supported",
                         sp);
  if (clg_onnx_attr_ints(n, "kernel_shape", k, CLG_MAX_RANK) != sp)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "kernel_shape must hold %d values", sp);
  int ns = clg_onnx_attr_ints(n, "strides", st, CLG_MAX_RANK),
      nd = clg_onnx_attr_ints(n, "dilations", dl, CLG_MAX_RANK),
      np = clg_onnx_attr_ints(n, "pads", pads, 2 * CLG_MAX_RANK);
  if ((ns >= 0 && ns != sp) || (nd >= 0 && nd != sp) || (np >= 0 && np != 2 * sp))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "strides, dilations or pads of the wrong "
                         "length");
  const char *auto_pad = clg_onnx_attr_s(n, "auto_pad", "NOTSET");
  bool same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
  if (!same && strcmp(auto_pad, "VALID") != 0 && strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0])
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "auto_pad '%s' is not an ONNX auto_pad",
                         auto_pad);
  g->offsets = g->total_in = g->total_out = 1;
  for (int d = 0; d < sp; d++) {
    st[d] = ns < 0 ? 1 : st[d];
    dl[d] = nd < 0 ? 1 : dl[d];
    in[d] = clg_onnx_in_dim(c, n, 0, d + 2);
    if (k[d] < 1 || st[d] < 1 || dl[d] < 1 || pads[d] < 0 || pads[d + sp] < 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "kernel, stride, dilation or pad of axis %d out of range", d);
    int64_t span = (k[d] - 1) * dl[d] + 1;
    if (same) {
      int64_t o = (in[d] + st[d] - 1) / st[d], tot = (o - 1) * st[d] + span - in[d];
      tot = tot < 0 ? 0 : tot;
      pb[d] = auto_pad[5] == 'L' ? tot - tot / 2 : tot / 2;
      pe[d] = tot - pb[d];
    } else if (strcmp(auto_pad, "VALID") == 0)
      pb[d] = pe[d] = 0;
    else {
      pb[d] = pads[d];
      pe[d] = pads[d + sp];
    }
    if (pb[d] >= span || pe[d] >= span)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "a pad of axis %d covers a whole window", d);
    out[d] = (in[d] + pb[d] + pe[d] - span) / st[d] + 1;
    if (in[d] + pb[d] + pe[d] < span || out[d] < 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the window does not fit the input");
    g->offsets *= k[d];
    g->total_in *= in[d];
    g->total_out *= out[d];
  }
  if (g->offsets > POOL_MAX_OFFSETS)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a kernel of %lld elements: at most %d",
                         (long long)g->offsets, POOL_MAX_OFFSETS);
  g->nc = clg_onnx_in_dim(c, n, 0, 0) * clg_onnx_in_dim(c, n, 0, 1);
  return CLG_OK;
}

/* x padded by PadV2 with the pool's neutral value (max: -inf, average: 0). */
static clg_code pool_pad(clg_onnx *c, const pool_geom *g, clg_dtype dt, bool is_max, clg_output *x)
{
  int64_t pv[2 * CLG_MAX_RANK] = {0}, pdims[2] = {g->rank, 2};
  for (int d = 0; d < g->sp; d++) {
    pv[2 * (d + 2)] = g->pb[d];
    pv[2 * (d + 2) + 1] = g->pe[d];
  }
  clg_output pp = {0}, cv = {0};
  clg_code code = clg_onnx_const_i32(c, 2 * g->rank, pv, &pp);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, pp, 2, pdims, &pp);
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, dt, is_max ? -INFINITY : 0, &cv);
  clg_output pi[3] = {*x, pp, cv};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "PadV2", 3, pi, 0, NULL, x);
  return code;
}

/* The constant of each output's flat input index at kernel offset o (MaxPool's Indices). */
static clg_code pool_offset_indices(clg_onnx *c, const pool_geom *g, const int64_t *o,
                                    const int64_t *odims, clg_output *cand)
{
  int sp = g->sp;
  clg_tensor *t = clg_tensor_new(CLG_INT64, g->rank, odims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  int64_t *v = clg_tensor_data(t);
  for (int64_t b = 0; b < g->nc; b++)
    for (int64_t e = 0; e < g->total_out; e++) {
      int64_t rem = e, flat = 0, stride = 1, pos[CLG_MAX_RANK];
      for (int d = sp - 1; d >= 0; d--) {
        pos[d] = rem % g->out[d] * g->st[d] + o[d] * g->dl[d] - g->pb[d];
        rem /= g->out[d];
        pos[d] = pos[d] < 0 ? 0 : pos[d] >= g->in[d] ? g->in[d] - 1 : pos[d]; /* a pad never wins */
      }
      for (int j = 0; j < sp; j++) { /* storage_order 1: the first spatial axis fastest */
        int d = g->col_major ? j : sp - 1 - j;
        flat += pos[d] * stride;
        stride *= g->in[d];
      }
      v[b * g->total_out + e] = b * g->total_in + flat;
    }
  clg_code code = clg_onnx_const(c, t, cand);
  clg_tensor_free(t);
  return code;
}

/* The window's elements at kernel offset o: one StridedSlice of x. */
static clg_code pool_offset_slice(clg_onnx *c, const pool_geom *g, const int64_t *o,
                                  const int64_t *odims, clg_output x, clg_output *sl)
{
  int64_t begin[CLG_MAX_RANK] = {0}, end[CLG_MAX_RANK], strd[CLG_MAX_RANK];
  end[0] = odims[0];
  end[1] = odims[1];
  strd[0] = strd[1] = 1;
  for (int d = 0; d < g->sp; d++) {
    begin[d + 2] = o[d] * g->dl[d];
    end[d + 2] = begin[d + 2] + (g->out[d] - 1) * g->st[d] + 1;
    strd[d + 2] = g->st[d];
  }
  clg_output bc = {0}, ec = {0}, sc = {0};
  clg_code code = clg_onnx_const_i32(c, g->rank, begin, &bc);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, g->rank, end, &ec);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, g->rank, strd, &sc);
  clg_output si[4] = {x, bc, ec, sc};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "StridedSlice", 4, si, 0, NULL, sl);
  return code;
}

/* acc (the window sums) divided by the kernel size, or (count_include_pad 0) by a constant map
 * of each window's elements inside the input. */
static clg_code pool_average(clg_onnx *c, const clg_imp_node *n, const pool_geom *g, clg_dtype dt,
                             bool padded, clg_output *acc)
{
  int sp = g->sp;
  bool include = clg_onnx_attr_i(n, "count_include_pad", 0) != 0 || !padded;
  int64_t cdims[CLG_MAX_RANK] = {1, 1};
  for (int d = 0; d < sp; d++)
    cdims[d + 2] = g->out[d];
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, g->rank, cdims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  double *v = clg_tensor_data(t);
  for (int64_t e = 0; e < g->total_out; e++) {
    int64_t rem = e, cnt = 1;
    for (int d = sp - 1; d >= 0; d--) {
      int64_t start = rem % g->out[d] * g->st[d] - g->pb[d], inside = 0;
      rem /= g->out[d];
      for (int64_t j = 0; j < g->k[d]; j++) {
        int64_t pos = start + j * g->dl[d];
        inside += include || (pos >= 0 && pos < g->in[d]);
      }
      cnt *= inside;
    }
    v[e] = (double)cnt;
  }
  clg_output cm = {0};
  clg_code code = clg_onnx_const(c, t, &cm);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = cast_to(c, cm, dt, &cm);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "RealDiv", *acc, cm, acc);
  return code;
}

clg_code clg_onnx_pool_slices(clg_onnx *c, const clg_imp_node *n, bool is_max)
{
  pool_geom g;
  int rank = clg_onnx_in_rank(c, n, 0), sp = rank - 2;
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  if (rank < 3 || rank > CLG_MAX_RANK || (dt != CLG_FLOAT32 && dt != CLG_FLOAT64))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "a pool of a rank-%d %s input is not supported",
                         rank, clg_dtype_name(dt));
  bool want_idx = is_max && n->num_outputs > 1 && n->outputs[1][0];
  g.rank = rank;
  g.sp = sp;
  clg_code code = pool_geometry(c, n, &g);
  if (code != CLG_OK)
    return code;
  bool padded = false;
  for (int d = 0; d < sp; d++)
    padded = padded || g.pb[d] || g.pe[d];
  clg_output x = {0};
  code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK && padded)
    code = pool_pad(c, &g, dt, is_max, &x);
  int64_t odims[CLG_MAX_RANK];
  odims[0] = clg_onnx_in_dim(c, n, 0, 0);
  odims[1] = clg_onnx_in_dim(c, n, 0, 1);
  for (int d = 0; d < sp; d++)
    odims[d + 2] = g.out[d];
  clg_output acc = {NULL, 0}, idx = {NULL, 0};
  int64_t o[CLG_MAX_RANK] = {0};
  for (int64_t q = 0; q < g.offsets && code == CLG_OK; q++) {
    clg_output sl, cand = {NULL, 0};
    code = pool_offset_slice(c, &g, o, odims, x, &sl);
    if (code == CLG_OK && want_idx) { /* each output's input index at this offset */
      code = pool_offset_indices(c, &g, o, odims, &cand);
      if (code != CLG_OK)
        return code;
    }
    if (code == CLG_OK && !acc.node) {
      acc = sl;
      idx = cand;
    } else if (code == CLG_OK && is_max) {
      clg_output gt = {0};
      if (want_idx)
        code = clg_onnx_binop(c, "Greater", sl, acc, &gt);
      clg_output sel[3] = {gt, cand, idx};
      if (code == CLG_OK && want_idx)
        code = clg_onnx_op(c, "SelectV2", 3, sel, 0, NULL, &idx);
      if (code == CLG_OK)
        code = clg_onnx_binop(c, "Maximum", acc, sl, &acc);
    } else if (code == CLG_OK)
      code = clg_onnx_binop(c, "Add", acc, sl, &acc);
    for (int d = sp - 1; d >= 0; d--) { /* the next offset, row-major */
      if (++o[d] < g.k[d])
        break;
      o[d] = 0;
    }
  }
  if (code == CLG_OK && !is_max)
    code = pool_average(c, n, &g, dt, padded, &acc);
  if (code == CLG_OK)
    code = clg_onnx_out(c, n, 0, acc);
  if (code == CLG_OK && want_idx)
    code = clg_onnx_out(c, n, 1, idx);
  return code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_misc, {"Pow", 12, pow_op, "Pow"}, {"Neg", 6, neg_op, NULL},
                  {"Abs", 6, abs_op, NULL}, {"HannWindow", 17, hann, NULL},
                  {"HammingWindow", 17, hamming, NULL}, {"BlackmanWindow", 17, blackman, NULL},
                  {"MaxUnpool", 9, max_unpool, "ScatterNd"}, {"DFT", 17, dft, NULL},
                  {"Det", 11, det, NULL}, {"STFT", 17, stft, NULL});
