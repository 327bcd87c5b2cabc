/* Fill, ZerosLike and OnesLike on the host: one element's bytes replicated. */
#include <string.h>

#include "backends/host/host.h"

static void replicate(void *out, const void *elem, size_t es, size_t count)
{
  for (size_t i = 0; i < count; i++)
    memcpy((char *)out + i * es, elem, es);
}

static clg_code fill_run(const clg_kernel_ctx *c)
{
  replicate(c->out[0].host, c->in[1].host, clg_dtype_size(c->node->outs[0].dtype),
            clg_out_count(&c->node->outs[0]));
  return CLG_OK;
}

static clg_code like_run(const clg_kernel_ctx *c)
{
  clg_dtype t = c->node->outs[0].dtype;
  uint64_t elem[1];
  clg_fill_element(t, c->node->def == &clg_op_OnesLike, elem);
  replicate(c->out[0].host, elem, clg_dtype_size(t), clg_out_count(&c->node->outs[0]));
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Fill, {CLG_KIND_HOST, NULL, fill_run, NULL, NULL}},
    {&clg_op_ZerosLike, {CLG_KIND_HOST, NULL, like_run, NULL, NULL}},
    {&clg_op_OnesLike, {CLG_KIND_HOST, NULL, like_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_fill, entries);
