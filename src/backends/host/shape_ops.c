/* Reshape and Transpose on the host, for any dtype: Reshape copies unless its output reuses
 * the input's buffer; Transpose gathers through its strided map. */
#include <string.h>

#include "backends/host/host.h"

static clg_code reshape_host(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

static clg_code transpose_host(const clg_kernel_ctx *c)
{
  clg_strided m;
  clg_transpose_map(c->node, &m);
  clg_host_gather(clg_dtype_size(c->node->outs[0].dtype), c->in[0].host, c->out[0].host, &m);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Reshape, {CLG_KIND_HOST, NULL, reshape_host, NULL, NULL}},
    {&clg_op_Transpose, {CLG_KIND_HOST, NULL, transpose_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_shape_ops, entries);
