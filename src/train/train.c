/* tf.train in miniature, built from the public graph API (and the graph's sticky error): the
 * global step, gradients per variable, their average over towers, gradient descent and
 * momentum, exponential decay and moving averages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph.h"
#include "graph/graph.h"

clg_node *clg_global_step(clg_graph *g)
{
  clg_node *existing = clg_graph_find(g, "global_step");
  if (existing)
    return existing;
  /* An int64 counter lives in host memory, as TensorFlow keeps int64 scalars there. */
  clg_initializer zero = clg_init_zeros();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *step = clg_get_variable(g, "global_step", CLG_INT64, 0, NULL, &zero);
  clg_graph_pop_device(g);
  return step;
}

/* A variable `name` with var's dtype and shape, on var's device (slots such as momentum
 * accumulators and moving averages live with their variable): zero-initialized, or with
 * var's own initial value (a moving average starts where its variable starts, as
 * TensorFlow's initialized_value()). */
static clg_node *variable_like(clg_graph *g, const char *name, clg_node *var, bool var_init)
{
  int rank = clg_node_rank(var);
  int64_t dims[CLG_MAX_RANK];
  for (int d = 0; d < rank && d < CLG_MAX_RANK; d++)
    dims[d] = clg_node_dim(var, d);
  clg_graph_push_device(g, clg_node_requested_device(var));
  clg_node *init = NULL;
  if (var_init) {
    char aname[512];
    snprintf(aname, sizeof aname, "%s/Assign", clg_node_name(var));
    clg_node *assign = clg_graph_find(g, aname);
    if (assign && clg_node_num_inputs(assign) == 2 && clg_node_input(assign, 0) == var)
      init = clg_node_input(assign, 1);
  }
  if (!init) {
    clg_initializer zero = clg_init_zeros();
    char iname[512];
    snprintf(iname, sizeof iname, "%s/Initializer/zeros", name);
    init = clg_initializer_op(g, iname, &zero, clg_node_dtype(var), rank, dims);
  }
  clg_node *slot = clg_variable(g, name, clg_node_dtype(var), rank, dims, init);
  clg_graph_pop_device(g);
  return slot;
}

clg_code clg_compute_gradients(clg_graph *g, clg_output loss, int num_vars, clg_node *const *vars,
                               const clg_gradients_options *opt, clg_grad_var *out)
{
  if (!g || num_vars < 1 || !vars || !out)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_compute_gradients: needs a graph, %d variables "
                     "at %p and out at %p",
                     num_vars, (const void *)vars, (void *)out);
  clg_output stack[16];
  clg_output *xs = num_vars <= 16 ? stack : malloc(sizeof *xs * (size_t)num_vars);
  clg_output *dx = malloc(sizeof *dx * (size_t)num_vars);
  if (!xs || !dx) {
    if (xs != stack)
      free(xs);
    free(dx);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
  }
  for (int i = 0; i < num_vars; i++)
    xs[i] = clg_out(vars[i], 0);
  clg_code code = clg_gradients(g, 1, &loss, NULL, num_vars, xs, opt, dx);
  for (int i = 0; i < num_vars; i++) {
    out[i].grad = code == CLG_OK ? dx[i] : clg_out(NULL, 0);
    out[i].var = vars[i];
  }
  if (xs != stack)
    free(xs);
  free(dx);
  return code;
}

/* A scalar Const of dtype. */
static clg_node *scalar(clg_graph *g, clg_dtype dtype, double v)
{
  clg_tensor *t = clg_tensor_new(dtype, 0, NULL, NULL);
  if (t && dtype == CLG_FLOAT32)
    *(float *)clg_tensor_data(t) = (float)v;
  else if (t && dtype == CLG_FLOAT64)
    *(double *)clg_tensor_data(t) = v;
  else if (t && dtype == CLG_INT64)
    *(int64_t *)clg_tensor_data(t) = (int64_t)v;
  clg_node *n = t ? clg_const(g, NULL, t) : NULL;
  clg_tensor_free(t);
  return n;
}

clg_code clg_average_gradients(clg_graph *g, int num_towers, int num_vars,
                               const clg_grad_var *tower_grads, clg_grad_var *out)
{
  if (!g || num_towers < 1 || num_vars < 1 || !tower_grads || !out)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_average_gradients: needs a graph, towers (%d), variables (%d), "
                     "tower_grads and out",
                     num_towers, num_vars);
  clg_node **parts = malloc(sizeof *parts * (size_t)num_towers);
  if (!parts)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory averaging gradients");
  clg_code code = CLG_OK;
  for (int v = 0; v < num_vars && code == CLG_OK; v++) {
    int n = 0;
    for (int t = 0; t < num_towers; t++) {
      const clg_grad_var *gv = &tower_grads[t * num_vars + v];
      if (gv->var != tower_grads[v].var) {
        code = clg_error(CLG_INVALID_ARGUMENT,
                         "clg_average_gradients: tower %d's variable %d is '%s', tower 0's is "
                         "'%s'",
                         t, v, clg_node_name(gv->var), clg_node_name(tower_grads[v].var));
        break;
      }
      if (gv->grad.node) {
        if (gv->grad.index != 0) {
          clg_node *id = clg_op(g, "Identity", NULL, 1, &gv->grad, 0, NULL);
          parts[n++] = id;
        } else {
          parts[n++] = gv->grad.node;
        }
      }
    }
    out[v].var = tower_grads[v].var;
    out[v].grad = clg_out(NULL, 0);
    if (code != CLG_OK || n == 0)
      continue;
    clg_node *sum = n == 1 ? parts[0] : clg_add_n(g, NULL, n, parts);
    clg_node *mean =
        sum && n > 1 ? clg_mul(g, NULL, sum, scalar(g, clg_node_dtype(sum), 1.0 / n)) : sum;
    out[v].grad = clg_out(mean, 0);
    if (clg_graph_status(g) != CLG_OK)
      code = clg_graph_status(g);
  }
  free(parts);
  return code != CLG_OK && clg_graph_status(g) != CLG_OK
             ? clg_error(clg_graph_status(g), "%s", clg_graph_error(g))
             : code;
}

/* The learning rate in the variable's dtype. */
static clg_node *rate_for(clg_graph *g, clg_node *lr, clg_dtype dtype)
{
  return clg_node_dtype(lr) == dtype ? lr : clg_cast(g, NULL, lr, dtype);
}

clg_node *clg_apply_gradients(clg_graph *g, const clg_optimizer *opt, int num,
                              const clg_grad_var *gv, clg_node *global_step, const char *name)
{
  if (!g)
    return NULL;
  if (!opt || !opt->learning_rate || num < 1 || !gv ||
      (opt->kind != CLG_OPTIMIZER_GRADIENT_DESCENT && opt->kind != CLG_OPTIMIZER_MOMENTUM)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "clg_apply_gradients: needs an optimizer (kind %d) with a learning rate, and %d "
              "gradients at %p",
              opt ? (int)opt->kind : 0, num, (const void *)gv);
    clg_graph_fail(g);
    return NULL;
  }
  clg_node **updates = calloc((size_t)num + 1, sizeof *updates);
  int nu = 0;
  for (int i = 0; updates && i < num; i++) {
    if (!gv[i].grad.node || !gv[i].var)
      continue;
    clg_node *var = gv[i].var;
    clg_dtype dt = clg_node_dtype(var);
    clg_node *grad = gv[i].grad.index == 0 ? gv[i].grad.node
                                           : clg_op(g, "Identity", NULL, 1, &gv[i].grad, 0, NULL);
    /* Each update runs on its variable's device (TensorFlow's colocate_with(var)). */
    clg_graph_push_device(g, clg_node_requested_device(var));
    clg_node *lr = rate_for(g, opt->learning_rate, dt);
    char uname[512];
    snprintf(uname, sizeof uname, "%s/update_%s", name ? name : "train", clg_node_name(var));
    for (char *p = uname; *p; p++)
      if (*p == ':')
        *p = '_';
    if (opt->kind == CLG_OPTIMIZER_GRADIENT_DESCENT) {
      updates[nu++] = clg_apply_gradient_descent(g, uname, var, lr, grad);
    } else {
      char aname[512];
      snprintf(aname, sizeof aname, "%s/Momentum", clg_node_name(var));
      clg_node *accum = clg_graph_find(g, aname);
      if (!accum)
        accum = variable_like(g, aname, var, false);
      clg_output in[5] = {clg_out(var, 0), clg_out(accum, 0), clg_out(lr, 0), clg_out(grad, 0),
                          clg_out(scalar(g, dt, opt->momentum), 0)};
      clg_attr at = clg_attr_bool("use_nesterov", opt->use_nesterov);
      updates[nu++] = clg_op(g, "ApplyMomentum", uname, 5, in, 1, &at);
    }
    clg_graph_pop_device(g);
  }
  clg_node *train = NULL;
  if (!updates) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory applying gradients");
    clg_graph_fail(g);
  } else if (clg_graph_status(g) == CLG_OK) {
    char sname[512];
    snprintf(sname, sizeof sname, "%s/step", name ? name : "train");
    clg_node *inc = NULL;
    if (global_step) {
      /* On the step's device whatever the scope (TensorFlow's colocate_with(global_step)):
       * under a GPU scope an int64 AssignAdd would have no kernel there. */
      clg_graph_push_device(g, clg_node_requested_device(global_step));
      inc = clg_assign_add(g, sname, global_step, scalar(g, clg_node_dtype(global_step), 1));
      clg_graph_pop_device(g);
      for (int i = 0; inc && i < nu; i++)
        clg_node_add_control_input(inc, updates[i]);
    }
    train = clg_op(g, "NoOp", name, 0, NULL, 0, NULL);
    for (int i = 0; train && i < nu; i++)
      clg_node_add_control_input(train, updates[i]);
    if (train && inc)
      clg_node_add_control_input(train, inc);
  }
  free(updates);
  return clg_graph_status(g) == CLG_OK ? train : NULL;
}

clg_node *clg_exponential_decay(clg_graph *g, double lr0, clg_node *global_step, double decay_steps,
                                double decay_rate, int staircase)
{
  if (!g)
    return NULL;
  if (!global_step || !(decay_steps > 0) || !(decay_rate > 0)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "clg_exponential_decay: needs a global step, decay_steps > 0 (got %g) and "
              "decay_rate > 0 (got %g)",
              decay_steps, decay_rate);
    clg_graph_fail(g);
    return NULL;
  }
  clg_graph_push_name_scope(g, "ExponentialDecay");
  clg_node *step = clg_node_dtype(global_step) == CLG_FLOAT32
                       ? global_step
                       : clg_cast(g, NULL, global_step, CLG_FLOAT32);
  clg_node *p = clg_real_div(g, NULL, step, scalar(g, CLG_FLOAT32, decay_steps));
  if (staircase)
    p = clg_floor(g, NULL, p);
  /* rate^p = exp(p ln rate) */
  clg_node *e = clg_exp(g, NULL, clg_mul(g, NULL, p, scalar(g, CLG_FLOAT32, log(decay_rate))));
  clg_node *lr = clg_mul(g, NULL, scalar(g, CLG_FLOAT32, lr0), e);
  clg_graph_pop_name_scope(g);
  return clg_graph_status(g) == CLG_OK ? lr : NULL;
}

clg_node *clg_moving_average_apply(clg_graph *g, double decay, clg_node *num_updates, int num_vars,
                                   clg_node *const *vars, clg_node **shadows, const char *name)
{
  if (!g)
    return NULL;
  if (num_vars < 1 || !vars || !(decay >= 0 && decay <= 1)) {
    clg_error(CLG_INVALID_ARGUMENT,
              "clg_moving_average_apply: needs variables (%d at %p) and a decay in [0, 1] (got "
              "%g)",
              num_vars, (const void *)vars, decay);
    clg_graph_fail(g);
    return NULL;
  }
  clg_node **upd = calloc((size_t)num_vars, sizeof *upd);
  if (!upd) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory building moving averages");
    clg_graph_fail(g);
    return NULL;
  }
  clg_graph_push_name_scope(g, name ? name : "ExponentialMovingAverage");
  /* d = min(decay, (1 + n) / (10 + n)) as -max(-decay, -(1 + n) / (10 + n)), in float32. */
  clg_node *d = scalar(g, CLG_FLOAT32, decay);
  if (num_updates) {
    clg_node *n = clg_node_dtype(num_updates) == CLG_FLOAT32
                      ? num_updates
                      : clg_cast(g, NULL, num_updates, CLG_FLOAT32);
    clg_node *r = clg_real_div(g, NULL, clg_add(g, NULL, scalar(g, CLG_FLOAT32, 1), n),
                               clg_add(g, NULL, scalar(g, CLG_FLOAT32, 10), n));
    d = clg_neg(g, NULL, clg_maximum(g, NULL, clg_neg(g, NULL, d), clg_neg(g, NULL, r)));
  }
  clg_node *keep = clg_sub(g, NULL, scalar(g, CLG_FLOAT32, 1), d);
  clg_graph_pop_name_scope(g);
  for (int i = 0; i < num_vars && clg_graph_status(g) == CLG_OK; i++) {
    clg_node *var = vars[i];
    char sname[512];
    snprintf(sname, sizeof sname, "%s/ExponentialMovingAverage", clg_node_name(var));
    clg_node *shadow = variable_like(g, sname, var, true);
    clg_dtype dt = clg_node_dtype(var);
    clg_node *k = dt == CLG_FLOAT32 ? keep : clg_cast(g, NULL, keep, dt);
    /* The update runs where its shadow lives. */
    clg_graph_push_device(g, clg_node_requested_device(var));
    upd[i] = clg_assign_sub(g, NULL, shadow, clg_mul(g, NULL, k, clg_sub(g, NULL, shadow, var)));
    clg_graph_pop_device(g);
    if (shadows)
      shadows[i] = shadow;
  }
  clg_node *group = clg_op(g, "NoOp", name, 0, NULL, 0, NULL);
  for (int i = 0; group && i < num_vars; i++)
    if (upd[i])
      clg_node_add_control_input(group, upd[i]);
  free(upd);
  return clg_graph_status(g) == CLG_OK ? group : NULL;
}
