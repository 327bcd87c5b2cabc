/* The planner: what a run signature runs (the nodes its fetches and targets need, in graph
 * order), each value's place and lifetime in steps, which outputs reuse an input's buffer in
 * place, and each value's offset in its device's arena. Offsets come from replaying the run
 * in order with a best-fit free list, so the arena is what the old free-after-last-use order
 * needed, less what in-place reuse saves. */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "runtime/plan.h"

void clg_plan_free(plan *p)
{
  if (!p)
    return;
  /* A plan that failed while being built may have counted steps it never allocated. */
  for (int i = 0; p->steps && i < p->nsteps; i++) {
    free(p->steps[i].in);
    free(p->steps[i].out);
    free(p->steps[i].copies);
    free(p->steps[i].send_to);
  }
  free(p->steps);
  free(p->pv);
  free(p->feeds);
  free(p->fetches);
  free(p->targets);
  free(p->fetch_pv);
  free(p->upload);
  free(p->arena);
  free(p);
}

/* A growable array of pvals while planning, and what the planning steps share. */
typedef struct builder {
  clg_executor *x;
  plan *p;
  int cap;
  int *val_pv;    /* value id -> pval (-1) */
  int *copy_head; /* pval -> first copy of it (-1); copies chain through copy_next */
  int *copy_next;
  bool *needed;   /* per node: the run needs it */
  bool *fed_node; /* per node: one of its outputs is fed */
  int *step_of;   /* per node: its step, or -1 */
  int *stack;
} builder;

static int pv_add(builder *b, enum pkind kind, int dev, int node, int out, size_t bytes)
{
  plan *p = b->p;
  if (p->npv == b->cap) {
    int cap = b->cap ? 2 * b->cap : 64;
    pval *pv = realloc(p->pv, sizeof *pv * (size_t)cap);
    int *h = realloc(b->copy_head, sizeof(int) * (size_t)cap);
    if (h)
      b->copy_head = h;
    int *nx = h ? realloc(b->copy_next, sizeof(int) * (size_t)cap) : NULL;
    if (nx)
      b->copy_next = nx;
    if (!pv || !h || !nx) {
      if (pv)
        p->pv = pv;
      return -1;
    }
    p->pv = pv;
    b->cap = cap;
  }
  int i = p->npv++;
  pval *v = &p->pv[i];
  memset(v, 0, sizeof *v);
  v->kind = kind;
  v->dev = dev;
  v->node = node;
  v->out = out;
  v->src = -1;
  v->feed = -1;
  v->bytes = bytes;
  v->alias = -1;
  v->recv_to = -1;
  b->copy_head[i] = -1;
  b->copy_next[i] = -1;
  return i;
}

/* The pval of value (node, out) on device d, adding the copy when d differs. step is where
 * it is used at. */
static int use_on(builder *b, int src, int d, int at, step *st)
{
  plan *p = b->p;
  if (p->pv[src].dev != d) {
    int c = b->copy_head[src];
    /* A variable may change between two reads: each read copies it afresh. */
    while (c >= 0 && (p->pv[c].dev != d || p->pv[src].kind == PV_VAR))
      c = b->copy_next[c];
    if (c < 0) {
      c = pv_add(b, PV_COPY, d, p->pv[src].node, p->pv[src].out, p->pv[src].bytes);
      if (c < 0)
        return -1;
      p->pv[c].src = src;
      p->pv[c].start = at;
      p->pv[c].in_arena = true;
      b->copy_next[c] = b->copy_head[src];
      b->copy_head[src] = c;
      /* The source stays to the end of the run: another queue reads it. */
      p->pv[src].end = p->nsteps + 1;
      int *cp = realloc(st->copies, sizeof(int) * (size_t)(st->ncopies + 1));
      if (!cp)
        return -1;
      st->copies = cp;
      st->copies[st->ncopies++] = c;
    }
    src = c;
  }
  if (p->pv[src].end < at)
    p->pv[src].end = at;
  return src;
}

/* Offsets by replaying the run: at each step, place what starts there (best fit in the
 * free gaps, else at the top), then free what ended before it. Per device. */
typedef struct gap {
  size_t offset, size;
} gap;

typedef struct arena_sim {
  gap *gaps;
  int ngaps, cap;
  size_t top;
  uint64_t live, peak_live;
} arena_sim;

static bool sim_alloc(arena_sim *s, size_t size, size_t *offset)
{
  int best = -1;
  for (int i = 0; i < s->ngaps; i++)
    if (s->gaps[i].size >= size && (best < 0 || s->gaps[i].size < s->gaps[best].size))
      best = i;
  if (best >= 0) {
    *offset = s->gaps[best].offset;
    s->gaps[best].offset += size;
    s->gaps[best].size -= size;
    if (s->gaps[best].size == 0)
      memmove(&s->gaps[best], &s->gaps[best + 1], sizeof(gap) * (size_t)(--s->ngaps - best));
    return true;
  }
  /* A free gap that ends at the top grows into the top. */
  if (s->ngaps > 0 && s->gaps[s->ngaps - 1].offset + s->gaps[s->ngaps - 1].size == s->top) {
    gap *g = &s->gaps[--s->ngaps];
    *offset = g->offset;
    s->top = g->offset + size;
    return true;
  }
  *offset = s->top;
  s->top += size;
  return true;
}

static bool sim_free(arena_sim *s, size_t offset, size_t size)
{
  int i = 0;
  while (i < s->ngaps && s->gaps[i].offset < offset)
    i++;
  bool prev = i > 0 && s->gaps[i - 1].offset + s->gaps[i - 1].size == offset;
  bool next = i < s->ngaps && offset + size == s->gaps[i].offset;
  if (prev && next) {
    s->gaps[i - 1].size += size + s->gaps[i].size;
    memmove(&s->gaps[i], &s->gaps[i + 1], sizeof(gap) * (size_t)(--s->ngaps - i));
  } else if (prev) {
    s->gaps[i - 1].size += size;
  } else if (next) {
    s->gaps[i].offset = offset;
    s->gaps[i].size += size;
  } else {
    if (s->ngaps == s->cap) {
      int cap = s->cap ? 2 * s->cap : 16;
      gap *g = realloc(s->gaps, sizeof *g * (size_t)cap);
      if (!g)
        return false;
      s->gaps = g;
      s->cap = cap;
    }
    memmove(&s->gaps[i + 1], &s->gaps[i], sizeof(gap) * (size_t)(s->ngaps - i));
    s->gaps[i] = (gap){offset, size};
    s->ngaps++;
  }
  return true;
}

/* Lifetime of a buffer: a pval and the pvals that alias it in place. root[i] gets the pval
 * whose buffer pval i uses, each alias link followed once: walking the chain from every
 * member took n^2 / 2 steps for a chain of n in-place ops. */
static void plan_roots(const plan *p, int *root)
{
  for (int i = 0; i < p->npv; i++)
    root[i] = -1;
  for (int i = 0; i < p->npv; i++) {
    int r = i;
    while (root[r] < 0 && p->pv[r].alias >= 0)
      r = p->pv[r].alias;
    if (root[r] >= 0)
      r = root[r];
    for (int j = i; root[j] < 0; j = p->pv[j].alias) {
      root[j] = r;
      if (p->pv[j].alias < 0)
        break;
    }
  }
}

static clg_code plan_layout(clg_executor *x, plan *p)
{
  int nd = x->devs->count;
  arena_sim *sim = calloc((size_t)nd, sizeof *sim);
  int *by_start = malloc(sizeof(int) * (size_t)(p->npv ? p->npv : 1));
  int *by_end = malloc(sizeof(int) * (size_t)(p->npv ? p->npv : 1));
  int *bucket = calloc((size_t)p->nsteps + 3, sizeof(int));
  int *root = malloc(sizeof(int) * (size_t)(p->npv ? p->npv : 1));
  clg_code code = CLG_OK;
  if (!sim || !by_start || !by_end || !bucket || !root) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  plan_roots(p, root);
  /* A buffer's end is the latest end of the pvals sharing it. */
  for (int i = 0; i < p->npv; i++) {
    pval *v = &p->pv[i];
    if (v->alias >= 0) {
      pval *r = &p->pv[root[i]];
      if (v->end > r->end)
        r->end = v->end;
      if (v->bytes > r->bytes)
        r->bytes = v->bytes;
    }
  }
  /* Counting sort of buffer roots by start and by end. */
  int nb = 0;
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].alias < 0)
      bucket[p->pv[i].start + 1]++, nb++;
  for (int s = 1; s < p->nsteps + 3; s++)
    bucket[s] += bucket[s - 1];
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].alias < 0)
      by_start[bucket[p->pv[i].start]++] = i;
  memset(bucket, 0, sizeof(int) * ((size_t)p->nsteps + 3));
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].alias < 0)
      bucket[p->pv[i].end + 1]++;
  for (int s = 1; s < p->nsteps + 3; s++)
    bucket[s] += bucket[s - 1];
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].alias < 0)
      by_end[bucket[p->pv[i].end]++] = i;
  /* Replay: at step s, free what ended before s, then place what starts at s. */
  int ie = 0;
  for (int k = 0; k < nb; k++) {
    pval *v = &p->pv[by_start[k]];
    while (ie < nb && p->pv[by_end[ie]].end < v->start) {
      pval *e = &p->pv[by_end[ie++]];
      if (!sim_free(&sim[e->dev], e->offset, clg_plan_arena_bytes(x, e))) {
        code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
        goto done;
      }
    }
    sim_alloc(&sim[v->dev], clg_plan_arena_bytes(x, v), &v->offset);
  }
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].alias >= 0)
      p->pv[i].offset = p->pv[root[i]].offset;
  p->arena = calloc((size_t)nd, sizeof *p->arena);
  if (!p->arena) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  for (int d = 0; d < nd; d++) {
    p->arena[d] = sim[d].top;
    p->stats.arena_bytes += sim[d].top;
  }
done:
  for (int d = 0; sim && d < nd; d++)
    free(sim[d].gaps);
  free(sim);
  free(by_start);
  free(by_end);
  free(bucket);
  free(root);
  return code;
}

/* The reference: every value freed after its last use, nothing in place, no arena. */
static void plan_reference(clg_executor *x, plan *p)
{
  int nd = x->devs->count;
  uint64_t *live = calloc((size_t)nd, sizeof *live), *peak = calloc((size_t)nd, sizeof *peak);
  int64_t *delta = calloc(((size_t)p->nsteps + 3) * (size_t)nd, sizeof *delta);
  if (live && peak && delta) {
    for (int i = 0; i < p->npv; i++) {
      const pval *v = &p->pv[i];
      if (!v->in_arena) /* Consts, host feeds and fetched host results were never blocks */
        continue;
      int64_t b = (int64_t)clg_plan_arena_bytes(x, v);
      int end = v->end;
      /* What an in-place output's input would have kept: its own end. */
      delta[(size_t)v->start * (size_t)nd + (size_t)v->dev] += b;
      delta[((size_t)end + 1) * (size_t)nd + (size_t)v->dev] -= b;
    }
    for (int s = 0; s < p->nsteps + 2; s++)
      for (int d = 0; d < nd; d++) {
        live[d] = (uint64_t)((int64_t)live[d] + delta[(size_t)s * (size_t)nd + (size_t)d]);
        if (live[d] > peak[d])
          peak[d] = live[d];
      }
    for (int d = 0; d < nd; d++)
      p->stats.reference_bytes += peak[d];
  }
  free(live);
  free(peak);
  free(delta);
}

static clg_code placeholder_error(const clg_node *n)
{
  char shape[96];
  return clg_error(CLG_INVALID_ARGUMENT,
                   "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s",
                   n->name, clg_dtype_name(n->outs[0].dtype),
                   clg_node_shape_string(n, shape, sizeof shape));
}

/* --- building a plan -------------------------------------------------------------------- */

static clg_code plan_oom(void)
{
  return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
}

/* The node whose outputs hold value id vid. */
static int node_of_value(const clg_executor *x, int vid)
{
  int node = 0;
  while (node + 1 < x->nn && x->base[node + 1] <= vid)
    node++;
  return node;
}

/* What the fetches and targets need, through data and control edges, stopping at fed
 * nodes. */
static void plan_needed(builder *b)
{
  clg_executor *x = b->x;
  plan *p = b->p;
  bool *needed = b->needed;
  int *stack = b->stack, top = 0;
  for (int i = 0; i < p->nfeeds; i++)
    b->fed_node[node_of_value(x, p->feeds[i])] = true;
  for (int i = 0; i < p->nfetches; i++) {
    int node = node_of_value(x, p->fetches[i]);
    if (!needed[node])
      needed[node] = true, stack[top++] = node;
  }
  for (int i = 0; i < p->ntargets; i++)
    if (!needed[p->targets[i]])
      needed[p->targets[i]] = true, stack[top++] = p->targets[i];
  while (top > 0) {
    const clg_node *n = clg_exec_node(x, stack[--top]);
    if (b->fed_node[n->index])
      continue;
    for (int j = 0; j < n->num_inputs + n->num_control; j++) {
      int in = j < n->num_inputs ? n->inputs[j].node->index : n->control[j - n->num_inputs]->index;
      if (!needed[in])
        needed[in] = true, stack[top++] = in;
    }
  }
}

/* Steps: the needed nodes that run, in graph order. A placeholder that must be fed and is
 * not fails the run here. */
static clg_code plan_steps(builder *b)
{
  plan *p = b->p;
  p->nsteps = 0;
  for (int i = 0; i < b->x->nn; i++) {
    const clg_node *n = clg_exec_node(b->x, i);
    b->step_of[i] = -1;
    if (!b->needed[i] || b->fed_node[i] || (n->def->flags & (CLG_OP_CONST | CLG_OP_VARIABLE)))
      continue;
    if (n->def->flags & CLG_OP_MUST_FEED)
      return placeholder_error(n);
    b->step_of[i] = p->nsteps++;
  }
  p->steps = calloc((size_t)(p->nsteps ? p->nsteps : 1), sizeof *p->steps);
  return p->steps ? CLG_OK : plan_oom();
}

/* Feeds, Consts and variables: the values there from the start of the run (step 0). */
static clg_code plan_sources(builder *b)
{
  clg_executor *x = b->x;
  plan *p = b->p;
  for (int i = 0; i < p->nfeeds; i++) {
    int vid = p->feeds[i], node = node_of_value(x, vid);
    int d = x->dev_of[node];
    int v = pv_add(b, PV_FEED, d, node, vid - x->base[node],
                   clg_node_out_bytes(clg_exec_node(x, node), vid - x->base[node]));
    if (v < 0)
      return plan_oom();
    p->pv[v].feed = i;
    p->pv[v].in_arena = !clg_exec_ops(x, d)->host_memory;
    b->val_pv[vid] = v;
  }
  for (int i = 0; i < x->nn; i++) {
    const clg_node *n = clg_exec_node(x, i);
    if (!b->needed[i] || b->fed_node[i])
      continue;
    unsigned flags = n->def->flags;
    if (flags & CLG_OP_CONST) {
      int v = pv_add(b, PV_CONST, x->dev_of[i], i, 0, clg_node_out_bytes(n, 0));
      if (v < 0)
        return plan_oom();
      b->val_pv[x->base[i]] = v;
    }
    if (flags & CLG_OP_VARIABLE) {
      int v = pv_add(b, PV_VAR, x->dev_of[i], i, 0, clg_node_out_bytes(n, 0));
      if (v < 0)
        return plan_oom();
      b->val_pv[x->base[i]] = v;
    }
  }
  return CLG_OK;
}

/* Output o of step st (node n, step number s) gets its own pval, born at s. */
static int plan_output(builder *b, step *st, const clg_node *n, int o, int s)
{
  int v = pv_add(b, PV_NODE, st->dev, n->index, o, clg_node_out_bytes(n, o));
  if (v < 0)
    return -1;
  b->p->pv[v].start = b->p->pv[v].end = s;
  b->p->pv[v].in_arena = true;
  b->val_pv[b->x->base[n->index] + o] = st->out[o] = v;
  return v;
}

/* A reference edge (input j): the kernel updates the variable's own buffer, src. */
static clg_code plan_ref_input(builder *b, step *st, const clg_node *n, int j, int src)
{
  const pval *v = &b->p->pv[src];
  if (v->kind != PV_VAR) {
    const clg_node *var = clg_node_ref_variable(n, j);
    return clg_error(CLG_INVALID_ARGUMENT,
                     "node '%s' (%s) updates variable '%s', which is fed in this run: a "
                     "fed value cannot be updated",
                     n->name, n->op, var ? var->name : n->inputs[j].node->name);
  }
  if (v->dev != st->dev)
    return clg_error(CLG_INTERNAL, "node '%s' (%s) is not on the device of its variable", n->name,
                     n->op);
  st->in[j] = src;
  return CLG_OK;
}

/* Each input's pval on the step's device (copies added where it crosses devices). */
static clg_code plan_inputs(builder *b, step *st, const clg_node *n, int s)
{
  clg_executor *x = b->x;
  for (int j = 0; j < n->num_inputs; j++) {
    int src = b->val_pv[x->base[n->inputs[j].node->index] + n->inputs[j].index];
    clg_code code;
    if (src >= 0 && j < 32 && (n->def->ref_inputs >> j & 1u)) {
      if ((code = plan_ref_input(b, st, n, j, src)) != CLG_OK)
        return code;
      continue;
    }
    if (src < 0 || (st->in[j] = use_on(b, src, st->dev, s, st)) < 0)
      return plan_oom();
    if (x->cluster &&
        (code = clg_cluster_hook_input(x, b->p, b->step_of, src, st->in[j], n, j)) != CLG_OK)
      return code; /* --- cluster hook */
  }
  return CLG_OK;
}

/* Scratch the kernel asks for lives in the arena for this step only. */
static clg_code plan_scratch(builder *b, step *st, const clg_node *n, int s)
{
  clg_device *dev = clg_exec_device(b->x, st->dev);
  size_t scratch = 0;
  st->scratch = -1;
  clg_code code = st->kernel->scratch ? st->kernel->scratch(n, dev, &scratch) : CLG_OK;
  if (code != CLG_OK) {
    clg_error_prefix("node '%s' (%s) on %s: ", n->name, n->op, dev->info.full_name);
    return code;
  }
  if (!scratch)
    return CLG_OK;
  if ((st->scratch = pv_add(b, PV_NODE, st->dev, n->index, 0, scratch)) < 0)
    return plan_oom();
  b->p->pv[st->scratch].start = b->p->pv[st->scratch].end = s;
  b->p->pv[st->scratch].in_arena = true;
  return CLG_OK;
}

/* Step k (step number k + 1: 0 is the start of the run) runs node i. */
static clg_code plan_step(builder *b, int k, int i)
{
  clg_executor *x = b->x;
  const clg_node *n = clg_exec_node(x, i);
  step *st = &b->p->steps[k];
  int s = k + 1;
  st->node = i;
  st->dev = x->dev_of[i];
  b->p->control = b->p->control || n->def == &clg_op_Switch;
  st->kernel = clg_backend_find_kernel(n, clg_exec_device(x, st->dev));
  st->in = malloc(sizeof(int) * (size_t)(n->num_inputs ? n->num_inputs : 1));
  st->out = malloc(sizeof(int) * (size_t)n->num_outputs);
  if (!st->in || !st->out)
    return plan_oom();
  /* --- cluster hook: another task computes this node; its outputs may come here */
  st->remote = clg_exec_device(x, st->dev)->remote;
  if (st->remote) {
    for (int j = 0; j < n->num_inputs; j++)
      st->in[j] = -1;
    for (int o = 0; o < n->num_outputs; o++)
      if (plan_output(b, st, n, o, s) < 0)
        return plan_oom();
    st->scratch = -1;
    return CLG_OK;
  }
  if (!st->kernel || !st->kernel->run)
    return clg_error(CLG_INTERNAL, "node '%s' (%s) has no kernel on %s", n->name, n->op,
                     clg_exec_device(x, st->dev)->info.full_name);
  clg_code code = plan_inputs(b, st, n, s);
  if (code == CLG_OK)
    code = plan_scratch(b, st, n, s);
  for (int o = 0; o < n->num_outputs && code == CLG_OK; o++) {
    if (o == 0 && (n->def->ref_inputs & 1u)) { /* the output is the variable */
      b->val_pv[x->base[i]] = st->out[0] = st->in[0];
      continue;
    }
    if (plan_output(b, st, n, o, s) < 0)
      code = plan_oom();
  }
  return code;
}

/* Fetches live to the end; a host result is computed straight into the tensor returned. */
static clg_code plan_fetches(builder *b)
{
  clg_executor *x = b->x;
  plan *p = b->p;
  p->fetch_pv = malloc(sizeof(int) * (size_t)(p->nfetches ? p->nfetches : 1));
  if (!p->fetch_pv)
    return plan_oom();
  for (int i = 0; i < p->nfetches; i++) {
    int v = b->val_pv[p->fetches[i]];
    if (v < 0)
      return clg_error(CLG_INTERNAL, "fetch %d was not planned", i);
    p->fetch_pv[i] = v;
    p->pv[v].end = p->nsteps + 1;
    if (x->cluster && clg_exec_device(x, p->pv[v].dev)->remote) { /* --- cluster hook */
      clg_code code =
          clg_cluster_hook_input(x, p, b->step_of, v, -1, clg_exec_node(x, p->pv[v].node), -1);
      if (code != CLG_OK)
        return code;
      continue;
    }
    if (p->pv[v].kind == PV_NODE && clg_exec_ops(x, p->pv[v].dev)->host_memory) {
      p->pv[v].in_arena = false;
      p->pv[v].fetched_host = true;
    }
  }
  return CLG_OK;
}

/* In place: an output takes the buffer of the input the op names when that input's last
 * use is this step (no later node reads it and it is not fetched), no other input of the
 * node is that same value (a kernel may still read it after writing some of its output,
 * as AddN's later passes do), on this device, and the sizes match. */
static void plan_inplace(clg_executor *x, plan *p)
{
  for (int i = 0; i < p->nsteps; i++) {
    step *st = &p->steps[i];
    const clg_node *n = clg_exec_node(x, st->node);
    int which = n->def->inplace;
    if (which < 0 || which >= n->num_inputs || st->remote)
      continue;
    bool again = false;
    for (int j = 0; j < n->num_inputs && !again; j++)
      again = j != which && st->in[j] == st->in[which];
    pval *out = &p->pv[st->out[0]], *in = &p->pv[st->in[which]];
    if (!again && out->in_arena && in->in_arena && in->end == i + 1 && in->dev == out->dev &&
        in->bytes == out->bytes && in->bytes > 0) {
      out->alias = st->in[which];
      p->stats.num_inplace++;
    }
  }
}

/* Device feeds are uploaded at the start. */
static clg_code plan_uploads(plan *p)
{
  p->upload = malloc(sizeof(int) * (size_t)(p->nfeeds ? p->nfeeds : 1));
  if (!p->upload)
    return plan_oom();
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].kind == PV_FEED && p->pv[i].in_arena)
      p->upload[p->nupload++] = i;
  return CLG_OK;
}

static clg_code plan_run_steps(builder *b)
{
  clg_code code = CLG_OK;
  for (int i = 0, k = 0; i < b->x->nn && code == CLG_OK; i++)
    if (b->step_of[i] >= 0)
      code = plan_step(b, k++, i);
  return code;
}

clg_code clg_plan_build(clg_executor *x, plan *p)
{
  int nn = x->nn;
  builder b = {.x = x, .p = p};
  b.needed = calloc((size_t)nn + 1, sizeof *b.needed);
  b.fed_node = calloc((size_t)nn + 1, sizeof *b.fed_node);
  b.stack = malloc(sizeof(int) * ((size_t)nn + 1));
  b.step_of = malloc(sizeof(int) * ((size_t)nn + 1));
  b.val_pv = malloc(sizeof(int) * ((size_t)x->nv + 1));
  clg_code code = CLG_OK;
  if (!b.needed || !b.fed_node || !b.stack || !b.step_of || !b.val_pv)
    code = plan_oom();
  for (int i = 0; code == CLG_OK && i < x->nv; i++)
    b.val_pv[i] = -1;
  if (code == CLG_OK) {
    plan_needed(&b);
    code = plan_steps(&b);
  }
  if (code == CLG_OK)
    code = plan_sources(&b);
  if (code == CLG_OK)
    code = plan_run_steps(&b);
  if (code == CLG_OK)
    code = plan_fetches(&b);
  if (code == CLG_OK) {
    plan_reference(x, p);
    plan_inplace(x, p);
    if (x->cluster) /* --- cluster hook */
      code = clg_cluster_hook_sends(x, p, b.step_of);
    else
      code = clg_plan_fuse(x, p);
  }
  if (code == CLG_OK)
    code = plan_uploads(p);
  if (code == CLG_OK) {
    code = plan_layout(x, p);
    p->stats.num_values = p->npv;
  }
  free(b.needed);
  free(b.fed_node);
  free(b.stack);
  free(b.step_of);
  free(b.val_pv);
  free(b.copy_head);
  free(b.copy_next);
  return code;
}
