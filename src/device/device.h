/* The device module's door: the device set, the device interface that each kind implements
 * (src/backends/<kind>/), and opaque events. No OpenCL type here: an OpenCL device's
 * handles, OpenCL error names and clg_cl_error are in device/opencl_handles.h, for the
 * enumeration and the OpenCL backend. */
#ifndef CLG_DEVICE_H
#define CLG_DEVICE_H

#include <stdbool.h>

#include "clgraph/device.h"
#include "core/core.h"

/* --- the device set ---------------------------------------------------------------- */

/* An OpenCL device's handles and the set's platforms and contexts (device/opencl_handles.h,
 * for the enumeration and the OpenCL backend only; elsewhere they are opaque). */
struct clg_cl_device;
struct clg_cl_set;

/* One logical device. For the host, is_host is true and cl is NULL. */
typedef struct clg_device {
  clg_device_info info;
  bool is_host;
  struct clg_cl_device *cl; /* a local OpenCL device's handles: clg_cl_queue(dev), ... */
  int context_index;        /* equal for devices that share a context */
  /* A device of another task (cluster): a description only, no handles; its table moves
   * nothing (the cluster module transfers values), its blocks are host memory. */
  bool remote;
  /* A part of a physical device (CLGRAPH_VIRTUAL_DEVICES): that device's whole memory (the
   * part's is info.global_mem); 0 for a whole device. */
  uint64_t physical_mem;
} clg_device;

struct clg_devices {
  int count;
  clg_device *devs; /* devs[0] is the host */
  int num_contexts;
  /* Registry internals (device/registry.c). */
  int num_platforms;         /* every platform the ICD loader returned */
  struct clg_cl_set *cl;     /* the platforms, contexts and devices' handles */
  int num_physical;          /* OpenCL devices of the chosen types, before the visible list */
  unsigned types;            /* the CLG_DEVTYPE_* mask in effect */
  /* Cluster: this process's task (-1 outside a cluster) and how many of devs are its own
   * (the rest are remote devices of other tasks). */
  int local_task;
  int num_local;
};

/* The configuration's parsers and checks (device/config.c), for the registry: the types in
 * effect (the API field, else CLGRAPH_DEVICE_TYPES); a visible_device_list over count GPUs as
 * GPU ids (TensorFlow's rules); the virtual devices against the visible GPUs; the split that
 * CLGRAPH_VIRTUAL_DEVICES asks for: *count parts of mib[i] MiB (0: equal parts). */
clg_code clg_device_types_resolve(const clg_device_config *cfg, unsigned *mask);
clg_code clg_device_visible_parse(const char *list, int count, int **order_out, int *n_out);
clg_code clg_device_virtual_check(const clg_device_config *cfg, int visible, bool list_given);
clg_code clg_device_split_parse(const char *text, int *count,
                                uint64_t mib[CLG_MAX_VIRTUAL_PER_GPU]);

/* --- tasks (cluster) --------------------------------------------------------------- */

/* Renames the local devices to /job:worker/replica:0/task:<task>/... and records the task. */
clg_code clg_devices_set_task(clg_devices *devs, int task);
/* Appends a remote device described by info (strings copied; index set here). opencl: the
 * owner runs it as an OpenCL device (its kernels are chosen as the owner would). */
clg_code clg_devices_add_remote(clg_devices *devs, const clg_device_info *info, bool opencl);

/* A set of the host alone, made without any OpenCL call (the library's own host work: an
 * import's constant folding needs no OpenCL start-up). */
clg_code clg_devices_new_host(clg_devices **out);
/* OpenCL's start-up (the ICD loader and drivers' first enumeration) begun on a thread of its
 * own, once per process, so that it overlaps the caller's work; warm_end waits for it. Neither
 * changes what clg_devices_new finds (it calls warm_end itself). */
void clg_devices_warm_begin(void);
void clg_devices_warm_end(void);

/* Device i of the set (0 = host). */
clg_device *clg_devices_at(clg_devices *devs, int i);

/* A block of device memory. For devices with regions, mem is the device kind's handle of
 * the block's region (an OpenCL device's cl_mem: only its backend turns it back, with
 * clg_cl_mem) and offset the byte offset in it; for the host, host points at the memory and
 * mem is NULL. */
typedef struct clg_block {
  void *mem;
  size_t offset;
  size_t size; /* rounded size actually reserved */
  void *host;
  uint32_t region;
} clg_block;

/* --- events ------------------------------------------------------------------------ */

/* An opaque event: completes when a command of a device has finished. Each device kind makes
 * its own (src/backends/<kind>/events.c: an OpenCL command's event, a host event that a host
 * thread signals) and tags it with its event table, so that only the kind that made an event
 * looks behind it. NULL is an event that has already completed (synchronous work). */
typedef struct clg_event clg_event;

/* What a kind does with the events it makes. */
typedef struct clg_event_ops {
  const char *kind; /* "host", "OpenCL": for messages */
  void (*retain)(clg_event *e);
  void (*release)(clg_event *e);
  /* Blocks the calling thread until e has completed; its failure, if it failed. */
  clg_code (*wait)(clg_event *e);
  /* Whether e has completed (or failed). */
  bool (*done)(clg_event *e);
  /* When the command ran (ns, on its device's clock); FAILED_PRECONDITION where the kind
   * keeps no times. */
  clg_code (*times)(clg_event *e, uint64_t *start_ns, uint64_t *end_ns);
} clg_event_ops;

/* The tag every kind's event starts with (its own fields follow). */
struct clg_event {
  const clg_event_ops *ops;
};

/* The calls below go to the table of the kind that made e; NULL is accepted everywhere. */
clg_event *clg_event_retain(clg_event *e);
void clg_event_release(clg_event *e);
/* Waits on the host for n events (NULL entries allowed); the first failure. */
clg_code clg_event_wait(int n, clg_event *const *events);
/* Whether e has completed (or failed). */
bool clg_event_done(clg_event *e);
/* When the command ran (ns, on its device's clock). FAILED_PRECONDITION for NULL. */
clg_code clg_event_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns);
/* Retains e (not NULL) for a holder that needs it to stay valid; false when it cannot. */
bool clg_event_hold(clg_event *e);
/* Waits for e (not NULL), whatever its outcome: for a caller that asks nothing of it. */
void clg_event_sync(clg_event *e);
/* Whether e (not NULL) was made by the kind whose event table is ops. */
static inline bool clg_event_is(const clg_event *e, const clg_event_ops *ops)
{
  return e->ops == ops;
}

/* --- device memory ---------------------------------------------------------------------- */

/* Why a buffer call failed: the error's name and number and the call, for messages. */
typedef struct clg_region_err {
  const char *name;
  int code;
  const char *call;
} clg_region_err;

/* What the allocator and the pinned pool (src/memory/) ask of a device kind with regions of
 * its own memory. Regions, queues, contexts and buffers are the kind's opaque handles. */
typedef struct clg_buffer_ops {
  /* Whether dev has what the kind needs to allocate (a context, a device). */
  bool (*device_ready)(const clg_device *dev);
  /* Whether dev is a CPU-type device (PoCL's): its memory has no driver share. */
  bool (*cpu_type)(const clg_device *dev);
  /* Whether dev's memory is the host's (a CPU-type device, or unified memory). */
  bool (*host_memory)(const clg_device *dev);
  /* A key that names dev among the devices of its context. */
  const void *(*device_key)(const clg_device *dev);
  /* How many other devices of dev's context use host memory and are not skipped (skip is
   * asked first, so a skipped device is not queried). 0 when the context cannot be asked. */
  int (*count_peers)(const clg_device *dev, bool (*skip)(const void *key));
  /* A queue of dev's context for memory's own commands (filling regions, mapping pinned
   * buffers). NULL with *err filled on failure. */
  void *(*queue_new)(const clg_device *dev, clg_region_err *err);
  /* Waits for every command of the queue. */
  void (*queue_finish)(void *queue);
  void (*queue_release)(void *queue);
  /* A reference to dev's context, for an owner that may outlive the device's own. */
  void *(*context_retain)(const clg_device *dev);
  void (*context_release)(void *context);
  /* Whether region_create fills dev's new regions now (asked just before it): drivers
   * allocate lazily, and a region not filled takes the host's pages on first use. */
  bool (*touches_regions)(const clg_device *dev);
  /* A region of size bytes, made real at once by filling it with zeros on queue where
   * touches_regions says so (drivers allocate lazily and would otherwise fail in the middle
   * of a kernel). NULL with *err filled when the device refuses it or the fill fails. */
  void *(*region_create)(const clg_device *dev, void *queue, uint64_t size, clg_region_err *err);
  /* The driver keeps a region while commands still use it. */
  void (*region_release)(void *region);
  /* A host-visible buffer (page-locked by drivers) of bytes, mapped for reading and writing:
   * the pointer, with *mem its buffer; NULL (nothing left) when the device refuses it or the
   * pointer is not a multiple of align. */
  void *(*map_host)(void *context, void *queue, size_t bytes, size_t align, void **mem);
  /* Unmaps and releases a buffer of map_host, waiting for the unmap. */
  void (*unmap_host)(void *queue, void *mem, void *ptr);
  /* The same for a buffer declined after mapping (its unmap not waited for by event). */
  void (*decline_host)(void *queue, void *mem, void *ptr);
} clg_buffer_ops;

/* --- the device interface ------------------------------------------------------------- */

/* What the runtime asks of a device: a table per device kind (the host, OpenCL devices;
 * later a remote task). The runtime never asks which kind a device is. */
typedef struct clg_device_ops {
  clg_device_kind kind;
  /* Blocks of this device are plain host memory (block.host). */
  bool host_memory;
  /* Blocking copy between host memory and a block of this device. */
  clg_code (*upload)(clg_device *dev, const clg_block *dst, const void *src, size_t bytes);
  clg_code (*download)(clg_device *dev, const clg_block *src, void *dst, size_t bytes);
  /* Copies from a block of peer device src into a block of dst, enqueued on dst after the
   * `nwait` events (chained as chain does); *done gets the copy's event (NULL when it has
   * already completed).
   * UNIMPLEMENTED when the two cannot copy directly (the caller stages through the host). */
  clg_code (*copy_from_peer)(clg_device *dst, const clg_block *d, clg_device *src,
                             const clg_block *s, size_t bytes, int nwait, clg_event *const *wait,
                             clg_event **done);
  /* An event completing after all work enqueued on dev so far (NULL where work is
   * synchronous). */
  clg_code (*marker)(clg_device *dev, clg_event **event);
  /* Makes the work enqueued on dev after this call (launches, copies) wait for the n events
   * (NULL entries allowed), whichever kind made them: an event of dev's own kind that dev can
   * wait for on its queue is chained there without blocking the host; any other (another
   * kind's, another context's) is waited for on the host before chain returns. */
  clg_code (*chain)(clg_device *dev, int n, clg_event *const *events);
  /* The table of the events this kind makes (NULL: it makes none, its work being
   * synchronous). */
  const clg_event_ops *events;
  /* Waits for all work of the device. */
  clg_code (*finish)(clg_device *dev);
  /* Maps the device's event times to the host clock: device time + *offset = host time,
   * within +-*error_ns (see clg_device_clock_offset). Taken once per traced run. */
  clg_code (*clock_offset)(clg_device *dev, int64_t *host_minus_device_ns, uint64_t *error_ns);
  /* Regions of the device's own memory; NULL where blocks are host memory (the host, a
   * remote device). */
  const clg_buffer_ops *buffers;
} clg_device_ops;

/* The table of dev. */
const clg_device_ops *clg_device_ops_of(const clg_device *dev);

#endif
