/* Select on the host: the chosen element's bytes, for elements of 1, 2, 4 or 8 bytes. */
#include "backends/host/host.h"

#define SELECT_LOOP(TE)                                                                            \
  do {                                                                                             \
    const TE *t = c->in[1].host, *e = c->in[2].host;                                               \
    TE *y = c->out[0].host;                                                                        \
    for (size_t k = 0; k < count / span; k++)                                                      \
      for (size_t i = k * span; i < (k + 1) * span; i++)                                           \
        y[i] = cond[k] ? t[i] : e[i];                                                              \
  } while (0)

static clg_code select_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (count == 0)
    return CLG_OK;
  size_t span = clg_select_span(c->node);
  const uint8_t *cond = c->in[0].host;
  switch (clg_dtype_size(c->node->outs[0].dtype)) {
  case 1:
    SELECT_LOOP(uint8_t);
    break;
  case 2:
    SELECT_LOOP(uint16_t);
    break;
  case 4:
    SELECT_LOOP(uint32_t);
    break;
  default:
    SELECT_LOOP(uint64_t);
    break;
  }
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Select, {CLG_KIND_HOST, clg_select_supports, select_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_select, entries);
