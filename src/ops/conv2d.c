/* Conv2D (tf.nn.conv2d, NHWC): input [N,H,W,Cin], filter [KH,KW,Cin,Cout], strides and
 * dilations [1,s,s,1], padding SAME or VALID with TensorFlow's arithmetic (SAME: out =
 * ceil(in / s), the odd padding element at the bottom/right; VALID: a window larger than the
 * input is an error, as in TF 1.x), or EXPLICIT with explicit_paddings [0,0,t,b,l,r,0,0]
 * (TF 2's; zeros around the input, so that an importer needs no Pad). Cross-correlation. Kernels:
 * im2col + GEMM on both device kinds (backends/host/conv2d.c, backends/opencl/conv2d.c); an OpenCL
 * device CLBlast cannot serve (no fp64, a compiler error) runs the host path on its data. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_DATA_FORMAT, A_DILATIONS, A_EXPLICIT, A_PADDING, A_STRIDES, A_USE_CUDNN };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "data_format", .type = CLG_ATTR_STRING, .has_default = true, .def_s = "NHWC"},
    {.name = "dilations", .type = CLG_ATTR_INT_LIST, .inferred = true},         /* [1,1,1,1] */
    {.name = "explicit_paddings", .type = CLG_ATTR_INT_LIST, .inferred = true}, /* [] */
    {.name = "padding", .type = CLG_ATTR_STRING},
    {.name = "strides", .type = CLG_ATTR_INT_LIST},
    {.name = "use_cudnn_on_gpu", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};

clg_code clg_conv2d_geometry(const clg_node *n, clg_window *g)
{
  const clg_out_desc *x = clg_node_in(n, 0), *f = clg_node_in(n, 1);
  bool same = false, explicit = false;
  int64_t p[4] = {0, 0, 0, 0};
  clg_code code;
  memset(g, 0, sizeof *g);
  if ((code = clg_explicit_pads(n, &n->attrs[A_PADDING], &n->attrs[A_EXPLICIT], &explicit, p)) !=
          CLG_OK ||
      (!explicit && (code = clg_padding_attr(n, &n->attrs[A_PADDING], &same)) != CLG_OK) ||
      (code = clg_window_attrs(n, &n->attrs[A_STRIDES], "strides", &g->sh, &g->sw)) != CLG_OK ||
      (code = clg_window_attrs(n, &n->attrs[A_DILATIONS], "dilations", &g->dh, &g->dw)) != CLG_OK)
    return code;
  /* EXPLICIT: VALID over the padded input, whose first p[0] rows and p[2] columns are zeros */
  g->n = x->dims[0], g->h = x->dims[1] + p[0] + p[1], g->w = x->dims[2] + p[2] + p[3];
  g->c = x->dims[3];
  g->kh = f->dims[0], g->kw = f->dims[1], g->cout = f->dims[3];
  if ((code = clg_window_taps(n, g)) != CLG_OK || (code = clg_window_geometry(n, same, g)))
    return code;
  g->h = x->dims[1], g->w = x->dims[2];
  if (explicit)
    g->pt = p[0], g->pl = p[2];
  return CLG_OK;
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
  clg_attr_value *e = &n->attrs[A_EXPLICIT];
  if (!e->set) { /* TensorFlow's default, [] */
    if (!(e->v = malloc(sizeof *e->v)))
      return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of host memory");
    e->n = 0;
    e->set = true;
    e->type = CLG_ATTR_INT_LIST;
  }
  clg_code code = clg_nhwc_attr(n, &n->attrs[A_DATA_FORMAT]);
  clg_window g;
  if (code == CLG_OK)
    code = clg_conv2d_geometry(n, &g);
  if (code != CLG_OK)
    return code;
  n->attrs[A_T].set = true;
  n->attrs[A_T].dtype = x->dtype;
  int64_t dims[4] = {g.n, g.oh, g.ow, g.cout};
  return clg_node_set_output(n, 0, x->dtype, 4, dims);
}

const clg_op_def clg_op_Conv2D = {
    .name = "Conv2D",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 7,
    .attrs = attrs,
    .infer = infer,
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
