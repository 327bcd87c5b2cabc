/* The graph: nodes in creation order, device scopes, the sticky first error, the one
 * builder path every op takes (clg_graph_build: inputs, attributes, the op's inference),
 * and the queries the public header and the runtime use. Op-specific checks live with
 * each op under src/ops/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#define GRAPH_ERROR_MAX 4096
#define SCOPE_TEXT_MAX 256

typedef struct var_scope {
  char *prefix; /* "outer/inner/" */
  int reuse;    /* clg_reuse */
} var_scope;

/* A variable and the node that initializes it (NULL: none). */
typedef struct var_entry {
  clg_node *var, *init;
} var_entry;

typedef struct device_scope {
  clg_devname name; /* merged with the enclosing scopes */
  char *text;       /* its clg_devname_format text, "" when empty; in g->texts */
} device_scope;

struct clg_graph {
  clg_node **nodes;
  int num_nodes, cap_nodes;
  clg_graph_names *names;
  device_scope *scopes;
  int num_scopes, cap_scopes;
  char **texts; /* scope texts, owned here so that nodes can point at them */
  int num_texts, cap_texts;
  var_scope *vscopes;
  int num_vscopes, cap_vscopes;
  var_entry *vars;
  int num_vars, cap_vars;
  bool has_seed;
  int64_t seed;
  uint64_t version; /* bumped by every node and control edge */
  char *name_scope; /* "a/b/" while name scopes are open, else NULL */
  int *scope_len;   /* length of name_scope before each open scope */
  int num_name_scopes, cap_name_scopes;
  clg_code code; /* first error, sticky */
  char error[GRAPH_ERROR_MAX];
};

clg_graph *clg_graph_new(void)
{
  clg_graph *g = calloc(1, sizeof *g);
  if (g)
    g->names = clg_graph_names_new();
  if (!g || !g->names) {
    free(g);
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory creating a graph");
    return NULL;
  }
  return g;
}

static void attr_clear(clg_attr_value *a)
{
  free(a->s);
  free(a->v);
  clg_tensor_free(a->tensor);
  memset(a, 0, sizeof *a);
}

static void node_free(clg_node *n)
{
  if (!n)
    return;
  free(n->name);
  for (int i = 0; n->def && i < n->def->num_attrs; i++)
    attr_clear(&n->attrs[i]);
  free(n->control);
  free(n); /* inputs, outs and attrs share the node's allocation */
}

void clg_graph_free(clg_graph *g)
{
  if (!g)
    return;
  for (int i = 0; i < g->num_nodes; i++)
    node_free(g->nodes[i]);
  free(g->nodes);
  free(g->scopes);
  free(g->name_scope);
  free(g->scope_len);
  for (int i = 0; i < g->num_texts; i++)
    free(g->texts[i]);
  free(g->texts);
  clg_graph_names_free(g->names);
  for (int i = 0; i < g->num_vscopes; i++)
    free(g->vscopes[i].prefix);
  free(g->vscopes);
  free(g->vars);
  free(g);
}

clg_code clg_graph_status(const clg_graph *g) { return g ? g->code : CLG_INVALID_ARGUMENT; }

const char *clg_graph_error(const clg_graph *g) { return g ? g->error : "graph is NULL"; }

/* Makes this thread's last error the graph's sticky error (the first one wins). */
static clg_code graph_record(clg_graph *g)
{
  if (g->code == CLG_OK) {
    g->code = clg_last_code();
    if (g->code == CLG_OK) /* a callee failed without saying why: still an error */
      g->code = CLG_INTERNAL;
    snprintf(g->error, sizeof g->error, "%s", clg_last_error());
  }
  return g->code;
}

clg_code clg_graph_fail(clg_graph *g) { return g ? graph_record(g) : clg_last_code(); }

/* Repeats the sticky error as this thread's last error, for calls refused because of it. */
static clg_code graph_repeat(const clg_graph *g) { return clg_error(g->code, "%s", g->error); }

/* --- device scopes --------------------------------------------------------------------- */

static clg_code scope_push(clg_graph *g, const clg_devname *name)
{
  if (g->num_scopes == g->cap_scopes) {
    int cap = g->cap_scopes ? 2 * g->cap_scopes : 8;
    device_scope *s = realloc(g->scopes, (size_t)cap * sizeof *s);
    if (!s) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a device scope");
      return graph_record(g);
    }
    g->scopes = s;
    g->cap_scopes = cap;
  }
  static char empty[] = "";
  char *text = empty;
  if (!clg_devname_is_empty(name)) {
    char buf[SCOPE_TEXT_MAX];
    clg_devname_format(name, buf, sizeof buf);
    if (g->num_texts == g->cap_texts) {
      int cap = g->cap_texts ? 2 * g->cap_texts : 8;
      char **t = realloc(g->texts, (size_t)cap * sizeof *t);
      if (!t) {
        clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a device scope");
        return graph_record(g);
      }
      g->texts = t;
      g->cap_texts = cap;
    }
    if (!(text = clg_strdup(buf)))
      return graph_record(g);
    g->texts[g->num_texts++] = text;
  }
  device_scope *top = &g->scopes[g->num_scopes++];
  top->name = *name;
  top->text = text;
  return CLG_OK;
}

clg_code clg_graph_push_device(clg_graph *g, const char *spec)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_push_device: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  clg_devname merged;
  memset(&merged, 0, sizeof merged);
  /* NULL or "" resets to no device, as tf.device(None). */
  if (spec && spec[0]) {
    clg_devname inner;
    if (clg_devname_parse_scope(spec, &inner) != CLG_OK) {
      clg_error_prefix("device scope '%s': ", spec);
      return graph_record(g);
    }
    if (g->num_scopes > 0)
      merged = g->scopes[g->num_scopes - 1].name;
    /* Python's make_merged_spec: every field the inner spec sets wins. */
    clg_devname_merge_override(&merged, &inner);
  }
  return scope_push(g, &merged);
}

clg_code clg_graph_pop_device(clg_graph *g)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_pop_device: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (g->num_scopes == 0) {
    clg_error(CLG_FAILED_PRECONDITION, "clg_graph_pop_device: no device scope is open");
    return graph_record(g);
  }
  g->num_scopes--;
  return CLG_OK;
}

clg_code clg_graph_record_error(clg_graph *g) { return graph_record(g); }

char *clg_graph_unique_name(clg_graph *g, const char *base)
{
  return g ? clg_graph_names_unique(g->names, base) : NULL;
}

/* --- variable scopes, variables and the graph seed ------------------------------------- */

clg_code clg_graph_push_variable_scope(clg_graph *g, const char *name, clg_reuse reuse)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_push_variable_scope: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (!name || !clg_graph_name_valid(name) || reuse < CLG_REUSE_INHERIT || reuse > CLG_REUSE_AUTO) {
    clg_error(CLG_INVALID_ARGUMENT,
              "variable scope '%s' (reuse %d): a scope is a valid node name and reuse one of "
              "CLG_REUSE_INHERIT, CLG_REUSE_FALSE, CLG_REUSE_TRUE, CLG_REUSE_AUTO",
              name ? name : "(NULL)", (int)reuse);
    return graph_record(g);
  }
  if (g->num_vscopes == g->cap_vscopes) {
    int cap = g->cap_vscopes ? 2 * g->cap_vscopes : 4;
    var_scope *v = realloc(g->vscopes, (size_t)cap * sizeof *v);
    if (!v) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a variable scope");
      return graph_record(g);
    }
    g->vscopes = v;
    g->cap_vscopes = cap;
  }
  const var_scope *outer = g->num_vscopes ? &g->vscopes[g->num_vscopes - 1] : NULL;
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_printf(&b, "%s%s/", outer ? outer->prefix : "", name);
  char *prefix = clg_strbuf_take(&b);
  if (!prefix) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a variable scope");
    return graph_record(g);
  }
  /* As tf.variable_scope: reuse is inherited, and once on it stays on inside. */
  int r = outer ? outer->reuse : CLG_REUSE_FALSE;
  if (reuse != CLG_REUSE_INHERIT && !(r == CLG_REUSE_TRUE && reuse == CLG_REUSE_FALSE))
    r = reuse;
  g->vscopes[g->num_vscopes++] = (var_scope){prefix, r};
  return CLG_OK;
}

clg_code clg_graph_pop_variable_scope(clg_graph *g)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_pop_variable_scope: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (g->num_vscopes == 0) {
    clg_error(CLG_FAILED_PRECONDITION, "clg_graph_pop_variable_scope: no variable scope is open");
    return graph_record(g);
  }
  free(g->vscopes[--g->num_vscopes].prefix);
  return CLG_OK;
}

const char *clg_graph_variable_prefix(const clg_graph *g)
{
  return g->num_vscopes ? g->vscopes[g->num_vscopes - 1].prefix : "";
}

clg_reuse clg_graph_variable_reuse(const clg_graph *g)
{
  return g->num_vscopes ? (clg_reuse)g->vscopes[g->num_vscopes - 1].reuse : CLG_REUSE_FALSE;
}

clg_code clg_graph_variable_register(clg_graph *g, clg_node *var, clg_node *init)
{
  if (g->num_vars == g->cap_vars) {
    int cap = g->cap_vars ? 2 * g->cap_vars : 8;
    var_entry *v = realloc(g->vars, (size_t)cap * sizeof *v);
    if (!v) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory registering variable '%s'", var->name);
      return graph_record(g);
    }
    g->vars = v;
    g->cap_vars = cap;
  }
  g->vars[g->num_vars++] = (var_entry){var, init};
  return CLG_OK;
}

int clg_graph_num_variables(const clg_graph *g) { return g ? g->num_vars : 0; }

clg_node *clg_graph_variable_at(const clg_graph *g, int i, clg_node **init)
{
  if (!g || i < 0 || i >= g->num_vars)
    return NULL;
  if (init)
    *init = g->vars[i].init;
  return g->vars[i].var;
}

clg_code clg_graph_set_random_seed(clg_graph *g, int64_t seed)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_set_random_seed: graph is NULL");
  g->has_seed = true;
  g->seed = seed;
  return CLG_OK;
}

bool clg_graph_random_seed(const clg_graph *g, int64_t *seed)
{
  if (g->has_seed)
    *seed = g->seed;
  return g->has_seed;
}

/* --- the builder protocol -------------------------------------------------------------- */

clg_node *clg_graph_node_abandon(clg_node *n)
{
  graph_record(n->graph);
  node_free(n);
  return NULL;
}

clg_node *clg_graph_node_fail(clg_node *n, clg_code code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  clg_error_v(code, fmt, ap);
  va_end(ap);
  return clg_graph_node_abandon(n);
}

/* The node's name: the given one if valid and free, else the default for op. NULL (error
 * recorded) on failure. */
static char *node_name(clg_graph *g, const char *op, const char *name)
{
  char stack[256];
  char *full = NULL;
  if (g->name_scope) { /* inside a name scope: "scope/name", "scope/Op", "scope/Op_1" */
    size_t len = strlen(g->name_scope) + strlen(name ? name : op) + 1;
    full = len <= sizeof stack ? stack : malloc(len);
    if (!full) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory naming a node");
      return NULL;
    }
    size_t scope_len = strlen(g->name_scope);
    memcpy(full, g->name_scope, scope_len);
    memcpy(full + scope_len, name ? name : op, len - scope_len); /* with its NUL */
    if (name)
      name = full;
    else
      op = full;
  }
  char *out = NULL;
  if (!name) {
    out = clg_graph_names_unique(g->names, op);
  } else if (!clg_graph_name_valid(name)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "%s: '%s' is not a valid node name (names match [A-Za-z0-9.][A-Za-z0-9_.\\-/]*)", op,
              name);
  } else if (clg_graph_names_find(g->names, name) >= 0) {
    clg_error(CLG_INVALID_ARGUMENT, "Duplicate node name in graph: '%s'", name);
  } else if (clg_graph_names_use(g->names, name) == CLG_OK) {
    out = clg_strdup(name);
  }
  if (full && full != stack)
    free(full);
  return out;
}

clg_code clg_graph_push_name_scope(clg_graph *g, const char *scope)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_push_name_scope: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (!scope || !clg_graph_name_valid(scope)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "name scope '%s' is not a valid name (names match [A-Za-z0-9.][A-Za-z0-9_.\\-/]*)",
              scope ? scope : "(NULL)");
    return graph_record(g);
  }
  if (g->num_name_scopes == g->cap_name_scopes) {
    int cap = g->cap_name_scopes ? 2 * g->cap_name_scopes : 8;
    int *l = realloc(g->scope_len, sizeof *l * (size_t)cap);
    if (!l) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a name scope");
      return graph_record(g);
    }
    g->scope_len = l;
    g->cap_name_scopes = cap;
  }
  size_t old = g->name_scope ? strlen(g->name_scope) : 0;
  char *grown = realloc(g->name_scope, old + strlen(scope) + 2);
  if (!grown) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a name scope");
    return graph_record(g);
  }
  if (old == 0)
    grown[0] = '\0';
  strcat(grown, scope);
  strcat(grown, "/");
  g->name_scope = grown;
  g->scope_len[g->num_name_scopes++] = (int)old;
  return CLG_OK;
}

char *clg_graph_name_scope_suspend(clg_graph *g)
{
  char *saved = g->name_scope;
  g->name_scope = NULL;
  return saved;
}

void clg_graph_name_scope_resume(clg_graph *g, char *saved)
{
  free(g->name_scope); /* anything opened meanwhile (nothing, when scopes balance) */
  g->name_scope = saved;
}

clg_code clg_graph_pop_name_scope(clg_graph *g)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_pop_name_scope: graph is NULL");
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (g->num_name_scopes == 0) {
    clg_error(CLG_FAILED_PRECONDITION, "clg_graph_pop_name_scope: no name scope is open");
    return graph_record(g);
  }
  int len = g->scope_len[--g->num_name_scopes];
  if (len == 0) {
    free(g->name_scope);
    g->name_scope = NULL;
  } else {
    g->name_scope[len] = '\0';
  }
  return CLG_OK;
}

/* Copies a caller's attribute value into a node's slot; a tensor that is *moved passes to the
 * slot instead (*moved then NULL). */
static clg_code attr_set(clg_node *n, clg_attr_value *slot, const clg_attr *a, clg_tensor **moved)
{
  attr_clear(slot);
  slot->set = true;
  slot->type = a->type;
  switch (a->type) {
  case CLG_ATTR_INT:
    slot->i = a->v.i;
    break;
  case CLG_ATTR_FLOAT:
    slot->f = a->v.f;
    break;
  case CLG_ATTR_BOOL:
    slot->b = a->v.b != 0;
    break;
  case CLG_ATTR_STRING:
    if (!a->v.s)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s' is a NULL string", a->name);
    if (!(slot->s = clg_strdup(a->v.s)))
      return CLG_RESOURCE_EXHAUSTED;
    break;
  case CLG_ATTR_DTYPE: /* checked by the op, which names the dtypes it takes */
    slot->dtype = a->v.dtype;
    break;
  case CLG_ATTR_INT_LIST:
  case CLG_ATTR_SHAPE:
    /* A shape's rank and dims are checked by the op's inference (clg_node_set_output). */
    if (a->type == CLG_ATTR_INT_LIST && (a->v.list.n < 0 || (a->v.list.n > 0 && !a->v.list.v)))
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s': a list of %d values at %p",
                            a->name, a->v.list.n, (const void *)a->v.list.v);
    slot->n = a->v.list.n;
    if (slot->n > 0 && a->v.list.v) {
      if (!(slot->v = malloc(sizeof *slot->v * (size_t)slot->n)))
        return clg_node_error(n, CLG_RESOURCE_EXHAUSTED, "out of memory");
      memcpy(slot->v, a->v.list.v, sizeof *slot->v * (size_t)slot->n);
    }
    break;
  case CLG_ATTR_TENSOR: {
    const clg_tensor *t = a->v.tensor;
    if (!t)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s' is a NULL tensor", a->name);
    if (moved && *moved == t) {
      slot->tensor = *moved;
      *moved = NULL;
      break;
    }
    int64_t dims[CLG_MAX_RANK];
    for (int i = 0; i < clg_tensor_rank(t); i++)
      dims[i] = clg_tensor_dim(t, i);
    slot->tensor =
        clg_tensor_new(clg_tensor_dtype(t), clg_tensor_rank(t), dims, clg_tensor_const_data(t));
    if (!slot->tensor)
      return clg_node_error(n, clg_last_code(), "%s", clg_last_error());
    break;
  }
  default:
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s' has unknown type %d", a->name,
                          (int)a->type);
  }
  return CLG_OK;
}

static const char *attr_type_name(clg_attr_type t)
{
  static const char *const names[] = {"?",     "int",      "float", "bool",  "string",
                                      "dtype", "int list", "shape", "tensor"};
  return (int)t >= 1 && (int)t <= CLG_ATTR_TENSOR ? names[t] : "?";
}

/* Defaults, then the caller's attributes (given[i]: the index in attrs of attribute i's
 * value, or -1). */
static clg_code attrs_fill(clg_node *n, int num_attrs, const clg_attr *attrs, int *given,
                           clg_tensor **moved)
{
  const clg_op_def *def = n->def;
  for (int i = 0; i < def->num_attrs; i++) {
    const clg_attr_def *d = &def->attrs[i];
    clg_attr_value *v = &n->attrs[i];
    v->type = d->type;
    if (!d->has_default)
      continue;
    v->set = true;
    v->i = d->def_i;
    v->b = d->def_i != 0;
    v->f = d->def_f;
    if (d->def_s && !(v->s = clg_strdup(d->def_s)))
      return CLG_RESOURCE_EXHAUSTED;
  }
  if (num_attrs < 0 || (num_attrs > 0 && !attrs))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "num_attrs is %d but attrs is NULL", num_attrs);
  for (int i = 0; i < def->num_attrs; i++)
    given[i] = -1;
  for (int k = 0; k < num_attrs; k++) {
    const clg_attr *a = &attrs[k];
    int i = 0;
    while (i < def->num_attrs && !(a->name && strcmp(a->name, def->attrs[i].name) == 0))
      i++;
    if (i == def->num_attrs)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s has no attribute '%s'", def->name,
                            a->name ? a->name : "(NULL)");
    if (given[i] >= 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s' is given twice", a->name);
    given[i] = k;
    if (a->type != def->attrs[i].type)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute '%s' must be a %s, got a %s",
                            a->name, attr_type_name(def->attrs[i].type), attr_type_name(a->type));
    clg_code code = attr_set(n, &n->attrs[i], a, moved);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

static clg_code attrs_check_required(const clg_node *n)
{
  const clg_op_def *def = n->def;
  for (int i = 0; i < def->num_attrs; i++)
    if (!n->attrs[i].set && !def->attrs[i].inferred)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "missing attribute '%s' (a %s)",
                            def->attrs[i].name, attr_type_name(def->attrs[i].type));
  return CLG_OK;
}

clg_node *clg_graph_build(clg_graph *g, const clg_op_def *def, const char *name, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs)
{
  return clg_graph_build_ex(g, def, name, num_inputs, inputs, num_attrs, attrs, NULL, NULL);
}

static clg_node *build(clg_graph *g, const clg_op_def *def, const char *name, int num_inputs,
                       const clg_output *inputs, int num_attrs, const clg_attr *attrs,
                       clg_code (*prepare)(clg_node *n, void *ctx), void *ctx, clg_tensor **moved)
{
  const char *op = def ? def->name : "(op)";
  if (!g) {
    clg_error(CLG_INVALID_ARGUMENT, "%s: graph is NULL", op);
    return NULL;
  }
  if (g->code != CLG_OK) {
    graph_repeat(g);
    return NULL;
  }
  if (!def) {
    clg_error(CLG_INTERNAL, "an op builder has no definition");
    graph_record(g);
    return NULL;
  }
  int slots = num_inputs > 0 && inputs && num_inputs <= 1 << 20 ? num_inputs : 0;
  int num_outputs = def->num_outputs;
  if (num_outputs == CLG_OP_VARIADIC) { /* the count from its attribute, checked below */
    num_outputs = 0;
    for (int k = 0; k < num_attrs && attrs; k++)
      if (attrs[k].name && def->outputs_attr && strcmp(attrs[k].name, def->outputs_attr) == 0 &&
          attrs[k].type == CLG_ATTR_INT && attrs[k].v.i >= 1 && attrs[k].v.i <= 1 << 16)
        num_outputs = (int)attrs[k].v.i;
  }
  /* One allocation: the node, then its inputs, outputs and attributes. */
  size_t in_at = sizeof(clg_node);
  size_t out_at = in_at + sizeof(clg_output) * (size_t)slots;
  size_t attr_at;
  out_at = (out_at + 15) & ~(size_t)15;
  attr_at = (out_at + sizeof(clg_out_desc) * (size_t)num_outputs + 15) & ~(size_t)15;
  size_t total = attr_at + sizeof(clg_attr_value) * (size_t)def->num_attrs;
  char *mem = calloc(1, total);
  if (!mem) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory creating a node", op);
    graph_record(g);
    return NULL;
  }
  clg_node *n = (clg_node *)mem;
  n->graph = g;
  n->def = def;
  n->op = op;
  n->index = -1;
  n->inputs = (clg_output *)(mem + in_at);
  n->outs = (clg_out_desc *)(mem + out_at);
  n->num_outputs = num_outputs;
  n->attrs = (clg_attr_value *)(mem + attr_at);
  n->name = node_name(g, op, name);
  if (!n->name)
    return clg_graph_node_abandon(n);
  if (def->num_outputs == CLG_OP_VARIADIC && num_outputs == 0)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                               "%s '%s': attribute %s (the number of outputs) must be given, "
                               "from 1 to %d",
                               op, n->name, def->outputs_attr ? def->outputs_attr : "?", 1 << 16);
  if (def->num_inputs == CLG_OP_VARIADIC ? num_inputs < 1 : num_inputs != def->num_inputs)
    return clg_graph_node_fail(
        n, CLG_INVALID_ARGUMENT, "%s '%s': needs %s%d input%s, got %d", op, n->name,
        def->num_inputs == CLG_OP_VARIADIC ? "at least " : "",
        def->num_inputs == CLG_OP_VARIADIC ? 1 : def->num_inputs,
        def->num_inputs == 1 || def->num_inputs == CLG_OP_VARIADIC ? "" : "s", num_inputs);
  if (num_inputs > 0 && !inputs)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': inputs is NULL", op, n->name);
  if (num_inputs > slots)
    return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': %d inputs are too many", op,
                               n->name, num_inputs);
  for (int i = 0; i < num_inputs; i++) {
    const clg_output *in = &inputs[i];
    if (!in->node)
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': input %d is NULL", op, n->name,
                                 i);
    if (in->node->graph != g)
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                                 "%s '%s': input %d ('%s') belongs to another graph", op, n->name,
                                 i, in->node->name);
    if (in->index < 0 || in->index >= in->node->num_outputs)
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                                 "%s '%s': input %d is '%s:%d', but '%s' has %d output%s", op,
                                 n->name, i, in->node->name, in->index, in->node->name,
                                 in->node->num_outputs, in->node->num_outputs == 1 ? "" : "s");
    n->inputs[i] = *in;
  }
  n->num_inputs = num_inputs;
  if ((size_t)def->num_attrs > 64)
    return clg_graph_node_fail(n, CLG_INTERNAL, "%s has too many attributes", op);
  int given[64];
  if (attrs_fill(n, num_attrs, attrs, given, moved) != CLG_OK ||
      (prepare && prepare(n, ctx) != CLG_OK) || attrs_check_required(n) != CLG_OK)
    return clg_graph_node_abandon(n);
  const device_scope *top = g->num_scopes > 0 ? &g->scopes[g->num_scopes - 1] : NULL;
  static char empty[] = "";
  if (top)
    n->requested = top->name;
  n->requested_text = top ? top->text : empty;
  if (def->infer(n) != CLG_OK)
    return clg_graph_node_abandon(n);
  /* A given attribute the op infers must be what its inputs make it (T=int32 on a float
   * input is refused, not overwritten). */
  for (int i = 0; i < def->num_attrs; i++)
    if (def->attrs[i].inferred && given[i] >= 0 &&
        clg_node_attr_agrees(n, i, &attrs[given[i]]) != CLG_OK)
      return clg_graph_node_abandon(n);
  return clg_graph_node_add(n);
}

clg_node *clg_graph_build_ex(clg_graph *g, const clg_op_def *def, const char *name, int num_inputs,
                             const clg_output *inputs, int num_attrs, const clg_attr *attrs,
                             clg_code (*prepare)(clg_node *n, void *ctx), void *ctx)
{
  return build(g, def, name, num_inputs, inputs, num_attrs, attrs, prepare, ctx, NULL);
}

clg_node *clg_graph_build_move(clg_graph *g, const clg_op_def *def, const char *name,
                               int num_inputs, const clg_output *inputs, int num_attrs,
                               const clg_attr *attrs, clg_tensor **moved)
{
  return build(g, def, name, num_inputs, inputs, num_attrs, attrs, NULL, NULL, moved);
}

clg_node *clg_graph_node_add(clg_node *n)
{
  clg_graph *g = n->graph;
  if (g->num_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
    clg_node **nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
      return clg_graph_node_fail(n, CLG_RESOURCE_EXHAUSTED, "%s '%s': out of memory", n->op,
                                 n->name);
    g->nodes = nodes;
    g->cap_nodes = cap;
  }
  if (clg_graph_names_bind(g->names, n->name, g->num_nodes) != CLG_OK)
    return clg_graph_node_abandon(n);
  n->index = g->num_nodes;
  g->nodes[g->num_nodes++] = n;
  g->version++;
  return n;
}

clg_code clg_node_add_control_input(clg_node *n, clg_node *before)
{
  if (!n)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_node_add_control_input: node is NULL");
  clg_graph *g = n->graph;
  if (g->code != CLG_OK)
    return graph_repeat(g);
  if (!before) {
    clg_error(CLG_INVALID_ARGUMENT, "control input of '%s' is NULL", n->name);
    return graph_record(g);
  }
  if (before->graph != g) {
    clg_error(CLG_INVALID_ARGUMENT, "control input '%s' of '%s' belongs to another graph",
              before->name, n->name);
    return graph_record(g);
  }
  if (before->index >= n->index) {
    clg_error(CLG_INVALID_ARGUMENT,
              "control input '%s' of '%s' was built after it (or is the node itself): the edge "
              "would make a cycle",
              before->name, n->name);
    return graph_record(g);
  }
  for (int i = 0; i < n->num_control; i++)
    if (n->control[i] == before)
      return CLG_OK;
  if (n->num_control == n->cap_control) {
    int cap = n->cap_control ? 2 * n->cap_control : 4;
    clg_node **c = realloc(n->control, (size_t)cap * sizeof *c);
    if (!c) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory adding a control input to '%s'", n->name);
      return graph_record(g);
    }
    n->control = c;
    n->cap_control = cap;
  }
  n->control[n->num_control++] = before;
  g->version++;
  return CLG_OK;
}

/* --- queries --------------------------------------------------------------------------- */

int clg_graph_num_nodes(const clg_graph *g) { return g ? g->num_nodes : 0; }

clg_node *clg_graph_node(const clg_graph *g, int i)
{
  return g && i >= 0 && i < g->num_nodes ? g->nodes[i] : NULL;
}

clg_node *clg_graph_find(const clg_graph *g, const char *name)
{
  return g ? clg_graph_node(g, clg_graph_names_find(g->names, name)) : NULL;
}

uint64_t clg_graph_version(const clg_graph *g) { return g ? g->version : 0; }

const char *clg_node_name(const clg_node *n) { return n ? n->name : ""; }

const char *clg_node_op(const clg_node *n) { return n ? n->op : ""; }

clg_dtype clg_node_dtype(const clg_node *n) { return clg_node_output_dtype(n, 0); }

int clg_node_rank(const clg_node *n) { return clg_node_output_rank(n, 0); }

int64_t clg_node_dim(const clg_node *n, int i) { return clg_node_output_dim(n, 0, i); }

int clg_node_num_outputs(const clg_node *n) { return n ? n->num_outputs : 0; }

clg_dtype clg_node_output_dtype(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_outputs ? n->outs[i].dtype : (clg_dtype)0;
}

int clg_node_output_rank(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_outputs ? n->outs[i].rank : -1;
}

int64_t clg_node_output_dim(const clg_node *n, int i, int d)
{
  if (!n || i < 0 || i >= n->num_outputs || d < 0 || d >= n->outs[i].rank)
    return -1;
  return n->outs[i].dims[d];
}

int clg_node_num_inputs(const clg_node *n) { return n ? n->num_inputs : 0; }

clg_node *clg_node_input(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_inputs ? n->inputs[i].node : NULL;
}

int clg_node_input_index(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_inputs ? n->inputs[i].index : -1;
}

int clg_node_num_control_inputs(const clg_node *n) { return n ? n->num_control : 0; }

clg_node *clg_node_control_input(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_control ? n->control[i] : NULL;
}

const char *clg_node_requested_device(const clg_node *n) { return n ? n->requested_text : ""; }

clg_code clg_graph_find_output(const clg_graph *g, const char *tensor_name, clg_output *out)
{
  if (!g || !tensor_name || !out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_find_output: a NULL argument");
  const char *colon = strrchr(tensor_name, ':');
  size_t len = colon ? (size_t)(colon - tensor_name) : strlen(tensor_name);
  char stack[256];
  char *name = len < sizeof stack ? stack : malloc(len + 1);
  if (!name)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(name, tensor_name, len);
  name[len] = '\0';
  clg_node *n = clg_graph_find(g, name);
  if (name != stack)
    free(name);
  if (!n)
    return clg_error(CLG_NOT_FOUND, "The name '%.200s' refers to a node that is not in the graph",
                     tensor_name);
  long index = 0;
  if (colon) {
    char *end;
    index = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || index < 0 || index >= n->num_outputs)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "The name '%.200s' refers to an output of '%s', which has %d output%s",
                       tensor_name, n->name, n->num_outputs, n->num_outputs == 1 ? "" : "s");
  }
  out->node = n;
  out->index = (int)index;
  return CLG_OK;
}

size_t clg_node_out_count(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_outputs ? clg_out_count(&n->outs[i]) : 0;
}

size_t clg_node_out_bytes(const clg_node *n, int i)
{
  return clg_node_out_count(n, i) * clg_dtype_size(n->outs[i].dtype);
}

char *clg_node_shape_string(const clg_node *n, char *buf, size_t size)
{
  static const clg_out_desc none = {0};
  return clg_out_shape_string(n && n->num_outputs > 0 ? &n->outs[0] : &none, buf, size);
}

const clg_tensor *clg_node_value(const clg_node *n)
{
  if (!n || !(n->def->flags & CLG_OP_CONST))
    return NULL;
  for (int i = 0; i < n->def->num_attrs; i++)
    if (n->attrs[i].type == CLG_ATTR_TENSOR)
      return n->attrs[i].tensor;
  return NULL;
}
