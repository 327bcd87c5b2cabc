/* The executor's internal door, shared by its files and nothing else:
 *   planner.c       what a run signature runs, value lifetimes, in place, arena layout
 *   plan_cache.c    plans kept per signature
 *   runner.c        a run of a plan: arenas, launches, copies, fetches, waits
 *   run_trace.c     the record of traced runs (tracing.c draws them)
 *   cluster_hooks.c what a task of a cluster receives and sends
 *   executor.c      the executor object and the checks of a run's arguments
 *
 * A plan lists the nodes a run needs (graph order, which is topological), gives every value
 * it touches a place (a "pval": a node's output, a copy on another device, a feed, a Const
 * cached per session), each value's lifetime in steps, which outputs reuse an input's
 * buffer in place, and each value's offset in its device's arena. */
#ifndef CLG_RUNTIME_PLAN_H
#define CLG_RUNTIME_PLAN_H

#include "backends/backend.h"
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
  /* Fusion (fuse.c): 1 + the step whose kernel applies this step's op as an epilogue (this
   * one launches nothing), else 0; on that step, its fused ops in order and their operands'
   * pvals (-1: none). */
  int fused_by;
  int nepi;
  clg_epi_op epi_op[CLG_EPI_MAX_OPS];
  int epi_pv[CLG_EPI_MAX_OPS];
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
  bool control;  /* a step is a Switch: the run keeps dead tensors (x->dead) */
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
  bool *dead;         /* per pval, plans with a Switch only: dead this run (ops/control.c) */
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

static inline clg_device *clg_exec_device(clg_executor *x, int d)
{
  return clg_devices_at(x->devs, d);
}

static inline const clg_device_ops *clg_exec_ops(clg_executor *x, int d)
{
  return clg_device_ops_of(clg_exec_device(x, d));
}

static inline const clg_node *clg_exec_node(clg_executor *x, int i)
{
  return clg_graph_node(x->g, i);
}

/* Bytes value v takes in its device's arena: the planner's layout and the traces' live
 * bytes must agree on this. */
static inline size_t clg_plan_arena_bytes(const clg_executor *x, const pval *v)
{
  size_t a = clg_allocator_alignment(x->alloc[v->dev]);
  size_t n = v->bytes ? v->bytes : 1;
  return (n + a - 1) / a * a;
}

/* --- planner.c ----------------------------------------------------------------------------- */

/* Fills p (whose feeds, fetches and targets are set) for x's graph and placement. */
clg_code clg_plan_build(clg_executor *x, plan *p);
/* Frees p and what it owns; p may be partly built. */
void clg_plan_free(plan *p);

/* --- fuse.c -------------------------------------------------------------------------------- */

/* After in place: fuses each chain Conv2D | MatMul | DepthwiseConv2dNative -> element-wise
 * ops (BiasAdd, Relu, Relu6, Add, Maximum/Minimum with one element) computed in place on one
 * device into the first step's kernel, where that kernel takes epilogues (the host's). Off
 * with CLGRAPH_FUSE=0. RESOURCE_EXHAUSTED when its counts cannot be allocated. */
clg_code clg_plan_fuse(clg_executor *x, plan *p);

/* --- plan_cache.c -------------------------------------------------------------------------- */

/* The plan for this signature, built on first use and kept in x->plans. */
clg_code clg_plan_cache_get(clg_executor *x, int nfeeds, const clg_output *feeds_at, int nfetches,
                            const clg_output *fetches, int ntargets, clg_node *const *targets,
                            plan **out);
void clg_plan_cache_free(clg_executor *x);

/* --- runner.c ------------------------------------------------------------------------------ */

/* Makes p the plan whose arenas are held, allocating them (the only allocator calls of a
 * run, made when the signature changes). */
clg_code clg_runner_activate(clg_executor *x, plan *p);
/* Releases the held arenas (after their queues drain). */
void clg_runner_release(clg_executor *x);
/* Runs the active plan p; outputs get the fetches only when the whole run succeeded. */
clg_code clg_runner_run(clg_executor *x, const plan *p, clg_tensor *const *feeds, int num_fetches,
                        clg_tensor **outputs);

/* --- run_trace.c --------------------------------------------------------------------------- */

/* Forgets the last run's record; starts the run's clock. */
void clg_run_trace_reset(clg_executor *x);
/* Room for the copies and steps of plan p when tracing. */
clg_code clg_run_trace_begin(clg_executor *x, const plan *p);
/* Around a step's kernel, only when tracing: markers and the allocator's bytes in use. */
clg_code clg_run_trace_step_begin(clg_executor *x, const step *st);
clg_code clg_run_trace_step_end(clg_executor *x, const plan *p, const step *st, clg_code code);
/* Puts the last run's times on the host's clock and keeps its record for the session. */
void clg_run_trace_resolve(clg_executor *x, const plan *p, bool ok);

/* --- cluster_hooks.c (issue 17) ------------------------------------------------------------ */

/* A local step reads value src (as pval `used`, input j of n; j < 0: a fetch). */
clg_code clg_cluster_hook_input(clg_executor *x, plan *p, const int *step_of, int src, int used,
                                const clg_node *n, int j);
/* Whether copy c was received in place of being made. */
bool clg_cluster_hook_received(const plan *p, int c);
/* For each step of this task pinned here, the tasks that read its outputs. */
clg_code clg_cluster_hook_sends(clg_executor *x, plan *p, const int *step_of);
/* Runs a remote step (receives what this task reads) or sends a local step's outputs. */
clg_code clg_cluster_hook_step(clg_executor *x, const plan *p, const step *st, bool after_kernel);

#endif
