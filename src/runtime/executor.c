/* The executor: plans a run signature once, then runs the plan.
 *
 * A plan lists the nodes a run needs (graph order, which is topological), gives every value
 * it touches a place (a "pval": a node's output, a copy on another device, a feed, a Const
 * cached per session), each value's lifetime in steps, which outputs reuse an input's
 * buffer in place, and each value's offset in its device's arena. Offsets come from
 * replaying the run in order with a best-fit free list, so the arena is what the old
 * free-after-last-use order needed, less what in-place reuse saves. Plans are kept per
 * signature; the arenas of the last one used are kept while it repeats, so a steady-state
 * run makes no allocator call and takes no process-wide lock per tensor.
 *
 * Work on OpenCL devices is enqueued without waiting, so devices run at the same time (the
 * towers of the guide's S7 overlap). A value that crosses devices is copied once per
 * destination: directly inside one OpenCL context, after a marker on the source's queue
 * (a wait list, never a host wait), staged through host memory otherwise. A value copied
 * to another device keeps its buffer to the end of the run, and the run waits for its
 * copies before returning, so that no queue overwrites what another still reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "runtime/runtime.h"

/* PV_VAR: a variable's buffer in the session's store (update ops' outputs are it too). */
enum pkind { PV_NODE, PV_COPY, PV_CONST, PV_FEED, PV_VAR };

typedef struct pval {
  enum pkind kind;
  int dev;
  int node, out; /* the value's producer (for copies: of the source) */
  int src;       /* PV_COPY: the pval copied */
  int feed;      /* PV_FEED: index into the run's feeds */
  size_t bytes;
  int start, end; /* steps: 0 is the start of the run, nsteps + 1 its end */
  bool in_arena;  /* else: a Const block, a host feed, or a fetched host result */
  bool fetched_host;
  int alias;     /* in place: the pval whose buffer this one reuses, else -1 */
  size_t offset; /* in the device's arena */
  /* --- cluster hook: a value of another task read here on one device only (not host
   * memory) is received straight into its copy there (recv_to), unless recv_host: something
   * reads it in host memory or on a second device. */
  int recv_to;
  bool recv_host;
} pval;

typedef struct step {
  int node, dev;
  const clg_kernel_def *kernel;
  int scratch; /* the pval of the kernel's scratch, or -1 */
  int *in;     /* pval per input */
  int *out;    /* pval per output */
  int ncopies;
  int *copies; /* copies to make before the node runs */
  /* Cluster: a node of another task (no kernel here): whether this task receives its
   * outputs; for a node of this task that others read: the tasks it is sent to. */
  bool remote, recv;
  int nsend;
  int *send_to;
} step;

typedef struct plan {
  int nfeeds, nfetches, ntargets;
  int *feeds;   /* value ids, in the caller's order */
  int *fetches; /* value ids */
  int *targets; /* node indices */
  int nsteps;
  step *steps;
  int npv;
  pval *pv;
  int *fetch_pv; /* per fetch */
  int *upload;   /* pvals of device feeds, uploaded at the start */
  int nupload;
  size_t *arena; /* per device */
  clg_plan_stats stats;
  struct plan *next;
} plan;

typedef struct trace {
  bool ran;
  clg_event *before, *after;
  uint64_t start_ns, end_ns;
} trace;

struct clg_executor {
  clg_process *proc;
  clg_devices *devs;
  const clg_graph *g;
  int nn, nv;
  int *base; /* value id of each node's output 0 */
  int *dev_of;
  clg_allocator **alloc; /* per device, looked up once */
  clg_block *consts;     /* per node: the cached Const block on its device */
  bool *const_ready;
  clg_var_store *vars; /* the session's variables */
  plan *plans;
  int num_plans;
  plan *active;      /* whose arenas are held */
  clg_block *arenas; /* per device */
  /* Per run. */
  clg_block *blk;     /* per pval */
  clg_event **ready;  /* per pval: a marker after it was produced (for peer copies) */
  clg_event **copied; /* per pval: a copy's event */
  clg_tensor **outs;  /* per pval: a fetched host result, computed in place */
  trace *traces;      /* per node; NULL unless tracing */
  uint64_t h2d, d2h;  /* bytes moved between host and devices in the last run */
  /* Tracing, per run (see "traces of runs" below): copies per pval, the allocator's bytes
   * in use after each step, and the record of the last run until the session takes it. */
  trace *ctraces;
  int cap_ctraces;
  uint64_t *step_inuse;
  int cap_steps;
  uint64_t *start_inuse; /* per device, when the run's arenas are held */
  uint64_t run_start_ns;
  clg_run_trace *last;
  clg_cluster *cluster; /* cluster: the tasks; task_of[node] from the placement */
  int *task_of;
};

static clg_device *device(clg_executor *x, int d) { return clg_devices_at(x->devs, d); }

static const clg_device_ops *ops(clg_executor *x, int d) { return clg_device_ops_of(device(x, d)); }

static const clg_node *node_at(clg_executor *x, int i) { return clg_graph_node(x->g, i); }

/* --- plans ------------------------------------------------------------------------------ */

static void plan_free(plan *p)
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

static bool same_ints(const int *a, const int *b, int n)
{
  return n == 0 || memcmp(a, b, sizeof(int) * (size_t)n) == 0;
}

static plan *plan_find(clg_executor *x, int nfeeds, const int *feeds, int nfetches,
                       const int *fetches, int ntargets, const int *targets)
{
  for (plan *p = x->plans; p; p = p->next)
    if (p->nfeeds == nfeeds && p->nfetches == nfetches && p->ntargets == ntargets &&
        same_ints(p->feeds, feeds, nfeeds) && same_ints(p->fetches, fetches, nfetches) &&
        same_ints(p->targets, targets, ntargets))
      return p;
  return NULL;
}

/* A growable array of pvals while planning. */
typedef struct builder {
  clg_executor *x;
  plan *p;
  int cap;
  int *val_pv;    /* value id -> pval (-1) */
  int *copy_head; /* pval -> first copy of it (-1); copies chain through copy_next */
  int *copy_next;
  int cap_links;
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

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

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
      size_t a = clg_allocator_alignment(x->alloc[e->dev]);
      if (!sim_free(&sim[e->dev], e->offset, round_up(e->bytes ? e->bytes : 1, a))) {
        code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
        goto done;
      }
    }
    size_t a = clg_allocator_alignment(x->alloc[v->dev]);
    sim_alloc(&sim[v->dev], round_up(v->bytes ? v->bytes : 1, a), &v->offset);
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
      size_t a = clg_allocator_alignment(x->alloc[v->dev]);
      int64_t b = (int64_t)round_up(v->bytes ? v->bytes : 1, a);
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

/* --- cluster hooks (issue 17) ------------------------------------------------------------ *
 * Every task plans the same steps in the same order (the same graph, placement and run
 * signature). A node pinned to another task is a remote step here: at its turn this task
 * receives its outputs when a step of its own reads them or they are fetched. Its own task
 * sends them, right after computing them, to every task that reads them. Each task waits only
 * on values of earlier steps, so the tasks cannot deadlock. */

/* A local step reads value src (input j of n, as pval `used` there; j < 0: a fetch): a
 * remote producer's outputs are received. When the only reader is a copy on one device that
 * is not host memory, the value is received into that copy (pipelined through the staging
 * buffers) and the copy is not made: its block lives from the receiving step on. */
static clg_code cluster_input(clg_executor *x, plan *p, const int *step_of, int src, int used,
                              const clg_node *n, int j)
{
  while (p->pv[src].kind == PV_COPY)
    src = p->pv[src].src;
  pval *v = &p->pv[src];
  if (!device(x, v->dev)->remote)
    return CLG_OK;
  if (v->kind == PV_VAR)
    return clg_error(CLG_UNIMPLEMENTED,
                     "node '%s' (%s) on task %d reads variable '%s' of task %d directly; read it "
                     "through an Identity placed on task %d (variables are not sent between tasks)",
                     n->name, n->op, clg_cluster_task(x->cluster), node_at(x, v->node)->name,
                     device(x, v->dev)->info.task, device(x, v->dev)->info.task);
  if (v->kind != PV_NODE)
    return CLG_OK;
  p->steps[step_of[v->node]].recv = true;
  if (j >= 0 && used >= 0 && p->pv[used].kind == PV_COPY && p->pv[used].src == src &&
      !ops(x, p->pv[used].dev)->host_memory && (v->recv_to < 0 || v->recv_to == used)) {
    v->recv_to = used;
    p->pv[used].start = v->start;
  } else {
    v->recv_host = true;
  }
  return CLG_OK;
}

/* Whether copy c was received in place of being made (see cluster_input). */
static bool cluster_received(const plan *p, int c)
{
  const pval *v = &p->pv[c];
  return v->kind == PV_COPY && p->pv[v->src].recv_to == c && !p->pv[v->src].recv_host;
}

/* For each step of this task pinned here, the tasks that read its outputs. */
static clg_code cluster_sends(clg_executor *x, plan *p, const int *step_of)
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
      const clg_node *cn = node_at(x, p->steps[c].node);
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
static clg_code cluster_step(clg_executor *x, const plan *p, const step *st, bool after_kernel)
{
  const clg_node *n = node_at(x, st->node);
  clg_code code = CLG_OK;
  for (int o = 0; o < n->num_outputs && code == CLG_OK; o++) {
    int v = st->out[o];
    int tag = x->base[st->node] + o;
    int to = p->pv[v].recv_to;
    if (!after_kernel && st->recv && to >= 0 && !p->pv[v].recv_host) /* into a device */
      code = clg_cluster_recv(x->cluster, device(x, st->dev)->info.task, tag,
                              device(x, p->pv[to].dev), &x->blk[to], p->pv[v].bytes, n->name);
    else if (!after_kernel && st->recv) /* x->blk[v] is in the remote device's (host) arena */
      code = clg_cluster_recv(x->cluster, device(x, st->dev)->info.task, tag, device(x, st->dev),
                              &x->blk[v], p->pv[v].bytes, n->name);
    for (int k = 0; after_kernel && k < st->nsend && code == CLG_OK; k++)
      code = clg_cluster_send(x->cluster, st->send_to[k], tag, device(x, st->dev), &x->blk[v],
                              p->pv[v].bytes, n->name);
  }
  return code;
}

static clg_code plan_build(clg_executor *x, plan *p)
{
  int nn = x->nn;
  builder b = {x, p, 0, NULL, NULL, NULL, 0};
  bool *needed = calloc((size_t)nn + 1, sizeof *needed);
  bool *fed_node = calloc((size_t)nn + 1, sizeof *fed_node);
  int *stack = malloc(sizeof(int) * ((size_t)nn + 1));
  int *step_of = malloc(sizeof(int) * ((size_t)nn + 1));
  b.val_pv = malloc(sizeof(int) * ((size_t)x->nv + 1));
  clg_code code = CLG_OK;
  if (!needed || !fed_node || !stack || !step_of || !b.val_pv) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  for (int i = 0; i < x->nv; i++)
    b.val_pv[i] = -1;
  for (int i = 0; i < p->nfeeds; i++) {
    int vid = p->feeds[i], node = 0;
    while (node + 1 < nn && x->base[node + 1] <= vid)
      node++;
    fed_node[node] = true;
  }
  /* What the fetches and targets need, through data and control edges, stopping at fed
   * nodes. */
  int top = 0;
  for (int i = 0; i < p->nfetches; i++) {
    int node = 0;
    while (node + 1 < nn && x->base[node + 1] <= p->fetches[i])
      node++;
    if (!needed[node])
      needed[node] = true, stack[top++] = node;
  }
  for (int i = 0; i < p->ntargets; i++)
    if (!needed[p->targets[i]])
      needed[p->targets[i]] = true, stack[top++] = p->targets[i];
  while (top > 0) {
    const clg_node *n = node_at(x, stack[--top]);
    if (fed_node[n->index])
      continue;
    for (int j = 0; j < n->num_inputs + n->num_control; j++) {
      int in = j < n->num_inputs ? n->inputs[j].node->index : n->control[j - n->num_inputs]->index;
      if (!needed[in])
        needed[in] = true, stack[top++] = in;
    }
  }
  /* Steps: the needed nodes that run, in graph order. */
  p->nsteps = 0;
  for (int i = 0; i < nn; i++) {
    const clg_node *n = node_at(x, i);
    step_of[i] = -1;
    if (!needed[i] || fed_node[i] || (n->def->flags & (CLG_OP_CONST | CLG_OP_VARIABLE)))
      continue;
    if (n->def->flags & CLG_OP_MUST_FEED) {
      code = placeholder_error(n);
      goto done;
    }
    step_of[i] = p->nsteps++;
  }
  p->steps = calloc((size_t)(p->nsteps ? p->nsteps : 1), sizeof *p->steps);
  if (!p->steps) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  /* Feeds and Consts first (start 0), then each step's outputs (start = step + 1). */
  for (int i = 0; i < p->nfeeds; i++) {
    int vid = p->feeds[i], node = 0;
    while (node + 1 < nn && x->base[node + 1] <= vid)
      node++;
    int d = x->dev_of[node];
    int v = pv_add(&b, PV_FEED, d, node, vid - x->base[node],
                   clg_node_out_bytes(node_at(x, node), vid - x->base[node]));
    if (v < 0)
      goto oom;
    p->pv[v].feed = i;
    p->pv[v].in_arena = !ops(x, d)->host_memory;
    b.val_pv[vid] = v;
  }
  for (int i = 0; i < nn; i++) {
    const clg_node *n = node_at(x, i);
    if (needed[i] && !fed_node[i] && (n->def->flags & CLG_OP_CONST)) {
      int v = pv_add(&b, PV_CONST, x->dev_of[i], i, 0, clg_node_out_bytes(n, 0));
      if (v < 0)
        goto oom;
      b.val_pv[x->base[i]] = v;
    }
    if (needed[i] && !fed_node[i] && (n->def->flags & CLG_OP_VARIABLE)) {
      int v = pv_add(&b, PV_VAR, x->dev_of[i], i, 0, clg_node_out_bytes(n, 0));
      if (v < 0)
        goto oom;
      b.val_pv[x->base[i]] = v;
    }
  }
  int k = 0;
  for (int i = 0; i < nn; i++) {
    if (step_of[i] < 0)
      continue;
    const clg_node *n = node_at(x, i);
    step *st = &p->steps[k];
    int s = k + 1; /* step numbers: 0 is the start of the run */
    st->node = i;
    st->dev = x->dev_of[i];
    st->kernel = clg_op_kernel(n, device(x, st->dev));
    st->in = malloc(sizeof(int) * (size_t)(n->num_inputs ? n->num_inputs : 1));
    st->out = malloc(sizeof(int) * (size_t)n->num_outputs);
    if (!st->in || !st->out)
      goto oom;
    /* --- cluster hook: another task computes this node; its outputs may come here */
    st->remote = device(x, st->dev)->remote;
    for (int j = 0; st->remote && j < n->num_inputs; j++)
      st->in[j] = -1;
    if (st->remote) {
      for (int o = 0; o < n->num_outputs; o++) {
        int v = pv_add(&b, PV_NODE, st->dev, i, o, clg_node_out_bytes(n, o));
        if (v < 0)
          goto oom;
        p->pv[v].start = p->pv[v].end = s;
        p->pv[v].in_arena = true;
        b.val_pv[x->base[i] + o] = st->out[o] = v;
      }
      st->scratch = -1;
      k++;
      continue;
    }
    if (!st->kernel || !st->kernel->run) {
      code = clg_error(CLG_INTERNAL, "node '%s' (%s) has no kernel on %s", n->name, n->op,
                       device(x, st->dev)->info.full_name);
      goto done;
    }
    for (int j = 0; j < n->num_inputs; j++) {
      int src = b.val_pv[x->base[n->inputs[j].node->index] + n->inputs[j].index];
      if (src >= 0 && j < 32 && (n->def->ref_inputs >> j & 1u)) {
        /* A reference edge: the kernel updates the variable's own buffer. */
        const clg_node *var = clg_node_ref_variable(n, j);
        if (p->pv[src].kind != PV_VAR) {
          code = clg_error(CLG_INVALID_ARGUMENT,
                           "node '%s' (%s) updates variable '%s', which is fed in this run: a "
                           "fed value cannot be updated",
                           n->name, n->op, var ? var->name : n->inputs[j].node->name);
          goto done;
        }
        if (p->pv[src].dev != st->dev) {
          code = clg_error(CLG_INTERNAL, "node '%s' (%s) is not on the device of its variable",
                           n->name, n->op);
          goto done;
        }
        st->in[j] = src;
        continue;
      }
      if (src < 0 || (st->in[j] = use_on(&b, src, st->dev, s, st)) < 0)
        goto oom;
      if (x->cluster && (code = cluster_input(x, p, step_of, src, st->in[j], n, j)) != CLG_OK)
        goto done; /* --- cluster hook */
    }
    /* Scratch the kernel asks for lives in the arena for this step only. */
    size_t scratch = 0;
    st->scratch = -1;
    if (st->kernel->scratch &&
        (code = st->kernel->scratch(n, device(x, st->dev), &scratch)) != CLG_OK) {
      clg_error_prefix("node '%s' (%s) on %s: ", n->name, n->op,
                       device(x, st->dev)->info.full_name);
      goto done;
    }
    if (scratch) {
      if ((st->scratch = pv_add(&b, PV_NODE, st->dev, i, 0, scratch)) < 0)
        goto oom;
      p->pv[st->scratch].start = p->pv[st->scratch].end = s;
      p->pv[st->scratch].in_arena = true;
    }
    for (int o = 0; o < n->num_outputs; o++) {
      if (o == 0 && (n->def->ref_inputs & 1u)) { /* the output is the variable */
        b.val_pv[x->base[i]] = st->out[0] = st->in[0];
        continue;
      }
      int v = pv_add(&b, PV_NODE, st->dev, i, o, clg_node_out_bytes(n, o));
      if (v < 0)
        goto oom;
      p->pv[v].start = p->pv[v].end = s;
      p->pv[v].in_arena = true;
      b.val_pv[x->base[i] + o] = v;
      st->out[o] = v;
    }
    k++;
  }
  /* Fetches live to the end; a host result is computed straight into the tensor returned. */
  p->fetch_pv = malloc(sizeof(int) * (size_t)(p->nfetches ? p->nfetches : 1));
  if (!p->fetch_pv)
    goto oom;
  for (int i = 0; i < p->nfetches; i++) {
    int v = b.val_pv[p->fetches[i]];
    if (v < 0) {
      code = clg_error(CLG_INTERNAL, "fetch %d was not planned", i);
      goto done;
    }
    p->fetch_pv[i] = v;
    p->pv[v].end = p->nsteps + 1;
    if (x->cluster && device(x, p->pv[v].dev)->remote) { /* --- cluster hook */
      if ((code = cluster_input(x, p, step_of, v, -1, node_at(x, p->pv[v].node), -1)) != CLG_OK)
        goto done;
      continue;
    }
    if (p->pv[v].kind == PV_NODE && ops(x, p->pv[v].dev)->host_memory) {
      p->pv[v].in_arena = false;
      p->pv[v].fetched_host = true;
    }
  }
  plan_reference(x, p);
  /* In place: an output takes the buffer of the input the op names when that input's last
   * use is this step (no later node reads it and it is not fetched), no other input of the
   * node is that same value (a kernel may still read it after writing some of its output,
   * as AddN's later passes do), on this device, and the sizes match. */
  for (int i = 0; i < p->nsteps; i++) {
    step *st = &p->steps[i];
    const clg_node *n = node_at(x, st->node);
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
  if (x->cluster && (code = cluster_sends(x, p, step_of)) != CLG_OK)
    goto done; /* --- cluster hook */
  /* Device feeds are uploaded at the start. */
  p->upload = malloc(sizeof(int) * (size_t)(p->nfeeds ? p->nfeeds : 1));
  if (!p->upload)
    goto oom;
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].kind == PV_FEED && p->pv[i].in_arena)
      p->upload[p->nupload++] = i;
  code = plan_layout(x, p);
  p->stats.num_values = p->npv;
  goto done;
oom:
  code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
done:
  free(needed);
  free(fed_node);
  free(stack);
  free(step_of);
  free(b.val_pv);
  free(b.copy_head);
  free(b.copy_next);
  return code;
}

/* --- the executor ----------------------------------------------------------------------- */

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

static void arenas_release(clg_executor *x)
{
  for (int d = 0; x->arenas && d < x->devs->count; d++)
    if (x->arenas[d].size) {
      ops(x, d)->finish(device(x, d));
      clg_allocator_free(x->alloc[d], &x->arenas[d], NULL);
      memset(&x->arenas[d], 0, sizeof x->arenas[d]);
    }
  x->active = NULL;
}

static void traces_reset(clg_executor *x)
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

/* --- traces of runs ------------------------------------------------------------------------ */

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

/* Room for the copies and steps of plan p when tracing. */
static clg_code traces_begin(clg_executor *x, const plan *p)
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
    if (used[d] && ops(x, d)->clock_offset(device(x, d), &off[d], &err[d]) == CLG_OK && order)
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
    size_t a = clg_allocator_alignment(x->alloc[v->dev]);
    int64_t b = (int64_t)round_up(v->bytes ? v->bytes : 1, a);
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

/* Puts the last run's times on the host's clock and keeps its record for the session. */
static void traces_resolve(clg_executor *x, const plan *p, bool ok)
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
  traces_reset(x);
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
    arenas_release(x);
  for (int i = 0; x->const_ready && i < x->nn; i++)
    if (x->const_ready[i]) {
      ops(x, x->dev_of[i])->finish(device(x, x->dev_of[i]));
      clg_allocator_free(x->alloc[x->dev_of[i]], &x->consts[i], NULL);
    }
  while (x->plans) {
    plan *next = x->plans->next;
    plan_free(x->plans);
    x->plans = next;
  }
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
  free(x->outs);
  free(x);
}

/* --- runs --------------------------------------------------------------------------------- */

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

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The plan for this signature, built on first use. */
static clg_code plan_get(clg_executor *x, int nfeeds, const clg_output *feeds_at, int nfetches,
                         const clg_output *fetches, int ntargets, clg_node *const *targets,
                         plan **out)
{
  int stack[3][16];
  int *fv = nfeeds <= 16 ? stack[0] : malloc(sizeof(int) * (size_t)nfeeds);
  int *tv = nfetches <= 16 ? stack[1] : malloc(sizeof(int) * (size_t)nfetches);
  int *gv = ntargets <= 16 ? stack[2] : malloc(sizeof(int) * (size_t)ntargets);
  clg_code code = CLG_OK;
  if (!fv || !tv || !gv) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  for (int i = 0; i < nfeeds; i++)
    fv[i] = x->base[feeds_at[i].node->index] + feeds_at[i].index;
  for (int i = 0; i < nfetches; i++)
    tv[i] = x->base[fetches[i].node->index] + fetches[i].index;
  for (int i = 0; i < ntargets; i++)
    gv[i] = targets[i]->index;
  qsort(gv, (size_t)ntargets, sizeof(int), cmp_int);
  plan *p = plan_find(x, nfeeds, fv, nfetches, tv, ntargets, gv);
  if (!p) {
    p = calloc(1, sizeof *p);
    if (p) {
      p->nfeeds = nfeeds;
      p->nfetches = nfetches;
      p->ntargets = ntargets;
      p->feeds = malloc(sizeof(int) * (size_t)(nfeeds + 1));
      p->fetches = malloc(sizeof(int) * (size_t)(nfetches + 1));
      p->targets = malloc(sizeof(int) * (size_t)(ntargets + 1));
    }
    if (!p || !p->feeds || !p->fetches || !p->targets) {
      plan_free(p);
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
      goto done;
    }
    memcpy(p->feeds, fv, sizeof(int) * (size_t)nfeeds);
    memcpy(p->fetches, tv, sizeof(int) * (size_t)nfetches);
    memcpy(p->targets, gv, sizeof(int) * (size_t)ntargets);
    if ((code = plan_build(x, p)) != CLG_OK) {
      plan_free(p);
      goto done;
    }
    p->next = x->plans;
    x->plans = p;
    x->num_plans++;
  }
  *out = p;
done:
  if (fv != stack[0])
    free(fv);
  if (tv != stack[1])
    free(tv);
  if (gv != stack[2])
    free(gv);
  return code;
}

/* The largest value of the plan on device d, for an OOM message that names a tensor. */
static const pval *largest_on(const plan *p, int d)
{
  const pval *best = NULL;
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].dev == d && (!best || p->pv[i].bytes > best->bytes))
      best = &p->pv[i];
  return best;
}

/* Names the arena of device d for memory maps: how many tensors share it, and the largest. */
static void arena_label(clg_executor *x, const plan *p, int d)
{
  int count = 0;
  for (int i = 0; i < p->npv; i++)
    count += p->pv[i].in_arena && p->pv[i].dev == d && p->pv[i].alias < 0;
  const pval *v = largest_on(p, d);
  const clg_node *n = node_at(x, v->node);
  char shape[96], what[200];
  snprintf(what, sizeof what, "arena of a run: %d tensors, largest %s (%s) %s", count, n->name,
           n->op, clg_out_shape_string(&n->outs[v->out], shape, sizeof shape));
  clg_allocator_label(x->alloc[d], &x->arenas[d], what);
}

/* Makes p the plan whose arenas are held, allocating them (the only allocator calls of a
 * run, made when the signature changes). */
static clg_code plan_activate(clg_executor *x, plan *p)
{
  if (x->active == p)
    return CLG_OK;
  arenas_release(x);
  int nd = x->devs->count;
  for (int d = 0; d < nd; d++) {
    if (!p->arena[d])
      continue;
    clg_code code = clg_allocator_alloc(x->alloc[d], p->arena[d], &x->arenas[d]);
    if (code != CLG_OK) {
      const pval *v = largest_on(p, d);
      const clg_node *n = node_at(x, v->node);
      char shape[96];
      /* TensorFlow's text, naming the largest tensor the run needs there, then the
       * allocator's figures ("GPU_0_bfc: in use ..."). */
      const char *detail = strstr(clg_last_error(), "by allocator ");
      char *why = clg_strdup(detail ? detail + strlen("by allocator ") : clg_last_error());
      code = clg_error(code,
                       "node '%s' (%s): %s when allocating tensor with shape%s and type %s on %s "
                       "by allocator %s (the run needs %llu bytes there)",
                       n->name, n->op, code == CLG_RESOURCE_EXHAUSTED ? "OOM" : "failure",
                       clg_out_shape_string(&n->outs[v->out], shape, sizeof shape),
                       clg_dtype_name(n->outs[v->out].dtype), device(x, d)->info.full_name,
                       why ? why : "", (unsigned long long)p->arena[d]);
      free(why);
      memset(&x->arenas[d], 0, sizeof x->arenas[d]);
      arenas_release(x);
      return code;
    }
    arena_label(x, p, d);
  }
  free(x->blk);
  free(x->ready);
  free(x->copied);
  free(x->outs);
  size_t n1 = (size_t)(p->npv ? p->npv : 1);
  x->blk = calloc(n1, sizeof *x->blk);
  x->ready = calloc(n1, sizeof *x->ready);
  x->copied = calloc(n1, sizeof *x->copied);
  x->outs = calloc(n1, sizeof *x->outs);
  if (!x->blk || !x->ready || !x->copied || !x->outs) {
    arenas_release(x);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a run");
  }
  x->active = p;
  return CLG_OK;
}

/* A block of the arena of d at offset, bytes long. */
static clg_block arena_block(clg_executor *x, int d, size_t offset, size_t bytes)
{
  clg_block b = x->arenas[d];
  b.offset += offset;
  b.size = bytes;
  if (b.host)
    b.host = (char *)b.host + offset;
  return b;
}

static clg_code const_block(clg_executor *x, const clg_node *n, int d)
{
  if (x->const_ready[n->index])
    return CLG_OK;
  size_t bytes = clg_node_out_bytes(n, 0);
  clg_code code = clg_allocator_alloc(x->alloc[d], bytes ? bytes : 1, &x->consts[n->index]);
  if (code == CLG_OK) {
    char shape[96], what[200];
    snprintf(what, sizeof what, "%s (%s) %s", n->name, n->op,
             clg_node_shape_string(n, shape, sizeof shape));
    clg_allocator_label(x->alloc[d], &x->consts[n->index], what); /* for memory maps */
    code = ops(x, d)->upload(device(x, d), &x->consts[n->index],
                             clg_tensor_const_data(clg_node_value(n)), bytes);
  }
  if (code != CLG_OK) {
    if (x->consts[n->index].size)
      clg_allocator_free(x->alloc[d], &x->consts[n->index], NULL);
    memset(&x->consts[n->index], 0, sizeof x->consts[n->index]);
    return clg_error_prefix("node '%s' (Const) on %s: ", n->name, device(x, d)->info.full_name);
  }
  x->const_ready[n->index] = true;
  return CLG_OK;
}

/* Makes copy c of its source value on its device. */
static clg_code make_copy_now(clg_executor *x, const plan *p, int c);

/* Makes copy c, timed when tracing: the copy's own event where it has one (a direct copy),
 * else the host's clock around the blocking calls. */
static clg_code make_copy(clg_executor *x, const plan *p, int c)
{
  if (x->cluster && cluster_received(p, c)) /* --- cluster hook */
    return CLG_OK;
  trace *t = x->ctraces ? &x->ctraces[c] : NULL;
  if (t)
    t->start_ns = clg_now_ns();
  clg_code code = make_copy_now(x, p, c);
  if (t && code == CLG_OK) {
    t->ran = true;
    t->end_ns = clg_now_ns();
    t->after = clg_event_retain(x->copied[c]);
  }
  return code;
}

static clg_code make_copy_now(clg_executor *x, const plan *p, int c)
{
  const pval *v = &p->pv[c], *s = &p->pv[v->src];
  const clg_device_ops *src = ops(x, s->dev), *dst = ops(x, v->dev);
  clg_code code = CLG_OK;
  if (s->kind == PV_VAR && x->ready[v->src]) { /* updates since the last marker: a new one */
    clg_event_release(x->ready[v->src]);
    x->ready[v->src] = NULL;
  }
  if (!src->host_memory && !dst->host_memory && !x->ready[v->src])
    code = src->marker(device(x, s->dev), &x->ready[v->src]);
  if (code == CLG_OK)
    code = dst->copy_from_peer(device(x, v->dev), &x->blk[c], device(x, s->dev), &x->blk[v->src],
                               v->bytes, 1, &x->ready[v->src], &x->copied[c]);
  if (code == CLG_UNIMPLEMENTED) {
    /* No direct path: through host memory. */
    if (src->host_memory) {
      code = dst->upload(device(x, v->dev), &x->blk[c], x->blk[v->src].host, v->bytes);
      x->h2d += dst->host_memory ? 0 : v->bytes;
    } else if (dst->host_memory) {
      code = src->download(device(x, s->dev), &x->blk[v->src], x->blk[c].host, v->bytes);
      x->d2h += v->bytes;
    } else {
      x->h2d += v->bytes;
      x->d2h += v->bytes;
      void *tmp = malloc(v->bytes ? v->bytes : 1);
      code = tmp ? src->download(device(x, s->dev), &x->blk[v->src], tmp, v->bytes)
                 : clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory staging a copy");
      if (code == CLG_OK)
        code = dst->upload(device(x, v->dev), &x->blk[c], tmp, v->bytes);
      free(tmp);
    }
  }
  if (code != CLG_OK)
    return clg_error_prefix("copying '%s' from %s to %s: ", node_at(x, v->node)->name,
                            device(x, s->dev)->info.name, device(x, v->dev)->info.name);
  return CLG_OK;
}

static void warn_once(void *ctx, int device, const char *reason, const char *message)
{
  clg_process_warn_once(ctx, device, reason, message);
}

/* The variable a value is (through copies), or NULL. */
static const clg_node *variable_of(clg_executor *x, const plan *p, int v)
{
  while (p->pv[v].kind == PV_COPY)
    v = p->pv[v].src;
  return p->pv[v].kind == PV_VAR ? node_at(x, p->pv[v].node) : NULL;
}

/* Before a step: what it reads of variables is initialized (an Assign's target need not
 * be), and before it updates a variable, copies of it that other queues are still making
 * have finished. */
static clg_code check_variables(clg_executor *x, const plan *p, const step *st, const clg_node *n)
{
  for (int j = 0; j < n->num_inputs; j++) {
    const clg_node *var = variable_of(x, p, st->in[j]);
    if (var && !(j == 0 && (n->def->flags & CLG_OP_ASSIGNS)) &&
        !clg_var_store_initialized(x->vars, var))
      return clg_var_uninitialized(var, n);
  }
  if (!n->def->ref_inputs)
    return CLG_OK;
  for (int j = 0; j < n->num_inputs && j < 32; j++) {
    if (!(n->def->ref_inputs >> j & 1u))
      continue;
    for (int c = 0; c < p->npv; c++)
      if (p->pv[c].kind == PV_COPY && p->pv[c].src == st->in[j] && x->copied[c]) {
        clg_code code = clg_event_wait(1, &x->copied[c]);
        if (code != CLG_OK)
          return code;
      }
  }
  return CLG_OK;
}

static clg_code run_step(clg_executor *x, const plan *p, const step *st)
{
  const clg_node *n = node_at(x, st->node);
  if (st->remote) /* --- cluster hook */
    return cluster_step(x, p, st, false);
  clg_code code = check_variables(x, p, st, n);
  for (int c = 0; c < st->ncopies && code == CLG_OK; c++)
    code = make_copy(x, p, st->copies[c]);
  if (code != CLG_OK)
    return code;
  clg_block in_stack[16], out_stack[4];
  clg_block *in = n->num_inputs <= 16 ? in_stack : malloc(sizeof *in * (size_t)n->num_inputs);
  clg_block *out = n->num_outputs <= 4 ? out_stack : malloc(sizeof *out * (size_t)n->num_outputs);
  if (!in || !out)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  for (int j = 0; code == CLG_OK && j < n->num_inputs; j++)
    in[j] = x->blk[st->in[j]];
  for (int o = 0; code == CLG_OK && o < n->num_outputs; o++) {
    int v = st->out[o];
    const pval *pv = &p->pv[v];
    if (pv->kind == PV_VAR) { /* an update's output: the variable itself */
      out[o] = x->blk[v];
      continue;
    }
    if (pv->fetched_host) {
      clg_tensor *t = clg_tensor_new_uninit(n->outs[o].dtype, n->outs[o].rank, n->outs[o].dims);
      if (!t) {
        code = clg_error_prefix("node '%s' (%s): ", n->name, n->op);
        break;
      }
      x->outs[v] = t;
      x->blk[v] = (clg_block){.host = clg_tensor_data(t), .size = pv->bytes};
    } else {
      x->blk[v] = arena_block(x, st->dev, pv->offset, pv->bytes);
    }
    out[o] = x->blk[v];
  }
  if (code == CLG_OK) {
    trace *t = x->traces ? &x->traces[n->index] : NULL;
    if (t) {
      t->ran = true;
      t->start_ns = clg_now_ns();
      code = ops(x, st->dev)->marker(device(x, st->dev), &t->before);
    }
    clg_kernel_ctx ctx = {device(x, st->dev),
                          st->dev,
                          n,
                          in,
                          out,
                          x->alloc[st->dev],
                          st->scratch >= 0 ? &x->blk[st->scratch] : NULL,
                          warn_once,
                          x->proc};
    if (code == CLG_OK)
      code = st->kernel->run(&ctx);
    if (code == CLG_OK && (n->def->flags & CLG_OP_ASSIGNS))
      clg_var_store_set_initialized(x->vars, node_at(x, p->pv[st->in[0]].node));
    if (t && code == CLG_OK) {
      t->end_ns = clg_now_ns();
      code = ops(x, st->dev)->marker(device(x, st->dev), &t->after);
    }
    if (t && x->step_inuse) {
      clg_memory_stats ms;
      clg_allocator_stats(x->alloc[st->dev], &ms);
      x->step_inuse[st - p->steps] = ms.bytes_in_use;
    }
    if (code != CLG_OK)
      clg_error_prefix("node '%s' (%s) on %s: ", n->name, n->op,
                       device(x, st->dev)->info.full_name);
    else if (st->nsend) /* --- cluster hook */
      code = cluster_step(x, p, st, true);
  }
  if (in != in_stack)
    free(in);
  if (out != out_stack)
    free(out);
  return code;
}

static clg_code fetch_one(clg_executor *x, const plan *p, int i, clg_tensor *const *feeds,
                          clg_tensor **out)
{
  int v = p->fetch_pv[i];
  const pval *pv = &p->pv[v];
  const clg_out_desc *d = &node_at(x, pv->node)->outs[pv->out];
  const clg_node *var = variable_of(x, p, v);
  if (var && !clg_var_store_initialized(x->vars, var))
    return clg_var_uninitialized(var, var);
  if (x->outs[v]) { /* computed in place; a second fetch of it gets a copy */
    *out = x->outs[v];
    x->outs[v] = NULL;
    return CLG_OK;
  }
  const void *host = pv->kind == PV_FEED ? clg_tensor_const_data(feeds[pv->feed]) : NULL;
  clg_tensor *t = clg_tensor_new_uninit(d->dtype, d->rank, d->dims);
  if (!t)
    return clg_last_code();
  clg_code code = CLG_OK;
  if (host && pv->bytes)
    memcpy(clg_tensor_data(t), host, pv->bytes);
  else if (!host) { /* a host result fetched twice reads the first one's tensor */
    code = ops(x, pv->dev)->download(device(x, pv->dev), &x->blk[v], clg_tensor_data(t), pv->bytes);
    x->d2h += ops(x, pv->dev)->host_memory ? 0 : pv->bytes;
  }
  if (code != CLG_OK) {
    clg_tensor_free(t);
    return clg_error_prefix("fetching '%s': ", node_at(x, pv->node)->name);
  }
  *out = t;
  return CLG_OK;
}

clg_code clg_executor_run(clg_executor *x, int num_feeds, const clg_output *feeds_at,
                          clg_tensor *const *feeds, int num_fetches, const clg_output *fetches,
                          clg_tensor **outputs, int num_targets, clg_node *const *targets)
{
  traces_reset(x);
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
  plan *p = NULL;
  if (code == CLG_OK)
    code = plan_get(x, num_feeds, feeds_at, num_fetches, fetches, num_targets, targets, &p);
  if (code == CLG_OK)
    code = plan_activate(x, p);
  if (code == CLG_OK)
    code = traces_begin(x, p);
  if (code != CLG_OK)
    return code;

  x->h2d = x->d2h = 0;
  /* Where every value lives in this run. */
  for (int i = 0; i < p->npv && code == CLG_OK; i++) {
    const pval *v = &p->pv[i];
    x->ready[i] = x->copied[i] = NULL;
    x->outs[i] = NULL;
    if (v->kind == PV_CONST) {
      if ((code = const_block(x, node_at(x, v->node), v->dev)) == CLG_OK)
        x->blk[i] = x->consts[v->node];
    } else if (v->kind == PV_VAR) {
      code = clg_var_store_block(x->vars, node_at(x, v->node), v->dev, &x->blk[i]);
    } else if (v->kind == PV_FEED && !v->in_arena) {
      x->blk[i] =
          (clg_block){.host = (void *)clg_tensor_const_data(feeds[v->feed]), .size = v->bytes};
    } else if (v->in_arena) {
      x->blk[i] = arena_block(x, v->dev, v->offset, v->bytes);
    }
  }
  for (int i = 0; i < p->nupload && code == CLG_OK; i++) {
    const pval *v = &p->pv[p->upload[i]];
    code = ops(x, v->dev)->upload(device(x, v->dev), &x->blk[p->upload[i]],
                                  clg_tensor_const_data(feeds[v->feed]), v->bytes);
    x->h2d += v->bytes;
    if (code != CLG_OK)
      clg_error_prefix("feeding '%s': ", node_at(x, v->node)->name);
  }
  for (int i = 0; i < p->nsteps && code == CLG_OK; i++)
    code = run_step(x, p, &p->steps[i]);

  /* Results go to the caller's outputs only when every fetch succeeded. */
  clg_tensor *stack[8];
  clg_tensor **got = num_fetches <= 8 ? stack : calloc((size_t)num_fetches, sizeof *got);
  if (!got && code == CLG_OK)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory fetching %d tensors", num_fetches);
  int fetched = 0;
  for (; fetched < num_fetches && code == CLG_OK; fetched++)
    if ((code = fetch_one(x, p, fetched, feeds, &got[fetched])) != CLG_OK)
      break;
  /* No queue may still read a buffer when the next run reuses it. */
  for (int i = 0; i < p->npv; i++)
    if (x->copied[i]) {
      clg_code c = clg_event_wait(1, &x->copied[i]);
      if (code == CLG_OK && c != CLG_OK)
        code = c;
    }
  if (code == CLG_OK) {
    for (int i = 0; i < num_fetches; i++)
      outputs[i] = got[i];
  } else {
    for (int i = 0; i < fetched; i++)
      clg_tensor_free(got[i]);
    /* Drain every queue before the buffers are used again. */
    for (int d = 0; d < x->devs->count; d++)
      ops(x, d)->finish(device(x, d));
  }
  if (got != stack)
    free(got);
  for (int i = 0; i < p->npv; i++) {
    clg_event_release(x->ready[i]);
    clg_event_release(x->copied[i]);
    x->ready[i] = x->copied[i] = NULL;
    clg_tensor_free(x->outs[i]); /* not handed out: the run failed */
    x->outs[i] = NULL;
  }
  traces_resolve(x, p, code == CLG_OK);
  return code;
}
