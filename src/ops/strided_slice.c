/* StridedSlice (tensor[begin:end:stride, ...] of TensorFlow, with begin_mask, end_mask,
 * ellipsis_mask, new_axis_mask and shrink_axis_mask) for any dtype on every device. begin, end
 * and strides are Const int32/int64 vectors of one length (shapes are static here). The
 * arithmetic is TensorFlow's ValidateStridedSliceOp (core/util/strided_slice_op.cc): the sparse
 * spec expanded to one entry per input dim (an ellipsis covers the dims the spec leaves out, an
 * implicit one at the end), begin and end made non-negative and clamped to the valid range
 * ([0, d] for a positive stride, [-1, d - 1] for a negative one), a shrunk dim [b, b + 1) with a
 * positive stride only. The kernel is a strided gather (negative strides included); no
 * gradient (TensorFlow's StridedSliceGrad is not built here). Kernels:
 * backends/host/strided_slice.c, backends/opencl/strided_slice.c. */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_INDEX, A_T, A_BEGIN_MASK, A_ELLIPSIS_MASK, A_END_MASK, A_NEW_AXIS_MASK, A_SHRINK_MASK };

static const clg_attr_def attrs[] = {
    {.name = "Index", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "begin_mask", .type = CLG_ATTR_INT, .has_default = true, .def_i = 0},
    {.name = "ellipsis_mask", .type = CLG_ATTR_INT, .has_default = true, .def_i = 0},
    {.name = "end_mask", .type = CLG_ATTR_INT, .has_default = true, .def_i = 0},
    {.name = "new_axis_mask", .type = CLG_ATTR_INT, .has_default = true, .def_i = 0},
    {.name = "shrink_axis_mask", .type = CLG_ATTR_INT, .has_default = true, .def_i = 0},
};

#define MAX_SPEC 16 /* entries of the sparse spec (TensorFlow allows 31) */

clg_code clg_strided_slice_spec(const clg_node *n, clg_slice_spec *s)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t b[MAX_SPEC], e[MAX_SPEC], st[MAX_SPEC];
  int nb = 0, ne = 0, ns = 0;
  clg_code code;
  if ((code = clg_node_const_ints(n, 1, "begin", MAX_SPEC, b, &nb)) != CLG_OK ||
      (code = clg_node_const_ints(n, 2, "end", MAX_SPEC, e, &ne)) != CLG_OK ||
      (code = clg_node_const_ints(n, 3, "strides", MAX_SPEC, st, &ns)) != CLG_OK)
    return code;
  if (nb != ns || ne != ns)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Expected begin, end, and strides to be 1D equal size tensors, but got "
                          "shapes [%d], [%d], and [%d] instead.",
                          nb, ne, ns);
  int64_t bm = n->attrs[A_BEGIN_MASK].i, em = n->attrs[A_END_MASK].i;
  int64_t ell = n->attrs[A_ELLIPSIS_MASK].i, nam = n->attrs[A_NEW_AXIS_MASK].i;
  int64_t sm = n->attrs[A_SHRINK_MASK].i;
  const char *names[5] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                          "shrink_axis_mask"};
  int64_t all[5] = {bm, em, ell, nam, sm};
  for (int k = 0; k < 5; k++)
    if (all[k] < 0 || all[k] > INT32_MAX)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s is %lld; masks are 32-bit sets of bits",
                            names[k], (long long)all[k]);
  if (ell & (ell - 1))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
  /* New axes after the ellipsis, and an implicit ellipsis at the end when there is none. */
  int dims = ns, after = 0;
  bool seen = false;
  for (int i = 0; i < dims; i++) {
    if (seen && (nam >> i & 1))
      after++;
    if (ell >> i & 1)
      seen = true;
  }
  if (!seen) {
    ell |= (int64_t)1 << dims;
    dims++;
  }
  /* The dense spec: one entry per input dim; the final shape's dims gathered from it. */
  int rank = x->rank, full = 0;
  int64_t db[CLG_MAX_RANK] = {0}, de[CLG_MAX_RANK] = {0}, ds[CLG_MAX_RANK] = {0};
  bool dbm[CLG_MAX_RANK] = {false}, dem[CLG_MAX_RANK] = {false}, dsh[CLG_MAX_RANK] = {false};
  enum { NEW_AXIS = -2, SHRUNK = -1 };
  int gather[MAX_SPEC + CLG_MAX_RANK], ngather = 0;
  for (int i = 0; i < dims; i++) {
    if (ell >> i & 1) {
      int next = rank - (dims - i) + 1 + after;
      if (next > rank)
        next = rank;
      for (; full < next; full++) {
        ds[full] = 1;
        dbm[full] = dem[full] = true;
        gather[ngather++] = full;
      }
    } else if (nam >> i & 1) {
      gather[ngather++] = NEW_AXIS;
    } else {
      if (full == rank)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "Index out of range using input dim %d; input has only %d dims", full,
                              rank);
      db[full] = b[i];
      de[full] = e[i];
      ds[full] = st[i];
      dbm[full] = bm >> i & 1;
      dem[full] = em >> i & 1;
      dsh[full] = sm >> i & 1;
      gather[ngather++] = dsh[full] ? SHRUNK : full;
      full++;
    }
  }
  /* Canonical begin, size per input dim (the processing shape). */
  memset(s, 0, sizeof *s);
  s->rank = rank;
  for (int i = 0; i < rank; i++) {
    int64_t d = x->dims[i], stride = ds[i];
    if (stride == 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "strides[%d] must be non-zero", i);
    if (dsh[i] && stride <= 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "only stride 1 allowed on non-range indexing.");
    int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? d : d - 1, bi, ei;
    if (dsh[i]) {
      bi = db[i] < 0 ? d + db[i] : db[i];
      if (bi < 0 || bi >= d)
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "slice index %lld of dimension %d out of bounds.",
                              (long long)(db[i] < 0 ? d + db[i] : db[i]), i);
      ei = bi + 1;
    } else {
      /* A masked end takes the range's far end in the stride's direction. */
      if (dbm[i])
        bi = stride > 0 ? lo : hi;
      else {
        bi = db[i] < 0 ? d + db[i] : db[i];
        bi = bi < lo ? lo : bi > hi ? hi : bi;
      }
      if (dem[i])
        ei = stride > 0 ? hi : lo;
      else {
        ei = de[i] < 0 ? d + de[i] : de[i];
        ei = ei < lo ? lo : ei > hi ? hi : ei;
      }
    }
    int64_t len = ei - bi, size;
    if (len == 0 || ((len < 0) != (stride < 0)))
      size = 0;
    else
      size = len / stride + (len % stride != 0);
    s->begin[i] = bi;
    s->stride[i] = stride;
    s->size[i] = size;
  }
  s->out_rank = 0;
  for (int k = 0; k < ngather; k++) {
    if (gather[k] == SHRUNK)
      continue;
    if (s->out_rank == CLG_MAX_RANK)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output would have more than %d dims",
                            CLG_MAX_RANK);
    s->out_dims[s->out_rank++] = gather[k] == NEW_AXIS ? 1 : s->size[gather[k]];
  }
  return CLG_OK;
}

static clg_code infer(clg_node *n)
{
  clg_slice_spec s;
  clg_code code = clg_strided_slice_spec(n, &s);
  if (code != CLG_OK)
    return code;
  clg_dtype it = clg_node_in(n, 1)->dtype;
  if (clg_node_in(n, 2)->dtype != it || clg_node_in(n, 3)->dtype != it)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "begin, end and strides must have one dtype");
  clg_attr_value *ia = &n->attrs[A_INDEX], *ta = &n->attrs[A_T];
  if ((ia->set && ia->dtype != it) || (ta->set && ta->dtype != clg_node_in(n, 0)->dtype))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "attributes Index and T disagree with the inputs");
  ia->set = ta->set = true;
  ia->dtype = it;
  ta->dtype = clg_node_in(n, 0)->dtype;
  return clg_node_set_output(n, 0, ta->dtype, s.out_rank, s.out_dims);
}

const clg_op_def clg_op_StridedSlice = {
    .name = "StridedSlice",
    .num_inputs = 4,
    .num_outputs = 1,
    .num_attrs = 7,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
};

clg_node *clg_strided_slice(clg_graph *g, const char *name, clg_node *x, int n,
                            const int64_t *begin, const int64_t *end, const int64_t *strides,
                            const int64_t masks[5])
{
  clg_output in[4] = {{x, 0},
                      {clg_const_ints(g, n, begin), 0},
                      {clg_const_ints(g, n, end), 0},
                      {clg_const_ints(g, n, strides), 0}};
  clg_attr at[5] = {clg_attr_int("begin_mask", masks ? masks[0] : 0),
                    clg_attr_int("end_mask", masks ? masks[1] : 0),
                    clg_attr_int("ellipsis_mask", masks ? masks[2] : 0),
                    clg_attr_int("new_axis_mask", masks ? masks[3] : 0),
                    clg_attr_int("shrink_axis_mask", masks ? masks[4] : 0)};
  return clg_graph_build(g, &clg_op_StridedSlice, name, 4, in, 5, at);
}
