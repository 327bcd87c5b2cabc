/* Symbolic differentiation, as TensorFlow 1.x's tf.gradients: the nodes between xs and ys
 * are visited from the ys back (graph order reversed is a reverse topological order), each
 * node's output gradients summed (AddN when several paths meet), and its op's gradient
 * function from the registry asked for its inputs' gradients. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* The gradients collected for one output: a small growable list. */
typedef struct grads {
  int n, cap;
  clg_output *v;
} grads;

static bool grads_add(grads *g, clg_output o)
{
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 2;
    clg_output *v = realloc(g->v, sizeof *v * (size_t)cap);
    if (!v)
      return false;
    g->v = v;
    g->cap = cap;
  }
  g->v[g->n++] = o;
  return true;
}

/* The sum of the collected gradients ({NULL, 0} when none). */
static clg_output grads_sum(clg_graph *g, grads *gr)
{
  if (gr->n == 0)
    return clg_out(NULL, 0);
  if (gr->n == 1)
    return gr->v[0];
  return clg_grad_build(g, &clg_op_AddN, gr->n, gr->v, 0, NULL);
}

void clg_gradients_options_init(clg_gradients_options *opt)
{
  if (opt)
    memset(opt, 0, sizeof *opt);
}

/* Opens the scopes a gradient function builds in: "gradients/<node>_grad", and with
 * colocation the forward node's requested device. */
static clg_code open_scopes(clg_graph *g, const clg_node *n, bool colocate)
{
  char scope[512];
  snprintf(scope, sizeof scope, "%s_grad", n->name);
  clg_code code = clg_graph_push_name_scope(g, scope);
  if (code == CLG_OK && colocate)
    code = clg_graph_push_device(g, n->requested_text);
  return code;
}

static void close_scopes(clg_graph *g, bool colocate)
{
  if (colocate)
    clg_graph_pop_device(g);
  clg_graph_pop_name_scope(g);
}

clg_code clg_gradients(clg_graph *g, int num_ys, const clg_output *ys, const clg_output *grad_ys,
                       int num_xs, const clg_output *xs, const clg_gradients_options *opt,
                       clg_output *out)
{
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_gradients: graph is NULL");
  if (clg_graph_status(g) != CLG_OK)
    return clg_error(clg_graph_status(g), "%s", clg_graph_error(g));
  if (num_ys < 1 || !ys || num_xs < 1 || !xs || !out)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_gradients: needs ys (%d at %p), xs (%d at %p) and out (%p)", num_ys,
                     (const void *)ys, num_xs, (const void *)xs, (void *)out);
  clg_gradients_options defaults;
  clg_gradients_options_init(&defaults);
  if (!opt)
    opt = &defaults;
  int nn = clg_graph_num_nodes(g);
  for (int i = 0; i < num_ys + num_xs; i++) {
    const clg_output *o = i < num_ys ? &ys[i] : &xs[i - num_ys];
    const char *what = i < num_ys ? "ys" : "xs";
    int k = i < num_ys ? i : i - num_ys;
    if (!o->node || o->node->graph != g || o->index < 0 || o->index >= o->node->num_outputs)
      return clg_error(CLG_INVALID_ARGUMENT, "clg_gradients: %s[%d] is not an output of this graph",
                       what, k);
    if (i < num_ys && grad_ys && grad_ys[i].node) {
      const clg_out_desc *y = &o->node->outs[o->index];
      const clg_out_desc *gy = &grad_ys[i].node->outs[grad_ys[i].index];
      bool same = y->dtype == gy->dtype && y->rank == gy->rank;
      for (int d = 0; same && d < y->rank; d++)
        same = y->dims[d] == gy->dims[d];
      if (!same)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "clg_gradients: grad_ys[%d] ('%s') does not match ys[%d] ('%s') in dtype "
                         "and shape",
                         i, grad_ys[i].node->name, i, o->node->name);
    }
  }
  /* Nodes between: reachable from an x (forward) and reaching a y (backward). */
  char *from_x = calloc((size_t)nn + 1, 1), *to_y = calloc((size_t)nn + 1, 1);
  int *base = malloc(sizeof(int) * ((size_t)nn + 1));
  grads *gr = NULL;
  clg_code code = CLG_OK;
  if (!from_x || !to_y || !base) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    goto done;
  }
  int nv = 0;
  for (int i = 0; i < nn; i++) {
    base[i] = nv;
    nv += clg_graph_node(g, i)->num_outputs;
  }
  base[nn] = nv;
  if (!(gr = calloc((size_t)nv + 1, sizeof *gr))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    goto done;
  }
  for (int i = 0; i < num_xs; i++)
    from_x[xs[i].node->index] = 1;
  for (int i = 0; i < nn; i++) {
    const clg_node *n = clg_graph_node(g, i);
    for (int j = 0; j < n->num_inputs && !from_x[i]; j++)
      if (from_x[n->inputs[j].node->index])
        from_x[i] = 1;
  }
  for (int i = 0; i < num_ys; i++)
    to_y[ys[i].node->index] = 1;
  for (int i = nn - 1; i >= 0; i--) {
    const clg_node *n = clg_graph_node(g, i);
    if (!to_y[i])
      continue;
    for (int j = 0; j < n->num_inputs; j++)
      to_y[n->inputs[j].node->index] = 1;
  }
  /* The ys' gradients: grad_ys, or ones. */
  clg_graph_push_name_scope(g, "gradients");
  for (int i = 0; i < num_ys && code == CLG_OK; i++) {
    clg_output gy = grad_ys ? grad_ys[i] : clg_out(NULL, 0);
    if (!gy.node) {
      const clg_out_desc *y = &ys[i].node->outs[ys[i].index];
      clg_tensor *ones = clg_tensor_new(y->dtype, y->rank, y->dims, NULL);
      size_t count = clg_out_count(y);
      for (size_t k = 0; ones && k < count; k++) {
        if (y->dtype == CLG_FLOAT32)
          ((float *)clg_tensor_data(ones))[k] = 1;
        else if (y->dtype == CLG_FLOAT64)
          ((double *)clg_tensor_data(ones))[k] = 1;
        else if (y->dtype == CLG_FLOAT16)
          ((uint16_t *)clg_tensor_data(ones))[k] = clg_half_from_double(1);
      }
      gy = clg_out(ones ? clg_const(g, NULL, ones) : NULL, 0);
      clg_tensor_free(ones);
      if (!gy.node) {
        code = clg_graph_status(g) != CLG_OK ? clg_graph_status(g) : CLG_RESOURCE_EXHAUSTED;
        break;
      }
    }
    if (!grads_add(&gr[base[ys[i].node->index] + ys[i].index], gy))
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
  }
  /* Back from the ys: each node between gets its outputs' gradients summed and passes them
   * to its inputs through its op's gradient function. */
  for (int i = nn - 1; i >= 0 && code == CLG_OK; i--) {
    clg_node *n = clg_graph_node(g, i);
    if (!from_x[i] || !to_y[i] || n->num_inputs == 0)
      continue;
    bool any_input = false;
    for (int j = 0; j < n->num_inputs; j++)
      any_input = any_input || (from_x[n->inputs[j].node->index] != 0);
    clg_output dy_stack[4], *dy = n->num_outputs <= 4 ? dy_stack : NULL;
    if (!dy && !(dy = malloc(sizeof *dy * (size_t)n->num_outputs))) {
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
      break;
    }
    bool any = false;
    if ((code = open_scopes(g, n, opt->colocate_gradients_with_ops != 0)) != CLG_OK)
      break;
    for (int o = 0; o < n->num_outputs; o++) {
      dy[o] = grads_sum(g, &gr[base[i] + o]);
      any = any || dy[o].node != NULL;
    }
    if (any && any_input && !n->def->grad) {
      close_scopes(g, opt->colocate_gradients_with_ops != 0);
      code = clg_error(CLG_INVALID_ARGUMENT, "No gradient defined for operation '%s' (op type: %s)",
                       n->name, n->op);
      if (dy != dy_stack)
        free(dy);
      break;
    }
    clg_output dx_stack[8], *dx = n->num_inputs <= 8 ? dx_stack : NULL;
    if (!dx)
      dx = malloc(sizeof *dx * (size_t)n->num_inputs);
    if (!dx) {
      close_scopes(g, opt->colocate_gradients_with_ops != 0);
      if (dy != dy_stack)
        free(dy);
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
      break;
    }
    for (int j = 0; j < n->num_inputs; j++)
      dx[j] = clg_out(NULL, 0);
    if (any && any_input)
      code = n->def->grad(g, n, dy, dx);
    close_scopes(g, opt->colocate_gradients_with_ops != 0);
    if (code == CLG_OK && clg_graph_status(g) != CLG_OK)
      code = clg_graph_status(g);
    for (int j = 0; j < n->num_inputs && code == CLG_OK; j++) {
      const clg_output *in = &n->inputs[j];
      if (dx[j].node && from_x[in->node->index] &&
          !grads_add(&gr[base[in->node->index] + in->index], dx[j]))
        code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    }
    if (dx != dx_stack)
      free(dx);
    if (dy != dy_stack)
      free(dy);
  }
  for (int i = 0; i < num_xs && code == CLG_OK; i++) {
    out[i] = grads_sum(g, &gr[base[xs[i].node->index] + xs[i].index]);
    if (clg_graph_status(g) != CLG_OK)
      code = clg_graph_status(g);
  }
  clg_graph_pop_name_scope(g);
  if (code != CLG_OK && clg_graph_status(g) != CLG_OK)
    code = clg_error(clg_graph_status(g), "%s", clg_graph_error(g));
done:
  for (int i = 0; gr && i < nv; i++)
    free(gr[i].v);
  free(gr);
  free(from_x);
  free(to_y);
  free(base);
  if (code != CLG_OK)
    for (int i = 0; i < num_xs; i++)
      out[i] = clg_out(NULL, 0);
  return code;
}
