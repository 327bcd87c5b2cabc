/* The gradient ops of the NHWC set, with TensorFlow's inputs: MaxPoolGrad(orig_input,
 * orig_output, grad) routes each window's gradient to its first maximum in scan order
 * (overlapping windows add); AvgPoolGrad(orig_input_shape, grad) spreads it over the window's
 * unpadded elements; LRNGrad(input_grads, input_image, output_image); BiasAddGrad(out_backprop)
 * sums over all axes but the last. On OpenCL one work-item per output element (pooling: a
 * gather over the windows holding it), so no atomics and no dependence on scheduling; the host
 * scatters each window once (kernels: backends/host/nn_grad.c, backends/opencl/nn_grad.c).
 * Also the gradient functions of BiasAdd, MaxPool, AvgPool and LRN. */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

static char *shape_of(const clg_out_desc *d, char *buf, size_t size)
{
  return clg_out_shape_string(d, buf, size);
}

static bool same_shape(const clg_out_desc *a, int rank, const int64_t *dims)
{
  if (a->rank != rank)
    return false;
  for (int k = 0; k < rank; k++)
    if (a->dims[k] != dims[k])
      return false;
  return true;
}

/* --- MaxPoolGrad, AvgPoolGrad ------------------------------------------------------------- */

enum { P_T, P_DATA_FORMAT, P_KSIZE, P_PADDING, P_STRIDES };

static const clg_attr_def pool_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "ksize", .type = CLG_ATTR_INT_LIST},
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
};

static bool is_avg(const clg_node *n) { return n->def == &clg_op_AvgPoolGrad; }

/* The forward input's shape: MaxPoolGrad's input 0, AvgPoolGrad's orig_input_shape Const. */
static clg_code pool_input_dims(const clg_node *n, int64_t *x)
{
  if (!is_avg(n)) {
    const clg_out_desc *d = clg_node_in(n, 0);
    char s[192];
    if (d->rank != 4)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "orig_input must be 4-dimensional, not %s",
                            shape_of(d, s, sizeof s));
    memcpy(x, d->dims, 4 * sizeof *x);
    return CLG_OK;
  }
  int count = 0;
  clg_code code = clg_node_const_ints(n, 0, "orig_input_shape", CLG_MAX_RANK, x, &count);
  if (code == CLG_OK && count != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "orig_input_shape must have 4 values, not %d",
                          count);
  for (int k = 0; code == CLG_OK && k < 4; k++)
    if (x[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "orig_input_shape[%d] is %lld", k,
                            (long long)x[k]);
  return code;
}

clg_code clg_pool_grad_geometry(const clg_node *n, clg_window *g)
{
  int64_t x[4];
  bool same;
  clg_code code;
  memset(g, 0, sizeof *g);
  if ((code = pool_input_dims(n, x)) != CLG_OK ||
      (code = clg_nhwc_attr(n, &n->attrs[P_DATA_FORMAT])) != CLG_OK ||
      (code = clg_padding_attr(n, &n->attrs[P_PADDING], &same)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[P_KSIZE], "ksize", &g->kh, &g->kw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[P_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK)
    return code;
  g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
  g->dh = g->dw = 1;
  return clg_window_geometry(n, same, g);
}

static clg_code pool_infer(clg_node *n)
{
  int gi = is_avg(n) ? 1 : 2;
  const clg_out_desc *dy = clg_node_in(n, gi);
  clg_dtype t = dy->dtype;
  if (t != CLG_FLOAT32 && t != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes float or double, not %s", n->op,
                          clg_dtype_name(t));
  for (int i = 0; i < gi && !is_avg(n); i++)
    if (clg_node_in(n, i)->dtype != t)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                            clg_dtype_name(clg_node_in(n, i)->dtype), clg_dtype_name(t));
  clg_window g;
  clg_code code = clg_pool_grad_geometry(n, &g);
  if (code != CLG_OK)
    return code;
  int64_t out[4] = {g.n, g.oh, g.ow, g.c};
  char s[192];
  for (int i = 1; i <= gi; i++)
    if (!same_shape(clg_node_in(n, i), 4, out))
      return clg_node_error(
          n, CLG_INVALID_ARGUMENT, "%s is %s but the pooling's output is [%lld,%lld,%lld,%lld]",
          i == gi ? "grad" : "orig_output", shape_of(clg_node_in(n, i), s, sizeof s),
          (long long)g.n, (long long)g.oh, (long long)g.ow, (long long)g.c);
  n->attrs[P_T].set = true;
  n->attrs[P_T].dtype = t;
  int64_t xd[4] = {g.n, g.h, g.w, g.c};
  return clg_node_set_output(n, 0, t, 4, xd);
}

const clg_op_def clg_op_MaxPoolGrad = {
    .name = "MaxPoolGrad",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = pool_attrs,
    .infer = pool_infer,
    .inplace = -1,
};

const clg_op_def clg_op_AvgPoolGrad = {
    .name = "AvgPoolGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = pool_attrs,
    .infer = pool_infer,
    .inplace = -1,
};

/* MaxPool's and AvgPool's gradients: the forward node's ksize, strides and padding. */
clg_code clg_grad_pool(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_attr_value *k = clg_node_attr(n, P_KSIZE), *s = clg_node_attr(n, P_STRIDES),
                       *p = clg_node_attr(n, P_PADDING);
  if (p->s && strcmp(p->s, "EXPLICIT") == 0) /* MaxPoolGrad takes no explicit_paddings here */
    return clg_node_error(n, CLG_UNIMPLEMENTED,
                          "the gradient of MaxPool with padding EXPLICIT is not implemented");
  clg_attr at[3] = {clg_attr_int_list("ksize", k->n, k->v),
                    clg_attr_int_list("strides", s->n, s->v), clg_attr_string("padding", p->s)};
  if (n->def == &clg_op_MaxPool) {
    clg_output in[3] = {n->inputs[0], clg_out(n, 0), dy[0]};
    dx[0] = clg_grad_build(g, &clg_op_MaxPoolGrad, 3, in, 3, at);
  } else {
    clg_output in[2] = {clg_out(clg_const_ints(g, 4, clg_node_in(n, 0)->dims), 0), dy[0]};
    dx[0] = clg_grad_build(g, &clg_op_AvgPoolGrad, 2, in, 3, at);
  }
  return clg_graph_status(g);
}

/* --- LRNGrad -------------------------------------------------------------------------------- */

enum { L_T, L_ALPHA, L_BETA, L_BIAS, L_DEPTH_RADIUS };

static const clg_attr_def lrn_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "alpha", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 1.0},
    {.name = "beta", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 0.5},
    {.name = "bias", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 1.0},
    {.name = "depth_radius", .type = CLG_ATTR_INT, .has_default = true, .def_i = 5},
};

static clg_code lrn_infer(clg_node *n)
{
  const clg_out_desc *g = clg_node_in(n, 0);
  char s0[192], si[192];
  if (g->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input_grads must be 4-dimensional, not %s",
                          shape_of(g, s0, sizeof s0));
  for (int i = 1; i < 3; i++) {
    const clg_out_desc *d = clg_node_in(n, i);
    if (d->dtype != g->dtype || !same_shape(d, g->rank, g->dims))
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "input_grads (%s %s) and %s (%s %s) must have one dtype and shape",
                            clg_dtype_name(g->dtype), shape_of(g, s0, sizeof s0),
                            i == 1 ? "input_image" : "output_image", clg_dtype_name(d->dtype),
                            shape_of(d, si, sizeof si));
  }
  if (n->attrs[L_DEPTH_RADIUS].i < 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "depth_radius must be >= 0, not %lld",
                          (long long)n->attrs[L_DEPTH_RADIUS].i);
  return clg_infer_elementwise_unary(n);
}

const clg_op_def clg_op_LRNGrad = {
    .name = "LRNGrad",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = lrn_attrs,
    .infer = lrn_infer,
    .inplace = -1,
};

/* LRN's gradient: LRNGrad(dy, x, y) with the forward node's parameters. */
clg_code clg_grad_lrn(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr at[4] = {clg_attr_int("depth_radius", clg_node_attr(n, L_DEPTH_RADIUS)->i),
                    clg_attr_float("bias", clg_node_attr(n, L_BIAS)->f),
                    clg_attr_float("alpha", clg_node_attr(n, L_ALPHA)->f),
                    clg_attr_float("beta", clg_node_attr(n, L_BETA)->f)};
  clg_output in[3] = {dy[0], n->inputs[0], clg_out(n, 0)};
  dx[0] = clg_grad_build(g, &clg_op_LRNGrad, 3, in, 4, at);
  return clg_graph_status(g);
}

/* --- BiasAddGrad ---------------------------------------------------------------------------- */

enum { B_T, B_DATA_FORMAT };

static const clg_attr_def bias_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
};

static clg_code bias_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  char s[192];
  if (x->rank < 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                          shape_of(x, s, sizeof s));
  clg_code code = clg_nhwc_attr(n, &n->attrs[B_DATA_FORMAT]);
  if (code != CLG_OK)
    return code;
  n->attrs[B_T].set = true;
  n->attrs[B_T].dtype = x->dtype;
  return clg_node_set_output(n, 0, x->dtype, 1, &x->dims[x->rank - 1]);
}

const clg_op_def clg_op_BiasAddGrad = {
    .name = "BiasAddGrad",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = bias_attrs,
    .infer = bias_infer,
    .inplace = -1,
};

/* BiasAdd's gradient: dy for the value, BiasAddGrad(dy) for the bias. */
clg_code clg_grad_bias_add(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)n;
  dx[0] = dy[0];
  dx[1] = clg_grad_build(g, &clg_op_BiasAddGrad, 1, dy, 0, NULL);
  return clg_graph_status(g);
}
