/* clgraph: training, as TensorFlow 1.x's tf.train builds it.
 *
 *   clg_node *step = clg_global_step(g);                      // int64 "global_step"
 *   clg_node *lr = clg_exponential_decay(g, 0.1, step, 350 * 390, 0.1, 1);
 *   clg_grad_var gv[N];
 *   clg_compute_gradients(g, clg_out(loss, 0), N, vars, NULL, gv);  // opt.compute_gradients
 *   clg_optimizer opt = {CLG_OPTIMIZER_GRADIENT_DESCENT, lr, 0, 0};
 *   clg_node *train = clg_apply_gradients(g, &opt, N, gv, step, "train");
 *
 * With towers, each tower's clg_compute_gradients (colocate_gradients_with_ops) feeds
 * clg_average_gradients on the device that holds the variables (the tutorial's
 * average_gradients), and one clg_apply_gradients applies the average.
 */
#ifndef CLGRAPH_TRAIN_H
#define CLGRAPH_TRAIN_H

#include "clgraph/graph.h"
#include "clgraph/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A gradient and its variable (grad.node NULL: the variable gets none). */
typedef struct clg_grad_var {
  clg_output grad;
  clg_node *var;
} clg_grad_var;

/* The int64 scalar variable "global_step" on CPU:0 (TensorFlow keeps int64 scalars in host
 * memory), zero-initialized, made on first call and returned on later calls; NULL on error
 * (sticky). */
clg_node *clg_global_step(clg_graph *g);

/* opt.compute_gradients(loss, var_list): out[i] = {d loss / d vars[i], vars[i]}. */
clg_code clg_compute_gradients(clg_graph *g, clg_output loss, int num_vars, clg_node *const *vars,
                               const clg_gradients_options *opt, clg_grad_var *out);

/* The tutorial's average_gradients: out[v] = mean over towers of tower_grads[t * num_vars + v]
 * (towers that give a variable no gradient are left out; none at all gives none), built
 * under the device scope open at the call. */
clg_code clg_average_gradients(clg_graph *g, int num_towers, int num_vars,
                               const clg_grad_var *tower_grads, clg_grad_var *out);

typedef enum clg_optimizer_kind {
  CLG_OPTIMIZER_GRADIENT_DESCENT = 1, /* var -= lr * grad */
  CLG_OPTIMIZER_MOMENTUM              /* accum = accum * momentum + grad; var -= lr * accum */
} clg_optimizer_kind;

typedef struct clg_optimizer {
  clg_optimizer_kind kind;
  clg_node *learning_rate; /* a float scalar (a Const, a placeholder, a decay) */
  double momentum;         /* CLG_OPTIMIZER_MOMENTUM */
  int use_nesterov;
} clg_optimizer;

/* opt.apply_gradients(grads_and_vars, global_step): one update op per variable with a
 * gradient (placed with its variable; momentum accumulators are variables
 * "<var>/Momentum", zero-initialized: build clg_global_variables_initializer after this),
 * then global_step += 1 once they have run (global_step may be NULL). Returns the train op,
 * a NoOp named `name` that runs after all of them; NULL on error (sticky). */
clg_node *clg_apply_gradients(clg_graph *g, const clg_optimizer *opt, int num,
                              const clg_grad_var *gv, clg_node *global_step, const char *name);

/* tf.train.exponential_decay: lr0 * rate^(step / decay_steps), the exponent floored when
 * staircase; a float32 scalar. */
clg_node *clg_exponential_decay(clg_graph *g, double lr0, clg_node *global_step, double decay_steps,
                                double decay_rate, int staircase);

/* tf.train.ExponentialMovingAverage(decay, num_updates).apply(vars): for each variable a
 * shadow variable "<var>/ExponentialMovingAverage" (initialized with the variable's initial
 * value, or zeros for a variable built without one) and the update shadow -= (1 - d) * (shadow -
 * var) with d = min(decay, (1 + num_updates) / (10 + num_updates)) (num_updates may be NULL:
 * d = decay). shadows (may be NULL) receives the shadow variables. Returns a NoOp that runs
 * every update; NULL on error (sticky). */
clg_node *clg_moving_average_apply(clg_graph *g, double decay, clg_node *num_updates, int num_vars,
                                   clg_node *const *vars, clg_node **shadows, const char *name);

#ifdef __cplusplus
}
#endif
#endif
