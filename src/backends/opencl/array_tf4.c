/* Size on OpenCL devices: one fill of the element count. SparseToDense with Const indices:
 * default_value gathered into every element, then each value scattered to its index
 * (cl/array_tf4.cl). Its index checks (TensorFlow's errors) read the indices on the host: a
 * Const's were made at build, fed ones would have to come back from the device in the middle
 * of the run, so those have no OpenCL kernel (as TensorFlow 1.x, whose SparseToDense is
 * CPU-only) and are placed on CPU:0 (soft placement for a node pinned to a GPU). */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "graph/graph.h"

static clg_code size_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(clg_node_in(c->node, 0));
  int32_t v32 = (int32_t)count;
  int64_t v64 = (int64_t)count;
  bool i32 = c->node->outs[0].dtype == CLG_INT32;
  return clg_cl_fill(c->dev, &c->out[0], i32 ? (const void *)&v32 : (const void *)&v64, i32 ? 4 : 8,
                     i32 ? 4 : 8);
}

typedef struct cl_sd {
  cl_long nd;
  cl_long dims[8];
} cl_sd;

static const clg_cl_text source = {"array_tf4", NULL};

static clg_code sparse_to_dense_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  const clg_out_desc *o = &n->outs[0];
  size_t count = clg_out_count(o), num_elems;
  int num_dims;
  clg_sparse_to_dense_dims(n, &num_elems, &num_dims);
  if (count == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(o->dtype), is = clg_dtype_size(clg_node_in(n, 0)->dtype);
  clg_strided fill = {1, {count}, {0}, {0}}; /* every element reads default_value */
  clg_code code = clg_cl_gather(c->dev, es, &c->in[3], &c->out[0], &fill);
  if (code != CLG_OK || num_elems == 0)
    return code;
  cl_sd m;
  memset(&m, 0, sizeof m);
  m.nd = num_dims; /* the output's rank (0: index tuples of none, one scalar) */
  for (int d = 0; d < o->rank; d++)
    m.dims[d] = o->dims[d];
  char kernel[40];
  snprintf(kernel, sizeof kernel, "clg_sparse_to_dense%zu_i%d", es, is == 8 ? 64 : 32);
  cl_mem im = clg_cl_mem(&c->in[0]), vm = clg_cl_mem(&c->in[2]), ym = clg_cl_mem(&c->out[0]);
  cl_ulong io = c->in[0].offset / is, vo = c->in[2].offset / es, yo = c->out[0].offset / es;
  cl_ulong vstep = clg_node_in(n, 2)->rank == 0 ? 0 : 1, ne = num_elems;
  cl_uint last = !n->attrs[0].b; /* without validate_indices an index may repeat */
  clg_cl_arg args[] = {{sizeof im, &im},       {sizeof io, &io}, {sizeof vm, &vm}, {sizeof vo, &vo},
                       {sizeof vstep, &vstep}, {sizeof ym, &ym}, {sizeof yo, &yo}, {sizeof m, &m},
                       {sizeof last, &last},   {sizeof ne, &ne}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, kernel, args, 10, num_elems);
}

/* Const indices only: they were checked at build. (clg_backend_supported asks with a
 * stand-in producer that has no op.) */
static bool const_indices(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  const clg_node *src = n->inputs[0].node;
  return src && src->def && (src->def->flags & CLG_OP_CONST);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Size, {CLG_KIND_OPENCL, NULL, size_run, NULL, NULL}},
    {&clg_op_SparseToDense, {CLG_KIND_OPENCL, const_indices, sparse_to_dense_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_array_tf4, entries);
