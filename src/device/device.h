/* The device module's door: device-name specifications (TensorFlow's grammar), OpenCL
 * error names and info queries, and the device set with its OpenCL handles. */
#ifndef CLG_DEVICE_H
#define CLG_DEVICE_H

#include <stdbool.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "clgraph/device.h"
#include "core/core.h"

/* --- device-name specifications (tf-semantics.md section 1) -------------------------- */

#define CLG_DEVNAME_FIELD 64

/* A parsed, possibly partial, device name. A field is meaningful only when its has_ flag
 * is set; "*" leaves it unset. */
typedef struct clg_devname {
  bool has_job, has_replica, has_task, has_type, has_id;
  char job[CLG_DEVNAME_FIELD];
  int replica, task;
  char type[CLG_DEVNAME_FIELD];
  int id;
} clg_devname;

/* TensorFlow's ParseFullName (any order, legacy /cpu:N /gpu:N, wildcards, "" and "/"
 * valid). On failure: INVALID_ARGUMENT "Malformed device specification '<s>': <what is
 * wrong, naming the part>". */
clg_code clg_devname_parse(const char *text, clg_devname *out);
/* ParseFullName, then ParseLocalName ("GPU:0", "CPU:1"). */
clg_code clg_devname_parse_full_or_local(const char *text, clg_devname *out);
/* As tf.device() in Python does: parse, then upper-case the types "cpu" and "gpu". */
clg_code clg_devname_parse_scope(const char *text, clg_devname *out);

/* ParsedNameToString: "/job:J/replica:R/task:T/device:TYPE:ID" with the parts that are
 * set ("*" for an unset id after a type). Always NUL-terminates buf. Returns buf. */
char *clg_devname_format(const clg_devname *n, char *buf, size_t size);

/* MergeDevNames: fills target's unset fields from other; conflicts are INVALID_ARGUMENT
 * ("Cannot merge devices with incompatible types: '<a>' and '<b>'") unless
 * allow_soft_placement, which clears the conflicting type/id instead (jobs, replicas and
 * tasks always conflict). */
clg_code clg_devname_merge(clg_devname *target, const clg_devname *other,
                           bool allow_soft_placement);
/* MergeOverrideDevNames: every field set in other wins. */
void clg_devname_merge_override(clg_devname *target, const clg_devname *other);
/* MergeUnsetDevNames: copies only fields unset in target. */
void clg_devname_merge_unset(clg_devname *target, const clg_devname *other);

/* IsSpecification: every field set in less_specific is set and equal in more_specific. */
bool clg_devname_is_specification(const clg_devname *less_specific,
                                  const clg_devname *more_specific);
/* IsCompleteSpecification: every field set in pattern equals the one in the (complete)
 * name. */
bool clg_devname_matches(const clg_devname *pattern, const clg_devname *name);
/* AreCompatibleDevNames: fields set in both are equal. */
bool clg_devname_compatible(const clg_devname *a, const clg_devname *b);
/* True when nothing is set. */
bool clg_devname_is_empty(const clg_devname *n);

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
};

/* Device i of the set (0 = host). */
clg_device *clg_devices_at(clg_devices *devs, int i);

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
/* Profiling times (ns, device clock) of a completed event. */
clg_code clg_device_event_times(cl_event event, uint64_t *start_ns, uint64_t *end_ns);

#endif
