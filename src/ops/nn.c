/* BiasAdd (a [C] bias along the last axis), MaxPool and AvgPool (NHWC windows, SAME padding
 * never wins a max and is not counted in an average) and LRN (over the channel axis).
 * Float, and double where the device has it. Kernels: backends/host/nn_kernels.c,
 * backends/opencl/nn_kernels.c. */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* --- BiasAdd ------------------------------------------------------------------------------ */

enum { B_T, B_DATA_FORMAT };

static const clg_attr_def bias_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
};

static clg_code bias_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  char sx[192], sb[192];
  clg_out_shape_string(x, sx, sizeof sx);
  clg_out_shape_string(b, sb, sizeof sb);
  if (x->rank < 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s", sx);
  if (b->rank != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Biases must be 1D: %s", sb);
  if (b->dims[0] != x->dims[x->rank - 1])
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Must provide as many biases as the last dimension of the input tensor: "
                          "%s vs. %s",
                          sb, sx);
  if (x->dtype != b->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(x->dtype), clg_dtype_name(b->dtype));
  clg_code code = clg_nhwc_attr(n, &n->attrs[B_DATA_FORMAT]);
  if (code != CLG_OK)
    return code;
  n->attrs[B_T].set = true;
  n->attrs[B_T].dtype = x->dtype;
  return clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
}

const clg_op_def clg_op_BiasAdd = {
    .name = "BiasAdd",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = bias_attrs,
    .infer = bias_infer,
    .inplace = 0,
    .grad = clg_grad_bias_add,
};

/* --- MaxPool, AvgPool ------------------------------------------------------------------------ */

enum { P_T, P_DATA_FORMAT, P_KSIZE, P_PADDING, P_STRIDES, P_EXPLICIT };

/* MaxPool's list has AvgPool's five first (the gradients read them by index), then TF 2's
 * explicit_paddings: padding EXPLICIT pads with values that never win a max, so that an
 * importer's pads (ONNX's, ceil_mode's) need no PadV2 pass over the input. */
static const clg_attr_def pool_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "ksize", .type = CLG_ATTR_INT_LIST},
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
    {.name = "explicit_paddings", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* unset: [] */
};

clg_code clg_pool_geometry(const clg_node *n, clg_window *g)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  bool same = false, explicit = false;
  int64_t p[4] = {0, 0, 0, 0};
  clg_code code;
  memset(g, 0, sizeof *g);
  if (n->def == &clg_op_MaxPool)
    code = clg_explicit_pads(n, &n->attrs[P_PADDING], &n->attrs[P_EXPLICIT], &explicit, p);
  else
    code = CLG_OK;
  if (code != CLG_OK || (code = clg_nhwc_attr(n, &n->attrs[P_DATA_FORMAT])) != CLG_OK ||
      (!explicit && (code = clg_padding_attr(n, &n->attrs[P_PADDING], &same)) != CLG_OK) ||
      (code = clg_window_attrs(n, &n->attrs[P_KSIZE], "ksize", &g->kh, &g->kw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[P_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK)
    return code;
  /* EXPLICIT: VALID over the padded input (as Conv2D), then windows clipped to the input */
  g->n = x->dims[0], g->h = x->dims[1] + p[0] + p[1], g->w = x->dims[2] + p[2] + p[3];
  g->c = x->dims[3];
  g->dh = g->dw = 1;
  if ((code = clg_window_geometry(n, same, g)) != CLG_OK)
    return code;
  g->h = x->dims[1], g->w = x->dims[2];
  if (explicit)
    g->pt = p[0], g->pl = p[2];
  return CLG_OK;
}

static clg_code pool_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  char sx[192];
  if (x->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input must be 4-dimensional, not %s",
                          clg_out_shape_string(x, sx, sizeof sx));
  clg_window g;
  clg_code code = clg_pool_geometry(n, &g);
  if (code != CLG_OK)
    return code;
  n->attrs[P_T].set = true;
  n->attrs[P_T].dtype = x->dtype;
  int64_t dims[4] = {g.n, g.oh, g.ow, g.c};
  return clg_node_set_output(n, 0, x->dtype, 4, dims);
}

#define POOL_DEF(OP, NA)                                                                           \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 1,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = NA,                                                                             \
      .attrs = pool_attrs,                                                                         \
      .infer = pool_infer,                                                                         \
      .inplace = -1,                                                                               \
      .grad = clg_grad_pool,                                                                       \
  };
POOL_DEF(MaxPool, 6)
POOL_DEF(AvgPool, 5)

/* --- LRN ------------------------------------------------------------------------------------ */

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
  const clg_out_desc *x = clg_node_in(n, 0);
  char sx[192];
  if (x->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input must be 4-dimensional, not %s",
                          clg_out_shape_string(x, sx, sizeof sx));
  if (n->attrs[L_DEPTH_RADIUS].i < 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "depth_radius must be >= 0, not %lld",
                          (long long)n->attrs[L_DEPTH_RADIUS].i);
  return clg_infer_elementwise_unary(n);
}

/* LRNGrad's attributes are LRN's (nn_grad.c), in the same order. */
clg_lrn_params clg_lrn_params_of(const clg_node *n)
{
  return (clg_lrn_params){n->attrs[L_DEPTH_RADIUS].i, n->attrs[L_BIAS].f, n->attrs[L_ALPHA].f,
                          n->attrs[L_BETA].f};
}

const clg_op_def clg_op_LRN = {
    .name = "LRN",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = lrn_attrs,
    .infer = lrn_infer,
    .inplace = -1,
    .grad = clg_grad_lrn,
};

/* --- builders ------------------------------------------------------------------------------ */

clg_node *clg_bias_add(clg_graph *g, const char *name, clg_node *value, clg_node *bias)
{
  clg_output in[2] = {{value, 0}, {bias, 0}};
  return clg_graph_build(g, &clg_op_BiasAdd, name, 2, in, 0, NULL);
}

static clg_node *pool(clg_graph *g, const clg_op_def *def, const char *name, clg_node *x,
                      const int64_t ksize[4], const int64_t strides[4], const char *padding)
{
  clg_output in = {x, 0};
  clg_attr at[3] = {clg_attr_int_list("ksize", 4, ksize), clg_attr_int_list("strides", 4, strides),
                    clg_attr_string("padding", padding)};
  return clg_graph_build(g, def, name, 1, &in, 3, at);
}

clg_node *clg_max_pool(clg_graph *g, const char *name, clg_node *x, const int64_t ksize[4],
                       const int64_t strides[4], const char *padding)
{
  return pool(g, &clg_op_MaxPool, name, x, ksize, strides, padding);
}

clg_node *clg_avg_pool(clg_graph *g, const char *name, clg_node *x, const int64_t ksize[4],
                       const int64_t strides[4], const char *padding)
{
  return pool(g, &clg_op_AvgPool, name, x, ksize, strides, padding);
}

clg_node *clg_lrn(clg_graph *g, const char *name, clg_node *x, int64_t depth_radius, double bias,
                  double alpha, double beta)
{
  clg_output in = {x, 0};
  clg_attr at[4] = {clg_attr_int("depth_radius", depth_radius), clg_attr_float("bias", bias),
                    clg_attr_float("alpha", alpha), clg_attr_float("beta", beta)};
  return clg_graph_build(g, &clg_op_LRN, name, 1, &in, 4, at);
}
