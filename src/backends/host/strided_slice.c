/* StridedSlice on the host: a strided gather over the processing shape (negative strides
 * wrap in size_t arithmetic, which stays exact modulo 2^64 for every offset reached). */
#include <string.h>

#include "backends/host/host.h"

/* The gather map over s's processing shape and the offset of its first element. */
static void slice_map(const clg_node *n, const clg_slice_spec *s, clg_strided *m, size_t *base)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  size_t st[CLG_MAX_RANK], acc = 1;
  for (int k = x->rank - 1; k >= 0; k--) {
    st[k] = acc;
    acc *= (size_t)x->dims[k];
  }
  memset(m, 0, sizeof *m);
  m->rank = s->rank ? s->rank : 1;
  m->dims[0] = 1;
  *base = 0;
  for (int k = 0; k < s->rank; k++) {
    *base += (size_t)s->begin[k] * st[k];
    m->dims[k] = (size_t)s->size[k];
    m->sa[k] = (size_t)s->stride[k] * st[k]; /* a negative stride wraps, exactly */
  }
  clg_strided_merge(m);
}

static clg_code strided_slice_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_slice_spec s;
  clg_strided m;
  size_t base = 0;
  clg_code code = clg_strided_slice_spec(n, &s);
  if (code != CLG_OK || clg_out_count(&n->outs[0]) == 0)
    return code;
  slice_map(n, &s, &m, &base);
  size_t es = clg_dtype_size(n->outs[0].dtype);
  clg_host_gather(es, (const char *)c->in[0].host + base * es, c->out[0].host, &m);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_StridedSlice, {CLG_KIND_HOST, NULL, strided_slice_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_strided_slice, entries);
