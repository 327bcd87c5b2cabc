/* Squeeze, ExpandDims, Slice, Pad, PadV2 and ConcatV2 on the host, for elements of any size:
 * copies (none when the output reuses the input), a strided gather (Slice), rows copied whole
 * between fills (Pad) and rows of each value copied into place (ConcatV2). */
#include <string.h>

#include "backends/host/host.h"

static clg_code copy_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_out_count(&c->node->outs[0]) * clg_dtype_size(c->node->outs[0].dtype);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

/* Row-major strides in elements. */
static void strides_of(int rank, const int64_t *dims, size_t *st)
{
  size_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= (size_t)dims[k];
  }
}

static clg_code slice_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *o = &c->node->outs[0];
  clg_strided m;
  size_t base;
  clg_code code = clg_slice_map(c->node, &m, &base);
  if (code != CLG_OK || clg_out_count(o) == 0)
    return code;
  size_t es = clg_dtype_size(o->dtype);
  clg_host_gather(es, (const char *)c->in[0].host + base * es, c->out[0].host, &m);
  return CLG_OK;
}

/* Fills count elements of es bytes at p with the element at v. */
static void fill(char *p, const char *v, size_t es, size_t count)
{
  bool zero = true;
  for (size_t b = 0; b < es; b++)
    zero = zero && v[b] == 0;
  if (zero) {
    memset(p, 0, es * count);
    return;
  }
  for (size_t i = 0; i < count; i++)
    memcpy(p + i * es, v, es);
}

/* Pad's rows: the output over dims [s, r), where the dims after s are not padded, so that a
 * row is padding, or padding + one contiguous run of the input + padding (NHWC padded in H and
 * W: rows of (W + pads) * C elements, not of C). */
typedef struct pad_job {
  const clg_out_desc *x, *o;
  const int64_t *before, *after;
  int s;
  size_t es, inner, row;
  const char *v, *in;
  char *out;
} pad_job;

static void pad_rows(void *ctx, size_t q0, size_t q1)
{
  const pad_job *j = ctx;
  int s = j->s;
  size_t es = j->es, ist[CLG_MAX_RANK];
  strides_of(s + 1, j->x->dims, ist); /* in units of inner */
  int64_t idx[CLG_MAX_RANK] = {0};    /* output row q0's index over dims [0, s) */
  for (size_t q = q0, k = (size_t)s; k-- > 0;) {
    idx[k] = (int64_t)(q % (size_t)j->o->dims[k]);
    q /= (size_t)j->o->dims[k];
  }
  size_t b = (size_t)j->before[s] * j->inner, w = (size_t)j->x->dims[s] * j->inner,
         a = (size_t)j->after[s] * j->inner;
  for (size_t q = q0; q < q1; q++) {
    char *dst = j->out + q * j->row * es;
    bool inside = w > 0;
    size_t src = 0;
    for (int k = 0; k < s && inside; k++) {
      int64_t i = idx[k] - j->before[k];
      inside = i >= 0 && i < j->x->dims[k];
      src += (size_t)i * ist[k];
    }
    if (!inside) {
      fill(dst, j->v, es, j->row);
    } else {
      fill(dst, j->v, es, b);
      memcpy(dst + b * es, j->in + src * j->inner * es, w * es);
      fill(dst + (b + w) * es, j->v, es, a);
    }
    for (int k = s - 1; k >= 0; k--) {
      if (++idx[k] < j->o->dims[k])
        break;
      idx[k] = 0;
    }
  }
}

static clg_code pad_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0), *o = &n->outs[0];
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  size_t count = clg_out_count(o);
  if (code != CLG_OK || count == 0)
    return code;
  size_t es = clg_dtype_size(o->dtype);
  char zero[8] = {0};
  const char *v = n->num_inputs > 2 ? c->in[2].host : zero, *in = c->in[0].host;
  char *out = c->out[0].host;
  if (x->rank == 0) {
    memcpy(out, in, es);
    return CLG_OK;
  }
  int r = x->rank, s = r - 1;
  while (s > 0 && before[s] == 0 && after[s] == 0)
    s--;
  pad_job j = {x, o, before, after, s, es, 1, 0, v, in, out};
  for (int k = s + 1; k < r; k++)
    j.inner *= (size_t)x->dims[k];
  j.row = (size_t)o->dims[s] * j.inner;
  /* Rows of at least 64 KiB a thread. */
  size_t grain = ((size_t)1 << 16) / (j.row * es) + 1;
  clg_host_parallel_for(count / j.row, grain, pad_rows, &j);
  return CLG_OK;
}

/* ConcatV2's outer rows [q0, q1): each row of the output is the inputs' rows side by side
 * (squeezenet's fire modules join channels: rows of one pixel). */
typedef struct concat_job {
  const clg_kernel_ctx *c;
  int axis, values;
  size_t inner, out_row;
} concat_job;

static void concat_rows(void *ctx, size_t q0, size_t q1)
{
  const concat_job *j = ctx;
  const clg_node *n = j->c->node;
  size_t col = 0;
  for (int i = 0; i < j->values; i++) {
    size_t in_row = (size_t)clg_node_in(n, i)->dims[j->axis] * j->inner;
    const char *src = j->c->in[i].host;
    char *dst = (char *)j->c->out[0].host + col;
    for (size_t q = q0; in_row && q < q1; q++)
      memcpy(dst + q * j->out_row, src + q * in_row, in_row);
    col += in_row;
  }
}

static clg_code concat_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *o = &n->outs[0];
  concat_job j = {c, 0, n->num_inputs - 1, clg_dtype_size(o->dtype), 0};
  clg_code code = clg_concat_axis(n, &j.axis);
  if (code != CLG_OK || clg_out_count(o) == 0)
    return code;
  size_t outer = 1;
  for (int k = 0; k < j.axis; k++)
    outer *= (size_t)o->dims[k];
  for (int k = j.axis + 1; k < o->rank; k++)
    j.inner *= (size_t)o->dims[k]; /* in bytes */
  j.out_row = (size_t)o->dims[j.axis] * j.inner;
  /* Rows of at least 64 KiB of output a range. */
  clg_host_parallel_for(outer, ((size_t)1 << 16) / j.out_row + 1, concat_rows, &j);
  return CLG_OK;
}

/* MirrorPad: output element (o_k) reads input (i_k), i = o - before mirrored into [0, d) (REFLECT:
 * -i, 2d - 2 - i; SYMMETRIC: -i - 1, 2d - 1 - i). */
static int64_t mirror_src(int64_t o, int64_t before, int64_t d, bool sym)
{
  int64_t i = o - before;
  if (i < 0)
    return sym ? -i - 1 : -i;
  if (i >= d)
    return sym ? 2 * d - 1 - i : 2 * d - 2 - i;
  return i;
}

/* MirrorPadGrad: the up to 3 padded positions per dim that read unpadded index i. */
static int mirror_sources(int64_t i, int64_t before, int64_t after, int64_t d, bool sym, int64_t *o)
{
  int k = 0;
  o[k++] = i + before;
  int64_t l = sym ? before - i - 1 : before - i; /* left mirror */
  if (l >= 0 && l < before && (sym || i >= 1))
    o[k++] = l;
  int64_t r = sym ? 2 * d - 1 - i : 2 * d - 2 - i; /* right mirror, unpadded coordinate */
  if (r >= d && r < d + after)
    o[k++] = r + before;
  return k;
}

#define MIRROR(T)                                                                                  \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    for (size_t q = 0; q < count; q++) {                                                           \
      size_t rem = q, src = 0, stride = 1;                                                         \
      if (!grad) {                                                                                 \
        for (int k = r - 1; k >= 0; k--) {                                                         \
          int64_t ok = (int64_t)(rem % (size_t)o->dims[k]);                                        \
          rem /= (size_t)o->dims[k];                                                               \
          src += (size_t)mirror_src(ok, before[k], x_->dims[k], sym) * stride;                     \
          stride *= (size_t)x_->dims[k];                                                           \
        }                                                                                          \
        y[q] = x[src];                                                                             \
        continue;                                                                                  \
      }                                                                                            \
      int64_t cand[CLG_MAX_RANK][3], nc[CLG_MAX_RANK], pick[CLG_MAX_RANK] = {0};                   \
      for (int k = r - 1; k >= 0; k--) {                                                           \
        int64_t ik = (int64_t)(rem % (size_t)o->dims[k]);                                          \
        rem /= (size_t)o->dims[k];                                                                 \
        nc[k] = mirror_sources(ik, before[k], after[k], o->dims[k], sym, cand[k]);                 \
      }                                                                                            \
      T sum = 0;                                                                                   \
      for (;;) {                                                                                   \
        size_t off = 0;                                                                            \
        for (int k = 0; k < r; k++)                                                                \
          off = off * (size_t)x_->dims[k] + (size_t)cand[k][pick[k]];                              \
        sum += x[off];                                                                             \
        int k = r - 1;                                                                             \
        for (; k >= 0; k--) {                                                                      \
          if (++pick[k] < nc[k])                                                                   \
            break;                                                                                 \
          pick[k] = 0;                                                                             \
        }                                                                                          \
        if (k < 0)                                                                                 \
          break;                                                                                   \
      }                                                                                            \
      y[q] = sum;                                                                                  \
    }                                                                                              \
  } while (0)

static clg_code mirror_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x_ = clg_node_in(n, 0), *o = &n->outs[0];
  int64_t before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  clg_code code = clg_pad_paddings(n, before, after);
  size_t count = clg_out_count(o);
  if (code != CLG_OK || count == 0)
    return code;
  bool sym = clg_mirror_symmetric(n), grad = n->def == &clg_op_MirrorPadGrad;
  int r = x_->rank;
  if (o->dtype == CLG_FLOAT64)
    MIRROR(double);
  else if (o->dtype == CLG_INT32)
    MIRROR(int32_t);
  else if (o->dtype == CLG_INT64)
    MIRROR(int64_t);
  else
    MIRROR(float);
  return CLG_OK;
}

/* Float or double; MirrorPad's copies int32 and int64 too (MirrorPadGrad, a sum, floats only). */
static bool mirror_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  clg_dtype t = n->outs[0].dtype;
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 ||
         (n->def == &clg_op_MirrorPad && (t == CLG_INT32 || t == CLG_INT64));
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Squeeze, {CLG_KIND_HOST, NULL, copy_run, NULL, NULL}},
    {&clg_op_ExpandDims, {CLG_KIND_HOST, NULL, copy_run, NULL, NULL}},
    {&clg_op_Slice, {CLG_KIND_HOST, NULL, slice_run, NULL, NULL}},
    {&clg_op_Pad, {CLG_KIND_HOST, NULL, pad_run, NULL, NULL}},
    {&clg_op_PadV2, {CLG_KIND_HOST, NULL, pad_run, NULL, NULL}},
    {&clg_op_ConcatV2, {CLG_KIND_HOST, NULL, concat_run, NULL, NULL}},
    {&clg_op_MirrorPad, {CLG_KIND_HOST, mirror_supports, mirror_run, NULL, NULL}},
    {&clg_op_MirrorPadGrad, {CLG_KIND_HOST, mirror_supports, mirror_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_array_tf, entries);
