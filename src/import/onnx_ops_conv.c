/* ONNX's ops around convolutions, composed from clgraph's: ConvTranspose (as a Conv2D of the
 * input with zeros between its elements), the 1-D convolutions and pools (through a 2-D view of
 * the node), and the data movement, masks and small elementwise ones (Trilu, Hardmax,
 * DepthToSpace, SpaceToDepth, ThresholdedRelu, Shrink, IsInf, CastLike, EyeLike). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

/* --- ConvTranspose -------------------------------------------------------------------------- */

/* List attribute name of a node with sp (1, 2) spatial axes as v[2] (H, W; a 1-D node has
 * H = 1, which takes def), each at least lo. */
static clg_code attr_pair(clg_onnx *c, const clg_imp_node *n, const char *name, int sp, int64_t def,
                          int64_t lo, int64_t *v)
{
  int64_t t[4] = {def, def, def, def};
  int k = clg_onnx_attr_ints(n, name, t, 4);
  if (k >= 0 && k != sp)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%s has %d values for %d spatial axes", name,
                         k, sp);
  v[0] = sp == 1 ? def : t[0]; /* 1-D: H = 1 takes the default */
  v[1] = sp == 1 ? t[0] : t[1];
  for (int i = 0; i < 2; i++)
    if (v[i] < lo)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "%s holds %lld", name, (long long)v[i]);
  return CLG_OK;
}

/* x [N, H, W, C] padded (or, where negative, cropped) by before/after per spatial axis. */
static clg_code pad_crop(clg_onnx *c, clg_output x, const int64_t *before, const int64_t *after,
                         clg_output *y)
{
  int64_t p[8] = {0}, b[4] = {0}, sz[4];
  bool pad = false, crop = false;
  for (int a = 0; a < 2; a++) {
    p[2 + 2 * a] = before[a] > 0 ? before[a] : 0;
    p[3 + 2 * a] = after[a] > 0 ? after[a] : 0;
    pad = pad || before[a] > 0 || after[a] > 0;
    crop = crop || before[a] < 0 || after[a] < 0;
  }
  clg_code code = CLG_OK;
  *y = x;
  if (pad) {
    clg_output pc = {0};
    int64_t pd[2] = {4, 2};
    clg_tensor *t = clg_tensor_new(CLG_INT32, 2, pd, NULL);
    if (!t)
      return clg_graph_record_error(c->g);
    for (int i = 0; i < 8; i++)
      ((int32_t *)clg_tensor_data(t))[i] = (int32_t)p[i];
    code = clg_onnx_const(c, t, &pc);
    clg_tensor_free(t);
    clg_output ins[2] = {*y, pc};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Pad", 2, ins, 0, NULL, y);
  }
  if (code != CLG_OK || !crop)
    return code;
  for (int d = 0; d < 4; d++)
    sz[d] = clg_onnx_dim(*y, d);
  for (int a = 0; a < 2; a++) {
    int64_t cb = before[a] < 0 ? -before[a] : 0, ca = after[a] < 0 ? -after[a] : 0;
    b[1 + a] = cb;
    sz[1 + a] -= cb + ca;
  }
  clg_output bo = {0}, so = {0};
  code = clg_onnx_const_i32(c, 4, b, &bo);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, 4, sz, &so);
  clg_output ins[3] = {*y, bo, so};
  return code == CLG_OK ? clg_onnx_op(c, "Slice", 3, ins, 0, NULL, y) : code;
}

/* w [C, M, kh, kw] (ONNX's ConvTranspose weights) as Conv2D's filter [kh, kw, C, M] turned by
 * 180 degrees: the transposed convolution is the correlation of the stride-dilated input with
 * the flipped kernel. */
static clg_code flipped_filter(clg_onnx *c, clg_output w, clg_output *f)
{
  clg_code code = CLG_OK;
  *f = w;
  for (int a = 2; a < 4 && code == CLG_OK; a++) {
    int64_t k = clg_onnx_dim(w, a);
    if (k == 1)
      continue;
    int64_t *rev = malloc(sizeof *rev * (size_t)k);
    if (!rev)
      return clg_graph_record_error(c->g);
    for (int64_t i = 0; i < k; i++)
      rev[i] = k - 1 - i;
    clg_output io = {0}, ax = {0};
    code = clg_onnx_const_i32(c, (int)k, rev, &io);
    free(rev);
    if (code == CLG_OK)
      code = clg_onnx_const_scalar(c, CLG_INT32, a, &ax);
    clg_output ins[3] = {*f, io, ax};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "GatherV2", 3, ins, 0, NULL, f);
  }
  static const int64_t perm[4] = {2, 3, 0, 1};
  return code == CLG_OK ? clg_onnx_transpose(c, *f, 4, perm, f) : code;
}

/* ConvTranspose's pads [begin, end] per axis of the 2-D form, from pads, auto_pad or
 * output_shape as ONNX's spec says. */
static clg_code ct_pads(clg_onnx *c, const clg_imp_node *n, int sp, const int64_t *in,
                        const int64_t *k, const int64_t *st, const int64_t *dl, const int64_t *op,
                        int64_t *pb, int64_t *pe)
{
  /* pads: [begin..., end...] */
  int64_t pads[4] = {0, 0, 0, 0}, os[2];
  const char *auto_pad = clg_onnx_attr_s(n, "auto_pad", "NOTSET");
  int np = clg_onnx_attr_ints(n, "pads", pads, 4);
  int no = clg_onnx_attr_ints(n, "output_shape", os, 2);
  bool same = strncmp(auto_pad, "SAME_", 5) == 0;
  if (np >= 0 && np != 2 * sp)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "pads has %d values, not %d", np, 2 * sp);
  if (no >= 0 && no != sp)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "output_shape has %d values, not %d", no, sp);
  if (no < 0 && same)
    for (int a = 0; a < sp; a++)
      os[a] = in[a + 2 - sp] * st[a + 2 - sp];
  for (int a = 0; a < 2; a++) {
    int s = a - (2 - sp); /* index into the node's per-spatial lists */
    if (s < 0)
      continue;
    if (no >= 0 || same) {
      int64_t total = st[a] * (in[a] - 1) + op[a] + (k[a] - 1) * dl[a] + 1 - os[s];
      bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2); /* floor, as Python's // */
      pb[a] = upper ? half : total - half;
      pe[a] = total - pb[a];
    } else if (np >= 0) {
      pb[a] = pads[s];
      pe[a] = pads[s + sp];
    }
  }
  return CLG_OK;
}

/* x [N, H, W, C] with stride - 1 zeros after each element: [N, H, 1, W, 1, C] padded to
 * [N, H, sh, W, sw, C]. */
static clg_code ct_zeros_between(clg_onnx *c, int64_t nb, const int64_t *in, const int64_t *st,
                                 int64_t cin, clg_output *xp)
{
  clg_output x = *xp;
  clg_code code;
  int64_t d6[6] = {nb, in[0], 1, in[1], 1, cin}, d4[4] = {nb, in[0] * st[0], in[1] * st[1], cin};
  int64_t p[12] = {0, 0, 0, 0, 0, st[0] - 1, 0, 0, 0, st[1] - 1, 0, 0}, pd[2] = {6, 2};
  clg_tensor *t = clg_tensor_new(CLG_INT32, 2, pd, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  for (int i = 0; i < 12; i++)
    ((int32_t *)clg_tensor_data(t))[i] = (int32_t)p[i];
  clg_output pc = {0};
  code = clg_onnx_const(c, t, &pc);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 6, d6, &x);
  clg_output ins[2] = {x, pc};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Pad", 2, ins, 0, NULL, &x);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 4, d4, &x);
  *xp = x;
  return code;
}

/* The stride-1 VALID Conv2D of x with each group's flipped kernel, concatenated over the
 * channels. */
static clg_code ct_groups(clg_onnx *c, clg_output x, clg_output w, int64_t group, int64_t cin,
                          const int64_t *dl, clg_output *y)
{
  clg_code code = CLG_OK;
  int64_t strides[4] = {1, 1, 1, 1}, dil[4] = {1, dl[0], dl[1], 1};
  clg_attr at[3] = {clg_attr_int_list("strides", 4, strides), clg_attr_string("padding", "VALID"),
                    clg_attr_int_list("dilations", 4, dil)};
  bool dilated = dl[0] != 1 || dl[1] != 1;
  clg_output parts[65] = {0};
  int64_t cg = cin / group;
  for (int64_t g = 0; g < group && code == CLG_OK; g++) {
    clg_output xg = x, wg = w, f;
    if (group > 1) {
      code = clg_onnx_slice_axis(c, x, 3, g * cg, cg, &xg);
      if (code == CLG_OK)
        code = clg_onnx_slice_axis(c, w, 0, g * cg, cg, &wg);
    }
    if (code == CLG_OK)
      code = flipped_filter(c, wg, &f);
    clg_output ins[2] = {xg, f};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "Conv2D", 2, ins, dilated ? 3 : 2, at, &parts[g]);
  }
  if (code == CLG_OK && group > 1) {
    code = clg_onnx_const_i32(c, 1, (int64_t[]){3}, &parts[group]);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "ConcatV2", (int)group + 1, parts, 0, NULL, &parts[0]);
  }
  *y = parts[0];
  return code;
}

/* ConvTranspose (2-D, and 1-D as H = 1): the input with stride - 1 zeros between elements
 * (Reshape, Pad, Reshape), padded by k_eff - 1 less ONNX's pads (cropped where that is
 * negative) plus output_padding, then a stride-1 VALID Conv2D with the flipped kernel at the
 * node's dilations; groups as slices. Pads from pads, auto_pad or output_shape as ONNX's
 * spec says (SAME_UPPER: the extra one at the end). */
static clg_code conv_transpose(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0), sp = rank - 2;
  if (rank != 4 && rank != 3)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "only 1-D and 2-D transposed convolutions (rank 3 or 4) are supported");
  if (clg_onnx_in_rank(c, n, 1) != rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "weights of rank %d for an input of rank %d",
                         clg_onnx_in_rank(c, n, 1), rank);
  int64_t cin = clg_onnx_in_dim(c, n, 0, 1), group = clg_onnx_attr_i(n, "group", 1);
  int64_t mg = clg_onnx_in_dim(c, n, 1, 1);
  if (group < 1 || clg_onnx_in_dim(c, n, 1, 0) != cin || cin % group)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "weights [%lld, %lld, ...] in %lld groups do not fit %lld input channels",
                         (long long)clg_onnx_in_dim(c, n, 1, 0), (long long)mg, (long long)group,
                         (long long)cin);
  int64_t st[2], dl[2], op[2], in[2], k[2];
  clg_code code = attr_pair(c, n, "strides", sp, 1, 1, st);
  if (code == CLG_OK)
    code = attr_pair(c, n, "dilations", sp, 1, 1, dl);
  if (code == CLG_OK)
    code = attr_pair(c, n, "output_padding", sp, 0, 0, op);
  if (code != CLG_OK)
    return code;
  for (int a = 0; a < 2; a++) {
    int d = sp == 1 && a == 0 ? -1 : (sp == 1 ? 2 : 2 + a);
    in[a] = d < 0 ? 1 : clg_onnx_in_dim(c, n, 0, d);
    k[a] = d < 0 ? 1 : clg_onnx_in_dim(c, n, 1, d);
  }
  int64_t pb[2] = {0, 0}, pe[2] = {0, 0};
  code = ct_pads(c, n, sp, in, k, st, dl, op, pb, pe);
  if (code != CLG_OK)
    return code;
  clg_output x = {0}, w = {0}, y = {0};
  code = rank == 4 ? clg_onnx_in_nhwc(c, n, 0, &x) : clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_in(c, n, 1, &w);
  int64_t nb = clg_onnx_in_dim(c, n, 0, 0);
  if (code == CLG_OK && rank == 3) { /* [N, C, L] -> [N, 1, L, C]; w [C, M, 1, k] */
    static const int64_t perm[3] = {0, 2, 1};
    code = clg_onnx_transpose(c, x, 3, perm, &x);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, x, 4, (int64_t[]){nb, 1, in[1], cin}, &x);
    if (code == CLG_OK)
      code = clg_onnx_reshape(c, w, 4, (int64_t[]){cin, mg, 1, k[1]}, &w);
  }
  /* zeros between: [N, H, 1, W, 1, C] padded to [N, H, sh, W, sw, C] */
  if (code == CLG_OK && (st[0] > 1 || st[1] > 1))
    code = ct_zeros_between(c, nb, in, st, cin, &x);
  int64_t before[2], after[2];
  for (int a = 0; a < 2; a++) {
    int64_t keff = (k[a] - 1) * dl[a] + 1;
    before[a] = keff - 1 - pb[a];
    after[a] = keff - 1 - pe[a] + op[a] - (st[a] - 1); /* the zeros past the last element */
  }
  if (code == CLG_OK)
    code = pad_crop(c, x, before, after, &x);
  if (code != CLG_OK)
    return code;
  if (clg_onnx_dim(x, 1) < (k[0] - 1) * dl[0] + 1 || clg_onnx_dim(x, 2) < (k[1] - 1) * dl[1] + 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "the pads leave no output");
  if (group > 64)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "%lld groups", (long long)group);
  code = ct_groups(c, x, w, group, cin, dl, &y);
  if (code == CLG_OK && clg_onnx_has(n, 2)) {
    clg_output b = {0};
    code = clg_onnx_in(c, n, 2, &b);
    clg_output ins[2] = {y, b};
    if (code == CLG_OK)
      code = clg_onnx_op(c, "BiasAdd", 2, ins, 0, NULL, &y);
  }
  if (code != CLG_OK)
    return code;
  if (rank == 4)
    return clg_onnx_out_nhwc(c, n, 0, y);
  static const int64_t perm[3] = {0, 2, 1}; /* [N, 1, L', M] -> [N, M, L'] */
  code = clg_onnx_reshape(c, y, 3, (int64_t[]){nb, clg_onnx_dim(y, 2), clg_onnx_dim(y, 3)}, &y);
  if (code == CLG_OK)
    code = clg_onnx_transpose(c, y, 3, perm, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* --- 1-D convolutions and pools ------------------------------------------------------------ */

/* The names the 2-D view of a 1-D node reads and writes: the model's names never start with
 * a control character; one node at a time uses them. */
static char name_x[] = "\001onnx1d:x", name_w[] = "\001onnx1d:w", name_y[] = "\001onnx1d:y";

clg_code clg_onnx_set_value(clg_onnx *c, char *name, clg_output x)
{
  char *outs[1] = {name};
  clg_imp_node p = {.name = name, .op = name, .num_outputs = 1, .outputs = outs, .domain = ""};
  clg_code code = clg_onnx_out_nhwc(c, &p, 0, (clg_output){NULL, 0}); /* no stale NHWC form */
  return code == CLG_OK ? clg_onnx_out(c, &p, 0, x) : code;
}

/* Input i ([.., L]) as [.., 1, L] under name. */
static clg_code as_4d(clg_onnx *c, const clg_imp_node *n, int i, char *name)
{
  clg_output x = {0};
  clg_code code = clg_onnx_in(c, n, i, &x);
  int64_t d[4] = {clg_onnx_dim(x, 0), clg_onnx_dim(x, 1), 1, clg_onnx_dim(x, 2)};
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 4, d, &x);
  return code == CLG_OK ? clg_onnx_set_value(c, name, x) : code;
}

clg_code clg_onnx_as_2d(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  if (n->num_attrs > 64 || n->num_inputs > 3 || (n->num_outputs > 1 && n->outputs[1][0]))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "this 1-D %s is not supported", n->op);
  clg_imp_attr attrs[64];
  int64_t ints[64][4];
  for (int i = 0; i < n->num_attrs; i++) { /* [a] -> [1, a]; pads [b, e] -> [0, b, 0, e] */
    attrs[i] = n->attrs[i];
    const clg_imp_attr *a = &n->attrs[i];
    bool pair = strcmp(a->name, "kernel_shape") == 0 || strcmp(a->name, "strides") == 0 ||
                strcmp(a->name, "dilations") == 0;
    bool pads = strcmp(a->name, "pads") == 0;
    if (!(pair || pads) || a->kind != CLG_IMP_LIST || a->elem != CLG_IMP_I ||
        a->n != (pads ? 2 : 1))
      continue;
    if (pair) {
      ints[i][0] = 1;
      ints[i][1] = a->ints[0];
    } else {
      ints[i][0] = ints[i][2] = 0;
      ints[i][1] = a->ints[0];
      ints[i][3] = a->ints[1];
    }
    attrs[i].ints = ints[i];
    attrs[i].n = pads ? 4 : 2;
  }
  char *ins[3] = {name_x, name_w, NULL}, *outs[1] = {name_y};
  bool conv = strcmp(n->op, "Conv") == 0;
  for (int i = 1; i < n->num_inputs; i++)
    ins[i] = i == 1 && conv ? name_w : n->inputs[i];
  clg_imp_node t = *n;
  t.inputs = ins;
  t.attrs = attrs;
  t.outputs = outs;
  t.num_outputs = 1;
  clg_code code = as_4d(c, n, 0, name_x);
  if (code == CLG_OK && conv)
    code = clg_onnx_in_rank(c, n, 1) == 3
               ? as_4d(c, n, 1, name_w)
               : clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "weights of rank %d for a 1-D input",
                               clg_onnx_in_rank(c, n, 1));
  if (code == CLG_OK)
    code = r->fn(c, &t, r);
  /* [N, C, 1, L'] -> [N, C, L'] */
  char *back_in[1] = {name_y};
  clg_imp_node b = {.name = n->name, .op = n->op, .num_inputs = 1, .inputs = back_in, .domain = ""};
  clg_output y = {0};
  if (code == CLG_OK)
    code = clg_onnx_in(c, &b, 0, &y);
  if (code != CLG_OK)
    return code; /* y is unset: its dims must not be read */
  int64_t d[3] = {clg_onnx_dim(y, 0), clg_onnx_dim(y, 1), clg_onnx_dim(y, 3)};
  code = clg_onnx_reshape(c, y, 3, d, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* --- data movement and masks ---------------------------------------------------------------- */

/* x's canonical dims into d; the rank. */
static int dims_of(clg_output x, int64_t *d)
{
  int r = clg_onnx_rank(x);
  for (int i = 0; i < r; i++)
    d[i] = clg_onnx_dim(x, i);
  return r;
}

/* A Const of dtype dt and shape dims from doubles, through a float64 Const and a Cast (both
 * folded at import). */
static clg_code const_any(clg_onnx *c, clg_dtype dt, int rank, const int64_t *dims, const double *v,
                          clg_output *out)
{
  clg_code code =
      clg_onnx_const_f(c, dt == CLG_FLOAT32 ? CLG_FLOAT32 : CLG_FLOAT64, rank, dims, v, out);
  if (code != CLG_OK || clg_onnx_is_float(dt))
    return code;
  clg_attr a = clg_attr_dtype("DstT", dt);
  return clg_onnx_op(c, "Cast", 1, out, 1, &a, out);
}

/* A bool Const of x's shape: keep[i]; y = keep ? x : 0 (Select copies, so an infinite x stays
 * where kept and never leaks a NaN where masked). */
static clg_code select_mask(clg_onnx *c, clg_output x, const bool *keep, clg_output *y)
{
  int64_t d[CLG_MAX_RANK];
  int r = dims_of(x, d);
  clg_tensor *t = clg_tensor_new(CLG_BOOL, r, d, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  size_t cnt = clg_tensor_count(t);
  for (size_t i = 0; i < cnt; i++)
    ((uint8_t *)clg_tensor_data(t))[i] = keep[i];
  clg_output m = {0}, z = {0};
  clg_code code = clg_onnx_const(c, t, &m);
  clg_tensor_free(t);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ZerosLike", 1, &x, 0, NULL, &z);
  clg_output ins[3] = {m, x, z};
  return code == CLG_OK ? clg_onnx_op(c, "Select", 3, ins, 0, NULL, y) : code;
}

/* Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes. */
static clg_code trilu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  if (rank < 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d: at least 2", rank);
  int64_t k = 0;
  int cnt = 0;
  clg_code code = clg_onnx_has(n, 1) ? clg_onnx_in_ints(c, n, 1, &k, 1, &cnt) : CLG_OK;
  if (code != CLG_OK)
    return code;
  bool upper = clg_onnx_attr_i(n, "upper", 1) != 0;
  clg_output x = {0}, y = {0};
  if ((code = clg_onnx_in(c, n, 0, &x)) != CLG_OK)
    return code;
  size_t total = (size_t)clg_onnx_count(x);
  int64_t rows = clg_onnx_dim(x, rank - 2), cols = clg_onnx_dim(x, rank - 1);
  bool *keep = malloc(total ? total : 1);
  if (!keep)
    return clg_graph_record_error(c->g);
  for (size_t e = 0; e < total; e++) {
    int64_t j = (int64_t)e % cols, i = ((int64_t)e / cols) % rows;
    keep[e] = upper ? j - i >= k : j - i <= k;
  }
  code = select_mask(c, x, keep, &y);
  free(keep);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Hardmax: 1 at the first maximum along axis (opset 13), or of the input flattened to 2-D at
 * axis (before 13), 0 elsewhere: ArgMax compared with the positions along the axis. */
static clg_code hardmax(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int rank = clg_onnx_in_rank(c, n, 0);
  bool legacy = c->m->opset < 13;
  int64_t axis = clg_onnx_attr_i(n, "axis", legacy ? 1 : -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "axis out of range for rank %d", rank);
  clg_output x = {0}, am = {0}, ax = {0}, pos = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK], wd[CLG_MAX_RANK];
  int wr = dims_of(x, dims), wa = (int)axis;
  memcpy(wd, dims, sizeof wd);
  if (legacy) { /* [prod before, prod from] */
    wd[0] = wd[1] = 1;
    for (int i = 0; i < rank; i++)
      wd[i >= axis] *= dims[i];
    wr = 2;
    wa = 1;
    code = clg_onnx_reshape(c, x, 2, wd, &x);
  }
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, CLG_INT32, wa, &ax);
  clg_attr ot = clg_attr_dtype("output_type", CLG_INT32);
  clg_output ins[2] = {x, ax};
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ArgMax", 2, ins, 1, &ot, &am);
  int64_t kd[CLG_MAX_RANK], pd[CLG_MAX_RANK];
  for (int i = 0; i < wr; i++) {
    kd[i] = i == wa ? 1 : wd[i];
    pd[i] = i == wa ? wd[i] : 1;
  }
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, am, wr, kd, &am);
  double *v = malloc(sizeof *v * (size_t)(wd[wa] ? wd[wa] : 1));
  if (!v)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < wd[wa]; i++)
    v[i] = (double)i;
  if (code == CLG_OK)
    code = const_any(c, CLG_INT32, wr, pd, v, &pos);
  free(v);
  ins[0] = am;
  ins[1] = pos;
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Equal", 2, ins, 0, NULL, &y);
  clg_attr dt = clg_attr_dtype("DstT", clg_onnx_dtype(x));
  if (code == CLG_OK)
    code = clg_onnx_op(c, "Cast", 1, &y, 1, &dt, &y);
  if (code == CLG_OK && legacy)
    code = clg_onnx_reshape(c, y, rank, dims, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* Output 0 = input 0 reshaped to d6, transposed by perm and reshaped to d4: how
 * DepthToSpace's CRD mode and SpaceToDepth move blocks between channels and space. */
static clg_code regroup(clg_onnx *c, const clg_imp_node *n, const int64_t *d6, const int64_t *perm,
                        const int64_t *d4)
{
  clg_output x = {0}, y = {0};
  clg_code code = clg_onnx_in(c, n, 0, &x);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, x, 6, d6, &y);
  if (code == CLG_OK)
    code = clg_onnx_transpose(c, y, 6, perm, &y);
  if (code == CLG_OK)
    code = clg_onnx_reshape(c, y, 4, d4, &y);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

/* DepthToSpace: DCR is TensorFlow's (NHWC), CRD regroups the channels as [C', b, b]. */
static clg_code depth_to_space(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t b = clg_onnx_attr_i(n, "blocksize", 0);
  const char *mode = clg_onnx_attr_s(n, "mode", "DCR");
  if (clg_onnx_in_rank(c, n, 0) != 4)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d, not 4",
                         clg_onnx_in_rank(c, n, 0));
  int64_t ch = clg_onnx_in_dim(c, n, 0, 1), h = clg_onnx_in_dim(c, n, 0, 2),
          w = clg_onnx_in_dim(c, n, 0, 3), nb = clg_onnx_in_dim(c, n, 0, 0);
  if (b < 1 || ch % (b * b))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "blocksize %lld does not divide %lld channels",
                         (long long)b, (long long)ch);
  if (strcmp(mode, "DCR") == 0) {
    if (b == 1)
      return clg_onnx_out_alias(c, n, 0, 0);
    clg_output x = {0}, y = {0};
    clg_code code = clg_onnx_in_nhwc(c, n, 0, &x);
    clg_attr a = clg_attr_int("block_size", b);
    if (code == CLG_OK)
      code = clg_onnx_op(c, "DepthToSpace", 1, &x, 1, &a, &y);
    return code == CLG_OK ? clg_onnx_out_nhwc(c, n, 0, y) : code;
  }
  if (strcmp(mode, "CRD") != 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "mode '%s' is not DCR or CRD", mode);
  int64_t d6[6] = {nb, ch / (b * b), b, b, h, w}, perm[6] = {0, 1, 4, 2, 5, 3};
  int64_t d4[4] = {nb, ch / (b * b), h * b, w * b};
  return regroup(c, n, d6, perm, d4);
}

/* SpaceToDepth: [N, C, H/b, b, W/b, b] to [N, b, b, C, H/b, W/b] (ONNX's definition). */
static clg_code space_to_depth(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  int64_t b = clg_onnx_attr_i(n, "blocksize", 0);
  if (clg_onnx_in_rank(c, n, 0) != 4)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d, not 4",
                         clg_onnx_in_rank(c, n, 0));
  int64_t nb = clg_onnx_in_dim(c, n, 0, 0), ch = clg_onnx_in_dim(c, n, 0, 1),
          h = clg_onnx_in_dim(c, n, 0, 2), w = clg_onnx_in_dim(c, n, 0, 3);
  if (b < 1 || h % b || w % b)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "blocksize %lld does not divide the spatial dims %lld x %lld",
                         (long long)b, (long long)h, (long long)w);
  int64_t d6[6] = {nb, ch, h / b, b, w / b, b}, perm[6] = {0, 3, 5, 1, 2, 4};
  int64_t d4[4] = {nb, ch * b * b, h / b, w / b};
  return regroup(c, n, d6, perm, d4);
}

/* --- small elementwise ones ------------------------------------------------------------------ */

/* Select(cond, a, b) with cond of x's shape. */
static clg_code select3(clg_onnx *c, clg_output cond, clg_output a, clg_output b, clg_output *y)
{
  clg_output ins[3] = {cond, a, b};
  return clg_onnx_op(c, "Select", 3, ins, 0, NULL, y);
}

/* x >= v (v a scalar of x's dtype), v >= x when flip. */
static clg_code ge_scalar(clg_onnx *c, clg_output x, double v, bool flip, clg_output *y)
{
  clg_output k = {0};
  clg_code code = clg_onnx_const_scalar(c, clg_onnx_dtype(x), v, &k);
  return code == CLG_OK ? clg_onnx_binop(c, "GreaterEqual", flip ? k : x, flip ? x : k, y) : code;
}

/* ThresholdedRelu: x where x > alpha, else 0 (alpha >= x picks the 0). */
static clg_code thresholded_relu(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_output x = {0}, cond = {0}, z = {0}, y = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  if (code == CLG_OK)
    code = ge_scalar(c, x, clg_onnx_attr_f(n, "alpha", 1.0), true, &cond);
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ZerosLike", 1, &x, 0, NULL, &z);
  if (code == CLG_OK)
    code = select3(c, cond, z, x, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* Shrink: x + bias below -lambd, x - bias above lambd, else 0. */
static clg_code shrink(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  double l = clg_onnx_attr_f(n, "lambd", 0.5), bias = clg_onnx_attr_f(n, "bias", 0);
  clg_output x = {0}, lo = {0}, hi = {0}, z = {0}, xa = {0}, xs = {0}, y = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  if (code == CLG_OK)
    code = ge_scalar(c, x, -l, false, &lo); /* not below -lambd */
  if (code == CLG_OK)
    code = ge_scalar(c, x, l, true, &hi); /* not above lambd */
  if (code == CLG_OK)
    code = clg_onnx_op(c, "ZerosLike", 1, &x, 0, NULL, &z);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Add", x, bias, &xa);
  if (code == CLG_OK)
    code = clg_onnx_scalar_op(c, "Sub", x, bias, &xs);
  if (code == CLG_OK)
    code = select3(c, hi, z, xs, &y);
  if (code == CLG_OK)
    code = select3(c, lo, y, xa, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* IsInf: x == +inf (detect_positive), x == -inf (detect_negative), |x| == inf for both. */
static clg_code is_inf(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  bool pos = clg_onnx_attr_i(n, "detect_positive", 1) != 0;
  bool neg = clg_onnx_attr_i(n, "detect_negative", 1) != 0;
  clg_output x = {0}, k = {0}, y = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  if (code == CLG_OK && !clg_onnx_is_float(clg_onnx_dtype(x)))
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of type %s, not float",
                         clg_dtype_name(clg_onnx_dtype(x)));
  if (code == CLG_OK && pos && neg)
    code = clg_onnx_op(c, "Abs", 1, &x, 0, NULL, &x);
  /* neither: compared with NaN, never equal */
  double v = pos ? INFINITY : neg ? -INFINITY : NAN;
  if (code == CLG_OK)
    code = clg_onnx_const_scalar(c, clg_onnx_dtype(x), v, &k);
  if (code == CLG_OK)
    code = clg_onnx_binop(c, "Equal", x, k, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* CastLike: Cast to input 1's dtype. */
static clg_code cast_like(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  clg_dtype dt = clg_onnx_in_dtype(c, n, 1);
  clg_output x = {0}, y = {0};
  bool nhwc;
  clg_code code = clg_onnx_in_either(c, n, &x, &nhwc);
  if (code != CLG_OK)
    return code;
  if (clg_onnx_dtype(x) == dt)
    return clg_onnx_out_alias(c, n, 0, 0);
  clg_attr a = clg_attr_dtype("DstT", dt);
  code = clg_onnx_op(c, "Cast", 1, &x, 1, &a, &y);
  return code == CLG_OK ? clg_onnx_out_either(c, n, nhwc, y) : code;
}

/* EyeLike: a Const of the input's 2-D shape with ones on diagonal k, of dtype (else the
 * input's). */
static clg_code eye_like(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  if (clg_onnx_in_rank(c, n, 0) != 2)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input of rank %d, not 2",
                         clg_onnx_in_rank(c, n, 0));
  clg_dtype dt = clg_onnx_in_dtype(c, n, 0);
  const clg_imp_attr *da = clg_onnx_attr(n, "dtype");
  if (da && !clg_onnx_dtype_of(da->i, &dt))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "dtype %lld, which clgraph lacks",
                         (long long)da->i);
  int64_t k = clg_onnx_attr_i(n, "k", 0);
  int64_t d[2] = {clg_onnx_in_dim(c, n, 0, 0), clg_onnx_in_dim(c, n, 0, 1)};
  size_t total = (size_t)(d[0] * d[1]);
  double *v = calloc(total ? total : 1, sizeof *v);
  if (!v)
    return clg_graph_record_error(c->g);
  for (int64_t i = 0; i < d[0]; i++)
    if (i + k >= 0 && i + k < d[1])
      v[i * d[1] + i + k] = 1;
  clg_output y = {0};
  clg_code code = const_any(c, dt, 2, d, v, &y);
  free(v);
  return code == CLG_OK ? clg_onnx_out(c, n, 0, y) : code;
}

CLG_ONNX_RULE_SET(clg_onnx_rules_conv, {"Trilu", 14, trilu, "Select"},
                  {"Hardmax", 1, hardmax, "ArgMax"},
                  {"DepthToSpace", 1, depth_to_space, "DepthToSpace"},
                  {"SpaceToDepth", 1, space_to_depth, NULL},
                  {"ThresholdedRelu", 10, thresholded_relu, "Select"},
                  {"Shrink", 9, shrink, "Select"}, {"IsInf", 10, is_inf, NULL},
                  {"CastLike", 15, cast_like, "Cast"}, {"EyeLike", 9, eye_like, NULL},
                  {"ConvTranspose", 1, conv_transpose, "Conv2D"});
