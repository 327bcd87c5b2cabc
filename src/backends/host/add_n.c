/* AddN on the host: the inputs added in input order; the output may be input 0's buffer. */
#include <stdlib.h>

#include "backends/host/host.h"

static clg_code add_n_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const void *stack[16];
  const void **ptrs = n->num_inputs <= 16 ? stack : malloc(sizeof *ptrs * (size_t)n->num_inputs);
  if (!ptrs)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  for (int i = 0; i < n->num_inputs; i++)
    ptrs[i] = c->in[i].host;
  clg_host_addn(n->outs[0].dtype, ptrs, n->num_inputs, c->out[0].host, clg_out_count(&n->outs[0]));
  if (ptrs != stack)
    free(ptrs);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_AddN, {CLG_KIND_HOST, clg_kernel_float_or_double, add_n_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_add_n, entries);
