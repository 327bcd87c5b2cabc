/* The device module's door: device-name specifications (TensorFlow's grammar), OpenCL
 * error names and info queries, and the device set with its OpenCL handles. */
#ifndef CLG_DEVICE_H
#define CLG_DEVICE_H

#include <stdbool.h>

#ifndef CL_TARGET_OPENCL_VERSION /* device/clock.c asks for 2.1's declarations */
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "clgraph/device.h"
#include "core/core.h"

/* --- OpenCL errors and queries ------------------------------------------------------- */

/* "CL_INVALID_BUFFER_SIZE" for -61, "CL_UNKNOWN_ERROR" otherwise. */
const char *clg_cl_error_name(cl_int err);
/* Records "<NAME> (<err>) in <call><context>" as an error with the code that fits
 * (RESOURCE_EXHAUSTED for -4/-5/-6 and CL_INVALID_BUFFER_SIZE, INTERNAL otherwise) and
 * returns it. context is free text such as " for node 'MatMul' on /device:GPU:1". */
clg_code clg_cl_error(cl_int err, const char *call, const char *context_fmt, ...) CLG_PRINTF(3, 4);

/* --- the device set ---------------------------------------------------------------- */

/* One logical device. For the host, is_host is true and the cl_* handles are NULL. Virtual
 * devices of one physical device share its cl_device_id and context, each with its own
 * queue. */
typedef struct clg_device {
  clg_device_info info;
  bool is_host;
  cl_platform_id platform;
  cl_device_id cl_device;
  cl_context context;     /* shared by the devices of one platform */
  int context_index;      /* equal for devices that share a context */
  cl_command_queue queue; /* in-order, profiling enabled */
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
  cl_context *contexts; /* contexts[d.context_index] == d.context */
  /* Registry internals (device/registry.c). */
  int num_platforms;         /* every platform the ICD loader returned */
  cl_platform_id *platforms; /* in the order the ICD loader returned them */
  int num_physical;          /* OpenCL devices of the chosen types, before the visible list */
  unsigned types;            /* the CLG_DEVTYPE_* mask in effect */
  /* Cluster: this process's task (-1 outside a cluster) and how many of devs are its own
   * (the rest are remote devices of other tasks). */
  int local_task;
  int num_local;
};

/* --- tasks (cluster) --------------------------------------------------------------- */

/* Renames the local devices to /job:worker/replica:0/task:<task>/... and records the task. */
clg_code clg_devices_set_task(clg_devices *devs, int task);
/* Appends a remote device described by info (strings copied; index set here). opencl: the
 * owner runs it as an OpenCL device (its kernels are chosen as the owner would). */
clg_code clg_devices_add_remote(clg_devices *devs, const clg_device_info *info, bool opencl);

/* Device i of the set (0 = host). */
clg_device *clg_devices_at(clg_devices *devs, int i);

/* A block of device memory. For OpenCL devices mem is the region's cl_mem and offset the
 * byte offset in it; for the host, host points at the memory and mem is NULL. */
typedef struct clg_block {
  cl_mem mem;
  size_t offset;
  size_t size; /* rounded size actually reserved */
  void *host;
  uint32_t region;
} clg_block;

/* --- events ------------------------------------------------------------------------ */

/* An opaque event: completes when a command enqueued on a device has finished. NULL is an
 * event that has already completed (devices that work synchronously return NULL). */
typedef struct clg_event clg_event;

clg_event *clg_event_retain(clg_event *e);
void clg_event_release(clg_event *e);
/* Waits for n events (NULL entries allowed). */
clg_code clg_event_wait(int n, clg_event *const *events);
/* Whether e has completed (or failed). */
bool clg_event_done(clg_event *e);
/* When the command ran (ns, on its device's clock). FAILED_PRECONDITION for NULL. */
clg_code clg_event_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns);
/* The OpenCL event behind e, and the reverse (for the OpenCL device code only). */
cl_event clg_event_cl(clg_event *e);
clg_event *clg_event_from_cl(cl_event e);

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
   * `nwait` events; *done gets the copy's event (NULL when it has already completed).
   * UNIMPLEMENTED when the two cannot copy directly (the caller stages through the host). */
  clg_code (*copy_from_peer)(clg_device *dst, const clg_block *d, clg_device *src,
                             const clg_block *s, size_t bytes, int nwait, clg_event *const *wait,
                             clg_event **done);
  /* An event completing after all work enqueued on dev so far (NULL where work is
   * synchronous). */
  clg_code (*marker)(clg_device *dev, clg_event **event);
  /* Waits for all work of the device. */
  clg_code (*finish)(clg_device *dev);
  /* Maps the device's event times to the host clock: device time + *offset = host time,
   * within +-*error_ns (see clg_device_clock_offset). Taken once per traced run. */
  clg_code (*clock_offset)(clg_device *dev, int64_t *host_minus_device_ns, uint64_t *error_ns);
} clg_device_ops;

/* The table of dev. */
const clg_device_ops *clg_device_ops_of(const clg_device *dev);

/* --- data movement (device/transfer.c) ------------------------------------------------ */

/* Blocking write of bytes from host to (mem, offset) on dev's queue. */
clg_code clg_device_upload(clg_device *dev, cl_mem mem, size_t offset, const void *host,
                           size_t bytes);
/* Blocking read of bytes from (mem, offset) on dev's queue (after all work queued there). */
clg_code clg_device_download(clg_device *dev, cl_mem mem, size_t offset, void *host, size_t bytes);
/* Copies within one context, enqueued on dst's queue after `wait` (may be NULL); *done
 * (if not NULL) receives an event for the copy. Devices of different contexts:
 * UNIMPLEMENTED (callers stage through the host). */
clg_code clg_device_copy(clg_device *dst, cl_mem dst_mem, size_t dst_offset, const clg_device *src,
                         cl_mem src_mem, size_t src_offset, size_t bytes, cl_event wait,
                         cl_event *done);
/* An event that completes when everything enqueued on dev's queue so far has completed. */
clg_code clg_device_marker(clg_device *dev, cl_event *event);
/* Waits for everything enqueued on dev's queue. */
clg_code clg_device_finish(clg_device *dev);
/* How far the host's monotonic clock (clg_now_ns) is ahead of dev's profiling clock: device
 * time + *host_minus_device_ns = host time, to within +-*error_ns (0 and 0 for the host).
 * From clGetDeviceAndHostTimer bracketed by two host readings when the device is OpenCL >=
 * 2.1 and its platform has a host timer; else from markers: a marker's QUEUED time is taken
 * during the enqueue call and its END before the wait returns, so each marker bounds the
 * offset from both sides, and the bounds of a few markers are intersected. */
clg_code clg_device_clock_offset(clg_device *dev, int64_t *host_minus_device_ns,
                                 uint64_t *error_ns);
/* Profiling times (ns, device clock) of a completed event. */
clg_code clg_device_event_times(cl_event event, uint64_t *start_ns, uint64_t *end_ns);

#endif
