/* Size and SparseToDense on the host: the element count; default_value everywhere, then each
 * value at its index in order (a repeated index without validate_indices keeps the last, as
 * TensorFlow's ToDense). */
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

static clg_code size_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(clg_node_in(c->node, 0));
  if (c->node->outs[0].dtype == CLG_INT32)
    *(int32_t *)c->out[0].host = (int32_t)count;
  else
    *(int64_t *)c->out[0].host = (int64_t)count;
  return CLG_OK;
}

static clg_code sparse_to_dense_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t num_elems, count = clg_out_count(&n->outs[0]);
  int num_dims;
  clg_sparse_to_dense_dims(n, &num_elems, &num_dims);
  size_t *off = malloc(sizeof(size_t) * (num_elems ? num_elems : 1));
  if (!off)
    return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of host memory for %zu indices",
                          num_elems);
  clg_code code = clg_sparse_to_dense_offsets(n, c->in[0].host, off);
  if (code == CLG_OK) {
    size_t es = clg_dtype_size(n->outs[0].dtype);
    bool scalar = clg_node_in(n, 2)->rank == 0;
    char *y = c->out[0].host;
    const char *v = c->in[2].host, *d = c->in[3].host;
    for (size_t i = 0; i < count; i++)
      memcpy(y + i * es, d, es);
    for (size_t j = 0; j < num_elems; j++)
      memcpy(y + off[j] * es, v + (scalar ? 0 : j * es), es);
  }
  free(off);
  return code;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Size, {CLG_KIND_HOST, NULL, size_run, NULL, NULL}},
    {&clg_op_SparseToDense, {CLG_KIND_HOST, NULL, sparse_to_dense_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_array_tf4, entries);
