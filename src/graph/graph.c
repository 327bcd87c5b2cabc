/* The graph: nodes in creation order, device scopes, the sticky first error, and the
 * queries the public header and the runtime use. Op-specific checks live in ops.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#define GRAPH_ERROR_MAX 4096
#define SCOPE_TEXT_MAX 256

typedef struct device_scope {
  clg_devname name;          /* merged with the enclosing scopes */
  char text[SCOPE_TEXT_MAX]; /* its clg_devname_format text, "" when empty */
} device_scope;

struct clg_graph {
  clg_node **nodes;
  int num_nodes, cap_nodes;
  clg_graph_names *names;
  device_scope *scopes;
  int num_scopes, cap_scopes;
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

static void node_free(clg_node *n)
{
  if (!n)
    return;
  free(n->name);
  free(n->inputs);
  clg_tensor_free(n->value);
  free(n->requested_text);
  free(n);
}

void clg_graph_free(clg_graph *g)
{
  if (!g)
    return;
  for (int i = 0; i < g->num_nodes; i++)
    node_free(g->nodes[i]);
  free(g->nodes);
  free(g->scopes);
  clg_graph_names_free(g->names);
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
  device_scope *top = &g->scopes[g->num_scopes++];
  top->name = *name;
  if (clg_devname_is_empty(name))
    top->text[0] = '\0';
  else
    clg_devname_format(name, top->text, sizeof top->text);
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
  if (!name)
    return clg_graph_names_unique(g->names, op);
  if (!clg_graph_name_valid(name)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "%s: '%s' is not a valid node name (names match [A-Za-z0-9.][A-Za-z0-9_.\\-/]*)", op,
              name);
    return NULL;
  }
  if (clg_graph_names_find(g->names, name) >= 0) {
    clg_error(CLG_INVALID_ARGUMENT, "Duplicate node name in graph: '%s'", name);
    return NULL;
  }
  if (clg_graph_names_use(g->names, name) != CLG_OK)
    return NULL;
  return clg_strdup(name);
}

clg_node *clg_graph_node_begin(clg_graph *g, const char *op, const char *name, int num_inputs,
                               clg_node *const *inputs)
{
  if (!g) {
    clg_error(CLG_INVALID_ARGUMENT, "%s: graph is NULL", op);
    return NULL;
  }
  if (g->code != CLG_OK) {
    graph_repeat(g);
    return NULL;
  }
  clg_node *n = calloc(1, sizeof *n);
  if (!n) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory creating a node", op);
    graph_record(g);
    return NULL;
  }
  n->graph = g;
  n->op = op;
  n->index = -1;
  n->name = node_name(g, op, name);
  if (!n->name)
    return clg_graph_node_abandon(n);
  for (int i = 0; i < num_inputs; i++) {
    if (!inputs[i])
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT, "%s '%s': input %d is NULL", op, n->name,
                                 i);
    if (inputs[i]->graph != g)
      return clg_graph_node_fail(n, CLG_INVALID_ARGUMENT,
                                 "%s '%s': input %d ('%s') belongs to another graph", op, n->name,
                                 i, inputs[i]->name);
  }
  if (num_inputs > 0) {
    n->inputs = malloc((size_t)num_inputs * sizeof *n->inputs);
    if (!n->inputs)
      return clg_graph_node_fail(n, CLG_RESOURCE_EXHAUSTED, "%s '%s': out of memory", op, n->name);
    memcpy(n->inputs, inputs, (size_t)num_inputs * sizeof *n->inputs);
  }
  n->num_inputs = num_inputs;
  const device_scope *top = g->num_scopes > 0 ? &g->scopes[g->num_scopes - 1] : NULL;
  if (top)
    n->requested = top->name;
  n->requested_text = clg_strdup(top ? top->text : "");
  if (!n->requested_text)
    return clg_graph_node_abandon(n);
  return n;
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
  return n;
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

const char *clg_node_name(const clg_node *n) { return n ? n->name : ""; }

const char *clg_node_op(const clg_node *n) { return n ? n->op : ""; }

clg_dtype clg_node_dtype(const clg_node *n) { return n ? n->dtype : (clg_dtype)0; }

int clg_node_rank(const clg_node *n) { return n ? n->rank : -1; }

int64_t clg_node_dim(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->rank ? n->dims[i] : -1;
}

int clg_node_num_inputs(const clg_node *n) { return n ? n->num_inputs : 0; }

clg_node *clg_node_input(const clg_node *n, int i)
{
  return n && i >= 0 && i < n->num_inputs ? n->inputs[i] : NULL;
}

const char *clg_node_requested_device(const clg_node *n) { return n ? n->requested_text : ""; }

size_t clg_node_count(const clg_node *n)
{
  if (!n)
    return 0;
  size_t count = 1;
  for (int i = 0; i < n->rank; i++)
    count *= (size_t)n->dims[i];
  return count;
}

char *clg_node_shape_string(const clg_node *n, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  /* snprintf returns the length it wanted: once that reaches size, the rest is cut. */
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; n && i < n->rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)n->dims[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}
