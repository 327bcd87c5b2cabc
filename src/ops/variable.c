/* VariableV2 (state that lives on its device, one value per session), NoOp, and the builders
 * of clgraph/variables.h that make variables: tf.Variable, tf.get_variable under variable
 * scopes, and tf.global_variables_initializer. The values themselves live in the session
 * (runtime/variables.c); a VariableV2 is not a step of a run.
 * Kernels: backends/host/variable.c, backends/opencl/variable.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_CONTAINER, A_DTYPE, A_SHAPE, A_SHARED_NAME };

static const clg_attr_def var_attrs[] = {
    {.name = "container", .type = CLG_ATTR_STRING, .has_default = true, .def_s = ""},
    {.name = "dtype", .type = CLG_ATTR_DTYPE},
    {.name = "shape", .type = CLG_ATTR_SHAPE},
    {.name = "shared_name", .type = CLG_ATTR_STRING, .has_default = true, .def_s = ""},
};

static clg_code var_infer(clg_node *n)
{
  const clg_attr_value *s = &n->attrs[A_SHAPE];
  return clg_node_set_output(n, 0, n->attrs[A_DTYPE].dtype, s->n, s->v);
}

const clg_op_def clg_op_VariableV2 = {
    .name = "VariableV2",
    .num_inputs = 0,
    .num_outputs = 1,
    .num_attrs = 4,
    .attrs = var_attrs,
    .infer = var_infer,
    .inplace = -1,
    .flags = CLG_OP_VARIABLE,
};

static clg_code noop_infer(clg_node *n)
{
  (void)n;
  return CLG_OK;
}

const clg_op_def clg_op_NoOp = {
    .name = "NoOp",
    .num_inputs = 0,
    .num_outputs = 0,
    .num_attrs = 0,
    .attrs = NULL,
    .infer = noop_infer,
    .inplace = -1,
};

const clg_node *clg_node_ref_variable(const clg_node *n, int i)
{
  /* Update ops pass their variable through output 0; chains are short. */
  while (n && i >= 0 && i < n->num_inputs) {
    const clg_node *src = n->inputs[i].node;
    if (src->def->flags & CLG_OP_VARIABLE)
      return src;
    if (n->inputs[i].index != 0 || !(src->def->ref_inputs & 1u))
      return NULL;
    n = src;
    i = 0;
  }
  return NULL;
}

/* The variable node alone, with no initializer. */
static clg_node *build_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                                const int64_t *dims)
{
  clg_attr at[2] = {clg_attr_dtype("dtype", dtype), clg_attr_shape("shape", rank, dims)};
  /* tf.Variable's default names: "Variable", "Variable_1", ... */
  char *def = name ? NULL : clg_graph_unique_name(g, "Variable");
  if (!name && !def) {
    clg_graph_record_error(g);
    return NULL;
  }
  clg_node *v = clg_graph_build(g, &clg_op_VariableV2, name ? name : def, 0, NULL, 2, at);
  free(def);
  return v;
}

/* "<var>/<suffix>" for the nodes that belong to a variable. */
static char *sub_name(const clg_node *var, const char *suffix)
{
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_printf(&b, "%s/%s", var->name, suffix);
  return clg_strbuf_take(&b);
}

/* Builds "<var>/Assign" from value and registers the pair. */
static clg_node *attach_initializer(clg_graph *g, clg_node *var, clg_node *value)
{
  char *name = sub_name(var, "Assign");
  clg_node *a = name ? clg_assign(g, name, var, value) : NULL;
  free(name);
  if (!a || clg_graph_variable_register(g, var, a) != CLG_OK)
    return NULL;
  return var;
}

clg_node *clg_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                       const int64_t *dims, clg_node *initial_value)
{
  /* A default name must not be taken by a later default: build the node first. */
  clg_node *v = build_variable(g, name, dtype, rank, dims);
  if (!v)
    return NULL;
  if (!initial_value)
    return clg_graph_variable_register(g, v, NULL) == CLG_OK ? v : NULL;
  return attach_initializer(g, v, initial_value);
}

static bool same_shape(const clg_node *v, clg_dtype dtype, int rank, const int64_t *dims)
{
  if (v->outs[0].dtype != dtype || v->outs[0].rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (v->outs[0].dims[i] != dims[i])
      return false;
  return true;
}

/* Records a builder error on g the way builders do (sticky) and returns NULL. */
static clg_node *fail(clg_graph *g, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);

static clg_node *fail(clg_graph *g, clg_code code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  clg_error(code, "%s", msg);
  clg_graph_record_error(g);
  return NULL;
}

static clg_node *get_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                              const int64_t *dims, const clg_initializer *init);

/* tf.get_variable ignores name scopes (only variable scopes name its variables), so that
 * towers built under "tower_0", "tower_1" share "conv1/weights". */
clg_node *clg_get_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                           const int64_t *dims, const clg_initializer *init)
{
  char *saved = g ? clg_graph_name_scope_suspend(g) : NULL;
  clg_node *v = get_variable(g, name, dtype, rank, dims, init);
  if (g)
    clg_graph_name_scope_resume(g, saved);
  return v;
}

static clg_node *get_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                              const int64_t *dims, const clg_initializer *init)
{
  if (!g) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_get_variable: graph is NULL");
    return NULL;
  }
  if (clg_graph_status(g) != CLG_OK) {
    clg_error(clg_graph_status(g), "%s", clg_graph_error(g));
    return NULL;
  }
  if (!name || !name[0])
    return fail(g, CLG_INVALID_ARGUMENT, "clg_get_variable: a variable needs a name");
  if (rank < 0 || rank > CLG_MAX_RANK || (rank > 0 && !dims))
    return fail(g, CLG_INVALID_ARGUMENT, "clg_get_variable '%s': rank %d with dims %p", name, rank,
                (const void *)dims);
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_printf(&b, "%s%s", clg_graph_variable_prefix(g), name);
  char *full = clg_strbuf_take(&b);
  if (!full)
    return fail(g, CLG_RESOURCE_EXHAUSTED, "out of memory naming variable '%s'", name);
  clg_reuse reuse = clg_graph_variable_reuse(g);
  clg_node *existing = clg_graph_find(g, full);
  if (existing && !(existing->def->flags & CLG_OP_VARIABLE))
    existing = NULL; /* the name is taken by another op: the build below reports it */
  clg_node *out = NULL;
  if (existing && reuse == CLG_REUSE_FALSE) {
    fail(g, CLG_INVALID_ARGUMENT,
         "Variable %s already exists, disallowed. Did you mean to set reuse=True or "
         "reuse=tf.AUTO_REUSE in VarScope?",
         full);
  } else if (!existing && reuse == CLG_REUSE_TRUE) {
    fail(g, CLG_INVALID_ARGUMENT,
         "Variable %s does not exist, or was not created with tf.get_variable(). Did you mean "
         "to set reuse=tf.AUTO_REUSE in VarScope?",
         full);
  } else if (existing) {
    char want[96], have[96];
    clg_out_desc d = {dtype, rank, {0}};
    for (int i = 0; i < rank; i++)
      d.dims[i] = dims[i];
    if (same_shape(existing, dtype, rank, dims))
      out = existing;
    else
      fail(g, CLG_INVALID_ARGUMENT,
           "Trying to share variable %s, but specified shape %s and dtype %s and found shape "
           "%s and dtype %s.",
           full, clg_out_shape_string(&d, want, sizeof want), clg_dtype_name(dtype),
           clg_out_shape_string(&existing->outs[0], have, sizeof have),
           clg_dtype_name(existing->outs[0].dtype));
  } else {
    bool is_float = dtype == CLG_FLOAT32 || dtype == CLG_FLOAT64 || dtype == CLG_FLOAT16;
    clg_initializer def = is_float ? clg_init_glorot_uniform(0) : clg_init_zeros();
    clg_node *v = build_variable(g, full, dtype, rank, dims);
    char *iname = v ? sub_name(v, "Initializer/value") : NULL;
    clg_node *value =
        iname ? clg_initializer_op(g, iname, init ? init : &def, dtype, rank, dims) : NULL;
    free(iname);
    if (value)
      out = attach_initializer(g, v, value);
  }
  free(full);
  return out;
}

clg_node *clg_global_variables_initializer(clg_graph *g, const char *name)
{
  clg_node *op = clg_graph_build(g, &clg_op_NoOp, name ? name : "init", 0, NULL, 0, NULL);
  for (int i = 0; op && i < clg_graph_num_variables(g); i++) {
    clg_node *init;
    clg_graph_variable_at(g, i, &init);
    if (init && clg_node_add_control_input(op, init) != CLG_OK)
      return NULL;
  }
  return op;
}
