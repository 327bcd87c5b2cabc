/* The executor: the object a session runs its graph with, and the checks of a run's
 * arguments. A run finds its signature's plan (plan_cache.c, planner.c), holds its arenas and
 * runs it (runner.c); run_trace.c records traced runs and cluster_hooks.c adds what a task
 * of a cluster receives and sends. The plan's types are in plan.h. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

clg_code clg_executor_new(clg_process *p, const clg_graph *g, const clg_placement *placement,
                          clg_var_store *vars, clg_executor **out)
{
  clg_executor *x = calloc(1, sizeof *x);
  int nn = clg_graph_num_nodes(g);
  size_t n1 = (size_t)(nn > 0 ? nn : 1);
  if (!x)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an executor");
  x->proc = p;
  x->vars = vars;
  x->devs = clg_process_devices(p);
  x->g = g;
  x->nn = nn;
  int nd = x->devs->count;
  x->base = malloc(sizeof *x->base * (n1 + 1));
  x->dev_of = malloc(sizeof *x->dev_of * n1);
  x->alloc = calloc((size_t)nd, sizeof *x->alloc);
  x->arenas = calloc((size_t)nd, sizeof *x->arenas);
  x->consts = calloc(n1, sizeof *x->consts);
  x->const_ready = calloc(n1, sizeof *x->const_ready);
  if (!x->base || !x->dev_of || !x->alloc || !x->arenas || !x->consts || !x->const_ready) {
    clg_executor_free(x);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an executor");
  }
  int nv = 0;
  for (int i = 0; i < nn; i++) {
    x->base[i] = nv;
    nv += clg_graph_node(g, i)->num_outputs;
    x->dev_of[i] = placement[i].device;
  }
  x->base[nn] = nv;
  x->nv = nv;
  /* --- cluster hook */
  if ((x->cluster = clg_process_cluster(p)) != NULL) {
    if (!(x->task_of = malloc(sizeof *x->task_of * n1))) {
      clg_executor_free(x);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an executor");
    }
    for (int i = 0; i < nn; i++)
      x->task_of[i] = placement[i].task;
  }
  for (int d = 0; d < nd; d++) {
    clg_code code = clg_process_allocator(p, d, &x->alloc[d]);
    if (code != CLG_OK) {
      clg_executor_free(x);
      return code;
    }
  }
  *out = x;
  return CLG_OK;
}

clg_code clg_executor_plan_stats(const clg_executor *x, clg_plan_stats *out)
{
  if (!x->active)
    return clg_error(CLG_FAILED_PRECONDITION, "no run has been planned");
  *out = x->active->stats;
  out->num_plans = x->num_plans;
  out->host_to_device_bytes = x->h2d;
  out->device_to_host_bytes = x->d2h;
  return CLG_OK;
}

void clg_executor_free(clg_executor *x)
{
  if (!x)
    return;
  if (x->traces)
    clg_executor_set_tracing(x, false);
  if (x->alloc)
    clg_runner_release(x);
  for (int i = 0; x->const_ready && i < x->nn; i++)
    if (x->const_ready[i]) {
      clg_exec_ops(x, x->dev_of[i])->finish(clg_exec_device(x, x->dev_of[i]));
      clg_allocator_free(x->alloc[x->dev_of[i]], &x->consts[i], NULL);
    }
  clg_plan_cache_free(x);
  free(x->base);
  free(x->task_of);
  free(x->dev_of);
  free(x->alloc);
  free(x->arenas);
  free(x->consts);
  free(x->const_ready);
  free(x->blk);
  free(x->ready);
  free(x->copied);
  free(x->dead);
  free(x->outs);
  free(x);
}

/* --- the checks of a run's arguments ------------------------------------------------------- */

static clg_code check_output(clg_executor *x, const clg_output *o, const char *what, int i)
{
  if (!o->node)
    return clg_error(CLG_INVALID_ARGUMENT, "%s[%d] is NULL", what, i);
  if (o->node->graph != x->g || o->node->index >= x->nn)
    return clg_error(CLG_INVALID_ARGUMENT, "%s[%d] ('%s') is not a node of this session's graph",
                     what, i, o->node->name);
  if (o->index < 0 || o->index >= o->node->num_outputs)
    return clg_error(CLG_INVALID_ARGUMENT, "%s[%d] is '%s:%d', but '%s' has %d output%s", what, i,
                     o->node->name, o->index, o->node->name, o->node->num_outputs,
                     o->node->num_outputs == 1 ? "" : "s");
  return CLG_OK;
}

static clg_code check_feed(const clg_output *o, const clg_tensor *t, int i)
{
  const clg_out_desc *d = &o->node->outs[o->index];
  char want[96], got[96];
  if (!t)
    return clg_error(CLG_INVALID_ARGUMENT, "feeds[%d] (for '%s') is NULL", i, o->node->name);
  if (clg_tensor_dtype(t) != d->dtype)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "Cannot feed value of type %s for '%s', which has type %s",
                     clg_dtype_name(clg_tensor_dtype(t)), o->node->name, clg_dtype_name(d->dtype));
  bool same = clg_tensor_rank(t) == d->rank;
  for (int k = 0; same && k < d->rank; k++)
    same = clg_tensor_dim(t, k) == d->dims[k];
  if (!same)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "Cannot feed value of shape %s for '%s', which has shape %s",
                     clg_tensor_shape_string(t, got, sizeof got), o->node->name,
                     clg_out_shape_string(d, want, sizeof want));
  return CLG_OK;
}

/* The caller's feeds, fetches and targets, in the order the messages have always named
 * them: counts, then fetches, targets and feeds. */
static clg_code check_run(clg_executor *x, int num_feeds, const clg_output *feeds_at,
                          clg_tensor *const *feeds, int num_fetches, const clg_output *fetches,
                          clg_tensor **outputs, int num_targets, clg_node *const *targets)
{
  if (num_feeds < 0 || (num_feeds > 0 && (!feeds_at || !feeds)))
    return clg_error(CLG_INVALID_ARGUMENT, "num_feeds is %d but feed_nodes or feeds is NULL",
                     num_feeds);
  if (num_fetches < 0 || (num_fetches > 0 && (!fetches || !outputs)))
    return clg_error(CLG_INVALID_ARGUMENT, "num_fetches is %d but fetches or outputs is NULL",
                     num_fetches);
  if (num_targets < 0 || (num_targets > 0 && !targets))
    return clg_error(CLG_INVALID_ARGUMENT, "num_targets is %d but targets is NULL", num_targets);
  clg_code code = CLG_OK;
  for (int i = 0; i < num_fetches && code == CLG_OK; i++)
    code = check_output(x, &fetches[i], "fetches", i);
  for (int i = 0; i < num_targets && code == CLG_OK; i++) {
    if (!targets[i])
      code = clg_error(CLG_INVALID_ARGUMENT, "targets[%d] is NULL", i);
    else if (targets[i]->graph != x->g || targets[i]->index >= x->nn)
      code = clg_error(CLG_INVALID_ARGUMENT,
                       "targets[%d] ('%s') is not a node of this session's graph", i,
                       targets[i]->name);
  }
  for (int i = 0; i < num_feeds && code == CLG_OK; i++) {
    if ((code = check_output(x, &feeds_at[i], "feed_nodes", i)) != CLG_OK ||
        (code = check_feed(&feeds_at[i], feeds[i], i)) != CLG_OK)
      break;
    for (int j = 0; j < i; j++)
      if (feeds_at[j].node == feeds_at[i].node && feeds_at[j].index == feeds_at[i].index) {
        code = clg_error(CLG_INVALID_ARGUMENT, "'%s' is fed twice (feeds %d and %d)",
                         feeds_at[i].node->name, j, i);
        break;
      }
  }
  return code;
}

clg_code clg_executor_run(clg_executor *x, int num_feeds, const clg_output *feeds_at,
                          clg_tensor *const *feeds, int num_fetches, const clg_output *fetches,
                          clg_tensor **outputs, int num_targets, clg_node *const *targets)
{
  clg_run_trace_reset(x);
  clg_code code =
      check_run(x, num_feeds, feeds_at, feeds, num_fetches, fetches, outputs, num_targets, targets);
  plan *p = NULL;
  if (code == CLG_OK)
    code =
        clg_plan_cache_get(x, num_feeds, feeds_at, num_fetches, fetches, num_targets, targets, &p);
  if (code == CLG_OK)
    code = clg_runner_activate(x, p);
  if (code == CLG_OK)
    code = clg_run_trace_begin(x, p);
  if (code != CLG_OK)
    return code;
  code = clg_runner_run(x, p, feeds, num_fetches, outputs);
  clg_run_trace_resolve(x, p, code == CLG_OK);
  return code;
}
