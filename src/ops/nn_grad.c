/* The gradient ops of the NHWC set, with TensorFlow's inputs: MaxPoolGrad(orig_input,
 * orig_output, grad) routes each window's gradient to its first maximum in scan order
 * (overlapping windows add); AvgPoolGrad(orig_input_shape, grad) spreads it over the window's
 * unpadded elements; LRNGrad(input_grads, input_image, output_image); BiasAddGrad(out_backprop)
 * sums over all axes but the last. On OpenCL one work-item per output element (pooling: a
 * gather over the windows holding it), so no atomics and no dependence on scheduling; the host
 * scatters each window once. Also the gradient functions of BiasAdd, MaxPool, AvgPool and
 * LRN. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

static bool float_kernel(const clg_node *n, const clg_device *dev, int first, int last)
{
  clg_dtype t = n->outs[0].dtype;
  for (int i = first; i <= last; i++)
    if (clg_node_in(n, i)->dtype != t)
      return false;
  if (t == CLG_FLOAT64)
    return clg_device_ops_of(dev)->kind == CLG_KIND_HOST || dev->info.has_fp64;
  return t == CLG_FLOAT32;
}

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

static clg_code pool_geometry(const clg_node *n, clg_window *g)
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
  clg_code code = pool_geometry(n, &g);
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

static clg_code pool_host(const clg_kernel_ctx *c)
{
  clg_window g;
  pool_geometry(c->node, &g);
  bool avg = is_avg(c->node);
  clg_host_pool_grad(c->node->outs[0].dtype, avg, avg ? NULL : c->in[0].host,
                     c->in[avg ? 1 : 2].host, c->out[0].host, &g);
  return CLG_OK;
}

static clg_code pool_cl(const clg_kernel_ctx *c)
{
  clg_window g;
  pool_geometry(c->node, &g);
  bool avg = is_avg(c->node);
  return clg_cl_pool_grad(c->dev, c->node->outs[0].dtype, avg, avg ? NULL : &c->in[0],
                          &c->in[avg ? 1 : 2], &c->out[0], &g);
}

static bool pool_supports(const clg_node *n, const clg_device *dev)
{
  return is_avg(n) ? float_kernel(n, dev, 1, 1) : float_kernel(n, dev, 0, 2);
}

static const clg_kernel_def pool_kernels[] = {
    {CLG_KIND_HOST, pool_supports, pool_host, NULL, NULL},
    {CLG_KIND_OPENCL, pool_supports, pool_cl, NULL, NULL}};

const clg_op_def clg_op_MaxPoolGrad = {
    .name = "MaxPoolGrad",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = pool_attrs,
    .infer = pool_infer,
    .kernels = pool_kernels,
    .num_kernels = 2,
    .inplace = -1,
};

const clg_op_def clg_op_AvgPoolGrad = {
    .name = "AvgPoolGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = pool_attrs,
    .infer = pool_infer,
    .kernels = pool_kernels,
    .num_kernels = 2,
    .inplace = -1,
};

/* MaxPool's and AvgPool's gradients: the forward node's ksize, strides and padding. */
clg_code clg_grad_pool(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_attr_value *k = clg_node_attr(n, P_KSIZE), *s = clg_node_attr(n, P_STRIDES),
                       *p = clg_node_attr(n, P_PADDING);
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

static clg_code lrn_host(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_host_lrn_grad(x->dtype, c->in[0].host, c->in[1].host, c->in[2].host, c->out[0].host,
                    clg_out_count(x), x->dims[3], n->attrs[L_DEPTH_RADIUS].i, n->attrs[L_BIAS].f,
                    n->attrs[L_ALPHA].f, n->attrs[L_BETA].f);
  return CLG_OK;
}

static clg_code lrn_cl(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *x = clg_node_in(n, 0);
  return clg_cl_lrn_grad(c->dev, x->dtype, &c->in[0], &c->in[1], &c->in[2], &c->out[0],
                         clg_out_count(x), x->dims[3], n->attrs[L_DEPTH_RADIUS].i,
                         n->attrs[L_BIAS].f, n->attrs[L_ALPHA].f, n->attrs[L_BETA].f);
}

static const clg_kernel_def lrn_kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, lrn_host, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, lrn_cl, NULL, NULL}};

const clg_op_def clg_op_LRNGrad = {
    .name = "LRNGrad",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 5,
    .attrs = lrn_attrs,
    .infer = lrn_infer,
    .kernels = lrn_kernels,
    .num_kernels = 2,
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

static void bias_dims(const clg_node *n, size_t *rows, size_t *c)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  *c = (size_t)x->dims[x->rank - 1];
  *rows = *c ? clg_out_count(x) / *c : 0;
}

/* The rows split into parts (as many as the cores: each reads its own contiguous rows), each
 * summing its rows per channel in double, in row order; then the parts' sums added in part
 * order. The part count depends only on the thread count and the shape: the same result in
 * every run. */
typedef struct bias_job {
  const clg_kernel_ctx *c;
  size_t rows, k;
  int parts;
  double *part; /* [parts][k] */
} bias_job;

#define BIAS_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *x = j->c->in[0].host;                                                                 \
    for (size_t r = r0; r < r1; r++) {                                                             \
      const T *row = x + r * j->k;                                                                 \
      for (size_t i = 0; i < j->k; i++)                                                            \
        acc[i] += row[i];                                                                          \
    }                                                                                              \
  } while (0)

static void bias_part(void *ctx, int t)
{
  const bias_job *j = ctx;
  size_t r0 = j->rows * (size_t)t / (size_t)j->parts;
  size_t r1 = j->rows * (size_t)(t + 1) / (size_t)j->parts;
  double *acc = j->part + (size_t)t * j->k;
  for (size_t i = 0; i < j->k; i++)
    acc[i] = 0;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BIAS_LOOP(double);
  else
    BIAS_LOOP(float);
}

static clg_code bias_host(const clg_kernel_ctx *c)
{
  bias_job j = {c, 0, 0, 1, NULL};
  bias_dims(c->node, &j.rows, &j.k);
  if (j.k == 0)
    return CLG_OK;
  /* Split the rows only when they are many. */
  if (j.rows * j.k >= ((size_t)1 << 16))
    j.parts = clg_host_threads();
  if ((size_t)j.parts > j.rows)
    j.parts = j.rows > 0 ? (int)j.rows : 1;
  if (!(j.part = malloc(sizeof(double) * (size_t)j.parts * j.k)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for BiasAddGrad's %d x %zu sums",
                     j.parts, j.k);
  clg_host_parallel(j.parts, bias_part, &j);
  bool f64 = c->node->outs[0].dtype == CLG_FLOAT64;
  for (size_t i = 0; i < j.k; i++) {
    double s = j.part[i];
    for (int t = 1; t < j.parts; t++)
      s += j.part[(size_t)t * j.k + i];
    if (f64)
      ((double *)c->out[0].host)[i] = s;
    else
      ((float *)c->out[0].host)[i] = (float)s;
  }
  free(j.part);
  return CLG_OK;
}

static const clg_cl_text reduce_source = {"reduce", NULL};

/* Sum's kernel of cl/reduce.cl: one work-group per channel over the rows. */
static clg_code bias_cl(const clg_kernel_ctx *c)
{
  size_t rows, k;
  bias_dims(c->node, &rows, &k);
  if (k == 0)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  clg_strided keep, red;
  memset(&keep, 0, sizeof keep);
  memset(&red, 0, sizeof red);
  keep.rank = red.rank = 1;
  keep.dims[0] = k;
  keep.sa[0] = 1;
  red.dims[0] = rows ? rows : 1;
  red.sa[0] = k;
  clg_cl_map km, rm;
  clg_strided_to_cl(&keep, &km);
  clg_strided_to_cl(&red, &rm);
  cl_ulong xo = c->in[0].offset / es, yo = c->out[0].offset / es, nr = rows;
  cl_uint op = 0; /* sum */
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof nr, &nr},
                       {sizeof km, &km},
                       {sizeof rm, &rm},
                       {sizeof op, &op}};
  return clg_cl_launch_groups(c->dev, dt, &reduce_source, "clg_reduce", args, 8, k, rows);
}

static const clg_kernel_def bias_kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, bias_host, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, bias_cl, NULL, NULL}};

const clg_op_def clg_op_BiasAddGrad = {
    .name = "BiasAddGrad",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = bias_attrs,
    .infer = bias_infer,
    .kernels = bias_kernels,
    .num_kernels = 2,
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
