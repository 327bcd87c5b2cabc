/* Identity: its input, any dtype. Placed with its input when unconstrained (TensorFlow's
 * heuristic); reuses the input's buffer when it is the input's last use, and otherwise
 * copies. */
#include <string.h>

#include "device/device.h"
#include "graph/graph.h"
#include "ops/ops.h"
#include "memory/memory.h"

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code host_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (!bytes || (c->out[0].mem == c->in[0].mem && c->out[0].offset == c->in[0].offset))
    return CLG_OK;
  return clg_device_copy(c->dev, c->out[0].mem, c->out[0].offset, c->dev, c->in[0].mem,
                         c->in[0].offset, bytes, NULL, NULL);
}

static const clg_kernel_def kernels[] = {{CLG_KIND_HOST, NULL, host_run, NULL, NULL},
                                         {CLG_KIND_OPENCL, NULL, cl_run, NULL, NULL}};

static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  (void)g, (void)n;
  dx[0] = dy[0];
  return CLG_OK;
}

const clg_op_def clg_op_Identity = {
    .name = "Identity",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = attrs,
    .infer = clg_infer_elementwise_unary,
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = 0,
    .flags = CLG_OP_FOLLOWS_INPUT,
    .grad = grad,
};

clg_node *clg_identity(clg_graph *g, const char *name, clg_node *x)
{
  clg_output in = {x, 0};
  return clg_graph_build(g, &clg_op_Identity, name, 1, &in, 0, NULL);
}
