/* clgraph: building graphs.
 *
 * A graph holds nodes; each node has an op, inputs, a dtype, a static shape and a
 * requested device (from the device scopes open when it was built). Builders infer shape
 * and dtype at once. Errors are sticky, as in cairo: the first failing builder records
 * its error on the graph, returns NULL, and every later builder returns NULL too. Check
 * once, at the end:
 *
 *   clg_graph *g = clg_graph_new();
 *   int64_t da[2] = {2, 3}, db[2] = {3, 2};
 *   float v[6] = {1, 2, 3, 4, 5, 6};
 *   clg_graph_push_device(g, "/cpu:0");             // with tf.device('/cpu:0'):
 *   clg_node *a = clg_const_f32(g, "a", 2, da, v);
 *   clg_node *b = clg_const_f32(g, "b", 2, db, v);
 *   clg_graph_pop_device(g);
 *   clg_node *c = clg_matmul(g, NULL, a, b, false, false);   // named "MatMul"
 *   if (clg_graph_status(g) != CLG_OK)
 *     fprintf(stderr, "%s\n", clg_graph_error(g));
 *
 * Default names follow TensorFlow: the op type, then "_1", "_2", ... ("Const",
 * "Const_1", "MatMul", "AddN"). A given name that is already taken is INVALID_ARGUMENT.
 * Nodes belong to their graph and are freed with it.
 */
#ifndef CLGRAPH_GRAPH_H
#define CLGRAPH_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_graph clg_graph;
typedef struct clg_node clg_node;

/* NULL only when host memory runs out. */
clg_graph *clg_graph_new(void);
/* Frees the graph and its nodes. Sessions on the graph must be freed first. */
void clg_graph_free(clg_graph *g);

/* CLG_OK, or the code of the first builder error (sticky). */
clg_code clg_graph_status(const clg_graph *g);
/* The first builder error's message, naming the node ("" if none). */
const char *clg_graph_error(const clg_graph *g);

/* Opens a device scope, as `with tf.device(spec):`. The spec is merged over the enclosing
 * scope (inner fields win). spec NULL or "" resets to no device (tf.device(None)). A
 * malformed spec is INVALID_ARGUMENT naming it (and sticky). Scopes nest. */
clg_code clg_graph_push_device(clg_graph *g, const char *spec);
/* Closes the innermost scope; FAILED_PRECONDITION if none is open. */
clg_code clg_graph_pop_device(clg_graph *g);

/* Builders. name NULL gives the default name. Inputs must be nodes of the same graph. */
clg_node *clg_const(clg_graph *g, const char *name, const clg_tensor *value);
clg_node *clg_const_f32(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *values);
clg_node *clg_const_f64(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const double *values);
/* A value fed at run time; its shape is fixed here. */
clg_node *clg_placeholder(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                          const int64_t *dims);
/* [m,k] x [k,n] (after the optional transposes) for rank-2 inputs of one dtype. */
clg_node *clg_matmul(clg_graph *g, const char *name, clg_node *a, clg_node *b, bool transpose_a,
                     bool transpose_b);
/* Element-wise on equal shapes, or a scalar (rank 0) against a tensor. */
clg_node *clg_add(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_sub(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_mul(clg_graph *g, const char *name, clg_node *a, clg_node *b);
/* The sum of n >= 1 inputs of one shape and dtype (tf.add_n). */
clg_node *clg_add_n(clg_graph *g, const char *name, int n, clg_node *const *inputs);
clg_node *clg_identity(clg_graph *g, const char *name, clg_node *x);

/* Queries. */
int clg_graph_num_nodes(const clg_graph *g);
clg_node *clg_graph_node(const clg_graph *g, int i);
clg_node *clg_graph_find(const clg_graph *g, const char *name);
const char *clg_node_name(const clg_node *n);
const char *clg_node_op(const clg_node *n);
clg_dtype clg_node_dtype(const clg_node *n);
int clg_node_rank(const clg_node *n);
int64_t clg_node_dim(const clg_node *n, int i);
int clg_node_num_inputs(const clg_node *n);
clg_node *clg_node_input(const clg_node *n, int i);
/* The merged device spec the node was built under, e.g. "/device:GPU:2" ("" if none). */
const char *clg_node_requested_device(const clg_node *n);

#ifdef __cplusplus
}
#endif
#endif
