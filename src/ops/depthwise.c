/* DepthwiseConv2dNative (tf.nn.depthwise_conv2d_native, NHWC): input [N,H,W,C], filter
 * [KH,KW,C,M], output [N,OH,OW,C*M] where output channel c*M + m is input channel c
 * cross-correlated with filter[:,:,c,m]; strides and dilations [1,s,s,1], padding SAME or
 * VALID with TensorFlow's arithmetic (clg_window_geometry), or (the forward op only) EXPLICIT
 * with explicit_paddings [0,0,t,b,l,r,0,0], zeros around the input as Conv2D's. Its gradients
 * DepthwiseConv2dNativeBackpropInput(input_sizes, filter, out_backprop) and
 * DepthwiseConv2dNativeBackpropFilter(input, filter_sizes, out_backprop) take the sizes as
 * Const int32/int64 [4] vectors. Float, and double on the host and on devices with fp64.
 * Kernels (direct loops, not im2col): backends/host/depthwise.c, backends/opencl/depthwise.c. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_DATA_FORMAT, A_DILATIONS, A_EXPLICIT, A_PADDING, A_STRIDES };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "dilations", .type = CLG_ATTR_INT_LIST, .inferred = true},         /* [1,1,1,1] */
    {.name = "explicit_paddings", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* [] */
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
};

enum { FORWARD, BACKPROP_INPUT, BACKPROP_FILTER };

static int kind_of(const clg_node *n)
{
  return n->def == &clg_op_DepthwiseConv2dNative                ? FORWARD
         : n->def == &clg_op_DepthwiseConv2dNativeBackpropInput ? BACKPROP_INPUT
                                                                : BACKPROP_FILTER;
}

/* A [4] Const of sizes (input_sizes, filter_sizes), each >= 0. */
static clg_code sizes_input(const clg_node *n, int i, const char *what, int64_t *dims)
{
  int count = 0;
  clg_code code = clg_node_const_ints(n, i, what, 4, dims, &count);
  if (code != CLG_OK)
    return code;
  if (count != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must have 4 values, not %d", what, count);
  for (int k = 0; k < 4; k++)
    if (dims[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s[%d] is %lld; sizes must be >= 0", what, k,
                            (long long)dims[k]);
  return CLG_OK;
}

clg_code clg_depthwise_geometry(const clg_node *n, clg_window *g, int64_t *mult)
{
  int64_t x[4], f[4];
  const clg_out_desc *xd = NULL, *fd = NULL;
  clg_code code = CLG_OK;
  int kind = kind_of(n);
  if (kind == BACKPROP_INPUT)
    code = sizes_input(n, 0, "input_sizes", x);
  else
    xd = clg_node_in(n, 0);
  if (code == CLG_OK && kind == BACKPROP_FILTER)
    code = sizes_input(n, 1, "filter_sizes", f);
  else
    fd = clg_node_in(n, 1);
  if (code != CLG_OK)
    return code;
  char s[192];
  if (xd && xd->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input must be 4-dimensional, not %s",
                          clg_out_shape_string(xd, s, sizeof s));
  if (fd && fd->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "filter must be 4-dimensional, not %s",
                          clg_out_shape_string(fd, s, sizeof s));
  if (xd)
    memcpy(x, xd->dims, sizeof x);
  if (fd)
    memcpy(f, fd->dims, sizeof f);
  if (x[3] != f[2])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "input and filter must have the same depth: %lld vs %lld",
                          (long long)x[3], (long long)f[2]);
  bool same = false, explicit = false;
  int64_t p[4] = {0, 0, 0, 0};
  memset(g, 0, sizeof *g);
  if ((code = clg_explicit_pads(n, &n->attrs[A_PADDING], &n->attrs[A_EXPLICIT], &explicit, p)) !=
          CLG_OK ||
      (!explicit && (code = clg_padding_attr(n, &n->attrs[A_PADDING], &same)) != CLG_OK) ||
      (code = clg_window_attrs(n, &n->attrs[A_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_DILATIONS], "dilations", &g->dh, &g->dw)) != CLG_OK)
    return code;
  if (explicit && kind != FORWARD)
    return clg_node_error(n, CLG_UNIMPLEMENTED, "%s with padding EXPLICIT is not implemented",
                          n->op);
  /* EXPLICIT: VALID over the padded input (as Conv2D), whose first p[0] rows and p[2] columns
   * are zeros; the kernels skip taps outside the input */
  g->n = x[0], g->h = x[1] + p[0] + p[1], g->w = x[2] + p[2] + p[3], g->c = x[3];
  g->kh = f[0], g->kw = f[1];
  if (!clg_checked_mul(f[2], f[3], &g->cout))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "%lld channels times multiplier %lld passes %lld", (long long)f[2],
                          (long long)f[3], (long long)INT64_MAX);
  *mult = f[3];
  if ((code = clg_window_geometry(n, same, g)) != CLG_OK)
    return code;
  g->h = x[1], g->w = x[2];
  if (explicit)
    g->pt = p[0], g->pl = p[2];
  return CLG_OK;
}

/* Sets a list attribute that was not given to its default. */
static clg_code default_list(clg_node *n, int i, int count, int64_t value)
{
  clg_attr_value *a = &n->attrs[i];
  if (a->set)
    return CLG_OK;
  if (!(a->v = malloc(sizeof *a->v * (size_t)(count ? count : 1))))
    return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int k = 0; k < count; k++)
    a->v[k] = value;
  a->n = count;
  a->set = true;
  a->type = CLG_ATTR_INT_LIST;
  return CLG_OK;
}

static bool same_shape(const clg_out_desc *d, const int64_t *dims)
{
  return d->rank == 4 && d->dims[0] == dims[0] && d->dims[1] == dims[1] && d->dims[2] == dims[2] &&
         d->dims[3] == dims[3];
}

static clg_code infer(clg_node *n)
{
  clg_code code;
  if ((code = default_list(n, A_DILATIONS, 4, 1)) != CLG_OK ||
      (code = default_list(n, A_EXPLICIT, 0, 0)) != CLG_OK ||
      (code = clg_nhwc_attr(n, &n->attrs[A_DATA_FORMAT])) != CLG_OK)
    return code;
  int kind = kind_of(n);
  /* The float operands: input and filter, filter and out_backprop, or input and out_backprop. */
  int a = kind == BACKPROP_INPUT ? 1 : 0, b = kind == FORWARD ? 1 : 2;
  clg_dtype dt = clg_node_in(n, a)->dtype;
  if (clg_node_in(n, b)->dtype != dt)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s", clg_dtype_name(dt),
                          clg_dtype_name(clg_node_in(n, b)->dtype));
  if (dt != CLG_FLOAT32 && dt != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes float or double, not %s", n->op,
                          clg_dtype_name(dt));
  clg_window g;
  int64_t mult = 0;
  if ((code = clg_depthwise_geometry(n, &g, &mult)) != CLG_OK)
    return code;
  if ((code = clg_infer_dtype_attr(n, A_T, dt, true)) != CLG_OK)
    return code;
  int64_t out[4] = {g.n, g.oh, g.ow, g.cout};
  if (kind == FORWARD)
    return clg_node_set_output(n, 0, dt, 4, out);
  const clg_out_desc *dy = clg_node_in(n, 2);
  if (!same_shape(dy, out)) {
    char s[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "out_backprop has shape %s but the convolution's output is "
                          "[%lld,%lld,%lld,%lld]",
                          clg_out_shape_string(dy, s, sizeof s), (long long)out[0],
                          (long long)out[1], (long long)out[2], (long long)out[3]);
  }
  if (kind == BACKPROP_INPUT)
    return clg_node_set_output(n, 0, dt, 4, (int64_t[]){g.n, g.h, g.w, g.c});
  return clg_node_set_output(n, 0, dt, 4, (int64_t[]){g.kh, g.kw, g.c, mult});
}

/* The forward op's attributes, for its gradient ops. */
static int copy_attrs(const clg_node *n, clg_attr *at)
{
  const clg_attr_value *s = &n->attrs[A_STRIDES], *d = &n->attrs[A_DILATIONS];
  at[0] = clg_attr_int_list("strides", s->n, s->v);
  at[1] = clg_attr_string("padding", n->attrs[A_PADDING].s);
  at[2] = clg_attr_int_list("dilations", d->n, d->v);
  at[3] = clg_attr_string("data_format", n->attrs[A_DATA_FORMAT].s);
  return 4;
}

/* TensorFlow's _DepthwiseConv2dNativeGrad. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const char *pad = n->attrs[A_PADDING].s;
  if (pad && strcmp(pad, "EXPLICIT") == 0) /* the gradient ops take no explicit_paddings */
    return clg_node_error(n, CLG_UNIMPLEMENTED,
                          "the gradient of DepthwiseConv2dNative with padding EXPLICIT is not "
                          "implemented");
  clg_attr at[4];
  int na = copy_attrs(n, at);
  const clg_out_desc *x = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  clg_output xs = clg_out(clg_const_ints(g, 4, x->dims), 0);
  clg_output fs = clg_out(clg_const_ints(g, 4, f->dims), 0);
  dx[0] = clg_grad_build(g, &clg_op_DepthwiseConv2dNativeBackpropInput, 3,
                         (clg_output[]){xs, n->inputs[1], dy[0]}, na, at);
  dx[1] = clg_grad_build(g, &clg_op_DepthwiseConv2dNativeBackpropFilter, 3,
                         (clg_output[]){n->inputs[0], fs, dy[0]}, na, at);
  return clg_graph_status(g);
}

const clg_op_def clg_op_DepthwiseConv2dNative = {
    .name = "DepthwiseConv2dNative",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 6,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

const clg_op_def clg_op_DepthwiseConv2dNativeBackpropInput = {
    .name = "DepthwiseConv2dNativeBackpropInput",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 6,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
};

const clg_op_def clg_op_DepthwiseConv2dNativeBackpropFilter = {
    .name = "DepthwiseConv2dNativeBackpropFilter",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 6,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
};

clg_node *clg_depthwise_conv2d(clg_graph *g, const char *name, clg_node *input, clg_node *filter,
                               const int64_t strides[4], const char *padding,
                               const int64_t *dilations)
{
  clg_output in[2] = {{input, 0}, {filter, 0}};
  clg_attr at[3] = {clg_attr_int_list("strides", 4, strides), clg_attr_string("padding", padding),
                    clg_attr_int_list("dilations", 4, dilations)};
  return clg_graph_build(g, &clg_op_DepthwiseConv2dNative, name, 2, in, dilations ? 3 : 2, at);
}
