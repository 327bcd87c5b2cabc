/* Updates of a variable, in place on its buffer (TensorFlow's ref ops): Assign, AssignAdd,
 * AssignSub, ApplyGradientDescent, ApplyMomentum. Input 0 (and ApplyMomentum's accum) is a
 * reference edge: the kernel gets the variable's own buffer and output 0 is the variable.
 * The placer puts these nodes on their variable's device; the executor checks that what
 * they read is initialized. Assign takes any dtype (a byte copy); the arithmetic takes
 * float, and double where the device has it.
 * Kernels: backends/host/assign.c, backends/opencl/assign.c. */
#include "graph/graph.h"
#include "ops/ops.h"

/* --- inference --------------------------------------------------------------------------- */

static bool same_desc(const clg_out_desc *a, const clg_out_desc *b)
{
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

static clg_code need_variable(clg_node *n, int i)
{
  if (clg_node_ref_variable(n, i))
    return CLG_OK;
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "input %d ('%s') must be a variable (a VariableV2, or an update op on "
                        "one): %s changes it in place",
                        i, n->inputs[i].node->name, n->op);
}

/* Input i has the variable's dtype and shape (like) or is a scalar of its dtype. */
static clg_code need_input(clg_node *n, int i, bool scalar, const char *what)
{
  const clg_out_desc *v = clg_node_in(n, 0), *x = clg_node_in(n, i);
  char want[96], got[96];
  if (x->dtype != v->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s ('%s') is %s but the variable is %s", what,
                          n->inputs[i].node->name, clg_dtype_name(x->dtype),
                          clg_dtype_name(v->dtype));
  if (scalar ? x->rank != 0 : !same_desc(x, v))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s ('%s') has shape %s; want %s", what,
                          n->inputs[i].node->name, clg_out_shape_string(x, got, sizeof got),
                          scalar ? "[] (a scalar)" : clg_out_shape_string(v, want, sizeof want));
  return CLG_OK;
}

/* Sets T and output 0 (the variable). */
static clg_code finish(clg_node *n)
{
  const clg_out_desc *v = clg_node_in(n, 0);
  clg_attr_value *t = &n->attrs[0];
  if (t->set && t->dtype != v->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the variable is %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(v->dtype));
  t->set = true;
  t->dtype = v->dtype;
  return clg_node_set_output(n, 0, v->dtype, v->rank, v->dims);
}

static clg_code infer_assign(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_input(n, 1, false, "value");
  return code == CLG_OK ? finish(n) : code;
}

static clg_code infer_apply_gd(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_input(n, 1, true, "alpha");
  if (code == CLG_OK)
    code = need_input(n, 2, false, "delta");
  return code == CLG_OK ? finish(n) : code;
}

static clg_code infer_apply_momentum(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_variable(n, 1);
  if (code == CLG_OK)
    code = need_input(n, 1, false, "accum");
  if (code == CLG_OK)
    code = need_input(n, 2, true, "lr");
  if (code == CLG_OK)
    code = need_input(n, 3, false, "grad");
  if (code == CLG_OK)
    code = need_input(n, 4, true, "momentum");
  if (code == CLG_OK && clg_node_ref_variable(n, 0) == clg_node_ref_variable(n, 1))
    code = clg_node_error(n, CLG_INVALID_ARGUMENT, "var and accum are the same variable '%s'",
                          clg_node_ref_variable(n, 0)->name);
  return code == CLG_OK ? finish(n) : code;
}

/* --- definitions ------------------------------------------------------------------------- */

static const clg_attr_def assign_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
    {.name = "validate_shape", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};
static const clg_attr_def update_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
};
static const clg_attr_def momentum_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
    {.name = "use_nesterov", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
};

#define UPDATE_OP(NAME, NIN, ATTRS, INFER)                                                         \
  const clg_op_def clg_op_##NAME = {                                                               \
      .name = #NAME,                                                                               \
      .num_inputs = NIN,                                                                           \
      .num_outputs = 1,                                                                            \
      .num_attrs = sizeof ATTRS / sizeof ATTRS[0],                                                 \
      .attrs = ATTRS,                                                                              \
      .infer = INFER,                                                                              \
      .inplace = -1,                                                                               \
      .ref_inputs = NIN == 5 ? 3u : 1u,                                                            \
  }

const clg_op_def clg_op_Assign = {
    .name = "Assign",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = assign_attrs,
    .infer = infer_assign,
    .inplace = -1,
    .flags = CLG_OP_ASSIGNS,
    .ref_inputs = 1u,
};
UPDATE_OP(AssignAdd, 2, update_attrs, infer_assign);
UPDATE_OP(AssignSub, 2, update_attrs, infer_assign);
UPDATE_OP(ApplyGradientDescent, 3, update_attrs, infer_apply_gd);
UPDATE_OP(ApplyMomentum, 5, momentum_attrs, infer_apply_momentum);

/* --- builders ---------------------------------------------------------------------------- */

clg_node *clg_assign(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_Assign, name, 2, in, 0, NULL);
}

clg_node *clg_assign_add(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_AssignAdd, name, 2, in, 0, NULL);
}

clg_node *clg_assign_sub(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_AssignSub, name, 2, in, 0, NULL);
}

clg_node *clg_apply_gradient_descent(clg_graph *g, const char *name, clg_node *var, clg_node *alpha,
                                     clg_node *delta)
{
  clg_output in[3] = {{var, 0}, {alpha, 0}, {delta, 0}};
  return clg_graph_build(g, &clg_op_ApplyGradientDescent, name, 3, in, 0, NULL);
}

clg_node *clg_apply_momentum(clg_graph *g, const char *name, clg_node *var, clg_node *accum,
                             clg_node *lr, clg_node *grad, clg_node *momentum)
{
  clg_output in[5] = {{var, 0}, {accum, 0}, {lr, 0}, {grad, 0}, {momentum, 0}};
  return clg_graph_build(g, &clg_op_ApplyMomentum, name, 5, in, 0, NULL);
}
