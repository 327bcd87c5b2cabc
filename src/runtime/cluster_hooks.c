/* Cluster hooks (issue 17), the executor's only knowledge of tasks.
 *
 * Every task plans the same steps in the same order (the same graph, placement and run
 * signature). A node pinned to another task is a remote step here: at its turn this task
 * receives its outputs when a step of its own reads them or they are fetched. Its own task
 * sends them, right after computing them, to every task that reads them. Each task waits only
 * on values of earlier steps, so the tasks cannot deadlock. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

/* A local step reads value src (input j of n, as pval `used` there; j < 0: a fetch): a
 * remote producer's outputs are received. When the only reader is a copy on one device that
 * is not host memory, the value is received into that copy (pipelined through the staging
 * buffers) and the copy is not made: its block lives from the receiving step on. */
clg_code clg_cluster_hook_input(clg_executor *x, plan *p, const int *step_of, int src, int used,
                                const clg_node *n, int j)
{
  while (p->pv[src].kind == PV_COPY)
    src = p->pv[src].src;
  pval *v = &p->pv[src];
  if (!clg_exec_device(x, v->dev)->remote)
    return CLG_OK;
  if (v->kind == PV_VAR)
    return clg_error(CLG_UNIMPLEMENTED,
                     "node '%s' (%s) on task %d reads variable '%s' of task %d directly; read it "
                     "through an Identity placed on task %d (variables are not sent between tasks)",
                     n->name, n->op, clg_cluster_task(x->cluster), clg_exec_node(x, v->node)->name,
                     clg_exec_device(x, v->dev)->info.task, clg_exec_device(x, v->dev)->info.task);
  if (v->kind != PV_NODE)
    return CLG_OK;
  p->steps[step_of[v->node]].recv = true;
  if (j >= 0 && used >= 0 && p->pv[used].kind == PV_COPY && p->pv[used].src == src &&
      !clg_exec_ops(x, p->pv[used].dev)->host_memory && (v->recv_to < 0 || v->recv_to == used)) {
    v->recv_to = used;
    p->pv[used].start = v->start;
  } else {
    v->recv_host = true;
  }
  return CLG_OK;
}

/* Whether copy c was received in place of being made (see clg_cluster_hook_input). */
bool clg_cluster_hook_received(const plan *p, int c)
{
  const pval *v = &p->pv[c];
  return v->kind == PV_COPY && p->pv[v->src].recv_to == c && !p->pv[v->src].recv_host;
}

/* For each step of this task pinned here, the tasks that read its outputs. */
clg_code clg_cluster_hook_sends(clg_executor *x, plan *p, const int *step_of)
{
  int me = clg_cluster_task(x->cluster), tasks = clg_cluster_num_tasks(x->cluster);
  bool *to = calloc((size_t)tasks, sizeof *to);
  if (!to)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  bool *fetched = calloc((size_t)x->nn + 1, sizeof *fetched);
  for (int i = 0; fetched && i < p->nfetches; i++)
    fetched[p->pv[p->fetch_pv[i]].node] = true;
  clg_code code = fetched ? CLG_OK : clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < p->nsteps && code == CLG_OK; i++) {
    step *st = &p->steps[i];
    if (st->remote || x->task_of[st->node] != me)
      continue; /* remote, or every task computes its own copy */
    memset(to, 0, sizeof *to * (size_t)tasks);
    bool any = fetched[st->node];
    for (int t = 0; t < tasks && any; t++)
      to[t] = true;
    for (int c = i + 1; c < p->nsteps && !any; c++) {
      const clg_node *cn = clg_exec_node(x, p->steps[c].node);
      for (int j = 0; j < cn->num_inputs; j++) {
        if (cn->inputs[j].node->index != st->node)
          continue;
        int t = x->task_of[cn->index];
        for (int u = 0; u < tasks; u++)
          to[u] = to[u] || t < 0 || t == u;
      }
    }
    to[me] = false;
    for (int t = 0; t < tasks; t++)
      if (to[t]) {
        int *grown = realloc(st->send_to, sizeof(int) * (size_t)(st->nsend + 1));
        if (!grown) {
          code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
          break;
        }
        st->send_to = grown;
        st->send_to[st->nsend++] = t;
      }
  }
  free(to);
  free(fetched);
  (void)step_of;
  return code;
}

/* Runs a remote step (receives what this task reads) or sends a local step's outputs. */
clg_code clg_cluster_hook_step(clg_executor *x, const plan *p, const step *st, bool after_kernel)
{
  const clg_node *n = clg_exec_node(x, st->node);
  clg_code code = CLG_OK;
  for (int o = 0; o < n->num_outputs && code == CLG_OK; o++) {
    int v = st->out[o];
    int tag = x->base[st->node] + o;
    int to = p->pv[v].recv_to;
    if (!after_kernel && st->recv && to >= 0 && !p->pv[v].recv_host) /* into a device */
      code =
          clg_cluster_recv(x->cluster, clg_exec_device(x, st->dev)->info.task, tag,
                           clg_exec_device(x, p->pv[to].dev), &x->blk[to], p->pv[v].bytes, n->name);
    else if (!after_kernel && st->recv) /* x->blk[v] is in the remote device's (host) arena */
      code = clg_cluster_recv(x->cluster, clg_exec_device(x, st->dev)->info.task, tag,
                              clg_exec_device(x, st->dev), &x->blk[v], p->pv[v].bytes, n->name);
    for (int k = 0; after_kernel && k < st->nsend && code == CLG_OK; k++)
      code = clg_cluster_send(x->cluster, st->send_to[k], tag, clg_exec_device(x, st->dev),
                              &x->blk[v], p->pv[v].bytes, n->name);
  }
  return code;
}
