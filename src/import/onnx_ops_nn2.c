/* More of ONNX's neural-network ops, composed from clgraph's: Resize and Upsample (every mode
 * and coordinate transformation, as per-axis Gathers and weighted sums whose index and weight
 * tables are computed at import), the normalisations (LayerNormalization,
 * InstanceNormalization, MeanVarianceNormalization, LpNormalization). ConvTranspose, the 1-D
 * convolutions and the smaller ones are in onnx_ops_conv.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

/* NCHW axis d of a rank-4 value is NHWC axis to_nhwc[d]. */
static const int to_nhwc[4] = {0, 3, 1, 2};

/* --- Resize, Upsample ------------------------------------------------------------------------ */

enum { CT_HALF, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_CROP };
enum { RM_NEAREST, RM_LINEAR, RM_CUBIC };
enum { NM_ROUND_FLOOR, NM_ROUND_CEIL, NM_FLOOR, NM_CEIL };

typedef struct resize_cfg {
  int mode, ct, nearest;
  double a;     /* cubic_coeff_a */
  bool exclude; /* exclude_outside */
} resize_cfg;

/* One axis: lengths, the scale, the roi's start and end (tf_crop_and_resize). */
typedef struct resize_axis {
  int64_t in, out;
  double scale, r0, r1;
} resize_axis;

static double cubic_w(double a, double x)
{
  x = fabs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/* ONNX's reference rule for output i of an axis: the source coordinate, then n taps (2, or 4
 * for cubic) at the n nearest points of the input edge-padded by ceil(n / 2), ties to the
 * lower, with the coefficients of the fraction (1 when the coordinate is whole). idx gets the
 * input indices (clamped: the edge padding), w their weights; false when the coordinate falls
 * outside the crop (tf_crop_and_resize's extrapolation). */
static bool resize_taps(const resize_cfg *f, const resize_axis *ax, int64_t i, int64_t *idx,
                        double *w)
{
  double len = (double)ax->in, s = ax->scale, ow = s * len, x = 0, di = (double)i;
  bool inside = true;
  switch (f->ct) {
  case CT_HALF:
    x = (di + 0.5) / s - 0.5;
    break;
  case CT_PYTORCH:
    x = ax->out > 1 ? (di + 0.5) / s - 0.5 : 0;
    break;
  case CT_ALIGN:
    x = ow == 1 ? 0 : di * (len - 1) / (ow - 1);
    break;
  case CT_ASYM:
    x = di / s;
    break;
  case CT_TF_NN:
    x = (di + 0.5) / s;
    break;
  default: /* CT_CROP */
    x = ax->out > 1 ? di * (ax->r1 - ax->r0) * (len - 1) / (double)(ax->out - 1)
                    : (ax->r1 - ax->r0) * (len - 1) / 2;
    x += ax->r0 * (len - 1);
    inside = x >= 0 && x <= len - 1;
    if (!inside)
      x = 0; /* extrapolated: the taps do not matter, and a NaN or huge roi stays in range */
    break;
  }
  int n = f->mode == RM_CUBIC ? 4 : 2, pad = n / 2;
  double r = x == floor(x) ? 1 : x - floor(x);
  if (f->mode == RM_NEAREST) {
    bool up = r == 1 || (f->nearest == NM_ROUND_FLOOR && r > 0.5) ||
              (f->nearest == NM_ROUND_CEIL && r >= 0.5) || f->nearest == NM_CEIL;
    w[0] = up ? 0 : 1;
    w[1] = up ? 1 : 0;
  } else if (f->mode == RM_LINEAR) {
    w[0] = 1 - r;
    w[1] = r;
  } else {
    for (int k = 0; k < 4; k++)
      w[k] = cubic_w(f->a, r + 1 - k);
  }
  /* the window in the padded axis [0, in + 2 pad): nearest n points, kept inside */
  int64_t start = (int64_t)ceil(x + pad) - n / 2, top = ax->in + 2 * pad - n;
  start = start < 0 ? 0 : start > top ? top : start;
  double sum = 0;
  for (int k = 0; k < n; k++) {
    int64_t o = start + k - pad; /* unpadded index */
    if (f->exclude && (o < 0 || o >= ax->in))
      w[k] = 0;
    sum += w[k];
    idx[k] = o < 0 ? 0 : o >= ax->in ? ax->in - 1 : o;
  }
  if (f->exclude && sum != 0)
    for (int k = 0; k < n; k++)
      w[k] /= sum;
  return inside;
}

/* Axis `axis` (of x's rank) resized: y = sum over taps of Gather(x, idx_k) * w_k; one Gather
 * when every output takes one input; then the crop's extrapolation value where outside. */
static clg_code resize_axis_build(clg_onnx *c, const clg_imp_node *nd, const resize_cfg *f,
                                  const resize_axis *ax, double extrapolation, clg_output x,
                                  int axis, clg_output *y)
{
  int n = f->mode == RM_CUBIC ? 4 : 2, rank = clg_onnx_rank(x);
  size_t out = (size_t)ax->out;
  int64_t *idx = malloc(sizeof *idx * (size_t)n * out);
  double *w = malloc(sizeof *w * (size_t)n * out), *mask = malloc(sizeof *mask * out);
  int64_t *one = malloc(sizeof *one * out);
  clg_code code = CLG_OK;
  if (!idx || !w || !mask || !one) {
    code = clg_graph_record_error(c->g);
    goto done;
  }
  bool single = true, identity = ax->in == ax->out, masked = false;
  for (size_t i = 0; i < out; i++) {
    int64_t ti[4];
    double tw[4];
    mask[i] = resize_taps(f, ax, (int64_t)i, ti, tw) ? 1 : 0;
    masked = masked || mask[i] == 0;
    int ones = 0;
    for (int k = 0; k < n; k++) {
      idx[(size_t)k * out + i] = ti[k];
      w[(size_t)k * out + i] = tw[k];
      if (tw[k] == 1) {
        ones++;
        one[i] = ti[k];
      } else if (tw[k] != 0)
        ones = 2;
    }
    single = single && ones == 1;
    identity = identity && single && one[i] == (int64_t)i;
  }
  clg_dtype dt = clg_onnx_dtype(x);
  if (!single && !clg_onnx_is_float(dt)) {
    code = clg_onnx_fail(c, nd, CLG_UNIMPLEMENTED, "%s of %s: only float tensors interpolate",
                         nd->op, clg_dtype_name(dt));
    goto done;
  }
  if (identity && !masked) {
    *y = x;
    goto done;
  }
  int64_t wd[CLG_MAX_RANK];
  for (int d = 0; d < rank; d++)
    wd[d] = d == axis ? ax->out : 1;
  clg_output axo, acc = {NULL, 0};
  code = clg_onnx_const_scalar(c, CLG_INT32, axis, &axo);
  for (int k = 0; k < (single ? 1 : n) && code == CLG_OK; k++) {
    bool zero = true;
    for (size_t i = 0; i < out; i++)
      zero = zero && w[(size_t)k * out + i] == 0;
    if (zero && !single)
      continue;
    clg_output io = {0}, g = {0}, wk = {0};
    code = clg_onnx_const_i32(c, (int)out, single ? one : idx + (size_t)k * out, &io);
    clg_output ins[3] = {x, io, axo};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, &g);
    if (code == CLG_OK && !single) {
      code = clg_onnx_const_f(c, dt, rank, wd, w + (size_t)k * out, &wk);
      clg_output m[2] = {g, wk};
      if (code == CLG_OK)
        code = clg_onnx_op(c, "Mul", 2, m, 0, NULL, &g);
    }
    clg_output s[2] = {acc, g};
    if (code == CLG_OK)
      code = acc.node ? clg_onnx_op(c, "Add", 2, s, 0, NULL, &acc) : (acc = g, CLG_OK);
  }
  if (code == CLG_OK && masked) { /* acc m + e (1 - m) */
    clg_output mo = {0}, eo = {0}, m[2] = {0};
    for (size_t i = 0; i < out; i++)
      w[i] = (1 - mask[i]) * extrapolation;
    code = clg_onnx_const_f(c, dt, rank, wd, mask, &mo);
    if (code == CLG_OK)
      code = clg_onnx_const_f(c, dt, rank, wd, w, &eo);
    m[0] = acc;
    m[1] = mo;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Mul", 2, m, 0, NULL, &acc);
    m[0] = acc;
    m[1] = eo;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Add", 2, m, 0, NULL, &acc);
  }
  *y = acc;
done:
  free(idx);
  free(w);
  free(mask);
  free(one);
  return code;
}

/* The float values of constant input i (at most max): *count, -1 when absent or empty. */
static clg_code in_floats(clg_onnx *c, const clg_imp_node *n, int i, double *v, int max, int *count)
{
  *count = -1;
  if (!clg_onnx_has(n, i))
    return CLG_OK;
  const clg_tensor *t = clg_onnx_in_const(c, n, i);
  if (!t)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "input %d ('%s') must be a constant: clgraph's shapes are static", i,
                         n->inputs[i]);
  size_t cnt = clg_tensor_count(t);
  clg_dtype dt = clg_tensor_dtype(t);
  if (!clg_onnx_is_float(dt))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') is %s, not float", i,
                         n->inputs[i], clg_dtype_name(dt));
  if (cnt > (size_t)max)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') holds %zu values, at most %d",
                         i, n->inputs[i], cnt, max);
  for (size_t k = 0; k < cnt; k++)
    v[k] = dt == CLG_FLOAT32 ? ((const float *)clg_tensor_data((clg_tensor *)t))[k]
                             : ((const double *)clg_tensor_data((clg_tensor *)t))[k];
  *count = cnt ? (int)cnt : -1;
  return CLG_OK;
}

static int pick(const char *s, const char *const *names, int num)
{
  for (int i = 0; i < num; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

/* The mode and coordinate rule of the node: Upsample and Resize-10 are asymmetric with floor
 * for nearest (ONNX's reference); from Resize-11 the attributes say. */
static clg_code resize_cfg_of(clg_onnx *c, const clg_imp_node *n, bool legacy, resize_cfg *f)
{
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const cts[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char *mode = clg_onnx_attr_s(n, "mode", "nearest");
  f->mode = pick(mode, modes, 3);
  if (f->mode < 0 || (legacy && f->mode == RM_CUBIC)) {
    /* opset 7's Upsample says "bilinear" for linear */
    if (legacy && strcmp(mode, "bilinear") == 0)
      f->mode = RM_LINEAR;
    else
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "mode '%s' is not one of %s's", mode, n->op);
  }
  f->a = clg_onnx_attr_f(n, "cubic_coeff_a", -0.75);
  f->exclude = clg_onnx_attr_i(n, "exclude_outside", 0) != 0;
  if (legacy) {
    f->ct = CT_ASYM;
    f->nearest = NM_FLOOR;
    return CLG_OK;
  }
  const char *ct = clg_onnx_attr_s(n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = clg_onnx_attr_s(n, "nearest_mode", "round_prefer_floor");
  f->ct = pick(ct, cts, 6);
  f->nearest = pick(nm, nms, 4);
  if (f->ct < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "coordinate_transformation_mode '%s' is not an ONNX mode", ct);
  if (f->nearest < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "nearest_mode '%s' is not an ONNX mode", nm);
  return CLG_OK;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (opset 7: the scales
 * attribute; 9: input 1). */
static clg_code resize(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  bool upsample = strcmp(n->op, "Upsample") == 0;
  bool legacy = upsample || c->m->opset < 11;
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d", rank);
  resize_cfg f = {0};
  clg_code code = resize_cfg_of(c, n, legacy, &f);
  if (code != CLG_OK)
    return code;
  double scales[CLG_MAX_RANK], roi[2 * CLG_MAX_RANK];
  int64_t sizes[CLG_MAX_RANK];
  int ns = -1, nz = -1, nr = -1;
  if (upsample && c->m->opset < 9) {
    const clg_imp_attr *a = clg_onnx_attr(n, "scales");
    if (!a || a->n < 1 || !a->floats)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the scales attribute is missing");
    if (a->n > CLG_MAX_RANK)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d scales", a->n);
    ns = a->n;
    for (int i = 0; i < ns; i++)
      scales[i] = a->floats[i];
  } else if (legacy)
    code = in_floats(c, n, 1, scales, CLG_MAX_RANK, &ns);
  else {
    code = in_floats(c, n, 2, scales, CLG_MAX_RANK, &ns);
    if (code == CLG_OK && clg_onnx_has(n, 3))
      code = clg_onnx_in_ints(c, n, 3, sizes, CLG_MAX_RANK, &nz);
    if (code == CLG_OK && f.ct == CT_CROP)
      code = in_floats(c, n, 1, roi, 2 * CLG_MAX_RANK, &nr);
  }
  if (code != CLG_OK)
    return code;
  if (nz == 0)
    nz = -1;
  if ((ns < 0) == (nz < 0))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "exactly one of scales and sizes must be given");
  if ((ns >= 0 && ns != rank) || (nz >= 0 && nz != rank))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%d %s for an input of rank %d",
                         ns >= 0 ? ns : nz, ns >= 0 ? "scales" : "sizes", rank);
  if (f.ct == CT_CROP && nr != 2 * rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "tf_crop_and_resize needs a constant roi of %d values", 2 * rank);
  double extrapolation = clg_onnx_attr_f(n, "extrapolation_value", 0);
  clg_output x = {0};
  bool nhwc;
  if ((code = clg_onnx_in_either(c, n, &x, &nhwc)) != CLG_OK)
    return code;
  for (int d = 0; d < rank && code == CLG_OK; d++) {
    resize_axis ax = {.in = clg_onnx_in_dim(c, n, 0, d)};
    if (ns >= 0) {
      double o = floor((double)ax.in * scales[d]);
      ax.scale = scales[d];
      ax.out = o >= 1 && o <= INT32_MAX ? (int64_t)o : 0; /* NaN, inf or too large: rejected */
    } else {
      ax.out = sizes[d];
      ax.scale = ax.in ? (double)sizes[d] / (double)ax.in : 0;
    }
    if (!(ax.scale > 0) || ax.out < 1 || ax.out > INT32_MAX || ax.in < 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %d of %lld resized to %lld (scale %g)",
                           d, (long long)ax.in, (long long)ax.out, ax.scale);
    if (nr > 0) {
      ax.r0 = roi[d];
      ax.r1 = roi[rank + d];
    }
    code = resize_axis_build(c, n, &f, &ax, extrapolation, x, nhwc ? to_nhwc[d] : d, &x);
  }
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, x) : code;
}

/* --- normalisations ------------------------------------------------------------------------ */

/* op (Mean, Sum) of x over axes, dims kept. */
static clg_code reduce_keep(clg_onnx *c, const char *op, clg_output x, int k, const int64_t *axes,
                            clg_output *y)
{
  clg_output ax = {0};
  clg_code code = clg_onnx_const_i32(c, k, axes, &ax);
  clg_attr kd = clg_attr_bool("keep_dims", 1);
  clg_output ins[2] = {x, ax};
  return code == CLG_OK ? clg_onnx_op(c, op, 2, ins, 1, &kd, y) : code;
}

/* x - mean and 1 / sqrt(var + eps) over axes (mean and var kept dims); mean when wanted. */
static clg_code standardise(clg_onnx *c, clg_output x, int k, const int64_t *axes, double eps,
                            clg_output *centred, clg_output *inv, clg_output *mean)
{
  clg_output m = {0}, v = {0};
  clg_code code = reduce_keep(c, "Mean", x, k, axes, &m);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", x, m, centred);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Square", 1, centred, 0, NULL, &v);
  if (code == CLG_OK)
    code = reduce_keep(c, "Mean", v, k, axes, &v);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Add", v, eps, &v);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Rsqrt", 1, &v, 0, NULL, inv);
  if (mean)
    *mean = m;
  return code;
}

/* LayerNormalization (opset 17): over axes [axis, rank), then Scale and B; the optional Mean
 * and InvStdDev outputs (stash_type 1: float32 statistics, clgraph's for float inputs). */
static clg_code layer_norm(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis %lld for rank %d",
                         (long long)clg_onnx_attr_i(n, "axis", -1), rank);
  if (!clg_onnx_is_float(clg_onnx_in_dtype(c, n, 0)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "%s input: only float32 and float64",
                         clg_dtype_name(clg_onnx_in_dtype(c, n, 0)));
  int64_t axes[CLG_MAX_RANK];
  int k = 0;
  for (int64_t d = axis; d < rank; d++)
    axes[k++] = d;
  clg_output x = {0}, sc = {0}, y = {0}, inv = {0}, mean = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &sc);
  if (code == CLG_OK)
    code = standardise(c, x, k, axes, clg_onnx_attr_f(n, "epsilon", 1e-5), &y, &inv, &mean);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", y, inv, &y);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", y, sc, &y);
  if (code == CLG_OK && clg_onnx_has(n, 2)) {
    clg_output b = {0};
    code = clg_onnx_in(c, n, 2, &b);
    if (code == CLG_OK)
      code = clg_onnx_binop(c, "Add", y, b, &y);
  }
  if (code == CLG_OK)
    code = clg_onnx_out(c, n, 0, y);
  if (code == CLG_OK && n->num_outputs > 1 && n->outputs[1][0])
    code = clg_onnx_out(c, n, 1, mean);
  if (code == CLG_OK && n->num_outputs > 2 && n->outputs[2][0])
    code = clg_onnx_out(c, n, 2, inv);
  return code;
}

/* [C] as [C, 1, ...] against canonical [N, C, ...] of rank `rank` (NHWC: as it is). */
static clg_code per_channel(clg_onnx *c, clg_output p, int rank, bool nhwc, clg_output *out)
{
  if (nhwc || rank < 3) {
    *out = p;
    return CLG_OK;
  }
  int64_t d[CLG_MAX_RANK];
  d[0] = clg_onnx_count(p);
  for (int i = 1; i < rank - 1; i++)
    d[i] = 1;
  return clg_onnx_reshape(c, p, rank - 1, d, out);
}

/* InstanceNormalization: per sample and channel over the spatial axes, then scale and B. */
static clg_code instance_norm(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 3)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d: [N, C, D1, ...] needed",
                         rank);
  if (!clg_onnx_is_float(clg_onnx_in_dtype(c, n, 0)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "%s input: only float32 and float64",
                         clg_dtype_name(clg_onnx_in_dtype(c, n, 0)));
  clg_output x = {0}, s = {0}, b = {0}, y = {0}, inv = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  int64_t axes[CLG_MAX_RANK];
  for (int d = 2; d < rank; d++)
    axes[d - 2] = nhwc ? to_nhwc[d] : d;
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &s);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 2, &b);
  if (code == CLG_OK && (clg_onnx_count(s) != clg_onnx_in_dim(c, n, 0, 1) ||
                         clg_onnx_count(b) != clg_onnx_in_dim(c, n, 0, 1)))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "scale and B must hold one value per channel (%lld)",
                         (long long)clg_onnx_in_dim(c, n, 0, 1));
  if (code == CLG_OK)
    code = per_channel(c, s, rank, nhwc, &s);
  if (code == CLG_OK)
    code = per_channel(c, b, rank, nhwc, &b);
  if (code == CLG_OK)
    code = standardise(c, x, rank - 2, axes, clg_onnx_attr_f(n, "epsilon", 1e-5), &y, &inv, NULL);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", inv, s, &inv); /* the small tensor scaled, then one Mul */
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Mul", y, inv, &y);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Add", y, b, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over axes (default 0, 2, 3), as
 * ONNX's function body defines it. */
static clg_code mvn(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axes[CLG_MAX_RANK] = {0, 2, 3};
  int k = clg_onnx_attr_ints(n, "axes", axes, CLG_MAX_RANK);
  if (k < 0)
    k = 3;
  clg_output x = {0}, y = {0}, m = {0}, v = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  for (int i = 0; i < k && code == CLG_OK; i++) {
    if (axes[i] < 0)
      axes[i] += rank;
    if (axes[i] < 0 || axes[i] >= rank)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range for rank %d", rank);
    if (nhwc)
      axes[i] = to_nhwc[axes[i]];
  }
  if (code == CLG_OK)
    code = reduce_keep(c, "Mean", x, k, axes, &m);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Sub", x, m, &y);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Square", 1, &y, 0, NULL, &v);
  if (code == CLG_OK)
    code = reduce_keep(c, "Mean", v, k, axes, &v);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Sqrt", 1, &v, 0, NULL, &v);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Add", v, 1e-9, &v);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "RealDiv", y, v, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* LpNormalization: x / ||x||_p along axis, p 1 or 2. */
static clg_code lp_norm(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t axis = clg_onnx_attr_i(n, "axis", -1), p = clg_onnx_attr_i(n, "p", 2);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range for rank %d", rank);
  if (p != 1 && p != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "p is %lld, not 1 or 2", (long long)p);
  clg_output x = {0}, a = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_op(c, p == 1 ? "Abs" : "Square", 1, &x, 0, NULL, &a);
  if (code == CLG_OK)
    code = reduce_keep(c, "Sum", a, 1, &axis, &a);
  if (code == CLG_OK && p == 2)
    code = clg_onnx_op(c, "Sqrt", 1, &a, 0, NULL, &a);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "RealDiv", x, a, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_nn2, {"Resize", 10, resize, "GatherV2"},
                  {"Upsample", 7, resize, "GatherV2"}, {"LayerNormalization", 17, layer_norm, NULL},
                  {"InstanceNormalization", 6, instance_norm, NULL},
                  {"MeanVarianceNormalization", 9, mvn, NULL},
                  {"LpNormalization", 1, lp_norm, NULL});
