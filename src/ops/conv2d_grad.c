/* Conv2DBackpropInput(input_sizes, filter, out_backprop) and Conv2DBackpropFilter(input,
 * filter_sizes, out_backprop): Conv2D's gradients with TensorFlow's inputs and attributes
 * (strides, padding, dilations, NHWC). The sizes are int32/int64 Const inputs, as TensorFlow
 * passes them (shapes are static here). Both run through GEMM: OpenBLAS or the portable GEMM
 * on the host, CLBlast on OpenCL devices, with the patches in the plan's scratch; an OpenCL
 * device CLBlast cannot serve runs the host path on its data. Also Conv2D's gradient. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
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

static clg_code geometry(const clg_node *n, clg_window *g)
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
    code = geometry(n, &g);
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

static clg_code host_grad(const clg_node *n, clg_allocator *alloc, const clg_block *scratch,
                          const void *in, const void *dy, void *out, const clg_window *g)
{
  clg_dtype dt = n->outs[0].dtype;
  clg_code code = is_filter(n) ? clg_host_conv2d_backprop_filter(alloc, scratch, dt, in, dy, out, g)
                               : clg_host_conv2d_backprop_input(alloc, scratch, dt, in, dy, out, g);
  return code == CLG_OK ? code : clg_error_prefix("%s '%s': ", n->op, n->name);
}

/* The tensor input the kernel reads besides out_backprop: x for the filter's gradient, the
 * filter for the input's. */
static int tensor_input(const clg_node *n) { return is_filter(n) ? 0 : 1; }

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_window g;
  geometry(c->node, &g);
  int t = tensor_input(c->node);
  return host_grad(c->node, c->alloc, c->scratch, c->in[t].host, c->in[2].host, c->out[0].host, &g);
}

/* The host path on the device's data, for what CLBlast cannot run. */
static clg_code cl_on_host(const clg_kernel_ctx *c, const clg_window *g)
{
  const clg_node *n = c->node;
  int t = tensor_input(n);
  size_t ib = clg_node_out_bytes(n->inputs[t].node, n->inputs[t].index);
  size_t db = clg_node_out_bytes(n->inputs[2].node, n->inputs[2].index);
  size_t ob = clg_node_out_bytes(n, 0);
  void *in = malloc(ib ? ib : 1), *dy = malloc(db ? db : 1), *out = malloc(ob ? ob : 1);
  clg_code code = CLG_OK;
  if (!in || !dy || !out)
    code =
        clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host path of '%s'", n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[t].mem, c->in[t].offset, in, ib);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[2].mem, c->in[2].offset, dy, db);
  if (code == CLG_OK)
    code = host_grad(n, NULL, NULL, in, dy, out, g);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, c->out[0].mem, c->out[0].offset, out, ob);
  free(in);
  free(dy);
  free(out);
  return code;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  clg_window g;
  geometry(c->node, &g);
  const char *why = NULL;
  int t = tensor_input(c->node);
  clg_code code =
      clg_cl_conv2d_backprop(c->dev, c->alloc, c->scratch, c->node->outs[0].dtype,
                             is_filter(c->node), &c->in[t], &c->in[2], &c->out[0], &g, &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s on %s runs on the host instead: %s", c->node->op,
           c->dev->info.full_name, clg_last_error());
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c, &g);
}

/* Float or double (with fp64 on OpenCL) tensors; the sizes input is integer. */
static bool host_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype t = n->outs[0].dtype;
  if (clg_node_in(n, 2)->dtype != t || clg_node_in(n, tensor_input(n))->dtype != t)
    return false;
  if (t == CLG_FLOAT64)
    return clg_device_ops_of(dev)->kind == CLG_KIND_HOST || dev->info.has_fp64;
  return t == CLG_FLOAT32;
}

static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  return host_supports(n, dev) && clg_kernels_have_clblast();
}

static clg_code host_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  (void)dev;
  clg_window g;
  clg_code code = geometry(n, &g);
  *bytes = code == CLG_OK ? clg_host_conv2d_grad_scratch(n->outs[0].dtype, &g, is_filter(n)) : 0;
  return code;
}

static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  clg_window g;
  clg_code code = geometry(n, &g);
  *bytes = 0;
  return code == CLG_OK ? clg_cl_conv2d_grad_scratch(dev, n->outs[0].dtype, &g, is_filter(n), bytes)
                        : code;
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, host_supports, host_run, host_scratch, NULL},
    {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, NULL}};

#define GRAD_DEF(OP)                                                                               \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 3,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 6,                                                                              \
      .attrs = attrs,                                                                              \
      .infer = infer,                                                                              \
      .kernels = kernels,                                                                          \
      .num_kernels = 2,                                                                            \
      .inplace = -1,                                                                               \
  };
GRAD_DEF(Conv2DBackpropInput)
GRAD_DEF(Conv2DBackpropFilter)

/* TensorFlow's _Conv2DGrad: both gradients with the forward node's strides, padding and
 * dilations (attributes 2..4 of Conv2D, in the same order as here). */
clg_code clg_grad_conv2d(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_attr_value *dil = clg_node_attr(n, A_DILATIONS), *pad = clg_node_attr(n, A_PADDING),
                       *str = clg_node_attr(n, A_STRIDES);
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
