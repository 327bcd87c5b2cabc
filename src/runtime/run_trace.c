/* The record of traced runs: when each node ran and each copy was made, on the host's clock,
 * with the memory in use per step; tracing.c draws these records. Off by default: a run that
 * is not traced pays one branch per step. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

void clg_run_trace_reset(clg_executor *x)
{
  clg_run_trace_free(x->last);
  x->last = NULL;
  for (int i = 0; x->ctraces && i < x->cap_ctraces; i++) {
    clg_event_release(x->ctraces[i].after);
    memset(&x->ctraces[i], 0, sizeof x->ctraces[i]);
  }
  if (!x->traces)
    return;
  for (int i = 0; i < x->nn; i++) {
    clg_event_release(x->traces[i].before);
    clg_event_release(x->traces[i].after);
  }
  memset(x->traces, 0, sizeof *x->traces * (size_t)x->nn);
  x->run_start_ns = clg_now_ns();
}

void clg_run_trace_free(clg_run_trace *t)
{
  if (!t)
    return;
  free(t->slices);
  free(t->samples);
  free(t->offset);
  free(t->offset_error);
  free(t);
}

clg_code clg_run_trace_begin(clg_executor *x, const plan *p)
{
  if (!x->traces)
    return CLG_OK;
  if (p->npv > x->cap_ctraces) {
    trace *v = realloc(x->ctraces, sizeof *v * (size_t)p->npv);
    if (!v)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for tracing");
    memset(v + x->cap_ctraces, 0, sizeof *v * (size_t)(p->npv - x->cap_ctraces));
    x->ctraces = v;
    x->cap_ctraces = p->npv;
  }
  if (p->nsteps > x->cap_steps) {
    uint64_t *v = realloc(x->step_inuse, sizeof *v * (size_t)p->nsteps);
    if (!v)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for tracing");
    x->step_inuse = v;
    x->cap_steps = p->nsteps;
  }
  memset(x->step_inuse, 0, sizeof *x->step_inuse * (size_t)(p->nsteps ? p->nsteps : 0));
  if (!x->start_inuse && !(x->start_inuse = calloc((size_t)x->devs->count, sizeof *x->start_inuse)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for tracing");
  for (int d = 0; d < x->devs->count; d++) {
    clg_memory_stats ms;
    clg_allocator_stats(x->alloc[d], &ms);
    x->start_inuse[d] = ms.bytes_in_use;
  }
  return CLG_OK;
}

clg_code clg_run_trace_step_begin(clg_executor *x, const step *st)
{
  trace *t = &x->traces[st->node];
  t->ran = true;
  t->start_ns = clg_now_ns();
  return clg_exec_ops(x, st->dev)->marker(clg_exec_device(x, st->dev), &t->before);
}

clg_code clg_run_trace_step_end(clg_executor *x, const plan *p, const step *st, clg_code code)
{
  trace *t = &x->traces[st->node];
  if (code == CLG_OK) {
    t->end_ns = clg_now_ns();
    code = clg_exec_ops(x, st->dev)->marker(clg_exec_device(x, st->dev), &t->after);
  }
  if (x->step_inuse) {
    clg_memory_stats ms;
    clg_allocator_stats(x->alloc[st->dev], &ms);
    x->step_inuse[st - p->steps] = ms.bytes_in_use;
  }
  return code;
}

/* Each device's clock on the host's: device + offset = host, +- error. Devices whose
 * estimates agree within their errors read one clock (PoCL's devices do): they all take the
 * tightest estimate, so that their times compare exactly with one another. */
static void traces_clocks(clg_executor *x, const bool *used, int64_t *off, uint64_t *err)
{
  int nd = x->devs->count;
  int *order = malloc(sizeof(int) * (size_t)nd);
  int n = 0;
  for (int d = 0; d < nd; d++) {
    off[d] = 0;
    err[d] = 0;
    if (used[d] &&
        clg_exec_ops(x, d)->clock_offset(clg_exec_device(x, d), &off[d], &err[d]) == CLG_OK &&
        order)
      order[n++] = d;
  }
  for (int i = 1; i < n; i++) /* by error, tightest first (insertion sort: few devices) */
    for (int j = i; j > 0 && err[order[j]] < err[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 1; i < n; i++) {
    int d = order[i];
    for (int j = 0; j < i; j++) {
      int e = order[j];
      int64_t gap = off[d] > off[e] ? off[d] - off[e] : off[e] - off[d];
      if (err[e] > 0 && (uint64_t)gap <= err[d] + err[e]) {
        off[d] = off[e];
        err[d] = err[e];
        break;
      }
    }
  }
  free(order);
}

/* A traced event's times on the host's clock: the end of the marker before (or the copy's
 * start) to the end of the marker after; host times where there is no event. */
static void trace_times(const trace *t, int64_t off, bool copy, uint64_t *start, uint64_t *end)
{
  uint64_t s0, e0, s1, e1;
  *start = t->start_ns;
  *end = t->end_ns;
  if (copy && t->after && clg_event_wait(1, &t->after) == CLG_OK &&
      clg_event_times(t->after, &s1, &e1) == CLG_OK) {
    *start = (uint64_t)((int64_t)s1 + off);
    *end = (uint64_t)((int64_t)e1 + off);
  } else if (!copy && t->before && t->after && clg_event_wait(1, &t->after) == CLG_OK &&
             clg_event_times(t->before, &s0, &e0) == CLG_OK &&
             clg_event_times(t->after, &s1, &e1) == CLG_OK) {
    *start = (uint64_t)((int64_t)e0 + off);
    *end = (uint64_t)((int64_t)e1 + off);
  }
}

/* Bytes of the run's arena tensors live at each step on each device: live[s * nd + d]. */
static uint64_t *traces_live(clg_executor *x, const plan *p)
{
  int nd = x->devs->count;
  size_t cells = ((size_t)p->nsteps + 3) * (size_t)nd;
  int64_t *delta = calloc(cells, sizeof *delta);
  uint64_t *live = calloc(cells, sizeof *live);
  if (!delta || !live) {
    free(delta);
    free(live);
    return NULL;
  }
  for (int i = 0; i < p->npv; i++) {
    const pval *v = &p->pv[i];
    if (!v->in_arena || v->alias >= 0)
      continue;
    int64_t b = (int64_t)clg_plan_arena_bytes(x, v);
    delta[(size_t)v->start * (size_t)nd + (size_t)v->dev] += b;
    delta[((size_t)v->end + 1) * (size_t)nd + (size_t)v->dev] -= b;
  }
  int64_t *run = calloc((size_t)nd, sizeof *run);
  for (int s = 0; run && s < p->nsteps + 2; s++)
    for (int d = 0; d < nd; d++) {
      run[d] += delta[(size_t)s * (size_t)nd + (size_t)d];
      live[(size_t)s * (size_t)nd + (size_t)d] = run[d] > 0 ? (uint64_t)run[d] : 0;
    }
  free(run);
  free(delta);
  return live;
}

void clg_run_trace_resolve(clg_executor *x, const plan *p, bool ok)
{
  if (!x->traces)
    return;
  int nd = x->devs->count;
  bool *used = calloc((size_t)nd, sizeof *used);
  clg_run_trace *r = calloc(1, sizeof *r);
  uint64_t *live = traces_live(x, p);
  if (r) {
    r->ndevs = nd;
    r->offset = calloc((size_t)nd, sizeof *r->offset);
    r->offset_error = calloc((size_t)nd, sizeof *r->offset_error);
    r->slices = malloc(sizeof *r->slices * (size_t)(p->nsteps + p->npv + 1));
    r->samples = malloc(sizeof *r->samples * (size_t)(p->nsteps + 2 * nd + 1));
  }
  if (!used || !r || !live || !r->offset || !r->offset_error || !r->slices || !r->samples) {
    free(used);
    free(live);
    clg_run_trace_free(r);
    return;
  }
  for (int k = 0; k < p->nsteps; k++) {
    used[p->steps[k].dev] = true;
    for (int c = 0; c < p->steps[k].ncopies; c++)
      used[p->pv[p->steps[k].copies[c]].dev] = true;
  }
  traces_clocks(x, used, r->offset, r->offset_error);
  r->ok = ok;
  r->start_ns = x->run_start_ns;
  r->end_ns = clg_now_ns();
  uint64_t *node_end = calloc((size_t)(x->nn ? x->nn : 1), sizeof *node_end);
  for (int k = 0; k < p->nsteps; k++) {
    const step *st = &p->steps[k];
    trace *t = &x->traces[st->node];
    for (int c = 0; c < st->ncopies; c++) {
      int v = st->copies[c];
      trace *ct = &x->ctraces[v];
      if (!ct->ran)
        continue;
      const pval *pv = &p->pv[v];
      clg_run_slice *sl = &r->slices[r->nslices++];
      *sl = (clg_run_slice){pv->node, pv->out, pv->dev, p->pv[pv->src].dev, pv->bytes, 0, 0};
      trace_times(ct, r->offset[pv->dev], true, &sl->start_ns, &sl->end_ns);
      /* A copy staged through the host was called before its source was ready (the call
       * waited): it starts when the source's producer ends. */
      if (!ct->after && node_end && node_end[pv->node] > sl->start_ns)
        sl->start_ns = node_end[pv->node] < sl->end_ns ? node_end[pv->node] : sl->end_ns;
    }
    if (!t->ran)
      continue;
    uint64_t s0, s1;
    trace_times(t, r->offset[st->dev], false, &s0, &s1);
    t->start_ns = s0; /* clg_session_node_times: on the host's clock */
    t->end_ns = s1;
    if (node_end)
      node_end[st->node] = s1;
    r->slices[r->nslices++] = (clg_run_slice){st->node, 0, st->dev, -1, 0, s0, s1};
    r->samples[r->nsamples++] = (clg_run_sample){
        st->dev, s0, x->step_inuse[k], live[(size_t)(k + 1) * (size_t)nd + (size_t)st->dev]};
  }
  /* The start and end of the run on every device it used. */
  for (int d = 0; d < nd; d++) {
    if (!used[d])
      continue;
    clg_memory_stats ms;
    clg_allocator_stats(x->alloc[d], &ms);
    r->samples[r->nsamples++] = (clg_run_sample){d, r->start_ns, x->start_inuse[d], live[d]};
    r->samples[r->nsamples++] = (clg_run_sample){
        d, r->end_ns, ms.bytes_in_use, live[(size_t)(p->nsteps + 1) * (size_t)nd + (size_t)d]};
  }
  free(node_end);
  free(used);
  free(live);
  x->last = r;
}

clg_run_trace *clg_executor_take_trace(clg_executor *x)
{
  clg_run_trace *r = x ? x->last : NULL;
  if (x)
    x->last = NULL;
  return r;
}

clg_code clg_executor_set_tracing(clg_executor *x, bool on)
{
  clg_run_trace_reset(x);
  if (!on) {
    free(x->traces);
    free(x->ctraces);
    free(x->step_inuse);
    free(x->start_inuse);
    x->traces = x->ctraces = NULL;
    x->step_inuse = x->start_inuse = NULL;
    x->cap_ctraces = x->cap_steps = 0;
    return CLG_OK;
  }
  if (!x->traces && !(x->traces = calloc((size_t)(x->nn > 0 ? x->nn : 1), sizeof *x->traces)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for tracing");
  return CLG_OK;
}

clg_code clg_executor_node_times(const clg_executor *x, const clg_node *n, uint64_t *start_ns,
                                 uint64_t *end_ns)
{
  if (!x->traces)
    return clg_error(CLG_FAILED_PRECONDITION, "tracing is off for this session");
  const trace *t = &x->traces[n->index];
  if (!t->ran)
    return clg_error(CLG_NOT_FOUND, "node '%s' did not run in the last traced run", n->name);
  *start_ns = t->start_ns;
  *end_ns = t->end_ns;
  return CLG_OK;
}
