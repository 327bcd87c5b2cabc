/* The runtime module's door: process-wide device state, the placer (a pure function of
 * graph, devices and options), and the executor. The public face is clgraph/session.h. */
#ifndef CLG_RUNTIME_H
#define CLG_RUNTIME_H

#include "clgraph/session.h"
#include "core/core.h"
#include "device/device.h"
#include "graph/graph.h"
#include "memory/memory.h"
#include "ops/ops.h"

/* --- process-wide device state ------------------------------------------------------ */

/* Devices and their allocators, shared by all sessions of the process (as TensorFlow's
 * GPU state is). Created by the first session, released with the last. */
typedef struct clg_process clg_process;

clg_code clg_process_acquire(const clg_session_options *opt, clg_process **out);
void clg_process_release(clg_process *p);
clg_devices *clg_process_devices(clg_process *p);
/* The cluster the process joined (session option cluster), or NULL. */
struct clg_cluster *clg_process_cluster(clg_process *p);
/* The allocator of device i, created on first use with the first session's options. */
clg_code clg_process_allocator(clg_process *p, int device, clg_allocator **out);
/* Logs `message` at WARNING once per (device, reason) for the life of the process state. */
void clg_process_warn_once(clg_process *p, int device, const char *reason, const char *message);
/* A session on g for the library's own host work (import's constant folding): with the device
 * and memory options the process state was created with when one exists, so that it neither
 * warns about differing options nor changes them, else with allow_growth (the state then lives
 * only as long as this session). */
clg_code clg_process_helper_session(clg_graph *g, clg_session **out);

/* --- variables (variables.c) ----------------------------------------------------------- */

/* A session's variable values, by VariableV2 node. Not thread-safe: the session's lock
 * serialises its users. */
typedef struct clg_var_store clg_var_store;

clg_code clg_var_store_new(clg_process *p, clg_var_store **out);
/* Frees every variable's buffer (after its device's queue drains). */
void clg_var_store_free(clg_var_store *s);
/* The buffer of variable n (size: its bytes) on device dev, allocated there on first use
 * (RESOURCE_EXHAUSTED naming the variable). A variable found on another device than dev
 * is released first and starts uninitialized. */
clg_code clg_var_store_block(clg_var_store *s, const clg_node *n, int dev, clg_block *out);
bool clg_var_store_initialized(const clg_var_store *s, const clg_node *n);
/* Marks n set (after an Assign or a restore); n's buffer must exist. */
void clg_var_store_set_initialized(clg_var_store *s, const clg_node *n);
/* FAILED_PRECONDITION "Attempting to use uninitialized value <var>", naming the reader. */
clg_code clg_var_uninitialized(const clg_node *var, const clg_node *reader);

/* --- placement -------------------------------------------------------------------- */

/* One node's placement: the device index and why. */
typedef struct clg_placement {
  int device;
  char reason[160];
  /* Cluster: the task that computes the node for every task, or -1 when every task runs its
   * own copy (its spec names no task). Outside a cluster: 0. */
  int task;
} clg_placement;

/* Places nodes [0, num_nodes) of g on devs. out has num_nodes entries. Errors:
 * INVALID_ARGUMENT with TensorFlow's texts (see placer.c). Logs soft-placement
 * fallbacks at INFO. Pure: runs nothing, allocates nothing on devices. */
clg_code clg_place(const clg_graph *g, const clg_devices *devs, bool allow_soft_placement,
                   clg_placement *out);

/* The order in which placements are reported (and explicit specs checked): generators in
 * reverse graph order, then the other nodes in graph order. For the guide's graphs this
 * reproduces its log ("b", "a", "MatMul") and its S5 error (naming 'b'). order gets n
 * entries. */
void clg_placement_order(const clg_graph *g, int n, int *order);

/* --- execution -------------------------------------------------------------------- */

typedef struct clg_executor clg_executor;

/* An executor runs the placed graph. For each run signature (which values are fed, which
 * are fetched, which nodes are targets) it computes a plan once: the nodes to run, each
 * value's lifetime, which outputs reuse an input's buffer in place, and each device's arena
 * with every value's offset in it. The plan and its arenas are kept while the signature
 * repeats, so a steady-state run makes no allocator call. The graph must not grow while an
 * executor exists (sessions make a new one). */
clg_code clg_executor_new(clg_process *p, const clg_graph *g, const clg_placement *placement,
                          clg_var_store *vars, clg_executor **out);
void clg_executor_free(clg_executor *x);
clg_code clg_executor_run(clg_executor *x, int num_feeds, const clg_output *feeds_at,
                          clg_tensor *const *feeds, int num_fetches, const clg_output *fetches,
                          clg_tensor **outputs, int num_targets, clg_node *const *targets);
/* Tracing: record when each node runs (see clg_session_set_tracing). */
clg_code clg_executor_set_tracing(clg_executor *x, bool on);
clg_code clg_executor_node_times(const clg_executor *x, const clg_node *n, uint64_t *start_ns,
                                 uint64_t *end_ns);

/* --- traces of runs (run_trace.c records them, tracing.c draws them) ------------------ */

/* A slice of a traced run, on the host's clock: a node's work on its device, or a copy of a
 * value (node's output `out`) from src_dev to dev. */
typedef struct clg_run_slice {
  int node, out;
  int dev, src_dev; /* src_dev: -1 for a node */
  uint64_t bytes;   /* a copy's bytes */
  uint64_t start_ns, end_ns;
} clg_run_slice;

/* Memory of device dev at ts: the allocator's bytes in use, and the bytes of the run's
 * tensors live in its arena (from the plan's lifetimes). */
typedef struct clg_run_sample {
  int dev;
  uint64_t ts_ns, in_use, live;
} clg_run_sample;

typedef struct clg_run_trace {
  uint64_t run; /* the session's run number, from 1 */
  uint64_t start_ns, end_ns;
  bool ok; /* the run succeeded */
  int nslices, nsamples, ndevs;
  clg_run_slice *slices;   /* nodes in the order they were enqueued, copies before users */
  clg_run_sample *samples; /* by time per device */
  int64_t *offset;         /* per device: host time - device time */
  uint64_t *offset_error;  /* per device: +- ns */
} clg_run_trace;

void clg_run_trace_free(clg_run_trace *t);

/* tracing.c: the pictures of kept runs (see clgraph/session.h). */
clg_code clg_runs_write_trace(const clg_graph *g, const clg_devices *devs,
                              clg_run_trace *const *runs, int n, const char *path);
clg_code clg_runs_profile(const clg_graph *g, const clg_devices *devs, clg_run_trace *const *runs,
                          int n, clg_op_profile **rows, int *num_rows);
void clg_runs_print_profile(FILE *f, const clg_op_profile *rows, int n, int runs, uint64_t wall_ns);
/* The memory map of device dev, with a chart from the samples of `last` (may be NULL). */
clg_code clg_runs_write_memory_map(clg_process *p, int dev, const clg_run_trace *last,
                                   const char *when, const char *path);
/* The trace of the executor's last run (the caller frees it), or NULL when tracing is off,
 * nothing ran or memory ran out. */
clg_run_trace *clg_executor_take_trace(clg_executor *x);

/* What the last run's plan holds (for tests and benchmarks). */
typedef struct clg_plan_stats {
  uint64_t arena_bytes;     /* all devices' arenas */
  uint64_t reference_bytes; /* peak bytes live when each value is freed after its last use,
                               without in-place reuse (the order before plans) */
  int num_values;           /* values the plan places, copies included */
  int num_inplace;          /* outputs that reuse an input's buffer */
  int num_fused;            /* steps run as another step's epilogue (fuse.c) */
  int num_plans;            /* signatures planned so far */
  /* Bytes the last run moved between host memory and devices that are not host memory:
   * feeds uploaded, fetches downloaded, copies staged through the host. */
  uint64_t host_to_device_bytes, device_to_host_bytes;
} clg_plan_stats;
clg_code clg_executor_plan_stats(const clg_executor *x, clg_plan_stats *out);
/* What checkpoints need of a session: its graph (placed up to date), placement, devices
 * and variables. clg_session_lock_variables holds the session's run lock until
 * clg_session_unlock_variables (runs wait meanwhile). */
typedef struct clg_session_vars {
  clg_graph *graph;
  clg_process *proc;
  clg_var_store *vars;
  const clg_placement *placement; /* per node of graph */
} clg_session_vars;
clg_code clg_session_lock_variables(clg_session *s, clg_session_vars *out);
void clg_session_unlock_variables(clg_session *s);

/* The cluster the session's process joined (its runs' kernels get it), or NULL. */
struct clg_cluster *clg_session_cluster(const clg_session *s);
/* The session's (for tests and benchmarks): its last run's plan. */
clg_code clg_session_plan_stats(clg_session *s, clg_plan_stats *out);
/* Host bytes the session holds for placements: the current one and every reason string it
 * keeps for readers (clg_session_node_reason). */
size_t clg_session_placement_bytes(clg_session *s);

#endif
