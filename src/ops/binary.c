/* Add, Sub, Mul: element-wise on equal shapes, or a scalar against a tensor in either
 * order. Float everywhere, double on the host and on devices with fp64. The output may
 * reuse input 0's buffer. */
#include "graph/graph.h"
#include "kernels/kernels.h"
#include "memory/memory.h"

enum { A_T };

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static clg_code infer(clg_node *n)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  if (a->dtype != b->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(a->dtype), clg_dtype_name(b->dtype));
  bool same = a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++)
    same = a->dims[i] == b->dims[i];
  if (!same && a->rank != 0 && b->rank != 0) {
    char sa[192], sb[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shapes differ: %s vs %s",
                          clg_out_shape_string(a, sa, sizeof sa),
                          clg_out_shape_string(b, sb, sizeof sb));
  }
  clg_attr_value *t = &n->attrs[A_T];
  if (t->set && t->dtype != a->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the inputs are %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(a->dtype));
  t->set = true;
  t->dtype = a->dtype;
  const clg_out_desc *shape = a->rank == 0 ? b : a;
  return clg_node_set_output(n, 0, a->dtype, shape->rank, shape->dims);
}

static clg_binop binop(const clg_node *n);

static clg_code host_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_host_binary(binop(n), n->outs[0].dtype, c->in[0].host, clg_out_count(clg_node_in(n, 0)),
                  c->in[1].host, clg_out_count(clg_node_in(n, 1)), c->out[0].host,
                  clg_out_count(&n->outs[0]));
  return CLG_OK;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  return clg_cl_binary(c->dev, binop(n), n->outs[0].dtype, &c->in[0],
                       clg_out_count(clg_node_in(n, 0)), &c->in[1],
                       clg_out_count(clg_node_in(n, 1)), &c->out[0], clg_out_count(&n->outs[0]));
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, clg_kernel_float_or_double, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, clg_kernel_float_or_double, cl_run, NULL, NULL}};

/* Add: both get dy; Sub: dy and -dy; Mul: dy * b and dy * a. An input broadcast as a scalar
 * gets its gradient summed over the elements it was added to. */
static clg_output reduce_to(clg_graph *g, clg_output d, const clg_out_desc *input,
                            const clg_out_desc *out)
{
  if (input->rank == out->rank)
    return d;
  /* A scalar against a tensor: the sum of every element. */
  int64_t axes[CLG_MAX_RANK];
  for (int i = 0; i < out->rank; i++)
    axes[i] = i;
  clg_attr at[2] = {clg_attr_int_list("axis", out->rank, axes), clg_attr_bool("keep_dims", 0)};
  return clg_out(clg_op(g, "Sum", NULL, 1, &d, 2, at), 0);
}

static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  const clg_op_def *def = n->def;
  clg_output a = n->inputs[0], b = n->inputs[1];
  clg_output da = dy[0], db = dy[0];
  if (def == &clg_op_Sub)
    db = clg_grad_build(g, &clg_op_Neg, 1, &dy[0], 0, NULL);
  else if (def == &clg_op_Mul) {
    da = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){dy[0], b}, 0, NULL);
    db = clg_grad_build(g, &clg_op_Mul, 2, (clg_output[]){a, dy[0]}, 0, NULL);
  }
  dx[0] = reduce_to(g, da, clg_node_in(n, 0), &n->outs[0]);
  dx[1] = reduce_to(g, db, clg_node_in(n, 1), &n->outs[0]);
  return clg_graph_status(g);
}

#define BINARY_DEF(OP)                                                                             \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = 2,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = 1,                                                                              \
      .attrs = attrs,                                                                              \
      .infer = infer,                                                                              \
      .kernels = kernels,                                                                          \
      .num_kernels = 2,                                                                            \
      .inplace = 0,                                                                                \
      .grad = grad,                                                                                \
  };
BINARY_DEF(Add)
BINARY_DEF(Sub)
BINARY_DEF(Mul)

static clg_binop binop(const clg_node *n)
{
  return n->def == &clg_op_Add   ? CLG_BINOP_ADD
         : n->def == &clg_op_Sub ? CLG_BINOP_SUB
                                 : CLG_BINOP_MUL;
}

static clg_node *build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *a,
                       clg_node *b)
{
  clg_output in[2] = {{a, 0}, {b, 0}};
  return clg_graph_build(g, def, name, 2, in, 0, NULL);
}

clg_node *clg_add(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_Add, name, a, b);
}

clg_node *clg_sub(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_Sub, name, a, b);
}

clg_node *clg_mul(clg_graph *g, const char *name, clg_node *a, clg_node *b)
{
  return build(g, &clg_op_Mul, name, a, b);
}
