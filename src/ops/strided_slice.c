/* StridedSlice (tf.strided_slice, Python's x[b:e:s, ..., tf.newaxis, 3]) with TensorFlow's
 * mask rules (core/util/strided_slice_op.cc): the sparse spec of begin/end/strides and the
 * five masks is expanded to one range per input dim, clamped as TensorFlow clamps, and the
 * output drops shrunk dims and adds new ones. begin, end and strides must be Consts of int32
 * or int64 (shapes are static here). Any dtype; the kernels are a strided copy
 * (backends/host/array_tf2.c, backends/opencl/array_tf2.c). */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_INDEX, A_T, A_BEGIN_MASK, A_ELLIPSIS_MASK, A_END_MASK, A_NEW_AXIS_MASK, A_SHRINK_MASK };

static const clg_attr_def attrs[] = {
    {.name = "Index", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "begin_mask", .type = CLG_ATTR_INT, .has_default = true},
    {.name = "ellipsis_mask", .type = CLG_ATTR_INT, .has_default = true},
    {.name = "end_mask", .type = CLG_ATTR_INT, .has_default = true},
    {.name = "new_axis_mask", .type = CLG_ATTR_INT, .has_default = true},
    {.name = "shrink_axis_mask", .type = CLG_ATTR_INT, .has_default = true},
};

/* Entries of the sparse spec: at most 31, so that every mask bit fits in TensorFlow's int32
 * masks (one more bit is the implicit trailing ellipsis). */
enum { MAX_SPARSE = 31, NEW_AXIS = -2, SHRUNK = -1 };

/* The spec over an input of descriptor x (StridedSlice's input, or StridedSliceGrad's shape). */
/* The five masks, each an int32 bit mask, in attribute order (begin, ellipsis, end, new
 * axis, shrink axis). */
static clg_code read_masks(const clg_node *n, int64_t *masks)
{
  static const char *const mask_names[5] = {"begin_mask", "ellipsis_mask", "end_mask",
                                            "new_axis_mask", "shrink_axis_mask"};
  for (int k = 0; k < 5; k++) {
    masks[k] = clg_node_attr(n, A_BEGIN_MASK + k)->i;
    if (masks[k] < 0 || masks[k] > INT32_MAX)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s is %lld; it must be an int32 bit mask",
                            mask_names[k], (long long)masks[k]);
  }
  return CLG_OK;
}

/* Step 3 of spec_of: each range of the dense spec made explicit and clamped, into s's begin,
 * stride and size. */
static clg_code clamp_ranges(const clg_node *n, const clg_out_desc *x, const int64_t *begin,
                             const int64_t *end, const int64_t *stride, uint32_t dbegin,
                             uint32_t dend, uint32_t dshrink, clg_slice_spec *s)
{
  const int dims = x->rank;
  s->rank = dims;
  for (int i = 0; i < dims; i++) {
    int64_t d = x->dims[i], st = stride[i];
    bool shrink_i = dshrink >> i & 1;
    if (st == 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "strides[%d] must be non-zero", i);
    if (st == INT64_MIN)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "strides[%d] is too large", i);
    if (shrink_i && st <= 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "only stride 1 allowed on non-range indexing.");
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? d : d - 1, b, e;
    if (shrink_i) {
      b = begin[i] < 0 ? d + begin[i] : begin[i];
      if (b < 0 || b >= d)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "slice index %lld of dimension %d out of bounds.", (long long)b, i);
      e = b + 1;
    } else {
      int64_t v[2] = {begin[i], end[i]};
      bool masked[2] = {dbegin >> i & 1, dend >> i & 1};
      int64_t r[2];
      for (int c = 0; c < 2; c++) {
        if (masked[c]) {
          /* begin masked: the first element in the stride's direction; end: one past the last */
          r[c] = (c == 0) == (st > 0) ? lo : hi;
        } else {
          int64_t f = v[c] < 0 ? d + v[c] : v[c]; /* d >= 0: no overflow */
          r[c] = f < lo ? lo : f > hi ? hi : f;
        }
      }
      b = r[0];
      e = r[1];
    }
    int64_t len = e - b, size;
    if (len == 0 || ((len < 0) != (st < 0)))
      size = 0;
    else
      size = len / st + (len % st != 0 ? 1 : 0);
    s->begin[i] = size ? b : 0;
    s->stride[i] = st;
    s->size[i] = size;
  }
  return CLG_OK;
}

static clg_code spec_of(const clg_node *n, const clg_out_desc *x, clg_slice_spec *s)
{
  int64_t sb[MAX_SPARSE], se[MAX_SPARSE], ss[MAX_SPARSE];
  int nb = 0, ne = 0, ns = 0;
  clg_code code;
  if ((code = clg_node_const_ints(n, 1, "begin", MAX_SPARSE, sb, &nb)) != CLG_OK ||
      (code = clg_node_const_ints(n, 2, "end", MAX_SPARSE, se, &ne)) != CLG_OK ||
      (code = clg_node_const_ints(n, 3, "strides", MAX_SPARSE, ss, &ns)) != CLG_OK)
    return code;
  const clg_out_desc *bd = clg_node_in(n, 1), *ed = clg_node_in(n, 2), *sd = clg_node_in(n, 3);
  if (bd->rank != 1 || ed->rank != 1 || sd->rank != 1 || nb != ns || ne != ns) {
    char b[64], e[64], t[64];
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected begin, end, and strides to be 1D equal size tensors, but got "
                          "shapes %s, %s, and %s instead.",
                          clg_out_shape_string(bd, b, sizeof b),
                          clg_out_shape_string(ed, e, sizeof e),
                          clg_out_shape_string(sd, t, sizeof t));
  }
  if (bd->dtype != ed->dtype || bd->dtype != sd->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "begin, end and strides must have one dtype (Index), not %s, %s and %s",
                          clg_dtype_name(bd->dtype), clg_dtype_name(ed->dtype),
                          clg_dtype_name(sd->dtype));
  int64_t masks[5];
  if ((code = read_masks(n, masks)) != CLG_OK)
    return code;
  uint32_t begin_mask = (uint32_t)masks[0], ellipsis = (uint32_t)masks[1],
           end_mask = (uint32_t)masks[2], new_axis = (uint32_t)masks[3],
           shrink = (uint32_t)masks[4];
  if (ellipsis & (ellipsis - 1))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");

  /* Step 1: the new axes after the ellipsis; without one, an ellipsis at the end. */
  int sparse = ns, add_after = 0;
  bool seen = false;
  for (int i = 0; i < sparse; i++) {
    if (seen && (new_axis >> i & 1))
      add_after++;
    if (ellipsis >> i & 1)
      seen = true;
  }
  if (!seen)
    ellipsis |= 1u << sparse++;

  /* Step 2: the dense spec, one entry per input dim; gather[] says where each output dim
   * comes from (an input dim, a new axis, or a shrunk dim that it skips). */
  int dims = x->rank, full = 0, ngather = 0;
  int gather[MAX_SPARSE + CLG_MAX_RANK + 1];
  uint32_t dbegin = 0, dend = 0, dshrink = 0;
  int64_t begin[CLG_MAX_RANK], end[CLG_MAX_RANK], stride[CLG_MAX_RANK];
  for (int i = 0; i < sparse; i++) {
    if (ellipsis >> i & 1) {
      int next = dims - (sparse - i) + 1 + add_after;
      if (next > dims)
        next = dims;
      for (; full < next; full++) {
        begin[full] = end[full] = 0;
        stride[full] = 1;
        dbegin |= 1u << full;
        dend |= 1u << full;
        gather[ngather++] = full;
      }
    } else if (new_axis >> i & 1) {
      gather[ngather++] = NEW_AXIS;
    } else {
      if (full == dims)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Index out of range using input dim %d; input has only %d dims", full,
                              dims);
      begin[full] = sb[i];
      end[full] = se[i];
      stride[full] = ss[i];
      if (begin_mask >> i & 1)
        dbegin |= 1u << full;
      if (end_mask >> i & 1)
        dend |= 1u << full;
      if (shrink >> i & 1) {
        gather[ngather++] = SHRUNK;
        dshrink |= 1u << full;
      } else {
        gather[ngather++] = full;
      }
      full++;
    }
  }
  /* Dims the spec leaves out keep TensorFlow's zeros (a zero stride, refused below). */
  for (; full < dims; full++)
    begin[full] = end[full] = stride[full] = 0;

  /* Step 3: each range made explicit and clamped. */
  if ((code = clamp_ranges(n, x, begin, end, stride, dbegin, dend, dshrink, s)) != CLG_OK)
    return code;

  /* Step 4: the output's dims. */
  s->out_rank = 0;
  for (int k = 0; k < ngather; k++) {
    if (gather[k] == SHRUNK)
      continue;
    if (s->out_rank == CLG_MAX_RANK)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "the slice has more than %d dims",
                            CLG_MAX_RANK);
    s->out_dims[s->out_rank++] = gather[k] == NEW_AXIS ? 1 : s->size[gather[k]];
  }
  return CLG_OK;
}

/* StridedSliceGrad's input shape (input 0, a Const vector) as a descriptor. */
static clg_code grad_shape(const clg_node *n, clg_out_desc *x)
{
  memset(x, 0, sizeof *x);
  x->dtype = clg_node_in(n, 4)->dtype;
  clg_code code = clg_node_const_ints(n, 0, "shape", CLG_MAX_RANK, x->dims, &x->rank);
  if (code != CLG_OK)
    return code;
  for (int k = 0; k < x->rank; k++)
    if (x->dims[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape[%d] is %lld; dims are >= 0", k,
                            (long long)x->dims[k]);
  return CLG_OK;
}

clg_code clg_strided_slice_spec(const clg_node *n, clg_slice_spec *s)
{
  if (n->def != &clg_op_StridedSliceGrad)
    return spec_of(n, clg_node_in(n, 0), s);
  clg_out_desc x;
  clg_code code = grad_shape(n, &x);
  return code != CLG_OK ? code : spec_of(n, &x, s);
}

static clg_code infer(clg_node *n)
{
  clg_slice_spec s;
  clg_code code = clg_strided_slice_spec(n, &s);
  if (code != CLG_OK)
    return code;
  n->attrs[A_INDEX].set = n->attrs[A_T].set = true;
  n->attrs[A_INDEX].dtype = clg_node_in(n, 1)->dtype;
  n->attrs[A_T].dtype = clg_node_in(n, 0)->dtype;
  return clg_node_set_output(n, 0, clg_node_in(n, 0)->dtype, s.out_rank, s.out_dims);
}

/* The masks of n, for the gradient's node. */
static void masks_of(const clg_node *n, clg_attr *a)
{
  static const char *const names[5] = {"begin_mask", "ellipsis_mask", "end_mask", "new_axis_mask",
                                       "shrink_axis_mask"};
  for (int k = 0; k < 5; k++)
    a[k] = clg_attr_int(names[k], clg_node_attr(n, A_BEGIN_MASK + k)->i);
}

/* StridedSliceGrad(shape of x, begin, end, strides, dy): dy into zeros of x's shape. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_attr a[5];
  masks_of(n, a);
  clg_output in[5] = {clg_out(clg_const_ints(g, x->rank, x->dims), 0), n->inputs[1], n->inputs[2],
                      n->inputs[3], dy[0]};
  dx[0] = clg_grad_build(g, &clg_op_StridedSliceGrad, 5, in, 5, a);
  return clg_graph_status(g);
}

const clg_op_def clg_op_StridedSlice = {
    .name = "StridedSlice",
    .num_inputs = 4,
    .num_outputs = 1,
    .num_attrs = 7,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

/* --- StridedSliceGrad ------------------------------------------------------------------- */

static clg_code grad_infer(clg_node *n)
{
  clg_out_desc x;
  clg_slice_spec s;
  clg_code code = grad_shape(n, &x);
  if (code != CLG_OK || (code = spec_of(n, &x, &s)) != CLG_OK)
    return code;
  const clg_out_desc *dy = clg_node_in(n, 4);
  bool same = dy->rank == s.out_rank;
  for (int k = 0; same && k < s.out_rank; k++)
    same = dy->dims[k] == s.out_dims[k];
  if (!same) {
    char got[192], want[192];
    clg_out_desc w = {dy->dtype, s.out_rank, {0}};
    memcpy(w.dims, s.out_dims, sizeof(int64_t) * (size_t)s.out_rank);
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape of dy was %s instead of %s",
                          clg_out_shape_string(dy, got, sizeof got),
                          clg_out_shape_string(&w, want, sizeof want));
  }
  n->attrs[A_INDEX].set = n->attrs[A_T].set = true;
  n->attrs[A_INDEX].dtype = clg_node_in(n, 1)->dtype;
  n->attrs[A_T].dtype = dy->dtype;
  return clg_node_set_output(n, 0, dy->dtype, x.rank, x.dims);
}

/* Its gradient is the slice of the incoming gradient (TensorFlow's _StridedSliceGradGrad). */
static clg_code grad_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_attr a[5];
  masks_of(n, a);
  clg_output in[4] = {dy[0], n->inputs[1], n->inputs[2], n->inputs[3]};
  dx[4] = clg_grad_build(g, &clg_op_StridedSlice, 4, in, 5, a);
  return clg_graph_status(g);
}

const clg_op_def clg_op_StridedSliceGrad = {
    .name = "StridedSliceGrad",
    .num_inputs = 5,
    .num_outputs = 1,
    .num_attrs = 7,
    .attrs = attrs,
    .infer = grad_infer,
    .inplace = -1,
    .grad = grad_grad,
};

clg_node *clg_strided_slice(clg_graph *g, const char *name, clg_node *x, int n,
                            const int64_t *begin, const int64_t *end, const int64_t *strides,
                            const clg_strided_slice_masks *masks)
{
  clg_output in[4] = {{x, 0},
                      {clg_const_ints(g, n, begin), 0},
                      {clg_const_ints(g, n, end), 0},
                      {clg_const_ints(g, n, strides), 0}};
  clg_strided_slice_masks none = {0, 0, 0, 0, 0};
  if (!masks)
    masks = &none;
  clg_attr a[5] = {clg_attr_int("begin_mask", masks->begin_mask),
                   clg_attr_int("ellipsis_mask", masks->ellipsis_mask),
                   clg_attr_int("end_mask", masks->end_mask),
                   clg_attr_int("new_axis_mask", masks->new_axis_mask),
                   clg_attr_int("shrink_axis_mask", masks->shrink_axis_mask)};
  return clg_graph_build(g, &clg_op_StridedSlice, name, 4, in, 5, a);
}
