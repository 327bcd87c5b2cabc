/* The runtime module's door: process-wide device state, the placer (a pure function of
 * graph, devices and options), and the executor. The public face is clgraph/session.h. */
#ifndef CLG_RUNTIME_H
#define CLG_RUNTIME_H

#include "clgraph/session.h"
#include "core/core.h"
#include "device/device.h"
#include "graph/graph.h"
#include "memory/memory.h"

/* --- process-wide device state ------------------------------------------------------ */

/* Devices and their allocators, shared by all sessions of the process (as TensorFlow's
 * GPU state is). Created by the first session, released with the last. */
typedef struct clg_process clg_process;

clg_code clg_process_acquire(const clg_session_options *opt, clg_process **out);
void clg_process_release(clg_process *p);
clg_devices *clg_process_devices(clg_process *p);
/* The allocator of device i, created on first use with the first session's options. */
clg_code clg_process_allocator(clg_process *p, int device, clg_allocator **out);
/* Logs `message` at WARNING once per (device, reason) for the life of the process state. */
void clg_process_warn_once(clg_process *p, int device, const char *reason, const char *message);

/* --- placement -------------------------------------------------------------------- */

/* One node's placement: the device index and why. */
typedef struct clg_placement {
  int device;
  char reason[160];
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

/* "b = Const[dtype=DT_FLOAT, value=Tensor<type: float shape: [3,2] values: 1 2 3...>,
 * _device=\"/device:GPU:2\"]()" (TensorFlow's node summary in errors). */
char *clg_node_def_string(const clg_node *n);

/* --- the device interface ------------------------------------------------------------ */

/* What the executor asks of a device. Two implementations: the host (plain memory, C
 * kernels) and OpenCL devices (cl_mem blocks, kernels on the device's in-order queue).
 * The executor never asks which kind a device is; it asks these functions. */
typedef struct clg_devops {
  /* Blocks of this device are plain host memory (block.host). */
  bool host_memory;
  /* Blocking copy between host memory and a block of this device. */
  clg_code (*upload)(clg_device *dev, const clg_block *dst, const void *src, size_t bytes);
  clg_code (*download)(clg_device *dev, const clg_block *src, void *dst, size_t bytes);
  /* Direct copy from a block of src to a block of dst, enqueued on dst after `wait`;
   * UNIMPLEMENTED when the two cannot copy directly (the caller stages via the host). */
  clg_code (*copy)(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                   size_t bytes, cl_event wait, cl_event *done);
  /* An event completing after all work enqueued so far (NULL where work is synchronous). */
  clg_code (*ready_event)(clg_device *dev, cl_event *event);
  /* Runs node n: inputs in in[], output into out. */
  clg_code (*run)(clg_process *p, int device, const clg_node *n, const clg_block *in,
                  const clg_block *out);
  /* Waits for all work of the device. */
  clg_code (*finish)(clg_device *dev);
} clg_devops;

/* The interface of device i. */
const clg_devops *clg_devops_of(const clg_device *dev);

/* --- execution -------------------------------------------------------------------- */

typedef struct clg_executor clg_executor;

clg_code clg_executor_new(clg_process *p, const clg_graph *g, const clg_placement *placement,
                          clg_executor **out);
void clg_executor_free(clg_executor *x);
clg_code clg_executor_run(clg_executor *x, int num_feeds, clg_node *const *feed_nodes,
                          clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                          clg_tensor **outputs);
/* Tracing: record when each node runs (see clg_session_set_tracing). */
clg_code clg_executor_set_tracing(clg_executor *x, bool on);
clg_code clg_executor_node_times(const clg_executor *x, const clg_node *n, uint64_t *start_ns,
                                 uint64_t *end_ns);

#endif
