/* clgraph: devices.
 *
 * The host is always /device:CPU:0 (also written /cpu:0). OpenCL devices of the chosen
 * types, from every platform, become /device:GPU:0 .. /device:GPU:N-1 in this order:
 * platforms in the order the ICD loader returns them, devices in each platform in the
 * order the platform returns them (the physical order); then the visible-device list, if
 * any, selects and reorders them; then each visible device may be split into several
 * virtual devices with their own memory limits.
 *
 * CLGRAPH_VIRTUAL_DEVICES splits every physical device before all that, so that one GPU can
 * play several: "4" (four equal parts of its memory), "4x2048" (four parts of 2048 MiB) or
 * "1024,3072" (one part per size, in MiB); 1 to 16 parts, no more memory than the device
 * has. A part shares its device's cl_device_id and context, and reports the part's memory
 * as global_mem (max_alloc in the device's own ratio to it); the visible list, the virtual
 * devices below and physical_index then count parts.
 *
 *   clg_device_config cfg;
 *   clg_device_config_init(&cfg);               // types from CLGRAPH_DEVICE_TYPES, ...
 *   clg_devices *devs;
 *   if (clg_devices_new(&cfg, &devs) == CLG_OK) {
 *     for (int i = 0; i < clg_devices_count(devs); i++)
 *       puts(clg_devices_get(devs, i)->full_name);
 *     clg_devices_free(devs);
 *   }
 */
#ifndef CLGRAPH_DEVICE_H
#define CLGRAPH_DEVICE_H

#include <stdint.h>

#include "clgraph/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* OpenCL device types that may become GPUs (a bit mask). */
enum {
  CLG_DEVTYPE_GPU = 1u << 0,
  CLG_DEVTYPE_ACCELERATOR = 1u << 1,
  CLG_DEVTYPE_CPU = 1u << 2, /* stand-in GPUs (PoCL): for testing */
  CLG_DEVTYPE_ALL = 7u,
  CLG_DEVTYPE_DEFAULT = CLG_DEVTYPE_GPU | CLG_DEVTYPE_ACCELERATOR
};

/* Parses a comma list of "gpu", "accelerator", "cpu", or "all" (the syntax of
 * CLGRAPH_DEVICE_TYPES) into a mask. Exact, lower-case words; anything else is
 * INVALID_ARGUMENT naming the word. */
clg_code clg_device_types_parse(const char *text, unsigned *mask);

#define CLG_MAX_VIRTUAL_PER_GPU 16

/* One visible GPU split into `count` virtual GPUs, each limited to memory_limit_mb[i]
 * MiB (TensorFlow's LogicalDeviceConfiguration(memory_limit=...)). */
typedef struct clg_virtual_devices {
  int count;
  double memory_limit_mb[CLG_MAX_VIRTUAL_PER_GPU];
} clg_virtual_devices;

typedef struct clg_device_config {
  /* CLG_DEVTYPE_* mask; 0 means: CLGRAPH_DEVICE_TYPES if set, else CLG_DEVTYPE_DEFAULT. */
  unsigned types;
  /* TensorFlow's visible_device_list: "2,0" makes physical GPU 2 /device:GPU:0 and
   * physical GPU 0 /device:GPU:1. NULL or "" means CLGRAPH_VISIBLE_DEVICES if set, else
   * all devices in physical order. */
  const char *visible_device_list;
  /* Optional: entry i splits visible GPU i. When num_virtual > 0 it must equal the
   * number of visible GPUs (TensorFlow's rule). */
  int num_virtual;
  const clg_virtual_devices *virtual_devices;
} clg_device_config;

/* Everything known about one device. Strings are owned by the device set. */
typedef struct clg_device_info {
  int index;                  /* 0 = CPU:0, then GPUs in order */
  const char *type;           /* "CPU" or "GPU" */
  int id;                     /* the N of /device:TYPE:N */
  const char *name;           /* "/device:GPU:0" */
  const char *full_name;      /* "/job:localhost/replica:0/task:0/device:GPU:0" */
  const char *cl_name;        /* CL_DEVICE_NAME ("" for the host) */
  const char *cl_vendor;      /* CL_DEVICE_VENDOR */
  const char *cl_type;        /* "GPU", "CPU", "ACCELERATOR", "host" */
  const char *driver_version; /* CL_DRIVER_VERSION */
  const char *cl_version;     /* CL_DEVICE_VERSION */
  const char *platform_name;  /* CL_PLATFORM_NAME */
  const char *pci_bus_id;     /* "0000:05:00.0", or "unknown" when the driver gives none */
  unsigned compute_units;
  uint64_t global_mem;      /* CL_DEVICE_GLOBAL_MEM_SIZE (host: physical memory) */
  uint64_t max_alloc;       /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  unsigned base_addr_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes */
  uint64_t memory_limit;    /* virtual device limit in bytes, 0 if none */
  int physical_index;       /* index in the physical GPU order; -1 for the host */
  int has_fp64, has_fp16;
  int nv_cc_major; /* NVIDIA compute capability major (cl_nv_device_attribute_query), else 0 */
  /* The task whose device this is: the N of /task:N (0 outside a cluster). In a cluster
   * (session option cluster = "mpi"), the set also lists the other tasks' devices, after
   * this process's own, named /job:worker/replica:0/task:N/device:TYPE:ID. */
  int task;
} clg_device_info;

typedef struct clg_devices clg_devices;

/* Sets the defaults (types 0, no visible list, no virtual devices). */
void clg_device_config_init(clg_device_config *cfg);

/* Enumerates the devices (cfg NULL: the defaults). With no OpenCL platform at all the set holds
 * CPU:0 alone and the call succeeds. Errors: INVALID_ARGUMENT for a bad CLGRAPH_DEVICE_TYPES,
 * visible list (TensorFlow's texts: "Could not parse entry in 'visible_device_list': ...",
 * "'visible_device_list' listed an invalid Device id ...", "visible_device_list contained
 * a duplicate entry: ...") or virtual device configuration; OpenCL failures by name. */
clg_code clg_devices_new(const clg_device_config *cfg, clg_devices **out);
void clg_devices_free(clg_devices *devs);

/* Number of devices, CPU:0 included. */
int clg_devices_count(const clg_devices *devs);
/* Device i (0 <= i < count), or NULL. */
const clg_device_info *clg_devices_get(const clg_devices *devs, int i);
/* The device whose name matches `name` exactly in any accepted spelling ("/cpu:0",
 * "/device:GPU:1", full or legacy full names), or NULL. A name without a task names this
 * process's own device. */
const clg_device_info *clg_devices_find(const clg_devices *devs, const char *name);

/* TensorFlow's "Device mapping:" block: "Device mapping:\n" then one line per GPU,
 * "/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, name: <name>, pci bus id:
 * <id>\n"; "Device mapping: no known devices.\n" when there is no GPU. malloc'd. */
char *clg_devices_mapping_string(const clg_devices *devs);

#ifdef __cplusplus
}
#endif
#endif
