/* Identity on the host: a copy, or nothing when the output reuses the input's buffer. */
#include <string.h>

#include "backends/host/host.h"

static clg_code identity_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Identity, {CLG_KIND_HOST, NULL, identity_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_identity, entries);
