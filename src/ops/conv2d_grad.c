/* Conv2DBackpropInput(input_sizes, filter, out_backprop) and Conv2DBackpropFilter(input,
 * filter_sizes, out_backprop): Conv2D's gradients with TensorFlow's inputs and attributes
 * (strides, padding, dilations, NHWC). The sizes are int32/int64 Const inputs, as TensorFlow
 * passes them (shapes are static here). Both run through GEMM: OpenBLAS or the portable GEMM
 * on the host, CLBlast on OpenCL devices, with the patches in the plan's scratch; an OpenCL
 * device CLBlast cannot serve runs the host path on its data (kernels:
 * backends/host/conv2d_grad.c, backends/opencl/conv2d_grad.c). Also Conv2D's gradient. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_DATA_FORMAT, A_DILATIONS, A_PADDING, A_STRIDES, A_USE_CUDNN };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "dilations", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* [1,1,1,1] */
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
    {.name = "use_cudnn_on_gpu", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};

static bool is_filter(const clg_node *n) { return n->def == &clg_op_Conv2DBackpropFilter; }

/* The forward convolution's input and filter shapes: one is a tensor input, the other the
 * sizes Const. */
static clg_code shapes(const clg_node *n, int64_t *x, int64_t *f)
{
  int64_t sizes[CLG_MAX_RANK];
  int count = 0;
  bool filter = is_filter(n);
  clg_code code = clg_node_const_ints(n, filter ? 1 : 0, filter ? "filter_sizes" : "input_sizes",
                                      CLG_MAX_RANK, sizes, &count);
  if (code != CLG_OK)
    return code;
  if (count != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must have 4 values, not %d",
                          filter ? "filter_sizes" : "input_sizes", count);
  const clg_out_desc *t = clg_node_in(n, filter ? 0 : 1);
  char st[192];
  if (t->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be 4-dimensional, not %s",
                          filter ? "input" : "filter", clg_out_shape_string(t, st, sizeof st));
  for (int k = 0; k < 4; k++) {
    if (sizes[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s[%d] is %lld; sizes must be >= 0",
                            filter ? "filter_sizes" : "input_sizes", k, (long long)sizes[k]);
    (filter ? f : x)[k] = sizes[k];
    (filter ? x : f)[k] = t->dims[k];
  }
  return CLG_OK;
}

clg_code clg_conv2d_grad_geometry(const clg_node *n, clg_window *g)
{
  int64_t x[4], f[4];
  bool same;
  clg_code code;
  memset(g, 0, sizeof *g);
  if ((code = shapes(n, x, f)) != CLG_OK ||
      (code = clg_padding_attr(n, &n->attrs[A_PADDING], &same)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_DILATIONS], "dilations", &g->dh, &g->dw)) != CLG_OK)
    return code;
  if (x[3] != f[2])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "input and filter must have the same depth: %lld vs %lld",
                          (long long)x[3], (long long)f[2]);
  g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
  g->kh = f[0], g->kw = f[1], g->cout = f[3];
  if ((code = clg_window_taps(n, g)) != CLG_OK)
    return code;
  return clg_window_geometry(n, same, g);
}

static clg_code infer(clg_node *n)
{
  bool filter = is_filter(n);
  const clg_out_desc *t = clg_node_in(n, filter ? 0 : 1), *dy = clg_node_in(n, 2);
  if (t->dtype != CLG_FLOAT32 && t->dtype != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes float or double, not %s", n->op,
                          clg_dtype_name(t->dtype));
  if (dy->dtype != t->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(dy->dtype));
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
    code = clg_conv2d_grad_geometry(n, &g);
  if (code != CLG_OK)
    return code;
  int64_t want[4] = {g.n, g.oh, g.ow, g.cout};
  bool ok = dy->rank == 4;
  for (int k = 0; ok && k < 4; k++)
    ok = dy->dims[k] == want[k];
  if (!ok) {
    char s[192];
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT,
        "out_backprop is %s but the convolution's output is [%lld,%lld,%lld,%lld]",
        clg_out_shape_string(dy, s, sizeof s), (long long)g.n, (long long)g.oh, (long long)g.ow,
        (long long)g.cout);
  }
  n->attrs[A_T].set = true;
  n->attrs[A_T].dtype = t->dtype;
  int64_t xd[4] = {g.n, g.h, g.w, g.c}, fd[4] = {g.kh, g.kw, g.c, g.cout};
  return clg_node_set_output(n, 0, t->dtype, 4, filter ? fd : xd);
}

#define GRAD_DEF(OP)                                                                               \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 3,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 6,                                                                              \
      .attrs = attrs,                                                                              \
      .infer = infer,                                                                              \
      .inplace = -1,                                                                               \
  };
GRAD_DEF(Conv2DBackpropInput)
GRAD_DEF(Conv2DBackpropFilter)

/* Conv2D's attributes dilations, padding and strides (ops/conv2d.c's order) */
enum { F_DILATIONS = 2, F_PADDING = 4, F_STRIDES = 5 };

/* TensorFlow's _Conv2DGrad: both gradients with the forward node's strides, padding and
 * dilations; not under padding EXPLICIT, which the gradient ops do not take. */
clg_code clg_grad_conv2d(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_attr_value *dil = clg_node_attr(n, F_DILATIONS), *pad = clg_node_attr(n, F_PADDING),
                       *str = clg_node_attr(n, F_STRIDES);
  if (pad->s && strcmp(pad->s, "EXPLICIT") == 0)
    return clg_node_error(n, CLG_UNIMPLEMENTED,
                          "the gradient of Conv2D with padding EXPLICIT is not implemented");
  clg_attr at[3] = {clg_attr_int_list("strides", str->n, str->v),
                    clg_attr_string("padding", pad->s),
                    clg_attr_int_list("dilations", dil->n, dil->v)};
  const clg_out_desc *x = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  clg_output xs = clg_out(clg_const_ints(g, 4, x->dims), 0);
  dx[0] = clg_grad_build(g, &clg_op_Conv2DBackpropInput, 3, (clg_output[]){xs, n->inputs[1], dy[0]},
                         3, at);
  clg_output fs = clg_out(clg_const_ints(g, 4, f->dims), 0);
  dx[1] = clg_grad_build(g, &clg_op_Conv2DBackpropFilter, 3,
                         (clg_output[]){n->inputs[0], fs, dy[0]}, 3, at);
  return clg_graph_status(g);
}
