/* AllReduce's kernel, the same for every kind: the cluster module moves and reduces the values
 * (staging a device's through the host), so the host and OpenCL sets register one function. */
#include <string.h>

#include "backends/backend.h"
#include "cluster/cluster.h"

static clg_code all_reduce_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  /* The reduction attribute is AllReduce's second (after T). */
  clg_reduce_op op = strcmp(n->attrs[1].s, "mean") == 0 ? CLG_REDUCE_MEAN : CLG_REDUCE_SUM;
  char shape[96]; /* for the message when the tasks' values differ */
  return clg_cluster_allreduce_block(c->cluster, c->dev, &c->in[0], &c->out[0],
                                     clg_out_count(&n->outs[0]), n->outs[0].dtype, op, n->name,
                                     clg_node_shape_string(n, shape, sizeof shape));
}

static const clg_kernel_entry host_entries[] = {
    {&clg_op_AllReduce, {CLG_KIND_HOST, NULL, all_reduce_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_all_reduce, host_entries);
static const clg_kernel_entry opencl_entries[] = {
    {&clg_op_AllReduce, {CLG_KIND_OPENCL, NULL, all_reduce_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_all_reduce, opencl_entries);
