/* Conv2D (tf.nn.conv2d, NHWC): input [N,H,W,Cin], filter [KH,KW,Cin,Cout], strides and
 * dilations [1,s,s,1], padding SAME or VALID with TensorFlow's arithmetic (SAME: out =
 * ceil(in / s), the odd padding element at the bottom/right; VALID: a window larger than the
 * input is an error, as in TF 1.x). Cross-correlation. Kernels:
 * im2col + GEMM on both device kinds (kernels/host_nn.c, kernels/cl_nn.c); an OpenCL device
 * CLBlast cannot serve (no fp64, a compiler error) runs the host path on its data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "kernels/kernels.h"
#include "memory/memory.h"

enum { A_T, A_DATA_FORMAT, A_DILATIONS, A_PADDING, A_STRIDES, A_USE_CUDNN };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "dilations", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* [1,1,1,1] */
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
    {.name = "use_cudnn_on_gpu", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};

/* "Negative dimension size caused by subtracting 3 from 2 for 'conv' (op: 'Conv2D') with
 * input shapes: [1,2,5,3], [3,3,3,4]", TensorFlow 1.x's text from shape inference; the
 * subtrahend as written when it passes INT64_MAX. */
static clg_code negative_dim(const clg_node *n, int64_t in, int64_t k, int64_t d, bool fits,
                             int64_t eff)
{
  char shapes[512] = "", s[192], what[96];
  for (int i = 0; i < n->num_inputs; i++)
    snprintf(shapes + strlen(shapes), sizeof shapes - strlen(shapes), "%s%s", i ? ", " : "",
             clg_out_shape_string(clg_node_in(n, i), s, sizeof s));
  if (fits)
    snprintf(what, sizeof what, "%lld", (long long)eff);
  else
    snprintf(what, sizeof what, "(%lld - 1) * %lld + 1", (long long)k, (long long)d);
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "Negative dimension size caused by subtracting %s from %lld for '%s' (op: "
                        "'%s') with input shapes: %s",
                        what, (long long)in, n->name, n->op, shapes);
}

/* One spatial dim: in, window k with dilation *d and stride s (in, k >= 0; d, s >= 1) to the
 * output size and padding before; *d may become an equivalent smaller dilation (SAME). */
static clg_code window_dim(const clg_node *n, int64_t in, int64_t k, int64_t *d, int64_t s,
                           bool same, int64_t *out, int64_t *pad)
{
  /* TensorFlow's effective window (k - 1) * d + 1 (1 - d for a window of no taps). */
  int64_t eff = 1 - *d, span = 0;
  bool fits = k == 0 || (clg_checked_mul(k - 1, *d, &span) && span < INT64_MAX);
  if (k > 0)
    eff = fits ? span + 1 : INT64_MAX;
  *pad = 0;
  if (!same) {
    if (!fits || in < eff)
      return negative_dim(n, in, k, *d, fits, eff);
    /* TensorFlow's (in - eff + s) / s, as (in - eff) / s + 1 so that it cannot overflow;
     * below INT64_MAX (eff > 0, or no taps: in + d - 1 within range). */
    if (eff <= 0 && in > INT64_MAX - *d)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "a window of no taps with dilation %lld over %lld values has more "
                            "than %lld outputs",
                            (long long)*d, (long long)in, (long long)INT64_MAX);
    int64_t rest = eff > 0 ? in - eff : in + (*d - 1);
    *out = rest / s + 1;
    return CLG_OK;
  }
  *out = in / s + (in % s != 0); /* ceil(in / s), TensorFlow's (in + s - 1) / s */
  if (*out == 0 || k == 0)
    return CLG_OK;
  if (!fits) {
    /* Tap a sits at oy*s - pt + a*d: with d >= 3*in + 3, only an odd window's centre tap can
     * reach the input, at an offset that does not depend on d, and every other tap is out
     * by more than in. Any such d gives the same taps: take the smallest, 3*in + 3. */
    int64_t d2 = in <= (INT64_MAX - 3) / 3 ? 3 * in + 3 : INT64_MAX;
    if (*d < d2 || !clg_checked_mul(k - 1, d2, &span) || span == INT64_MAX)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "a window of %lld taps with dilation %lld spans more than %lld "
                            "values over an input of %lld",
                            (long long)k, (long long)*d, (long long)INT64_MAX, (long long)in);
    *d = d2;
    eff = span + 1;
  }
  /* (out - 1) * s <= in - 1, so the padding TensorFlow needs, (out - 1) * s + eff - in, fits. */
  int64_t total = ((*out - 1) * s - in) + eff;
  *pad = total > 0 ? total / 2 : 0;
  return CLG_OK;
}

clg_code clg_window_geometry(const clg_node *n, bool same, clg_window *g)
{
  clg_code code = window_dim(n, g->h, g->kh, &g->dh, g->sh, same, &g->oh, &g->pt);
  if (code == CLG_OK)
    code = window_dim(n, g->w, g->kw, &g->dw, g->sw, same, &g->ow, &g->pl);
  return code;
}

clg_code clg_window_taps(const clg_node *n, clg_window *g)
{
  if (clg_dims_product(3, (int64_t[]){g->kh, g->kw, g->c}, &g->kdim))
    return CLG_OK;
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "the filter [%lld,%lld,%lld,%lld] has more than %lld taps per output",
                        (long long)g->kh, (long long)g->kw, (long long)g->c, (long long)g->cout,
                        (long long)INT64_MAX);
}

clg_code clg_window_attrs(const clg_node *n, const clg_attr_value *list, const char *what,
                          int64_t *h, int64_t *w)
{
  char s[128] = "[";
  for (int i = 0; i < list->n && list->v && strlen(s) < 100; i++)
    snprintf(s + strlen(s), sizeof s - strlen(s), "%s%lld", i ? "," : "", (long long)list->v[i]);
  strcat(s, "]");
  if (list->n != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Sliding window %s field must specify 4 dimensions, not %s", what, s);
  for (int i = 0; i < 4; i++)
    if (list->v[i] <= 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be positive, not %s", what, s);
  if (list->v[0] != 1 || list->v[3] != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Current implementation does not yet support %s in the batch and depth "
                          "dimensions: %s",
                          what, s);
  *h = list->v[1];
  *w = list->v[2];
  return CLG_OK;
}

clg_code clg_padding_attr(const clg_node *n, const clg_attr_value *p, bool *same)
{
  const char *s = p->s ? p->s : "";
  if (strcmp(s, "SAME") != 0 && strcmp(s, "VALID") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "padding must be SAME or VALID, not '%s'", s);
  *same = s[0] == 'S';
  return CLG_OK;
}

clg_code clg_nhwc_attr(const clg_node *n, const clg_attr_value *f)
{
  if (f->s && strcmp(f->s, "NHWC") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "data_format '%s' is not supported: only NHWC",
                          f->s);
  return CLG_OK;
}

/* The geometry of n (its attributes checked at build). */
static clg_code geometry(const clg_node *n, clg_window *g)
{
  const clg_out_desc *x = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  bool same = false;
  clg_code code;
  memset(g, 0, sizeof *g);
  if ((code = clg_padding_attr(n, &n->attrs[A_PADDING], &same)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_DILATIONS], "dilations", &g->dh, &g->dw)) != CLG_OK)
    return code;
  g->n = x->dims[0], g->h = x->dims[1], g->w = x->dims[2], g->c = x->dims[3];
  g->kh = f->dims[0], g->kw = f->dims[1], g->cout = f->dims[3];
  if ((code = clg_window_taps(n, g)) != CLG_OK)
    return code;
  return clg_window_geometry(n, same, g);
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  char sx[192], sf[192];
  clg_out_shape_string(x, sx, sizeof sx);
  clg_out_shape_string(f, sf, sizeof sf);
  if (x->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input must be 4-dimensional, not %s", sx);
  if (f->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "filter must be 4-dimensional, not %s", sf);
  if (x->dtype != f->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(x->dtype), clg_dtype_name(f->dtype));
  if (x->dtype != CLG_FLOAT32 && x->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Conv2D takes float or double, not %s",
                          clg_dtype_name(x->dtype));
  if (x->dims[3] != f->dims[2])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "input and filter must have the same depth: %lld vs %lld (input %s, "
                          "filter %s)",
                          (long long)x->dims[3], (long long)f->dims[2], sx, sf);
  clg_attr_value *d = &n->attrs[A_DILATIONS];
  if (!d->set) { /* TensorFlow's default, [1,1,1,1] */
    if (!(d->v = malloc(4 * sizeof *d->v)))
      return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of host memory");
    d->v[0] = d->v[1] = d->v[2] = d->v[3] = 1;
    d->n = 4;
    d->set = true;
    d->type = CLG_ATTR_INT_LIST;
  }
  clg_code code = clg_nhwc_attr(n, &n->attrs[A_DATA_FORMAT]);
  clg_window g;
  if (code == CLG_OK)
    code = geometry(n, &g);
  if (code != CLG_OK)
    return code;
  n->attrs[A_T].set = true;
  n->attrs[A_T].dtype = x->dtype;
  int64_t dims[4] = {g.n, g.oh, g.ow, g.cout};
  return clg_node_set_output(n, 0, x->dtype, 4, dims);
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_window g;
  geometry(c->node, &g);
  return clg_host_conv2d(c->alloc, c->scratch, c->node->outs[0].dtype, c->in[0].host, c->in[1].host,
                         c->out[0].host, &g);
}

/* The host path on the device's data, for what CLBlast cannot run. */
static clg_code cl_on_host(const clg_kernel_ctx *c, const clg_window *g)
{
  const clg_node *n = c->node;
  size_t xb = clg_node_out_bytes(n->inputs[0].node, n->inputs[0].index);
  size_t fb = clg_node_out_bytes(n->inputs[1].node, n->inputs[1].index);
  size_t yb = clg_node_out_bytes(n, 0);
  void *x = malloc(xb ? xb : 1), *f = malloc(fb ? fb : 1), *y = malloc(yb ? yb : 1);
  clg_code code = CLG_OK;
  if (!x || !f || !y)
    code =
        clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host path of '%s'", n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[0].mem, c->in[0].offset, x, xb);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[1].mem, c->in[1].offset, f, fb);
  if (code == CLG_OK)
    code = clg_host_conv2d(NULL, NULL, n->outs[0].dtype, x, f, y, g);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, c->out[0].mem, c->out[0].offset, y, yb);
  free(x);
  free(f);
  free(y);
  return code;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  clg_window g;
  geometry(c->node, &g);
  const char *why = NULL;
  clg_code code = clg_cl_conv2d(c->dev, c->alloc, c->scratch, c->node->outs[0].dtype, &c->in[0],
                                &c->in[1], &c->out[0], &g, &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  char msg[1024];
  snprintf(msg, sizeof msg, "Conv2D on %s runs on the host instead: %s", c->dev->info.full_name,
           clg_last_error());
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c, &g);
}

static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_or_double(n, dev) && clg_kernels_have_clblast();
}

/* The plan holds the im2col chunk (and on OpenCL CLBlast's scratch) for the node's step, so a
 * steady-state run makes no allocator call for it. */
static clg_code host_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  (void)dev;
  clg_window g;
  clg_code code = geometry(n, &g);
  *bytes = code == CLG_OK ? clg_host_conv2d_scratch(n->outs[0].dtype, &g) : 0;
  return code;
}

static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  clg_window g;
  clg_code code = geometry(n, &g);
  *bytes = 0;
  return code == CLG_OK ? clg_cl_conv2d_scratch(dev, n->outs[0].dtype, &g, bytes) : code;
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, host_scratch, NULL},
    {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, NULL}};

const clg_op_def clg_op_Conv2D = {
    .name = "Conv2D",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 6,
    .attrs = attrs,
    .infer = infer,
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = -1,
    .grad = clg_grad_conv2d,
};

clg_node *clg_conv2d(clg_graph *g, const char *name, clg_node *input, clg_node *filter,
                     const int64_t strides[4], const char *padding, const int64_t *dilations)
{
  clg_output in[2] = {{input, 0}, {filter, 0}};
  clg_attr at[3] = {clg_attr_int_list("strides", 4, strides), clg_attr_string("padding", padding),
                    clg_attr_int_list("dilations", 4, dilations)};
  return clg_graph_build(g, &clg_op_Conv2D, name, 2, in, dilations ? 3 : 2, at);
}
