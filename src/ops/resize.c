/* ResizeBilinear (tf.image.resize_bilinear of TensorFlow 1.x): images [N,H,W,C] of float or
 * double and a Const int32 size [2] (new height, width > 0) to float [N,OH,OW,C], computed in
 * float exactly as TensorFlow's core/kernels/image/resize_bilinear_op.cc: scale = (in - 1) /
 * (out - 1) with align_corners (and out > 1), else in / out; the source coordinate of output i
 * is (i + 0.5) * scale - 0.5 with half_pixel_centers, else i * scale; lower = max(floor, 0),
 * upper = min(ceil, in - 1), lerp = coordinate - floor; top + (bottom - top) * y_lerp of the
 * two rows' lerps. ResizeBilinearGrad(grads float, original_image) spreads each gradient over
 * those four inputs with the same weights (into original_image's dtype). Both modes together
 * are INVALID_ARGUMENT, as in TensorFlow. ResizeNearestNeighbor (float, double, int32, int64
 * images, the output of the images' dtype) takes, as resize_nearest_neighbor_op.cc, source
 * row min(f(y * scale), in - 1) with f = round (half away from zero) under align_corners,
 * else floor; with half_pixel_centers the coordinate is (y + 0.5) * scale and the row at least
 * 0. Kernels: backends/host/resize.c, backends/opencl/resize.c. */
#include <math.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_ALIGN, A_HALF };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "align_corners", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
    {.name = "half_pixel_centers", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
};

/* TensorFlow's CalculateResizeScale, in float. */
static float scale_of(int64_t in, int64_t out, bool align)
{
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

void clg_resize_geometry(const clg_node *n, clg_resize *r)
{
  bool grad = n->def == &clg_op_ResizeBilinearGrad;
  const clg_out_desc *in = grad ? &n->outs[0] : clg_node_in(n, 0);
  const clg_out_desc *out = grad ? clg_node_in(n, 0) : &n->outs[0];
  r->n = in->dims[0], r->h = in->dims[1], r->w = in->dims[2], r->c = in->dims[3];
  r->oh = out->dims[1], r->ow = out->dims[2];
  bool align = n->attrs[A_ALIGN].b;
  r->align = align;
  r->half_pixel = n->attrs[A_HALF].b;
  r->hs = scale_of(r->h, r->oh, align);
  r->ws = scale_of(r->w, r->ow, align);
}

static clg_code check_modes(clg_node *n, clg_dtype dt)
{
  if (n->attrs[A_ALIGN].b && n->attrs[A_HALF].b)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "If half_pixel_centers is True, align_corners must be False.");
  bool nearest = n->def == &clg_op_ResizeNearestNeighbor;
  if (nearest && (dt == CLG_INT32 || dt == CLG_INT64))
    ; /* nearest copies elements: integer images too */
  else if (dt != CLG_FLOAT32 && dt != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s takes float or double images, not %s", n->op,
                          clg_dtype_name(dt));
  clg_attr_value *t = &n->attrs[A_T];
  if (t->set && t->dtype != dt)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the images are %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(dt));
  t->set = true;
  t->dtype = dt;
  return CLG_OK;
}

static clg_code check_image(clg_node *n, int i, const char *what)
{
  const clg_out_desc *x = clg_node_in(n, i);
  char s[192];
  if (x->rank != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be 4-dimensional, not %s", what,
                          clg_out_shape_string(x, s, sizeof s));
  if (x->dims[1] <= 0 || x->dims[2] <= 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be of non-zero size, not %s", what,
                          clg_out_shape_string(x, s, sizeof s));
  return CLG_OK;
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_code code = check_image(n, 0, "input");
  if (code != CLG_OK || (code = check_modes(n, x->dtype)) != CLG_OK)
    return code;
  int64_t size[2];
  int count = 0;
  if ((code = clg_node_const_ints(n, 1, "size", 2, size, &count)) != CLG_OK)
    return code;
  if (count != 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape_t must have two elements, not %d", count);
  if (size[0] <= 0 || size[1] <= 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "output dimensions must be positive, not %lld x %lld", (long long)size[0],
                          (long long)size[1]);
  int64_t dims[4] = {x->dims[0], size[0], size[1], x->dims[3]};
  bool nearest = n->def == &clg_op_ResizeNearestNeighbor;
  return clg_node_set_output(n, 0, nearest ? x->dtype : CLG_FLOAT32, 4, dims);
}

static clg_code grad_infer(clg_node *n)
{
  const clg_out_desc *dy = clg_node_in(n, 0), *x = clg_node_in(n, 1);
  clg_code code = check_image(n, 0, "grads");
  if (code != CLG_OK || (code = check_image(n, 1, "original_image")) != CLG_OK ||
      (code = check_modes(n, x->dtype)) != CLG_OK)
    return code;
  if (dy->dtype != CLG_FLOAT32)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "grads must be float, not %s",
                          clg_dtype_name(dy->dtype));
  if (dy->dims[0] != x->dims[0] || dy->dims[3] != x->dims[3]) {
    char a[192], b[192];
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT, "grads %s and original_image %s differ in batch or channels",
        clg_out_shape_string(dy, a, sizeof a), clg_out_shape_string(x, b, sizeof b));
  }
  return clg_node_set_output(n, 0, x->dtype, 4, x->dims);
}

/* TensorFlow's _ResizeBilinearGrad: the image gets ResizeBilinearGrad, the size none. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr at[2] = {clg_attr_bool("align_corners", n->attrs[A_ALIGN].b),
                    clg_attr_bool("half_pixel_centers", n->attrs[A_HALF].b)};
  dx[0] =
      clg_grad_build(g, &clg_op_ResizeBilinearGrad, 2, (clg_output[]){dy[0], n->inputs[0]}, 2, at);
  return clg_graph_status(g);
}

const clg_op_def clg_op_ResizeBilinear = {
    .name = "ResizeBilinear",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

const clg_op_def clg_op_ResizeBilinearGrad = {
    .name = "ResizeBilinearGrad",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = grad_infer,
    .inplace = -1,
};

const clg_op_def clg_op_ResizeNearestNeighbor = {
    .name = "ResizeNearestNeighbor",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
};

int64_t clg_resize_nearest_source(const clg_resize *r, int64_t i, float scale, int64_t in)
{
  float s = r->half_pixel ? ((float)i + 0.5f) * scale : (float)i * scale;
  int64_t v = (int64_t)(r->align ? roundf(s) : floorf(s));
  v = v < in - 1 ? v : in - 1;
  return r->half_pixel && v < 0 ? 0 : v;
}

clg_node *clg_resize_bilinear(clg_graph *g, const char *name, clg_node *images, int64_t height,
                              int64_t width, bool align_corners, bool half_pixel_centers)
{
  clg_output in[2] = {{images, 0}, {clg_const_ints(g, 2, (int64_t[]){height, width}), 0}};
  clg_attr at[2] = {clg_attr_bool("align_corners", align_corners),
                    clg_attr_bool("half_pixel_centers", half_pixel_centers)};
  return clg_graph_build(g, &clg_op_ResizeBilinear, name, 2, in, 2, at);
}
