/* clgraph: sessions.
 *
 * A session places a graph's nodes on devices and runs them. Device state is process-wide,
 * as in TensorFlow: the first session creates each device's allocator with its options,
 * and a later session asking for different memory options gets a logged warning and the
 * existing allocators. The state is released when the last session is freed.
 *
 *   clg_session_options opt;
 *   clg_session_options_init(&opt);
 *   opt.log_device_placement = 1;
 *   clg_session *s;
 *   if (clg_session_new(g, &opt, &s) != CLG_OK) ...
 *   clg_tensor *out;
 *   if (clg_session_run(s, 0, NULL, NULL, 1, &c, &out) == CLG_OK) { ...; clg_tensor_free(out); }
 *   clg_session_free(s);
 *
 * A session may be run many times. Runs of one session are serialised (a second thread
 * calling run waits); distinct sessions run concurrently. Using a session after
 * clg_session_free is not allowed (undefined, like free()).
 */
#ifndef CLGRAPH_SESSION_H
#define CLGRAPH_SESSION_H

#include <stdio.h>

#include "clgraph/device.h"
#include "clgraph/graph.h"
#include "clgraph/memory.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_session_options {
  int log_device_placement;        /* log the device mapping and each node's device (INFO) */
  int allow_soft_placement;        /* fall back to an existing, supported device */
  clg_memory_options gpu_options;  /* allow_growth, per_process_gpu_memory_fraction */
  const char *visible_device_list; /* as in clg_device_config */
  int num_virtual;
  const clg_virtual_devices *virtual_devices;
  unsigned device_types; /* CLG_DEVTYPE_* mask; 0: CLGRAPH_DEVICE_TYPES or default */
  /* Compile the MatMul kernels of the devices MatMuls are placed on when the session is
   * created, so the first run is not the slow one. CLBlast compiles a GEMM routine on its
   * first use per context and dtype: about 10 s on PoCL with a cold kernel cache, ~0.05 s
   * once PoCL's disk cache (POCL_CACHE_DIR) holds it; GPU drivers keep their own caches. */
  int warm_matmul;
  /* Keep a trace of the last trace_runs runs (0: none), as clg_session_set_trace. */
  int trace_runs;
  /* Where a run that runs out of device memory writes the memory map of that device (SVG):
   * NULL: "$TMPDIR/clgraph-oom-<pid>.svg" (TMPDIR unset: /tmp); "": nowhere. The error's
   * message then ends with "; memory map of <device>: <path>". The session keeps a copy. */
  const char *oom_memory_map;
  /* Cluster (issue 17): "mpi" makes the tasks of `mpirun -np P` one cluster, rank K being
   * /job:worker/replica:0/task:K; NULL or "" reads CLGRAPH_CLUSTER ("mpi" or "none").
   * Every task builds the same graph and makes the same runs (same feeds' nodes, fetches and
   * targets). A node whose device spec names a task runs there; a node naming no task runs
   * on every task, each its own copy, on its own devices (as a TensorFlow client's nodes go
   * to its own task); values cross tasks over MPI. Like the device options, the first
   * session's choice holds for the process. A build without MPI answers UNIMPLEMENTED. */
  const char *cluster;
  /* How long a task waits for another before failing with DEADLINE_EXCEEDED naming it, in
   * seconds, at most 1e9; 0: CLGRAPH_CLUSTER_TIMEOUT, else 60. */
  double cluster_timeout_s;
} clg_session_options;

typedef struct clg_session clg_session;

/* TensorFlow's defaults: everything off/zero. */
void clg_session_options_init(clg_session_options *opt);

/* Creates a session on g (which must have no builder error) and places its nodes.
 * Placement errors (INVALID_ARGUMENT) are returned here. */
clg_code clg_session_new(clg_graph *g, const clg_session_options *opt, clg_session **out);
void clg_session_free(clg_session *s);

/* Runs the graph: feeds[i] gives the value of placeholder feed_nodes[i]; outputs[i]
 * receives a new host tensor with the value of fetches[i] (the caller frees it). On
 * failure no output is set. */
clg_code clg_session_run(clg_session *s, int num_feeds, clg_node *const *feed_nodes,
                         clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                         clg_tensor **outputs);

/* The general run, as TensorFlow's Session::Run: feeds_at[i] is the output fed with
 * feeds[i] (any output may be fed: its producer then does not run); outputs[i] receives
 * the value of fetches[i]; targets are nodes run for their effects, nothing fetched. Control
 * inputs of what runs run first. On failure no output is set. */
clg_code clg_session_run_outputs(clg_session *s, int num_feeds, const clg_output *feeds_at,
                                 clg_tensor *const *feeds, int num_fetches,
                                 const clg_output *fetches, clg_tensor **outputs, int num_targets,
                                 clg_node *const *targets);

/* This process's task and the number of tasks: 0 and 1 outside a cluster. Either pointer
 * may be NULL. */
void clg_session_task(const clg_session *s, int *task, int *num_tasks);
/* Whether this process is the chief (task 0), the one task that writes checkpoints:
 * clg_session_save on another task of a cluster writes nothing and returns OK. */
int clg_session_is_chief(const clg_session *s);

/* The device set the session uses. */
const clg_devices *clg_session_devices(const clg_session *s);
/* The full name of the device node n was placed on, or NULL. Safe to call while another
 * thread runs the session; the string lives as long as the session. */
const char *clg_session_node_device(const clg_session *s, const clg_node *n);
/* Why node n is on its device ("explicit device specification '/cpu:0'", "default: lowest-id
 * GPU with a kernel for MatMul", ...), or NULL. Safe to call while another thread runs the
 * session. The string lives until the session is freed, even when a later run re-places a
 * grown graph and gives n another reason: the session keeps each distinct reason a node has
 * been given (usually one), not every placement it made. */
const char *clg_session_node_reason(const clg_session *s, const clg_node *n);

/* Tracing: when on, each run records when every node ran on its device: between markers
 * enqueued around its work on an OpenCL device's queue, or the host's monotonic clock for
 * CPU:0. Device times are put on the host's monotonic clock (ns) after each run from
 * paired host/device clock readings, so times of different devices compare. Costs two
 * markers per node and a few clock readings per run; off by default. */
clg_code clg_session_set_tracing(clg_session *s, int on);
/* The start and end (ns, the host's monotonic clock) of node n in the last run. FAILED_PRECONDITION
 * when tracing is off, NOT_FOUND when n did not run. */
clg_code clg_session_node_times(clg_session *s, const clg_node *n, uint64_t *start_ns,
                                uint64_t *end_ns);

/* --- pictures: a timeline of runs, a per-op profile, memory maps ------------------------ */

/* Keeps a trace of the last `last_n_runs` runs (0 stops and forgets them; tracing as
 * clg_session_set_tracing is on while this is > 0). INVALID_ARGUMENT when negative. */
clg_code clg_session_set_trace(clg_session *s, int last_n_runs);
/* Writes the kept runs as a Chrome trace-event JSON file (Perfetto's UI and `clgraph
 * trace-html` open it): one track per device named by its full name, one slice per node run
 * ("cat": "op"; args: op, device, shape, inputs, run), copies between devices as slices on
 * a "copies to <device>" track ("cat": "copy") joined to their producer and consumer by
 * flow arrows, counters of each device's allocator bytes in use and of the run's tensors
 * live, and a "step N" slice and instant per run on the "steps" track (its args give each
 * device's clock offset and its error). All times are on the
 * host's monotonic clock. The file is written to a temporary name, then renamed.
 * FAILED_PRECONDITION when no run was traced. */
clg_code clg_session_write_trace(clg_session *s, const char *path);

/* One row of the per-op profile (as tfprof or PyTorch's key_averages): one op type on one
 * device over the kept runs. Copies between devices are op "copy" on their destination. */
typedef struct clg_op_profile {
  char op[64];
  char device[128]; /* full name */
  int64_t count;
  double total_ms, mean_ms;
  /* total / the kept runs' wall time: devices work at once, so shares can add to > 1 */
  double share;
} clg_op_profile;
/* The profile of the kept runs, by total time (largest first): *rows is malloc'd (the
 * caller frees it). FAILED_PRECONDITION when no run was traced. */
clg_code clg_session_profile(clg_session *s, clg_op_profile **rows, int *num_rows);
/* Prints the profile as a table ("op type  device  count  total ms  mean ms  share"). */
clg_code clg_session_print_profile(clg_session *s, FILE *f);

/* Writes an SVG memory map of a device's allocator now (regions, blocks in use named by
 * tensor and op, free blocks, the largest free block, fragmentation) with a chart of its
 * bytes in use during the last traced run. device NULL: the device with the most bytes in
 * use. Written to a temporary name, then renamed. NOT_FOUND for an unknown device. */
clg_code clg_session_write_memory_map(clg_session *s, const char *device, const char *path);

/* Memory statistics of a device named in any accepted spelling ("/device:GPU:0").
 * NOT_FOUND for an unknown device. */
clg_code clg_session_memory_stats(clg_session *s, const char *device, clg_memory_stats *out);
clg_code clg_session_reset_memory_stats(clg_session *s, const char *device);
/* The allocator's map as text or JSON; malloc'd, NULL on error. */
char *clg_session_memory_dump(clg_session *s, const char *device, int json);

#ifdef __cplusplus
}
#endif
#endif
