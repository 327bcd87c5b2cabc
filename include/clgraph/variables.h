/* clgraph: variables, initializers, updates and checkpoints (TensorFlow 1.x's VariableV2).
 *
 * A variable is a named, typed, shaped tensor that lives on the device it is placed on and
 * keeps its value across the runs of one session; every session on a graph has its own
 * values. Reading one moves no bytes unless a consumer sits on another device. Update ops
 * (Assign, AssignAdd, AssignSub, ApplyGradientDescent, ApplyMomentum) change its buffer in
 * place and are placed on the variable's device (TensorFlow's colocation). Within a run,
 * nodes run in graph order; a control dependency (clg_node_add_control_input) orders a read
 * after an update, also across devices.
 *
 *   clg_initializer init = clg_init_truncated_normal(0.0, 0.05, 0);
 *   clg_graph_set_random_seed(g, 42);
 *   clg_graph_push_variable_scope(g, "conv1", CLG_REUSE_INHERIT);
 *   clg_node *w = clg_get_variable(g, "weights", CLG_FLOAT32, 2, dims, &init);
 *   clg_graph_pop_variable_scope(g);                  // w is named "conv1/weights"
 *   clg_node *init_all = clg_global_variables_initializer(g, NULL);
 *   ... clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init_all);
 *   ... clg_session_save(s, "model.safetensors", 0, NULL);
 *
 * Reading a variable that no Assign (or restore) has set is FAILED_PRECONDITION with
 * TensorFlow's text: "Attempting to use uninitialized value conv1/weights".
 */
#ifndef CLGRAPH_VARIABLES_H
#define CLGRAPH_VARIABLES_H

#include <stdint.h>

#include "clgraph/graph.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- variables and scopes ----------------------------------------------------------------- */

/* Whether clg_get_variable inside a scope shares existing variables (tf.variable_scope's
 * reuse). INHERIT takes the enclosing scope's (FALSE at the top); once TRUE, inner scopes
 * stay TRUE, as in TensorFlow. AUTO creates what is missing and shares what exists. */
typedef enum clg_reuse {
  CLG_REUSE_INHERIT = 0,
  CLG_REUSE_FALSE = 1,
  CLG_REUSE_TRUE = 2,
  CLG_REUSE_AUTO = 3
} clg_reuse;

/* Opens a variable scope, as `with tf.variable_scope(name, reuse=...)`: clg_get_variable
 * names become "<outer>/<name>/<variable>". name must be a valid node name. Errors
 * (INVALID_ARGUMENT) are sticky. */
clg_code clg_graph_push_variable_scope(clg_graph *g, const char *name, clg_reuse reuse);
/* Closes the innermost variable scope; FAILED_PRECONDITION if none is open. */
clg_code clg_graph_pop_variable_scope(clg_graph *g);

/* How a variable gets its first value (tf.*_initializer). Random kinds use seed as the op
 * seed (0: none) with the graph seed, as tf.set_random_seed + seed= do; the values are a
 * function of (graph seed, op seed, element index) alone, the same on every device. */
typedef enum clg_init_kind {
  CLG_INIT_ZEROS = 1,
  CLG_INIT_ONES,
  CLG_INIT_CONSTANT,         /* every element is a */
  CLG_INIT_RANDOM_UNIFORM,   /* in [a, b) */
  CLG_INIT_RANDOM_NORMAL,    /* mean a, standard deviation b */
  CLG_INIT_TRUNCATED_NORMAL, /* mean a, standard deviation b, redrawn beyond 2 b */
  CLG_INIT_GLOROT_UNIFORM    /* uniform in +-sqrt(6 / (fan_in + fan_out)) */
} clg_init_kind;

typedef struct clg_initializer {
  clg_init_kind kind;
  double a, b;
  int64_t seed;
} clg_initializer;

static inline clg_initializer clg_init_zeros(void)
{
  clg_initializer i = {CLG_INIT_ZEROS, 0, 0, 0};
  return i;
}
static inline clg_initializer clg_init_ones(void)
{
  clg_initializer i = {CLG_INIT_ONES, 0, 0, 0};
  return i;
}
static inline clg_initializer clg_init_constant(double value)
{
  clg_initializer i = {CLG_INIT_CONSTANT, value, 0, 0};
  return i;
}
static inline clg_initializer clg_init_random_uniform(double minval, double maxval, int64_t seed)
{
  clg_initializer i = {CLG_INIT_RANDOM_UNIFORM, minval, maxval, seed};
  return i;
}
static inline clg_initializer clg_init_random_normal(double mean, double stddev, int64_t seed)
{
  clg_initializer i = {CLG_INIT_RANDOM_NORMAL, mean, stddev, seed};
  return i;
}
static inline clg_initializer clg_init_truncated_normal(double mean, double stddev, int64_t seed)
{
  clg_initializer i = {CLG_INIT_TRUNCATED_NORMAL, mean, stddev, seed};
  return i;
}
static inline clg_initializer clg_init_glorot_uniform(int64_t seed)
{
  clg_initializer i = {CLG_INIT_GLOROT_UNIFORM, 0, 0, seed};
  return i;
}

/* A VariableV2 node named `name` (NULL: "Variable", "Variable_1", ...) of the given dtype
 * and shape. With initial_value (a node of the same dtype and shape), also builds
 * "<name>/Assign" and registers it for clg_global_variables_initializer, as
 * tf.Variable(initial_value) does. */
clg_node *clg_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                       const int64_t *dims, clg_node *initial_value);

/* tf.get_variable: the variable "<scope prefix><name>". Without reuse it is created (with
 * its initializer op "<full name>/Initializer/..." and "<full name>/Assign"; init NULL means
 * Glorot uniform for floats, as TensorFlow's default, and zeros otherwise); a name that
 * exists is INVALID_ARGUMENT ("Variable tower/w already exists, disallowed. Did you mean to
 * set reuse=True ..."). With reuse the existing variable is returned (towers built in a
 * loop share it); a missing one is INVALID_ARGUMENT ("Variable tower/w does not exist, or
 * was not created with tf.get_variable() ..."), and so is a dtype or shape that differs.
 * Errors are sticky. */
clg_node *clg_get_variable(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                           const int64_t *dims, const clg_initializer *init);

/* The graph-level seed (tf.set_random_seed). Random ops built afterwards with op seed 0 get
 * a deterministic op seed of their own; with neither seed set their values differ from
 * graph to graph. */
clg_code clg_graph_set_random_seed(clg_graph *g, int64_t seed);

/* An op producing the initializer's values for the dtype and shape (zeros, ones and
 * constant as a Const; the random kinds as RandomUniform, RandomStandardNormal or
 * TruncatedNormal with the scale folded into the op's attributes). Float, double, half. */
clg_node *clg_initializer_op(clg_graph *g, const char *name, const clg_initializer *init,
                             clg_dtype dtype, int rank, const int64_t *dims);

/* A NoOp that runs every registered variable's initializer (tf.global_variables_initializer):
 * run it as a target. Variables created later are not included (build a new one). */
clg_node *clg_global_variables_initializer(clg_graph *g, const char *name);

/* --- updates (in place; output 0 is the updated variable) -------------------------------- */

/* ref = value (shapes and dtypes equal; any dtype). ref is a variable or an update op on
 * one. */
clg_node *clg_assign(clg_graph *g, const char *name, clg_node *ref, clg_node *value);
/* ref += value, ref -= value (float; double where the device has it). */
clg_node *clg_assign_add(clg_graph *g, const char *name, clg_node *ref, clg_node *value);
clg_node *clg_assign_sub(clg_graph *g, const char *name, clg_node *ref, clg_node *value);
/* var -= alpha * delta; alpha is a scalar. */
clg_node *clg_apply_gradient_descent(clg_graph *g, const char *name, clg_node *var, clg_node *alpha,
                                     clg_node *delta);
/* accum = accum * momentum + grad; var -= lr * accum (lr, momentum scalars; accum a variable
 * of var's shape). */
clg_node *clg_apply_momentum(clg_graph *g, const char *name, clg_node *var, clg_node *accum,
                             clg_node *lr, clg_node *grad, clg_node *momentum);

#ifdef __cplusplus
}
#endif
#endif
