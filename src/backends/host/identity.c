/* Identity on the host: a copy, or nothing when the output reuses the input's buffer. Switch
 * and Merge (ops/control.c): a copy to the live output, from the first live input. */
#include <string.h>

#include "backends/host/host.h"

static clg_code identity_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

static clg_code switch_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  int taken = *(const uint8_t *)c->in[1].host != 0;
  if (bytes)
    memcpy(c->out[taken].host, c->in[0].host, bytes);
  *c->dead = 1u << (1 - taken);
  return CLG_OK;
}

static clg_code merge_run(const clg_kernel_ctx *c)
{
  int i = 0;
  while (*c->dead >> i & 1u) /* the runner runs a Merge with a live input only */
    i++;
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes)
    memcpy(c->out[0].host, c->in[i].host, bytes);
  *(int32_t *)c->out[1].host = i;
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Identity, {CLG_KIND_HOST, NULL, identity_run, NULL, NULL}},
    {&clg_op_Switch, {CLG_KIND_HOST, NULL, switch_run, NULL, NULL}},
    {&clg_op_Merge, {CLG_KIND_HOST, NULL, merge_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_identity, entries);
