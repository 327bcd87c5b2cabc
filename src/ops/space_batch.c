/* SpaceToBatchND and BatchToSpaceND (issue 23: rvm's dilated depthwise convolutions, which
 * TensorFlow lowers to SpaceToBatchND, the convolution, BatchToSpaceND), with TensorFlow 1.x's
 * semantics, checks and error texts (spacetobatch_op.cc, batchtospace_op.cc). block_shape and
 * paddings (crops) must be Consts: shapes are static. Each op's gradient is the other one on
 * the same block_shape and paddings, as TensorFlow's array_grad.py. Kernels: the strided copy
 * of backends (clg_copy_map_space_batch), one per block offset. */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

static const clg_attr_def s2b_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tblock_shape", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tpaddings", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static const clg_attr_def b2s_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tblock_shape", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Tcrops", .type = CLG_ATTR_DTYPE, .inferred = true},
};

static int64_t int_at(const clg_tensor *t, size_t k)
{
  const void *d = clg_tensor_const_data(t);
  return clg_tensor_dtype(t) == CLG_INT32 ? ((const int32_t *)d)[k] : ((const int64_t *)d)[k];
}

clg_code clg_space_batch_spec_of(const clg_node *n, clg_space_batch_spec *s)
{
  bool s2b = n->def == &clg_op_SpaceToBatchND;
  const char *pads = s2b ? "paddings" : "crops";
  const clg_out_desc *x = clg_node_in(n, 0);
  const clg_tensor *bt, *pt;
  clg_code code = clg_node_const_int_tensor(n, 1, "block_shape", &bt);
  if (code == CLG_OK)
    code = clg_node_const_int_tensor(n, 2, pads, &pt);
  if (code != CLG_OK)
    return code;
  char sh[192];
  if (clg_tensor_rank(bt) != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "block_shape rank should be 1 instead of %d",
                          clg_tensor_rank(bt));
  int64_t m = clg_tensor_dim(bt, 0);
  if (x->rank < 1 + m)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "input rank should be >= %lld instead of %d",
                          (long long)(1 + m), x->rank);
  if (clg_tensor_rank(pt) != 2 || clg_tensor_dim(pt, 0) != m || clg_tensor_dim(pt, 1) != 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s should have shape [%lld, 2] instead of %s",
                          pads, (long long)m, clg_tensor_shape_string(pt, sh, sizeof sh));
  s->m = (int)m;
  s->blocks = 1;
  for (int k = 0; k < s->m; k++) {
    s->block[k] = int_at(bt, (size_t)k);
    s->before[k] = int_at(pt, 2 * (size_t)k);
    s->after[k] = int_at(pt, 2 * (size_t)k + 1);
    /* TensorFlow checks the product; a value below 1 is refused on its own, naming it. */
    if (s->block[k] < 1)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "All values in block_shape must be positive, got value, %lld at index "
                            "%d.",
                            (long long)s->block[k], k);
    if (s->before[k] < 0 || s->after[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be non-negative",
                            s2b ? "Paddings" : "Crops");
    if (!clg_checked_mul(s->blocks, s->block[k], &s->blocks))
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "the product of block_shape passes %lld",
                            (long long)INT64_MAX);
  }
  return CLG_OK;
}

static clg_code s2b_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_space_batch_spec s;
  clg_code code = clg_space_batch_spec_of(n, &s);
  if (code != CLG_OK)
    return code;
  int64_t dims[CLG_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  if (!clg_checked_mul(x->dims[0], s.blocks, &dims[0]))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "the output batch passes %lld",
                          (long long)INT64_MAX);
  for (int k = 0; k < s.m; k++) {
    int64_t in = x->dims[k + 1];
    if (s.before[k] > INT64_MAX - in || s.after[k] > INT64_MAX - in - s.before[k])
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dimension %d padded passes %lld", k + 1,
                            (long long)INT64_MAX);
    int64_t padded = in + s.before[k] + s.after[k];
    if (padded % s.block[k] != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "padded_shape[%d]=%lld is not divisible by block_shape[%d]=%lld", k,
                            (long long)padded, k, (long long)s.block[k]);
    dims[k + 1] = padded / s.block[k];
  }
  if ((code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 2, clg_node_in(n, 2)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, dims);
}

static clg_code b2s_infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_space_batch_spec s;
  clg_code code = clg_space_batch_spec_of(n, &s);
  if (code != CLG_OK)
    return code;
  if (x->dims[0] % s.blocks != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Input batch dimension (%lld) is not divisible by product of block "
                          "sizes (%lld)",
                          (long long)x->dims[0], (long long)s.blocks);
  int64_t dims[CLG_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[0] = x->dims[0] / s.blocks;
  for (int k = 0; k < s.m; k++) {
    int64_t whole;
    if (!clg_checked_mul(x->dims[k + 1], s.block[k], &whole))
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dimension %d times its block passes %lld",
                            k + 1, (long long)INT64_MAX);
    /* Both crops are non-negative: whole - before - after cannot overflow. */
    int64_t cropped = whole - s.before[k] - s.after[k];
    if (cropped < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "cropped_shape[%d]=%lld must be non-negative",
                            k, (long long)cropped);
    dims[k + 1] = cropped;
  }
  if ((code = clg_infer_dtype_attr(n, 0, x->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 1, clg_node_in(n, 1)->dtype, false)) != CLG_OK ||
      (code = clg_infer_dtype_attr(n, 2, clg_node_in(n, 2)->dtype, false)) != CLG_OK)
    return code;
  return clg_node_set_output(n, 0, x->dtype, x->rank, dims);
}

/* array_grad.py: each op's gradient is the other on the same block_shape and paddings. */
static clg_code space_batch_grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_op_def *other =
      n->def == &clg_op_SpaceToBatchND ? &clg_op_BatchToSpaceND : &clg_op_SpaceToBatchND;
  dx[0] = clg_grad_build(g, other, 3, (clg_output[]){dy[0], n->inputs[1], n->inputs[2]}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_SpaceToBatchND = {
    .name = "SpaceToBatchND",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = s2b_attrs,
    .infer = s2b_infer,
    .inplace = -1,
    .grad = space_batch_grad,
};

const clg_op_def clg_op_BatchToSpaceND = {
    .name = "BatchToSpaceND",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = b2s_attrs,
    .infer = b2s_infer,
    .inplace = -1,
    .grad = space_batch_grad,
};

clg_node *clg_space_to_batch_nd(clg_graph *g, const char *name, clg_node *x, clg_node *block_shape,
                                clg_node *paddings)
{
  clg_output in[3] = {{x, 0}, {block_shape, 0}, {paddings, 0}};
  return clg_graph_build(g, &clg_op_SpaceToBatchND, name, 3, in, 0, NULL);
}

clg_node *clg_batch_to_space_nd(clg_graph *g, const char *name, clg_node *x, clg_node *block_shape,
                                clg_node *crops)
{
  clg_output in[3] = {{x, 0}, {block_shape, 0}, {crops, 0}};
  return clg_graph_build(g, &clg_op_BatchToSpaceND, name, 3, in, 0, NULL);
}
