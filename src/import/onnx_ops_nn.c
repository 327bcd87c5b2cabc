/* ONNX's layout-bound ops on clgraph's NHWC kernels: Conv (groups, depthwise, dilations,
 * explicit and auto pads), pools (ceil_mode, count_include_pad), BatchNormalization (folded
 * into the convolution before it where it can be), LRN, and the matrix products. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

enum { PAD_VALID, PAD_SAME, PAD_EXPLICIT };

/* The padding of one spatial axis. */
typedef struct axis_pad {
  int64_t in, k, s, d, before, after, out;
} axis_pad;

/* TensorFlow's SAME padding of an axis: before = total / 2 (the extra one after). */
static void same_pads(const axis_pad *a, int64_t *before, int64_t *after)
{
  int64_t out = (a->in + a->s - 1) / a->s;
  int64_t eff = (a->k - 1) * a->d + 1;
  int64_t total = (out - 1) * a->s + eff - a->in;
  if (total < 0)
    total = 0;
  *before = total / 2;
  *after = total - total / 2;
}

/* The axes' pads from auto_pad and pads, and whether TF's VALID or SAME gives them. */
static clg_code spatial_pads(clg_onnx *c, const clg_imp_node *n, axis_pad *ax, int *mode)
{
  const char *auto_pad = clg_onnx_attr_s(n, "auto_pad", "NOTSET");
  int64_t pads[4] = {0, 0, 0, 0};
  int np = clg_onnx_attr_ints(n, "pads", pads, 4);
  if (np >= 0 && np != 4)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "pads has %d values, not 4", np);
  for (int i = 0; i < 2; i++) {
    axis_pad *a = &ax[i];
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
      same_pads(a, &a->before, &a->after);
      if (auto_pad[5] == 'L') { /* the extra one before */
        int64_t t = a->before;
        a->before = a->after;
        a->after = t;
      }
    } else if (strcmp(auto_pad, "VALID") == 0) {
      a->before = a->after = 0;
    } else if (strcmp(auto_pad, "NOTSET") == 0 || !auto_pad[0]) {
      a->before = pads[i];
      a->after = pads[i + 2];
    } else
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "auto_pad '%s' is not an ONNX auto_pad",
                           auto_pad);
    if (a->before < 0 || a->after < 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "negative pads");
  }
  bool valid = true, same = true;
  for (int i = 0; i < 2; i++) {
    int64_t b, e;
    same_pads(&ax[i], &b, &e);
    valid = valid && ax[i].before == 0 && ax[i].after == 0;
    same = same && ax[i].before == b && ax[i].after == e;
  }
  *mode = valid ? PAD_VALID : same ? PAD_SAME : PAD_EXPLICIT;
  return CLG_OK;
}

/* x (NHWC) padded with zeros by the axes' before/after (+ extra after): AvgPool's input (the
 * divisor is fixed up after); MaxPool and the convolutions pad explicitly themselves. */
static clg_code pad_nhwc(clg_onnx *c, clg_output x, const axis_pad *ax, const int64_t *extra,
                         clg_output *out)
{
  int64_t p[8] = {0, 0, ax[0].before, ax[0].after + extra[0], ax[1].before, ax[1].after + extra[1],
                  0, 0};
  int64_t dims[2] = {4, 2};
  clg_tensor *t = clg_tensor_new(CLG_INT32, 2, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  for (int i = 0; i < 8; i++)
    ((int32_t *)clg_tensor_data(t))[i] = (int32_t)p[i];
  clg_output pads = {0};
  clg_code code = clg_onnx_const(c, t, &pads);
  clg_tensor_free(t);
  clg_output ins[2] = {x, pads};
  return code == CLG_OK ? clg_onnx_op(c, "Pad", 2, ins, 0, NULL, out) : code;
}

static clg_code ints_attr(clg_onnx *c, const clg_imp_node *n, const char *name, int64_t *v,
                          int64_t def)
{
  v[0] = v[1] = def;
  int k = clg_onnx_attr_ints(n, name, v, 2);
  if (k >= 0 && k != 2)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "%s has %d values: only 2-D (rank-4) inputs are "
                         "supported",
                         name, k);
  for (int i = 0; i < 2; i++)
    if (v[i] < 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%s holds %lld", name, (long long)v[i]);
  return CLG_OK;
}

/* --- Conv ------------------------------------------------------------------------------------ */

/* The BatchNormalization node reading only this Conv's output, or -1. */
static int bn_after(clg_onnx *c, const clg_imp_node *n)
{
  if (n->num_outputs < 1 || !n->outputs[0][0] || clg_onnx_readers(c, n->outputs[0]) != 1)
    return -1;
  for (int i = 0; i < c->m->num_nodes; i++) {
    const clg_imp_node *b = &c->m->nodes[i];
    if (strcmp(b->op, "BatchNormalization") != 0 || b->num_inputs != 5 || c->done[i] ||
        strcmp(b->inputs[0], n->outputs[0]) != 0)
      continue;
    bool extra = false;
    for (int j = 1; j < b->num_outputs; j++)
      extra = extra || b->outputs[j][0];
    if (extra || clg_onnx_attr_i(b, "training_mode", 0) || b->domain[0])
      return -1;
    for (int j = 1; j < 5; j++)
      if (!clg_onnx_in_const(c, b, j) ||
          clg_tensor_dtype(clg_onnx_in_const(c, b, j)) != CLG_FLOAT32)
        return -1;
    return i;
  }
  return -1;
}

static double f32_at(const clg_tensor *t, size_t i)
{
  return ((const float *)clg_tensor_data((clg_tensor *)t))[i];
}

/* W (ONNX [M, C/g, kh, kw]) and bias scaled by BatchNormalization node b: W' = W s, b' = (b -
 * mean) s + beta, s = scale / sqrt(var + eps), in double. */
static clg_code fold_bn(clg_onnx *c, const clg_imp_node *b, const clg_tensor *w,
                        const clg_tensor *bias, clg_tensor **w2, clg_tensor **b2)
{
  int64_t m = clg_tensor_dim(w, 0);
  const clg_tensor *sc = clg_onnx_in_const(c, b, 1), *be = clg_onnx_in_const(c, b, 2),
                   *mu = clg_onnx_in_const(c, b, 3), *var = clg_onnx_in_const(c, b, 4);
  if ((int64_t)clg_tensor_count(sc) != m || (int64_t)clg_tensor_count(be) != m ||
      (int64_t)clg_tensor_count(mu) != m || (int64_t)clg_tensor_count(var) != m)
    return clg_onnx_fail(c, b, CLG_INVALID_ARGUMENT, "parameters of %lld channels do not match",
                         (long long)m);
  double eps = clg_onnx_attr_f(b, "epsilon", 1e-5);
  int64_t dims[1] = {m};
  *w2 = *b2 = NULL;
  *w2 = clg_tensor_new(CLG_FLOAT32, 4,
                       (int64_t[]){clg_tensor_dim(w, 0), clg_tensor_dim(w, 1), clg_tensor_dim(w, 2),
                                   clg_tensor_dim(w, 3)},
                       NULL);
  *b2 = clg_tensor_new(CLG_FLOAT32, 1, dims, NULL);
  if (!*w2 || !*b2)
    return clg_graph_record_error(c->g);
  size_t per = clg_tensor_count(w) / (size_t)m;
  float *wo = clg_tensor_data(*w2), *bo = clg_tensor_data(*b2);
  for (int64_t i = 0; i < m; i++) {
    double s = f32_at(sc, (size_t)i) / sqrt(f32_at(var, (size_t)i) + eps);
    for (size_t k = 0; k < per; k++)
      wo[(size_t)i * per + k] = (float)(f32_at(w, (size_t)i * per + k) * s);
    double b0 = bias ? f32_at(bias, (size_t)i) : 0;
    bo[i] = (float)((b0 - f32_at(mu, (size_t)i)) * s + f32_at(be, (size_t)i));
  }
  return CLG_OK;
}

/* One convolution of x (NHWC, padded) by ONNX weights w ([M, Cg, kh, kw]): Conv2D for one
 * group, DepthwiseConv2dNative for one input channel per group. */
/* ep: the explicit_paddings under padding EXPLICIT, else NULL. */
static clg_code conv_group(clg_onnx *c, clg_output x, clg_output w, bool depthwise,
                           const int64_t *st, const int64_t *dl, const char *padding,
                           const int64_t *ep, clg_output *y)
{
  clg_output f = {0};
  clg_code code;
  if (depthwise) { /* [C*mult, 1, kh, kw] -> [kh, kw, C, mult] */
    int64_t cin = clg_onnx_dim(x, 3), m = clg_onnx_dim(w, 0);
    int64_t d4[4] = {cin, m / cin, clg_onnx_dim(w, 2), clg_onnx_dim(w, 3)};
    static const int64_t perm[4] = {2, 3, 0, 1};
    code = clg_onnx_reshape(c, w, 4, d4, &f);
    if (code == CLG_OK)
      code = clg_onnx_transpose(c, f, 4, perm, &f);
  } else {
    static const int64_t perm[4] = {2, 3, 1, 0}; /* [M, C, kh, kw] -> [kh, kw, C, M] */
    code = clg_onnx_transpose(c, w, 4, perm, &f);
  }
  if (code != CLG_OK)
    return code;
  int64_t strides[4] = {1, st[0], st[1], 1}, dil[4] = {1, dl[0], dl[1], 1};
  clg_attr at[4] = {clg_attr_int_list("strides", 4, strides), clg_attr_string("padding", padding),
                    clg_attr_int_list("dilations", 4, dil),
                    clg_attr_int_list("explicit_paddings", 8, ep)};
  bool dilated = dl[0] != 1 || dl[1] != 1;
  clg_output ins[2] = {x, f};
  return clg_onnx_op(c, depthwise ? "DepthwiseConv2dNative" : "Conv2D", 2, ins,
                     ep        ? 4
                     : dilated ? 3
                               : 2,
                     at, y);
}

static clg_code conv(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (clg_onnx_in_rank(c, n, 0) == 3)
    return clg_onnx_as_2d(c, n, r);
  if (clg_onnx_in_rank(c, n, 0) != 4 || clg_onnx_in_rank(c, n, 1) != 4)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "only 2-D convolutions (rank-4 input and "
                         "weights) are supported");
  int64_t cin = clg_onnx_in_dim(c, n, 0, 1), m = clg_onnx_in_dim(c, n, 1, 0);
  int64_t cg = clg_onnx_in_dim(c, n, 1, 1), group = clg_onnx_attr_i(n, "group", 1);
  if (group < 1 || cg * group != cin || m % group)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "weights of %lld output and %lld input channels in %lld groups do not "
                         "fit an input of %lld channels",
                         (long long)m, (long long)cg, (long long)group, (long long)cin);
  int64_t st[2], dl[2];
  clg_code code = ints_attr(c, n, "strides", st, 1);
  if (code == CLG_OK)
    code = ints_attr(c, n, "dilations", dl, 1);
  if (code != CLG_OK)
    return code;
  axis_pad ax[2];
  for (int i = 0; i < 2; i++)
    ax[i] = (axis_pad){.in = clg_onnx_in_dim(c, n, 0, 2 + i),
                       .k = clg_onnx_in_dim(c, n, 1, 2 + i),
                       .s = st[i],
                       .d = dl[i]};
  int mode;
  if ((code = spatial_pads(c, n, ax, &mode)) != CLG_OK)
    return code;
  clg_output x = {0}, w = {0}, y = {0};
  if ((code = clg_onnx_in_nhwc(c, n, 0, &x)) != CLG_OK || (code = clg_onnx_in(c, n, 1, &w)))
    return code;
  /* Conv2D and DepthwiseConv2dNative pad explicitly themselves (no Pad pass over the input) */
  bool explicit = mode == PAD_EXPLICIT;
  int64_t ep[8] = {0, 0, ax[0].before, ax[0].after, ax[1].before, ax[1].after, 0, 0};
  const char *padding = explicit ? "EXPLICIT" : mode == PAD_SAME ? "SAME" : "VALID";
  /* BatchNormalization right after: into the weights and bias */
  const clg_tensor *wk = clg_onnx_in_const(c, n, 1);
  const clg_tensor *bk = clg_onnx_has(n, 2) ? clg_onnx_in_const(c, n, 2) : NULL;
  int bn = wk && clg_tensor_dtype(wk) == CLG_FLOAT32 && (!clg_onnx_has(n, 2) || bk) ? bn_after(c, n)
                                                                                    : -1;
  clg_output bias = {NULL, 0};
  if (bn >= 0) {
    clg_tensor *w2 = NULL, *b2 = NULL;
    code = fold_bn(c, &c->m->nodes[bn], wk, bk, &w2, &b2);
    if (code == CLG_OK)
      code = clg_onnx_const(c, w2, &w);
    if (code == CLG_OK)
      code = clg_onnx_const(c, b2, &bias);
    clg_tensor_free(w2);
    clg_tensor_free(b2);
  } else if (clg_onnx_has(n, 2))
    code = clg_onnx_in(c, n, 2, &bias);
  if (code != CLG_OK)
    return code;
  bool depthwise = group == cin && cg == 1 && group > 1;
  if (group == 1 || depthwise)
    code = conv_group(c, x, w, depthwise, st, dl, padding, explicit ? ep : NULL, &y);
  else {
    clg_output parts[256] = {0};
    if (group > 256)
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "%lld groups", (long long)group);
    int64_t mg = m / group;
    for (int64_t g = 0; g < group && code == CLG_OK; g++) {
      clg_output xg = {0}, wg = {0};
      code = clg_onnx_slice_axis(c, x, 3, g * cg, cg, &xg);
      if (code == CLG_OK)
        code = clg_onnx_slice_axis(c, w, 0, g * mg, mg, &wg);
      if (code == CLG_OK)
        code = conv_group(c, xg, wg, false, st, dl, padding, explicit ? ep : NULL, &parts[g]);
    }
    clg_output axis = {0};
    if (code == CLG_OK)
      code = clg_onnx_const_i32(c, 1, (int64_t[]){3}, &axis);
    parts[group] = axis;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "ConcatV2", (int)group + 1, parts, 0, NULL, &y);
  }
  if (code == CLG_OK && bias.node) {
    clg_output ins[2] = {y, bias};
    code = clg_onnx_op(c, "BiasAdd", 2, ins, 0, NULL, &y);
  }
  if (code != CLG_OK)
    return code;
  if (bn >= 0) {
    const clg_imp_node *b = &c->m->nodes[bn];
    c->done[bn] = true;
    return clg_onnx_out_nhwc(c, b, 0, y) == CLG_OK ? clg_onnx_out_nhwc(c, n, 0, y)
                                                   : clg_graph_status(c->g);
  }
  return clg_onnx_out_nhwc(c, n, 0, y);
}

/* --- pools ----------------------------------------------------------------------------------- */

/* Windows of axis a over [0, in + before + after) that ceil_mode adds past the end: the extra
 * end padding, with the rule that the last window starts inside the input or the left pad. */
static int64_t pool_out(axis_pad *a, bool ceil_mode, int64_t *extra)
{
  int64_t span = a->in + a->before + a->after - ((a->k - 1) * a->d + 1);
  int64_t out = span / a->s + 1;
  if (ceil_mode && span % a->s) {
    out++;
    if ((out - 1) * a->s >= a->in + a->before)
      out--;
  }
  *extra = (out - 1) * a->s + (a->k - 1) * a->d + 1 - (a->in + a->before + a->after);
  if (*extra < 0)
    *extra = 0;
  a->out = out;
  return out;
}

/* AvgPool's divisor fix-up: the count of the window's elements that ONNX averages over
 * (inside the input, or inside input and pads with count_include_pad), as a [1, oh, ow, 1]
 * factor of k_h k_w / count. */
static clg_code avg_factor(clg_onnx *c, const axis_pad *ax, bool include_pad, clg_dtype dt,
                           clg_output *out)
{
  int64_t dims[4] = {1, ax[0].out, ax[1].out, 1};
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, 4, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  double *f = clg_tensor_data(t);
  for (int64_t i = 0; i < ax[0].out; i++)
    for (int64_t j = 0; j < ax[1].out; j++) {
      int64_t cnt[2];
      for (int a = 0; a < 2; a++) {
        int64_t o = a ? j : i, lo = o * ax[a].s - ax[a].before, hi = lo + ax[a].k;
        int64_t from = include_pad ? -ax[a].before : 0;
        int64_t to = include_pad ? ax[a].in + ax[a].after : ax[a].in;
        lo = lo < from ? from : lo;
        hi = hi > to ? to : hi;
        cnt[a] = hi > lo ? hi - lo : 1;
      }
      f[i * ax[1].out + j] = (double)(ax[0].k * ax[1].k) / (double)(cnt[0] * cnt[1]);
    }
  clg_output k = {0};
  clg_code code = clg_onnx_const(c, t, &k);
  clg_tensor_free(t);
  if (code == CLG_OK && dt != CLG_FLOAT64) {
    clg_attr a = clg_attr_dtype("DstT", dt);
    code = clg_onnx_op(c, "Cast", 1, &k, 1, &a, &k);
  }
  *out = k;
  return code;
}

static clg_code pool_of(clg_onnx *c, const clg_imp_node *n, bool is_max)
{
  int64_t dil[CLG_MAX_RANK];
  int nd = clg_onnx_attr_ints(n, "dilations", dil, CLG_MAX_RANK);
  bool dilated = false;
  for (int i = 0; i < nd; i++)
    dilated = dilated || dil[i] != 1;
  if (clg_onnx_in_rank(c, n, 0) > 4 || (n->num_outputs > 1 && n->outputs[1][0]) || dilated)
    return clg_onnx_pool_slices(c, n, is_max);
  if (clg_onnx_in_rank(c, n, 0) != 4)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "only 2-D pools (rank-4 input) are supported");
  if (clg_onnx_attr_i(n, "storage_order", 0))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "storage_order 1 is not supported");
  int64_t k[2], st[2], dl[2];
  clg_code code = ints_attr(c, n, "kernel_shape", k, 0);
  if (code == CLG_OK && clg_onnx_attr_ints(n, "kernel_shape", k, 2) != 2)
    code = clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "kernel_shape must have 2 values");
  if (code == CLG_OK)
    code = ints_attr(c, n, "strides", st, 1);
  if (code == CLG_OK)
    code = ints_attr(c, n, "dilations", dl, 1);
  if (code != CLG_OK)
    return code;
  if (dl[0] != 1 || dl[1] != 1)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "dilated pools are not supported");
  axis_pad ax[2];
  for (int i = 0; i < 2; i++)
    ax[i] = (axis_pad){.in = clg_onnx_in_dim(c, n, 0, 2 + i), .k = k[i], .s = st[i], .d = 1};
  int mode;
  if ((code = spatial_pads(c, n, ax, &mode)) != CLG_OK)
    return code;
  bool ceil_mode = clg_onnx_attr_i(n, "ceil_mode", 0) != 0;
  bool include_pad = clg_onnx_attr_i(n, "count_include_pad", 0) != 0;
  int64_t extra[2];
  for (int i = 0; i < 2; i++)
    if (pool_out(&ax[i], ceil_mode, &extra[i]) < 1)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the window does not fit the input");
  bool padded = mode != PAD_VALID || extra[0] || extra[1];
  clg_output x = {0}, y = {0};
  if ((code = clg_onnx_in_nhwc(c, n, 0, &x)) != CLG_OK)
    return code;
  const char *padding = "VALID";
  bool fix = false;
  /* MaxPool pads explicitly itself (pads never win a max, as PadV2's -inf): no pass over x */
  int64_t ep[8] = {0, 0, ax[0].before, ax[0].after + extra[0], ax[1].before, ax[1].after + extra[1],
                   0, 0};
  if (mode == PAD_SAME && !extra[0] && !extra[1] && (is_max || !include_pad))
    padding = "SAME"; /* TensorFlow's SAME: max ignores the pad, avg leaves it out */
  else if (padded && is_max)
    padding = "EXPLICIT";
  else if (padded) {
    code = pad_nhwc(c, x, ax, extra, &x);
    fix = true;
  }
  int64_t ksize[4] = {1, k[0], k[1], 1}, strides[4] = {1, st[0], st[1], 1};
  clg_attr at[4] = {clg_attr_int_list("ksize", 4, ksize), clg_attr_string("padding", padding),
                    clg_attr_int_list("strides", 4, strides),
                    clg_attr_int_list("explicit_paddings", 8, ep)};
  bool explicit = padding[0] == 'E';
  if (code == CLG_OK)
    code = clg_onnx_op(c, is_max ? "MaxPool" : "AvgPool", 1, &x, explicit ? 4 : 3, at, &y);
  if (code == CLG_OK && fix) {
    clg_output f = {0};
    code = avg_factor(c, ax, include_pad, clg_onnx_dtype(y), &f);
    clg_output ins[2] = {y, f};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &y);
  }
  return code == CLG_OK ? clg_onnx_out_nhwc(c, n, 0, y) : code;
}

static clg_code max_pool(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  if (clg_dtype_is_integer(clg_onnx_in_dtype(c, n, 0)))
    return clg_onnx_int_max_pool(c, n);
  if (clg_onnx_in_rank(c, n, 0) == 3)
    return clg_onnx_as_2d(c, n, r);
  return pool_of(c, n, true);
}

static clg_code avg_pool(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  if (clg_onnx_in_rank(c, n, 0) == 3)
    return clg_onnx_as_2d(c, n, r);
  return pool_of(c, n, false);
}

/* GlobalAveragePool, GlobalMaxPool: Mean or Max over H and W, kept. */
static clg_code global_pool(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  clg_output x = {0}, axes = {0}, y = {0};
  bool four = clg_onnx_in_rank(c, n, 0) == 4;
  int rank = clg_onnx_in_rank(c, n, 0);
  int64_t ax[CLG_MAX_RANK];
  for (int i = 2; i < rank; i++)
    ax[i - 2] = four ? i - 1 : i; /* NHWC: 1, 2 */
  clg_code code = four ? clg_onnx_in_nhwc(c, n, 0, &x) : clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, rank - 2, ax, &axes);
  clg_attr keep = clg_attr_bool("keep_dims", 1);
  clg_output ins[2] = {x, axes};
  if (code == CLG_OK)
    code = clg_onnx_op(c, r->tf, 2, ins, 1, &keep, &y);
  if (code != CLG_OK)
    return code;
  return four ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
}

/* --- normalisation --------------------------------------------------------------------------- */

/* BatchNormalization with training_mode 1 (opset 14): the batch's mean and population variance
 * over every axis but 1 normalise x; outputs 1 and 2 are the running statistics updated as
 * input * momentum + batch * (1 - momentum), as ONNX's reference computes them. */
static clg_code batch_norm_training(clg_onnx *c, const clg_imp_node *n)
{
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 2 || n->num_inputs != 5)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d, %d inputs", rank,
                         n->num_inputs);
  double eps = clg_onnx_attr_f(n, "epsilon", 1e-5), mom = clg_onnx_attr_f(n, "momentum", 0.9);
  int64_t axes[CLG_MAX_RANK], pd[CLG_MAX_RANK];
  int na = 0;
  for (int d = 0; d < rank; d++) {
    if (d != 1)
      axes[na++] = d;
    pd[d] = d == 1 ? clg_onnx_in_dim(c, n, 0, 1) : 1;
  }
  clg_output x = {0}, p[4] = {0}, ax = {0}, m = {0}, dev = {0}, v = {0}, y = {0}, ins[2] = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  for (int i = 0; i < 4 && code == CLG_OK; i++)
    code = clg_onnx_in(c, n, i + 1, &p[i]);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, na, axes, &ax);
  clg_attr keep = clg_attr_bool("keep_dims", 1);
  ins[0] = x;
  ins[1] = ax;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mean", 2, ins, 1, &keep, &m);
  ins[1] = m;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Sub", 2, ins, 0, NULL, &dev);
  ins[0] = ins[1] = dev;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &v);
  ins[0] = v;
  ins[1] = ax;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mean", 2, ins, 1, &keep, &v);
  /* y = (x - mean) / sqrt(var + eps) * scale + B, scale and B as [C, 1, ...] */
  clg_output r = {0}, sc = {0}, b = {0};
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Add", v, eps, &r);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Sqrt", 1, &r, 0, NULL, &r);
  ins[0] = dev;
  ins[1] = r;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "RealDiv", 2, ins, 0, NULL, &y);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, p[0], rank, pd, &sc);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, p[1], rank, pd, &b);
  ins[0] = y;
  ins[1] = sc;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &y);
  ins[0] = y;
  ins[1] = b;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Add", 2, ins, 0, NULL, &y);
  if (code == CLG_OK)
    code = clg_onnx_out(c, n, 0, y);
  /* running statistics, [C] */
  clg_output batch[2] = {m, v};
  for (int j = 0; j < 2 && code == CLG_OK; j++) {
    if (j + 1 >= n->num_outputs || !n->outputs[j + 1][0])
      continue;
    clg_output a = {0}, bt = {0};
    int64_t cdim = clg_onnx_in_dim(c, n, 0, 1);
    code = clg_onnx_scalar_op(c, "Mul", p[2 + j], mom, &a);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, batch[j], 1, &cdim, &bt);
    if (code == CLG_OK)
      code = clg_onnx_scalar_op(c, "Mul", bt, 1 - mom, &bt);
    ins[0] = a;
    ins[1] = bt;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Add", 2, ins, 0, NULL, &a);
    if (code == CLG_OK)
      code = clg_onnx_out(c, n, j + 1, a);
  }
  return code;
}

/* BatchNormalization (inference) not folded into a Conv: x * s + t per channel. */
static clg_code batch_norm(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (clg_onnx_attr_i(n, "training_mode", 0))
    return batch_norm_training(c, n);
  for (int j = 1; j < n->num_outputs; j++)
    if (n->outputs[j][0] && c->m->opset >= 9)
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "the training outputs are not supported");
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 2 || n->num_inputs != 5)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d, %d inputs", rank,
                         n->num_inputs);
  double eps = clg_onnx_attr_f(n, "epsilon", 1e-5);
  clg_output x = {0}, p[4] = {0}, s = {0}, t = {0}, y = {0};
  bool four = rank == 4;
  clg_code code = four ? clg_onnx_in_nhwc(c, n, 0, &x) : clg_onnx_in(c, n, 0, &x);
  for (int i = 0; i < 4 && code == CLG_OK; i++)
    code = clg_onnx_in(c, n, i + 1, &p[i]);
  if (code != CLG_OK)
    return code;
  /* s = scale / sqrt(var + eps), t = B - mean s (folded when the parameters are constants) */
  clg_output ve = {0}, ins[2] = {0};
  clg_dtype dt = clg_onnx_dtype(x);
  code = clg_onnx_scalar_op(c, "Add", p[3], eps, &ve);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Rsqrt", 1, &ve, 0, NULL, &ve);
  ins[0] = p[0];
  ins[1] = ve;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &s);
  ins[0] = p[2];
  ins[1] = s;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &t);
  ins[0] = p[1];
  ins[1] = t;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Sub", 2, ins, 0, NULL, &t);
  (void)dt;
  if (code == CLG_OK && !four) { /* [C] to [C, 1, ...] against canonical [N, C, ...] */
    int64_t d[CLG_MAX_RANK];
    d[0] = clg_onnx_dim(s, 0);
    for (int i = 1; i < rank - 1; i++)
      d[i] = 1;
    code = clg_onnx_reshape(c, s, rank - 1, d, &s);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, t, rank - 1, d, &t);
  }
  ins[0] = x;
  ins[1] = s;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Mul", 2, ins, 0, NULL, &y);
  ins[0] = y;
  ins[1] = t;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Add", 2, ins, 0, NULL, &y);
  if (code != CLG_OK)
    return code;
  return four ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
}

/* LRN over channels: TF's depth_radius (size - 1) / 2 and alpha / size; odd sizes only. */
static clg_code lrn(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t size = clg_onnx_attr_i(n, "size", 0);
  if (size < 1 || size % 2 == 0)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "size %lld: only odd sizes are supported",
                         (long long)size);
  if (clg_onnx_in_rank(c, n, 0) != 4)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "only rank-4 inputs are supported");
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in_nhwc(c, n, 0, &x);
  clg_attr at[4] = {clg_attr_int("depth_radius", (size - 1) / 2),
                    clg_attr_float("bias", clg_onnx_attr_f(n, "bias", 1.0)),
                    clg_attr_float("alpha", clg_onnx_attr_f(n, "alpha", 1e-4) / (double)size),
                    clg_attr_float("beta", clg_onnx_attr_f(n, "beta", 0.75))};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "LRN", 1, &x, 4, at, &y);
  return code == CLG_OK ? clg_onnx_out_nhwc(c, n, 0, y) : code;
}

/* --- matrix products ------------------------------------------------------------------------- */

/* Gemm: alpha op(A) op(B) + beta C. */
static clg_code gemm(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (clg_onnx_in_rank(c, n, 0) != 2 || clg_onnx_in_rank(c, n, 1) != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "A and B must be matrices");
  double alpha = clg_onnx_attr_f(n, "alpha", 1.0), beta = clg_onnx_attr_f(n, "beta", 1.0);
  clg_output a = {0}, b = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &a);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &b);
  clg_attr at[2] = {clg_attr_bool("transpose_a", clg_onnx_attr_i(n, "transA", 0) != 0),
                    clg_attr_bool("transpose_b", clg_onnx_attr_i(n, "transB", 0) != 0)};
  clg_output ins[2] = {a, b};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "MatMul", 2, ins, 2, at, &y);
  if (code == CLG_OK && alpha != 1.0)
    code = clg_onnx_scalar_op(c, "Mul", y, alpha, &y);
  if (code == CLG_OK && clg_onnx_has(n, 2) && beta != 0.0) {
    clg_output cc = {0};
    code = clg_onnx_in(c, n, 2, &cc);
    if (code == CLG_OK && beta != 1.0)
      code = clg_onnx_scalar_op(c, "Mul", cc, beta, &cc);
    ins[0] = y;
    ins[1] = cc;
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Add", 2, ins, 0, NULL, &y);
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* MatMul with numpy's rules: matrices; a stack of matrices times one matrix (one GEMM of the
 * stack's rows); vectors promoted; stacks on both sides through BatchMatMulV2. */
static clg_code matmul(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int ra = clg_onnx_in_rank(c, n, 0), rb = clg_onnx_in_rank(c, n, 1);
  clg_output a = {0}, b = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &a);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &b);
  if (code != CLG_OK)
    return code;
  if (ra < 1 || rb < 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "MatMul of a scalar");
  int64_t out_dims[CLG_MAX_RANK];
  int out_rank = 0;
  if (ra == 1) { /* [K] -> [1, K] */
    code = clg_onnx_reshape(c, a, 2, (int64_t[]){1, clg_onnx_dim(a, 0)}, &a);
    ra = 2;
  }
  bool b_vec = rb == 1;
  if (code == CLG_OK && b_vec) {
    code = clg_onnx_reshape(c, b, 2, (int64_t[]){clg_onnx_dim(b, 0), 1}, &b);
    rb = 2;
  }
  if (code != CLG_OK)
    return code;
  int64_t k = clg_onnx_dim(a, ra - 1), nn = clg_onnx_dim(b, rb - 1);
  if (rb == 2) {
    int64_t rows = 1;
    for (int i = 0; i < ra - 1; i++)
      rows *= clg_onnx_dim(a, i);
    for (int i = 0; i < ra - 1; i++)
      out_dims[out_rank++] = clg_onnx_dim(a, i);
    if (clg_onnx_in_rank(c, n, 0) == 1)
      out_rank--;
    if (!b_vec)
      out_dims[out_rank++] = nn;
    code = clg_onnx_reshape(c, a, 2, (int64_t[]){rows, k}, &a);
    clg_output ins[2] = {a, b};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "MatMul", 2, ins, 0, NULL, &y);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, y, out_rank, out_dims, &y);
  } else {
    if (!clg_op_find("BatchMatMulV2"))
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "batched MatMul needs BatchMatMulV2");
    clg_output ins[2] = {a, b};
    code = clg_onnx_op(c, "BatchMatMulV2", 2, ins, 0, NULL, &y);
    if (code == CLG_OK && (clg_onnx_in_rank(c, n, 0) == 1 || b_vec)) {
      int yr = clg_onnx_rank(y);
      for (int i = 0; i < yr; i++) {
        bool drop = (i == yr - 2 && clg_onnx_in_rank(c, n, 0) == 1) || (i == yr - 1 && b_vec);
        if (!drop)
          out_dims[out_rank++] = clg_onnx_dim(y, i);
      }
      code = clg_onnx_reshape(c, y, out_rank, out_dims, &y);
    }
  }
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_nn, {"Conv", 1, conv, "Conv2D"},
                  {"MaxPool", 1, max_pool, "MaxPool"}, {"AveragePool", 1, avg_pool, "AvgPool"},
                  {"GlobalAveragePool", 1, global_pool, "Mean"},
                  {"GlobalMaxPool", 1, global_pool, "Max"},
                  {"BatchNormalization", 7, batch_norm, NULL}, {"LRN", 1, lrn, "LRN"},
                  {"Gemm", 7, gemm, "MatMul"}, {"MatMul", 1, matmul, "MatMul"});
