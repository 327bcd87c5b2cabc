/* The graph module's door: the node and graph structures the runtime reads. Graph
 * building knows nothing of OpenCL; device specs are kept as parsed names. */
#ifndef CLG_GRAPH_H
#define CLG_GRAPH_H

#include "clgraph/graph.h"
#include "core/core.h"
#include "device/device.h"

struct clg_node {
  clg_graph *graph;
  int index; /* position in graph->nodes (a topological order) */
  char *name;
  const char *op; /* static string: "Const", "Placeholder", "MatMul", "Add", "Sub",
                     "Mul", "AddN", "Identity" */
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  int num_inputs;
  clg_node **inputs;
  bool transpose_a, transpose_b; /* MatMul */
  clg_tensor *value;             /* Const: the value (owned) */
  clg_devname requested;         /* merged scope spec */
  char *requested_text;          /* its text ("" if none) */
};

/* Number of elements of a node's output (1 for a scalar, 0 for NULL). */
size_t clg_node_count(const clg_node *n);
/* "[2,3]" ("[]" for a scalar) into buf, always NUL-terminated when size > 0. Returns buf. */
char *clg_node_shape_string(const clg_node *n, char *buf, size_t size);

/* --- shared by the files of src/graph/ only -------------------------------------------- */

/* The builder protocol (graph.c), used by the op builders (ops.c):
 *   n = clg_graph_node_begin(...);  if (!n) return NULL;
 *   ...infer n's dtype and shape, or return clg_graph_node_fail(n, ...);
 *   return clg_graph_node_add(n);
 * begin returns NULL when g is NULL or already failed (the first error stays), and on a
 * bad name or input, which it records as the graph's sticky error. The node it returns
 * carries its name, op, inputs and requested device but is not yet in the graph. */
clg_node *clg_graph_node_begin(clg_graph *g, const char *op, const char *name, int num_inputs,
                               clg_node *const *inputs);
/* Appends n to its graph and returns it (NULL, sticky RESOURCE_EXHAUSTED, if memory runs
 * out). */
clg_node *clg_graph_node_add(clg_node *n);
/* Records the formatted error as the graph's sticky error, frees n, returns NULL. */
clg_node *clg_graph_node_fail(clg_node *n, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);
/* As clg_graph_node_fail with this thread's last error (already set by a callee). */
clg_node *clg_graph_node_abandon(clg_node *n);

/* Node names (names.c), following TensorFlow's Python Graph.unique_name. */
typedef struct clg_graph_names clg_graph_names;
clg_graph_names *clg_graph_names_new(void);
void clg_graph_names_free(clg_graph_names *names);
/* TensorFlow's node-name rule: [A-Za-z0-9.][A-Za-z0-9_.\-/]* */
bool clg_graph_name_valid(const char *name);
/* The index bound to exactly this name, or -1. */
int clg_graph_names_find(const clg_graph_names *names, const char *name);
/* Counts a user-given name as used, so that default names avoid it. */
clg_code clg_graph_names_use(clg_graph_names *names, const char *name);
/* A fresh default name for base ("Const", then "Const_1", ...; taken names are skipped)
 * and counts it as used. malloc'd; NULL (RESOURCE_EXHAUSTED) when memory runs out. */
char *clg_graph_names_unique(clg_graph_names *names, const char *base);
/* Binds name to a node index for clg_graph_names_find. */
clg_code clg_graph_names_bind(clg_graph_names *names, const char *name, int index);

#endif
