/* SelectV2 (the chosen element's bytes over a three-input strided walk) and BroadcastTo (the
 * strided gather of Transpose) on the host, for elements of 1, 2, 4 or 8 bytes. */
#include "backends/host/host.h"

/* The innermost dim a plain loop, the outer ones an odometer, as broadcast.c's walk. */
#define SELECT_WALK(TE)                                                                            \
  do {                                                                                             \
    const TE *t = c->in[1].host, *e = c->in[2].host;                                               \
    TE *y = c->out[0].host;                                                                        \
    size_t idx[CLG_MAX_RANK] = {0}, off[3] = {0, 0, 0};                                            \
    int r = m.rank;                                                                                \
    size_t inner = m.dims[r - 1];                                                                  \
    for (size_t base = 0; base < count; base += inner) {                                           \
      for (size_t j = 0; j < inner; j++)                                                           \
        y[base + j] = cond[off[0] + j * m.s[0][r - 1]] ? t[off[1] + j * m.s[1][r - 1]]             \
                                                       : e[off[2] + j * m.s[2][r - 1]];            \
      for (int k = r - 2; k >= 0; k--) {                                                           \
        for (int q = 0; q < 3; q++)                                                                \
          off[q] += m.s[q][k];                                                                     \
        if (++idx[k] < m.dims[k])                                                                  \
          break;                                                                                   \
        for (int q = 0; q < 3; q++)                                                                \
          off[q] -= m.s[q][k] * m.dims[k];                                                         \
        idx[k] = 0;                                                                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static clg_code select_v2_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (count == 0)
    return CLG_OK;
  clg_select_map m;
  clg_select_v2_map(c->node, &m);
  const uint8_t *cond = c->in[0].host;
  switch (clg_dtype_size(c->node->outs[0].dtype)) {
  case 1:
    SELECT_WALK(uint8_t);
    break;
  case 2:
    SELECT_WALK(uint16_t);
    break;
  case 4:
    SELECT_WALK(uint32_t);
    break;
  default:
    SELECT_WALK(uint64_t);
    break;
  }
  return CLG_OK;
}

static clg_code broadcast_to_run(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0), *o = &c->node->outs[0];
  clg_strided m;
  clg_strided_broadcast(&m, x->rank, x->dims, 0, NULL, o->rank, o->dims);
  clg_host_gather(clg_dtype_size(o->dtype), c->in[0].host, c->out[0].host, &m);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_SelectV2, {CLG_KIND_HOST, clg_select_supports, select_v2_run, NULL, NULL}},
    {&clg_op_BroadcastTo, {CLG_KIND_HOST, clg_select_supports, broadcast_to_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_broadcast_ops, entries);
