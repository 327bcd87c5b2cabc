/* Const: a value held by the node (attribute "value"), uploaded once per session to the
 * device it is placed on. Its kernels move no data: the executor caches the value
 * (backends/host/const.c, backends/opencl/const.c). */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_DTYPE, A_VALUE };

static const clg_attr_def attrs[] = {
    {.name = "dtype", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "value", .type = CLG_ATTR_TENSOR},
};

static clg_code infer(clg_node *n)
{
  const clg_tensor *t = n->attrs[A_VALUE].tensor;
  clg_attr_value *dt = &n->attrs[A_DTYPE];
  if (dt->set && dt->dtype != clg_tensor_dtype(t))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtype %s differs from the value's dtype %s",
                          clg_dtype_name(dt->dtype), clg_dtype_name(clg_tensor_dtype(t)));
  dt->set = true;
  dt->dtype = clg_tensor_dtype(t);
  int64_t dims[CLG_MAX_RANK];
  for (int i = 0; i < clg_tensor_rank(t); i++)
    dims[i] = clg_tensor_dim(t, i);
  return clg_node_set_output(n, 0, dt->dtype, clg_tensor_rank(t), dims);
}

const clg_op_def clg_op_Const = {
    .name = "Const",
    .num_inputs = 0,
    .num_outputs = 1,
    .num_attrs = 2,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .flags = CLG_OP_CONST,
};

/* The typed builders' raw data, turned into the value attribute with errors naming the
 * node. */
typedef struct raw {
  const clg_tensor *tensor; /* or: */
  clg_dtype dtype;
  int rank;
  const int64_t *dims;
  const void *values;
} raw;

static clg_code prepare(clg_node *n, void *ctx)
{
  const raw *r = ctx;
  clg_attr_value *v = &n->attrs[A_VALUE];
  if (!r->tensor && !r->dims && !r->values && r->rank == 0 && r->dtype == 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "value is NULL");
  if (r->tensor) {
    int64_t dims[CLG_MAX_RANK];
    for (int i = 0; i < clg_tensor_rank(r->tensor); i++)
      dims[i] = clg_tensor_dim(r->tensor, i);
    v->tensor = clg_tensor_new(clg_tensor_dtype(r->tensor), clg_tensor_rank(r->tensor), dims,
                               clg_tensor_const_data(r->tensor));
  } else {
    clg_code code = clg_node_set_output(n, 0, r->dtype, r->rank, r->dims);
    if (code != CLG_OK)
      return code;
    if (!r->values && clg_out_count(&n->outs[0]) > 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "values is NULL");
    v->tensor = clg_tensor_new(r->dtype, r->rank, n->outs[0].dims, r->values);
  }
  if (!v->tensor)
    return clg_error_prefix("Const '%s': ", n->name);
  v->set = true;
  v->type = CLG_ATTR_TENSOR;
  return CLG_OK;
}

clg_node *clg_const(clg_graph *g, const char *name, const clg_tensor *value)
{
  raw r = {value, 0, 0, NULL, NULL};
  return clg_graph_build_ex(g, &clg_op_Const, name, 0, NULL, 0, NULL, prepare, &r);
}

clg_node *clg_const_f32(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *values)
{
  raw r = {NULL, CLG_FLOAT32, rank, dims, values};
  return clg_graph_build_ex(g, &clg_op_Const, name, 0, NULL, 0, NULL, prepare, &r);
}

clg_node *clg_const_f64(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const double *values)
{
  raw r = {NULL, CLG_FLOAT64, rank, dims, values};
  return clg_graph_build_ex(g, &clg_op_Const, name, 0, NULL, 0, NULL, prepare, &r);
}
