/* Select(condition, t, e), TensorFlow 1.x's tf.where with three arguments: t where condition
 * is true, else e. t and e have one dtype and shape; condition is bool, of t's shape, a
 * scalar, or a vector along t's first dimension. Any dtype (a copy of the chosen element's
 * bytes), so an infinite or NaN element reaches the output only where it is chosen. */
#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

enum { A_T };

static const clg_attr_def attrs[] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static bool same_shape(const clg_out_desc *a, const clg_out_desc *b)
{
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return false;
  return true;
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *c = clg_node_in(n, 0), *t = clg_node_in(n, 1), *e = clg_node_in(n, 2);
  char sc[192], st[192], se[192];
  clg_out_shape_string(c, sc, sizeof sc);
  clg_out_shape_string(t, st, sizeof st);
  clg_out_shape_string(e, se, sizeof se);
  if (c->dtype != CLG_BOOL)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "condition must be bool, not %s",
                          clg_dtype_name(c->dtype));
  if (t->dtype != e->dtype || !same_shape(t, e))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "'then' (%s %s) and 'else' (%s %s) must have one dtype and shape",
                          clg_dtype_name(t->dtype), st, clg_dtype_name(e->dtype), se);
  if (!same_shape(c, t) && c->rank != 0 &&
      !(c->rank == 1 && t->rank >= 1 && c->dims[0] == t->dims[0]))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "condition %s must be a scalar, a vector of the first dimension of "
                          "'then' %s, or of its shape",
                          sc, st);
  clg_attr_value *a = &n->attrs[A_T];
  if (a->set && a->dtype != t->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but 'then' is %s",
                          clg_dtype_name(a->dtype), clg_dtype_name(t->dtype));
  a->set = true;
  a->dtype = t->dtype;
  return clg_node_set_output(n, 0, t->dtype, t->rank, t->dims);
}

/* Output elements per condition element: 1 (one shape), all (a scalar), or a row of t. */
static size_t span_of(const clg_node *n)
{
  const clg_out_desc *c = clg_node_in(n, 0);
  size_t count = clg_out_count(&n->outs[0]), nc = clg_out_count(c);
  return nc == count ? 1 : c->rank == 0 ? count : count / nc;
}

#define SELECT_LOOP(TE)                                                                            \
  do {                                                                                             \
    const TE *t = c->in[1].host, *e = c->in[2].host;                                               \
    TE *y = c->out[0].host;                                                                        \
    for (size_t k = 0; k < count / span; k++)                                                      \
      for (size_t i = k * span; i < (k + 1) * span; i++)                                           \
        y[i] = cond[k] ? t[i] : e[i];                                                              \
  } while (0)

static clg_code host_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (count == 0)
    return CLG_OK;
  size_t span = span_of(c->node);
  const uint8_t *cond = c->in[0].host;
  switch (clg_dtype_size(c->node->outs[0].dtype)) {
  case 1:
    SELECT_LOOP(uint8_t);
    break;
  case 2:
    SELECT_LOOP(uint16_t);
    break;
  case 4:
    SELECT_LOOP(uint32_t);
    break;
  default:
    SELECT_LOOP(uint64_t);
    break;
  }
  return CLG_OK;
}

/* Built as the float program; T is unused (elements are moved as unsigned integers). */
static const clg_cl_text source = {
    "Select",
    "#define CLG_SELECT(name, TE)                                                          \\\n"
    "  __kernel void name(__global const uchar *c, ulong co, __global const TE *t, ulong to, \\\n"
    "                     __global const TE *e, ulong eo, __global TE *y, ulong yo, ulong n, \\\n"
    "                     ulong span)                                                      \\\n"
    "  {                                                                                   \\\n"
    "    ulong i = get_global_id(0);                                                       \\\n"
    "    if (i < n)                                                                        \\\n"
    "      y[yo + i] = c[co + i / span] ? t[to + i] : e[eo + i];                           \\\n"
    "  }\n"
    "CLG_SELECT(clg_select1, uchar)\n"
    "CLG_SELECT(clg_select2, ushort)\n"
    "CLG_SELECT(clg_select4, uint)\n"
    "CLG_SELECT(clg_select8, ulong)\n"};

static clg_code cl_run(const clg_kernel_ctx *c)
{
  static const char *const names[9] = {
      NULL, "clg_select1", "clg_select2", NULL, "clg_select4", NULL, NULL, NULL, "clg_select8"};
  cl_ulong n = clg_out_count(&c->node->outs[0]);
  if (n == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  cl_ulong co = c->in[0].offset, to = c->in[1].offset / es, eo = c->in[2].offset / es,
           yo = c->out[0].offset / es, span = span_of(c->node);
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof co, &co},
                       {sizeof(cl_mem), &c->in[1].mem},
                       {sizeof to, &to},
                       {sizeof(cl_mem), &c->in[2].mem},
                       {sizeof eo, &eo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n},
                       {sizeof span, &span}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &source, names[es], args, 10, (size_t)n);
}

/* Elements of 1, 2, 4 or 8 bytes: every dtype. */
static bool supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  size_t es = clg_dtype_size(n->outs[0].dtype);
  return es == 1 || es == 2 || es == 4 || es == 8;
}

static const clg_kernel_def kernels[] = {{CLG_KIND_HOST, supports, host_run, NULL, NULL},
                                         {CLG_KIND_OPENCL, supports, cl_run, NULL, NULL}};

/* TensorFlow's _SelectGrad: none for the condition, dy where it chose t (else 0) for t, and
 * the rest for e. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_output cond = n->inputs[0];
  clg_output zeros = clg_grad_build(g, &clg_op_ZerosLike, 1, &dy[0], 0, NULL);
  dx[1] = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){cond, dy[0], zeros}, 0, NULL);
  dx[2] = clg_grad_build(g, &clg_op_Select, 3, (clg_output[]){cond, zeros, dy[0]}, 0, NULL);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Select = {
    .name = "Select",
    .num_inputs = 3,
    .num_outputs = 1,
    .num_attrs = 1,
    .attrs = attrs,
    .infer = infer,
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = -1,
    .grad = grad,
};

clg_node *clg_select(clg_graph *g, const char *name, clg_node *condition, clg_node *t, clg_node *e)
{
  clg_output in[3] = {{condition, 0}, {t, 0}, {e, 0}};
  return clg_graph_build(g, &clg_op_Select, name, 3, in, 0, NULL);
}
