/* What both kinds' kernels read off a node of a reduction, ArgMax, Transpose or Slice (the
 * strided maps they walk), and the float-or-double test of the NN ops' kernels. */
#include <string.h>

#include "backends/backend.h"

bool clg_kernel_float_dtype(clg_dtype t, const clg_device *dev)
{
  if (t == CLG_FLOAT64)
    return clg_device_ops_of(dev)->kind == CLG_KIND_HOST || dev->info.has_fp64;
  return t == CLG_FLOAT32;
}

clg_reduction clg_reduction_of(const clg_node *n)
{
  return n->def == &clg_op_Sum    ? CLG_REDUCTION_SUM
         : n->def == &clg_op_Mean ? CLG_REDUCTION_MEAN
         : n->def == &clg_op_Max  ? CLG_REDUCTION_MAX
         : n->def == &clg_op_Min  ? CLG_REDUCTION_MIN
         : n->def == &clg_op_Prod ? CLG_REDUCTION_PROD
                                  : CLG_REDUCTION_L2;
}

void clg_reduce_maps(const clg_node *n, clg_strided *keep, clg_strided *red, size_t *nout,
                     size_t *nred)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  bool r[CLG_MAX_RANK];
  clg_reduce_axes(n, r); /* checked at build */
  size_t stride[CLG_MAX_RANK], s = 1;
  for (int k = x->rank - 1; k >= 0; k--) {
    stride[k] = s;
    s *= (size_t)x->dims[k];
  }
  memset(keep, 0, sizeof *keep);
  memset(red, 0, sizeof *red);
  *nout = *nred = 1;
  for (int k = 0; k < x->rank; k++) {
    clg_strided *m = r[k] ? red : keep;
    m->dims[m->rank] = (size_t)x->dims[k];
    m->sa[m->rank++] = stride[k];
    *(r[k] ? nred : nout) *= (size_t)x->dims[k];
  }
  for (int i = 0; i < 2; i++) {
    clg_strided *m = i ? red : keep;
    if (m->rank == 0) {
      m->rank = 1;
      m->dims[0] = 1;
    }
    /* ArgMax's and ArgMin's reduced map stays one dim */
    if ((n->def != &clg_op_ArgMax && n->def != &clg_op_ArgMin) || i == 0)
      clg_strided_merge(m);
  }
}

void clg_transpose_map(const clg_node *n, clg_strided *m)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t perm[CLG_MAX_RANK];
  int count = 0;
  clg_node_const_ints(n, 1, "perm", CLG_MAX_RANK, perm, &count); /* checked at build */
  size_t stride[CLG_MAX_RANK];
  size_t s = 1;
  for (int k = x->rank - 1; k >= 0; k--) {
    stride[k] = s;
    s *= (size_t)x->dims[k];
  }
  memset(m, 0, sizeof *m);
  m->rank = count;
  for (int k = 0; k < count; k++) {
    m->dims[k] = (size_t)x->dims[perm[k]];
    m->sa[k] = stride[perm[k]];
  }
  if (count == 0) {
    m->rank = 1;
    m->dims[0] = 1;
  }
  clg_strided_merge(m);
}

clg_code clg_slice_map(const clg_node *n, clg_strided *m, size_t *base)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  int64_t begin[CLG_MAX_RANK], size[CLG_MAX_RANK];
  clg_code code = clg_slice_begin(n, begin, size);
  if (code != CLG_OK)
    return code;
  size_t st[CLG_MAX_RANK], s = 1;
  for (int k = x->rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= (size_t)x->dims[k];
  }
  memset(m, 0, sizeof *m);
  m->rank = x->rank ? x->rank : 1;
  m->dims[0] = 1;
  *base = 0;
  for (int k = 0; k < x->rank; k++) {
    *base += (size_t)begin[k] * st[k];
    m->dims[k] = (size_t)size[k];
    m->sa[k] = st[k];
  }
  clg_strided_merge(m);
  return CLG_OK;
}
