/* The graph module's door: the node and graph structures the runtime reads. Graph
 * building knows nothing of OpenCL; device specs are kept as parsed names. A node is
 * checked against the op definition it is built with (schema/schema.h); the graph knows no
 * op by name and never includes the ops module (the registry and the by-name builder
 * clg_op live there, above it). */
#ifndef CLG_GRAPH_H
#define CLG_GRAPH_H

#include "clgraph/graph.h"
#include "clgraph/variables.h"
#include "core/core.h"
#include "schema/schema.h"

struct clg_node {
  clg_graph *graph;
  int index; /* position in graph->nodes (a topological order) */
  char *name;
  const clg_op_def *def;
  const char *op; /* def->name */
  int num_inputs;
  clg_output *inputs;
  int num_control, cap_control;
  clg_node **control; /* control inputs: nodes that run before this one */
  int num_outputs;
  clg_out_desc *outs;
  clg_attr_value *attrs; /* def->num_attrs values, in the def's order */
  clg_devname requested; /* merged scope spec */
  char *requested_text;  /* its text ("" if none) */
};

/* Elements and bytes of output i. */
size_t clg_node_out_count(const clg_node *n, int i);
size_t clg_node_out_bytes(const clg_node *n, int i);
/* "[2,3]" ("[]" for a scalar) of output 0 into buf, always NUL-terminated when size > 0. */
char *clg_node_shape_string(const clg_node *n, char *buf, size_t size);
/* The node's value attribute (Const), or NULL. */
const clg_tensor *clg_node_value(const clg_node *n);
/* Records "<Op> '<name>': <message>" as this thread's error and returns code (node_text.c,
 * with the two below and the tensor element). */
clg_code clg_node_error(const clg_node *n, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);
/* Whether attribute i of n, as its op's inference left it, is the value the caller gave:
 * INVALID_ARGUMENT "attribute T is int32 but the inputs make it float" naming the node
 * otherwise. The builder asks it of every given attribute the op infers (given ones must
 * agree). */
clg_code clg_node_attr_agrees(const clg_node *n, int i, const clg_attr *given);
/* TensorFlow's node summary for errors: "b = Const[dtype=DT_FLOAT, value=Tensor<type: float
 * shape: [3,2] values: 1 2 3...>, _device=\"/device:GPU:2\"]()", attributes in the op's
 * order. malloc'd; NULL when memory runs out. */
char *clg_node_def_string(const clg_node *n);
/* Element i of a host tensor of any dtype, as a double. */
double clg_tensor_element_double(const clg_tensor *t, size_t i);
/* A version that changes whenever a node or a control edge is added (sessions re-plan). */
uint64_t clg_graph_version(const clg_graph *g);

/* Variable scopes (clgraph/variables.h): the current prefix ("tower/" or "") and reuse. */
const char *clg_graph_variable_prefix(const clg_graph *g);
clg_reuse clg_graph_variable_reuse(const clg_graph *g);
/* Records a variable and the node initializing it (NULL: none) for
 * clg_global_variables_initializer; errors are sticky. */
clg_code clg_graph_variable_register(clg_graph *g, clg_node *var, clg_node *init);
int clg_graph_num_variables(const clg_graph *g);
clg_node *clg_graph_variable_at(const clg_graph *g, int i, clg_node **init);
/* The graph-level seed, when set. */
bool clg_graph_random_seed(const clg_graph *g, int64_t *seed);

/* Builds outside the open name scopes until resumed with the returned value (tf.get_variable
 * names its variables by variable scope only). Scopes opened meanwhile must be closed. */
char *clg_graph_name_scope_suspend(clg_graph *g);
void clg_graph_name_scope_resume(clg_graph *g, char *saved);
/* Makes this thread's last error the graph's sticky error (the first one wins). */
clg_code clg_graph_record_error(clg_graph *g);
/* A fresh default name for base ("Variable", "Variable_1", ...), malloc'd; NULL when memory
 * runs out or g is NULL. */
char *clg_graph_unique_name(clg_graph *g, const char *base);

/* --- shared by the files of src/graph/ only -------------------------------------------- */

/* The builder path (graph.c) every op builder takes: checks the name, the inputs (count,
 * graph, output index) and the attributes (defaults, types, required ones), then calls the
 * op's inference and appends the node. Returns NULL when g is NULL or already failed (the
 * first error stays), and records any new error as the graph's sticky error. */
clg_node *clg_graph_build(clg_graph *g, const clg_op_def *def, const char *name, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs);
/* The same, with a hook that runs once the name and the given attributes are set and
 * before the required-attribute check and inference (typed builders that take raw data
 * turn it into attributes there, with errors naming the node). */
clg_node *clg_graph_build_ex(clg_graph *g, const clg_op_def *def, const char *name, int num_inputs,
                             const clg_output *inputs, int num_attrs, const clg_attr *attrs,
                             clg_code (*prepare)(clg_node *n, void *ctx), void *ctx);
/* As clg_graph_build, but the tensor attribute that points to *moved takes it instead of a
 * copy (an importer's weights, whose model is freed after the build: one copy, not two).
 * *moved is NULL once taken (the node owns it, or freed it with itself when the build failed
 * after), unchanged when the build failed before. */
clg_node *clg_graph_build_move(clg_graph *g, const clg_op_def *def, const char *name,
                               int num_inputs, const clg_output *inputs, int num_attrs,
                               const clg_attr *attrs, clg_tensor **moved);
/* Builds outside the open name scopes until resumed with the returned value (tf.get_variable
 * names its variables by variable scope only). Scopes opened meanwhile must be closed. */
char *clg_graph_name_scope_suspend(clg_graph *g);
void clg_graph_name_scope_resume(clg_graph *g, char *saved);
/* Makes this thread's last error the graph's sticky error (the first one wins), for
 * builders outside this module (tf.train's); returns the sticky code. */
clg_code clg_graph_fail(clg_graph *g);
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
