/* The device registry: the host as /device:CPU:0, then OpenCL devices of the chosen types
 * as /device:GPU:N (platform order from the ICD loader, then each platform's device order),
 * narrowed and reordered by the visible-device list and split by virtual devices. The
 * configuration's texts and fields are parsed and checked in config.c. */
#define _DEFAULT_SOURCE /* sigaltstack: OpenCL's start-up on a thread of its own */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/opencl_handles.h"

/* Vendor queries that the Khronos headers lack or may lack (opencl-practice.md, 3). */
#define CLG_CL_PCI_BUS_INFO_KHR 0x410F
#define CLG_CL_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CLG_CL_PCI_BUS_ID_NV 0x4008
#define CLG_CL_PCI_SLOT_ID_NV 0x4009
#define CLG_CL_PCI_DOMAIN_ID_NV 0x400A
#define CLG_CL_TOPOLOGY_AMD 0x4037
#define CLG_CL_TOPOLOGY_TYPE_PCIE_AMD 1
#define CLG_CL_PLATFORM_NOT_FOUND_KHR (-1001)

typedef struct clg_pci_bus_info_khr {
  cl_uint domain, bus, device, function;
} clg_pci_bus_info_khr;

/* Layout of cl_device_topology_amd's PCIe member. */
typedef union clg_topology_amd {
  struct {
    cl_uint type;
    cl_uint data[5];
  } raw;
  struct {
    cl_uint type;
    cl_char unused[17];
    cl_char bus, device, function;
  } pcie;
} clg_topology_amd;

static const char full_prefix[] = "/job:localhost/replica:0/task:0";

/* --- OpenCL queries ---------------------------------------------------------------- */

typedef struct phys_device {
  int platform_index;
  cl_device_id id;
  cl_device_type type;
  uint64_t slice_bytes; /* a part of the device (CLGRAPH_VIRTUAL_DEVICES), 0: all of it */
} phys_device;

static char *trimmed_copy(const char *s, size_t n)
{
  while (n > 0 && (s[n - 1] == '\0' || isspace((unsigned char)s[n - 1])))
    n--;
  while (n > 0 && isspace((unsigned char)*s))
    s++, n--;
  char *r = malloc(n + 1);
  if (!r)
    return NULL;
  memcpy(r, s, n);
  r[n] = '\0';
  return r;
}

static clg_code device_string(cl_device_id d, cl_device_info param, const char *pname, char **out)
{
  size_t n = 0;
  cl_int err = clGetDeviceInfo(d, param, 0, NULL, &n);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetDeviceInfo", " for %s", pname);
  char *raw = malloc(n + 1);
  if (!raw)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading %s", pname);
  err = clGetDeviceInfo(d, param, n, raw, NULL);
  if (err != CL_SUCCESS) {
    free(raw);
    return clg_cl_error(err, "clGetDeviceInfo", " for %s", pname);
  }
  raw[n] = '\0';
  *out = trimmed_copy(raw, strlen(raw));
  free(raw);
  if (!*out)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading %s", pname);
  return CLG_OK;
}

static clg_code platform_string(cl_platform_id p, cl_platform_info param, const char *pname,
                                char **out)
{
  size_t n = 0;
  cl_int err = clGetPlatformInfo(p, param, 0, NULL, &n);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetPlatformInfo", " for %s", pname);
  char *raw = malloc(n + 1);
  if (!raw)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading %s", pname);
  err = clGetPlatformInfo(p, param, n, raw, NULL);
  if (err != CL_SUCCESS) {
    free(raw);
    return clg_cl_error(err, "clGetPlatformInfo", " for %s", pname);
  }
  raw[n] = '\0';
  *out = trimmed_copy(raw, strlen(raw));
  free(raw);
  if (!*out)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading %s", pname);
  return CLG_OK;
}

static clg_code device_scalar(cl_device_id d, cl_device_info param, const char *pname, void *out,
                              size_t size)
{
  cl_int err = clGetDeviceInfo(d, param, size, out, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetDeviceInfo", " for %s", pname);
  return CLG_OK;
}

/* True when the space-separated extension list holds `ext` as a whole word. */
static bool has_extension(const char *list, const char *ext)
{
  size_t n = strlen(ext);
  for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n) {
    bool starts = p == list || isspace((unsigned char)p[-1]);
    bool ends = p[n] == '\0' || isspace((unsigned char)p[n]);
    if (starts && ends)
      return true;
  }
  return false;
}

/* "DDDD:BB:DD.F" in lower-case hex (as sysfs and TensorFlow write it), or "unknown". */
static char *pci_bus_id(cl_device_id d, const char *extensions)
{
  char buf[32];
  if (has_extension(extensions, "cl_khr_pci_bus_info")) {
    clg_pci_bus_info_khr info;
    if (clGetDeviceInfo(d, CLG_CL_PCI_BUS_INFO_KHR, sizeof info, &info, NULL) == CL_SUCCESS) {
      snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", info.domain & 0xffffu, info.bus & 0xffu,
               info.device & 0x1fu, info.function & 0x7u);
      return clg_strdup(buf);
    }
  }
  if (has_extension(extensions, "cl_nv_device_attribute_query")) {
    cl_uint bus = 0, slot = 0, domain = 0;
    if (clGetDeviceInfo(d, CLG_CL_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == CL_SUCCESS &&
        clGetDeviceInfo(d, CLG_CL_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == CL_SUCCESS) {
      /* Older drivers lack the domain query: domain 0 then. */
      if (clGetDeviceInfo(d, CLG_CL_PCI_DOMAIN_ID_NV, sizeof domain, &domain, NULL) != CL_SUCCESS)
        domain = 0;
      snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain & 0xffffu, bus & 0xffu,
               (slot >> 3) & 0x1fu, slot & 0x7u);
      return clg_strdup(buf);
    }
  }
  if (has_extension(extensions, "cl_amd_device_attribute_query")) {
    clg_topology_amd topo;
    memset(&topo, 0, sizeof topo);
    if (clGetDeviceInfo(d, CLG_CL_TOPOLOGY_AMD, sizeof topo, &topo, NULL) == CL_SUCCESS &&
        topo.raw.type == CLG_CL_TOPOLOGY_TYPE_PCIE_AMD) {
      snprintf(buf, sizeof buf, "0000:%02x:%02x.%x", (unsigned)topo.pcie.bus & 0xffu,
               (unsigned)topo.pcie.device & 0x1fu, (unsigned)topo.pcie.function & 0x7u);
      return clg_strdup(buf);
    }
  }
  return clg_strdup("unknown");
}

static const char *cl_type_name(cl_device_type t)
{
  if (t & CL_DEVICE_TYPE_GPU)
    return "GPU";
  if (t & CL_DEVICE_TYPE_ACCELERATOR)
    return "ACCELERATOR";
  if (t & CL_DEVICE_TYPE_CPU)
    return "CPU";
  return "CUSTOM";
}

static cl_device_type cl_mask(unsigned types)
{
  cl_device_type m = 0;
  if (types & CLG_DEVTYPE_GPU)
    m |= CL_DEVICE_TYPE_GPU;
  if (types & CLG_DEVTYPE_ACCELERATOR)
    m |= CL_DEVICE_TYPE_ACCELERATOR;
  if (types & CLG_DEVTYPE_CPU)
    m |= CL_DEVICE_TYPE_CPU;
  return m;
}

/* With POCL_ENABLE_UNINIT=1, clUnloadPlatformCompiler frees PoCL's devices and compiler
 * once no context is left, which keeps leak checkers quiet (opencl-practice.md, 5). Two
 * PoCL 3.1 bugs shape when it is called: PoCL cannot start again afterwards (the next
 * clGetDeviceIDs crashes), so it waits for process exit; and the uninit crashes with more
 * than one pthread device, so a PoCL platform with several devices is left alone (the
 * suppression files in tests/ cover it). */
static bool unload_is_safe(cl_platform_id p)
{
  char name[256];
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, NULL) != CL_SUCCESS)
    return false;
  if (!strstr(name, "Portable Computing Language"))
    return true;
  cl_uint nd = 0;
  return clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS && nd <= 1;
}

static void unload_compilers_at_exit(void)
{
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0)
    return;
  cl_platform_id *ps = calloc(np, sizeof *ps);
  if (ps && clGetPlatformIDs(np, ps, NULL) == CL_SUCCESS)
    for (cl_uint p = 0; p < np; p++)
      if (unload_is_safe(ps[p]))
        clUnloadPlatformCompiler(ps[p]);
  free(ps);
}

static void register_unload(void)
{
  if (atexit(unload_compilers_at_exit) != 0)
    clg_log(CLG_LOG_WARNING, "could not register the OpenCL compiler unload at exit");
}

/* Every platform, then the devices of the chosen types in each platform's order. A platform
 * that fails to list its devices is skipped with a warning: one broken ICD must not hide the
 * others. */
static clg_code enumerate(clg_devices *devs, unsigned types, phys_device **out, int *n_out)
{
  *out = NULL;
  *n_out = 0;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == CLG_CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0))
    return CLG_OK; /* no OpenCL at all: the host alone */
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetPlatformIDs", " counting platforms");
  devs->cl->platforms = calloc(np, sizeof *devs->cl->platforms);
  if (!devs->cl->platforms)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory listing platforms");
  err = clGetPlatformIDs(np, devs->cl->platforms, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetPlatformIDs", " listing %u platforms", np);
  devs->num_platforms = (int)np;
  /* Registered after the ICD loader and the drivers set up, so it runs before their own
   * exit handlers. */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_unload);

  cl_device_type want = cl_mask(types);
  phys_device *list = NULL;
  int n = 0;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(devs->cl->platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && nd == 0))
      continue;
    if (err != CL_SUCCESS) {
      clg_log(CLG_LOG_WARNING, "OpenCL platform %u skipped: %s (%d) in clGetDeviceIDs", p,
              clg_cl_error_name(err), (int)err);
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    phys_device *grown = realloc(list, ((size_t)n + nd) * sizeof *list);
    if (!ids || !grown) {
      free(ids);
      free(grown ? grown : list);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory listing devices");
    }
    list = grown;
    err = clGetDeviceIDs(devs->cl->platforms[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
    if (err != CL_SUCCESS) {
      clg_log(CLG_LOG_WARNING, "OpenCL platform %u skipped: %s (%d) in clGetDeviceIDs", p,
              clg_cl_error_name(err), (int)err);
      free(ids);
      continue;
    }
    for (cl_uint i = 0; i < nd; i++) {
      cl_device_type t = 0;
      err = clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
      if (err != CL_SUCCESS) {
        /* One device that cannot describe itself must not hide the others. */
        clg_log(CLG_LOG_WARNING,
                "OpenCL device %u of platform %u skipped: %s (%d) in clGetDeviceInfo for "
                "CL_DEVICE_TYPE",
                i, p, clg_cl_error_name(err), (int)err);
        continue;
      }
      if (!(t & want))
        continue;
      list[n].platform_index = (int)p;
      list[n].id = ids[i];
      list[n].type = t;
      list[n].slice_bytes = 0;
      n++;
    }
    free(ids);
  }
  *out = list;
  *n_out = n;
  return CLG_OK;
}

/* --- CLGRAPH_VIRTUAL_DEVICES: physical GPUs split into parts ------------------------- */

/* Replaces each physical device by the parts CLGRAPH_VIRTUAL_DEVICES asks for, before the
 * visible list: the parts are then what the visible list, the session's virtual devices and
 * the device names count, so one GPU can play the four devices a multi-GPU program (or the
 * test suite) expects. Each part shares its device's cl_device_id, context and compiled
 * programs, and looks like a device with that much memory (global_mem, max_alloc), so every
 * memory mode works on it as on a card of that size. */
static clg_code split_physical(phys_device **list, int *n)
{
  const char *text = getenv("CLGRAPH_VIRTUAL_DEVICES");
  if (!text || !*text || *n == 0)
    return CLG_OK;
  int count = 0;
  uint64_t mib[CLG_MAX_VIRTUAL_PER_GPU];
  clg_code code = clg_device_split_parse(text, &count, mib);
  if (code != CLG_OK)
    return code;
  phys_device *parts = calloc((size_t)*n * (size_t)count, sizeof *parts);
  if (!parts)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory splitting devices");
  for (int d = 0; d < *n; d++) {
    const phys_device *ph = &(*list)[d];
    cl_ulong gmem = 0;
    cl_int err = clGetDeviceInfo(ph->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
    if (err != CL_SUCCESS) {
      free(parts);
      return clg_cl_error(err, "clGetDeviceInfo",
                          " for CL_DEVICE_GLOBAL_MEM_SIZE of physical GPU %d", d);
    }
    uint64_t total_mib = 0; /* at most 16 x 2^43: no overflow */
    for (int k = 0; k < count; k++) {
      uint64_t bytes = mib[k] ? mib[k] << 20 : (uint64_t)gmem / (uint64_t)count >> 20 << 20;
      total_mib += bytes >> 20;
      parts[d * count + k] = *ph;
      parts[d * count + k].slice_bytes = bytes;
      if (bytes == 0) {
        free(parts);
        return clg_error(CLG_INVALID_ARGUMENT,
                         "CLGRAPH_VIRTUAL_DEVICES='%s': physical GPU %d has %llu bytes, less "
                         "than 1 MiB per part",
                         text, d, (unsigned long long)gmem);
      }
    }
    if (total_mib > (uint64_t)gmem >> 20) {
      char name[256] = "";
      clGetDeviceInfo(ph->id, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
      free(parts);
      return clg_error(CLG_INVALID_ARGUMENT,
                       "CLGRAPH_VIRTUAL_DEVICES='%s' asks for %llu MiB of physical GPU %d (%s), "
                       "which has %llu MiB",
                       text, (unsigned long long)total_mib, d, name,
                       (unsigned long long)(gmem >> 20));
    }
  }
  free(*list);
  *list = parts;
  *n *= count;
  return CLG_OK;
}

/* --- building the set -------------------------------------------------------------- */

static clg_code fill_host(clg_device *d)
{
  clg_device_info *info = &d->info;
  d->is_host = true;
  d->context_index = -1;
  info->index = 0;
  info->type = "CPU";
  info->id = 0;
  info->cl_type = "host";
  info->name = clg_strdup("/device:CPU:0");
  info->full_name = clg_strdup("/job:localhost/replica:0/task:0/device:CPU:0");
  info->cl_name = clg_strdup("");
  info->cl_vendor = clg_strdup("");
  info->driver_version = clg_strdup("");
  info->cl_version = clg_strdup("");
  info->platform_name = clg_strdup("");
  info->pci_bus_id = clg_strdup("");
  if (!info->name || !info->full_name || !info->cl_name || !info->cl_vendor ||
      !info->driver_version || !info->cl_version || !info->platform_name || !info->pci_bus_id)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory describing /device:CPU:0");
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->compute_units = cpus > 0 ? (unsigned)cpus : 1;
  info->global_mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  info->max_alloc = info->global_mem;
  info->base_addr_align = 64;
  info->memory_limit = 0;
  info->physical_index = -1;
  info->has_fp64 = 1;
  info->has_fp16 = 0;
  return CLG_OK;
}

static clg_code fill_gpu(clg_device *d, const phys_device *ph, cl_platform_id platform,
                         int physical_index, int id)
{
  clg_device_info *info = &d->info;
  char buf[96];
  char *ext = NULL;
  cl_uint cu = 0, align_bits = 0;
  cl_ulong gmem = 0, maxalloc = 0;
  d->is_host = false;
  d->cl->platform = platform;
  d->cl->device = ph->id;
  info->type = "GPU";
  info->id = id;
  info->cl_type = cl_type_name(ph->type);
  info->physical_index = physical_index;
  snprintf(buf, sizeof buf, "/device:GPU:%d", id);
  info->name = clg_strdup(buf);
  snprintf(buf, sizeof buf, "%s/device:GPU:%d", full_prefix, id);
  info->full_name = clg_strdup(buf);
  if (!info->name || !info->full_name)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory naming /device:GPU:%d", id);

  char **strs[] = {(char **)&info->cl_name, (char **)&info->cl_vendor,
                   (char **)&info->driver_version, (char **)&info->cl_version, &ext};
  const cl_device_info params[] = {CL_DEVICE_NAME, CL_DEVICE_VENDOR, CL_DRIVER_VERSION,
                                   CL_DEVICE_VERSION, CL_DEVICE_EXTENSIONS};
  const char *pnames[] = {"CL_DEVICE_NAME", "CL_DEVICE_VENDOR", "CL_DRIVER_VERSION",
                          "CL_DEVICE_VERSION", "CL_DEVICE_EXTENSIONS"};
  clg_code code = CLG_OK;
  for (int i = 0; i < 5 && code == CLG_OK; i++)
    code = device_string(ph->id, params[i], pnames[i], strs[i]);
  if (code == CLG_OK)
    code = platform_string(platform, CL_PLATFORM_NAME, "CL_PLATFORM_NAME",
                           (char **)&info->platform_name);
  if (code == CLG_OK)
    code = device_scalar(ph->id, CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS", &cu,
                         sizeof cu);
  if (code == CLG_OK)
    code = device_scalar(ph->id, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE", &gmem,
                         sizeof gmem);
  if (code == CLG_OK)
    code = device_scalar(ph->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                         &maxalloc, sizeof maxalloc);
  if (code == CLG_OK)
    code = device_scalar(ph->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, "CL_DEVICE_MEM_BASE_ADDR_ALIGN",
                         &align_bits, sizeof align_bits);
  if (code != CLG_OK) {
    free(ext);
    return clg_error_prefix("describing /device:GPU:%d: ", id);
  }
  if (ph->slice_bytes && gmem > 0) {
    /* A part looks like a smaller card of the same kind: its memory, and the device's ratio
     * of max_alloc to memory (a quarter on PoCL and NVIDIA: 512 MiB of 2 GiB, as CI's
     * stand-ins have). Computed in MiB: bytes times bytes would overflow. */
    uint64_t part_mib = ph->slice_bytes >> 20, gmem_mib = gmem >> 20 ? gmem >> 20 : 1;
    uint64_t max_mib = (uint64_t)(((double)(maxalloc >> 20) * (double)part_mib) / (double)gmem_mib);
    maxalloc = max_mib ? max_mib << 20 : ph->slice_bytes;
    d->physical_mem = gmem;
    gmem = ph->slice_bytes;
  }
  info->compute_units = cu;
  info->global_mem = gmem;
  info->max_alloc = maxalloc;
  /* The query answers in bits; allocators want bytes (and never less than one). */
  info->base_addr_align = align_bits >= 8 ? align_bits / 8 : 1;
  cl_device_fp_config dbl = 0;
  if (clGetDeviceInfo(ph->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL) != CL_SUCCESS)
    dbl = 0;
  info->has_fp64 = has_extension(ext, "cl_khr_fp64") || dbl != 0;
  info->has_fp16 = has_extension(ext, "cl_khr_fp16");
  cl_uint cc = 0;
  if (has_extension(ext, "cl_nv_device_attribute_query") &&
      clGetDeviceInfo(ph->id, CLG_CL_COMPUTE_CAPABILITY_MAJOR_NV, sizeof cc, &cc, NULL) !=
          CL_SUCCESS)
    cc = 0;
  info->nv_cc_major = (int)cc;
  info->pci_bus_id = pci_bus_id(ph->id, ext);
  free(ext);
  if (!info->pci_bus_id)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory describing /device:GPU:%d", id);
  return CLG_OK;
}

/* One context per platform, holding that platform's visible devices. */
static clg_code create_contexts(clg_devices *devs)
{
  devs->cl->contexts = calloc((size_t)devs->num_platforms + 1, sizeof *devs->cl->contexts);
  cl_device_id *ids = calloc((size_t)devs->count + 1, sizeof *ids);
  if (!devs->cl->contexts || !ids) {
    free(ids);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating contexts");
  }
  for (int p = 0; p < devs->num_platforms; p++) {
    cl_uint n = 0;
    for (int i = 1; i < devs->count; i++) {
      clg_device *d = &devs->devs[i];
      if (d->cl->platform != devs->cl->platforms[p])
        continue;
      bool seen = false; /* virtual devices repeat their physical device */
      for (cl_uint k = 0; k < n; k++)
        seen = seen || ids[k] == d->cl->device;
      if (!seen)
        ids[n++] = d->cl->device;
      d->context_index = devs->num_contexts;
    }
    if (n == 0)
      continue;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)devs->cl->platforms[p], 0};
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(props, n, ids, NULL, NULL, &err);
    if (err != CL_SUCCESS || !ctx) {
      free(ids);
      return clg_cl_error(err, "clCreateContext", " for %u devices of OpenCL platform %d", n, p);
    }
    devs->cl->contexts[devs->num_contexts++] = ctx;
  }
  free(ids);
  for (int i = 1; i < devs->count; i++) {
    clg_device *d = &devs->devs[i];
    d->cl->context = devs->cl->contexts[d->context_index];
    cl_int err = CL_SUCCESS;
    d->cl->queue =
        clCreateCommandQueue(d->cl->context, d->cl->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS || !d->cl->queue) {
      d->cl->queue = NULL;
      return clg_cl_error(err, "clCreateCommandQueue", " for %s", d->info.name);
    }
  }
  return CLG_OK;
}

static clg_code devices_new(const clg_device_config *cfg, bool opencl, clg_devices **out);

/* --- OpenCL's start-up, begun early -------------------------------------------------- */

/* The first clGetPlatformIDs and clGetDeviceIDs of a process load every ICD and start its
 * drivers (PoCL: tens of milliseconds, for LLVM and its device threads); later calls answer from
 * what the loader and the drivers keep. warm_begin makes those first calls on a thread of their
 * own, so that they overlap the caller's work (a model's import); its answers are dropped and
 * the enumeration asks again, so the device set is the same as without it. */
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t warm_thread;
static bool warm_started; /* begun once per process (or the enumeration already ran) */
static bool warm_running; /* the thread is to be joined */

static void *warm_main(void *arg)
{
  (void)arg;
  /* A driver's start-up may give the thread that makes it an alternate signal stack of its
   * own (PoCL's LLVM does, for its crash handler); the thread puts back the one it had before
   * it ends, since the thread library (and AddressSanitizer, which unmaps its own) frees the
   * stack it knows when a thread exits. The driver keeps its memory. */
  stack_t own;
  bool restore = sigaltstack(NULL, &own) == 0;
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) == CL_SUCCESS && np > 0) {
    cl_platform_id *ps = calloc(np, sizeof *ps);
    if (ps && clGetPlatformIDs(np, ps, NULL) == CL_SUCCESS)
      for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        (void)clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
      }
    free(ps);
  }
  if (restore) /* own's flags say SS_DISABLE where it had none: then none again */
    (void)sigaltstack(&own, NULL);
  return NULL;
}

void clg_devices_warm_begin(void)
{
  pthread_mutex_lock(&warm_lock);
  if (!warm_started) {
    warm_started = true;
    warm_running = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
  }
  pthread_mutex_unlock(&warm_lock);
}

void clg_devices_warm_end(void)
{
  pthread_mutex_lock(&warm_lock);
  warm_started = true; /* the enumeration that follows does the start-up itself */
  if (warm_running) {
    pthread_join(warm_thread, NULL);
    warm_running = false;
  }
  pthread_mutex_unlock(&warm_lock);
}

clg_code clg_devices_new_host(clg_devices **out) { return devices_new(NULL, false, out); }

clg_code clg_devices_new(const clg_device_config *cfg, clg_devices **out)
{
  return devices_new(cfg, true, out);
}

/* opencl false: the host alone, and no OpenCL call at all (clg_devices_new_host). */
static clg_code devices_new(const clg_device_config *cfg, bool opencl, clg_devices **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_devices_new: out is NULL");
  *out = NULL;
  clg_device_config defaults;
  if (!cfg) {
    clg_device_config_init(&defaults);
    cfg = &defaults;
  }
  unsigned types;
  clg_code code = clg_device_types_resolve(cfg, &types);
  if (code != CLG_OK)
    return code;

  clg_devices *devs = calloc(1, sizeof *devs);
  if (devs && !(devs->cl = calloc(1, sizeof *devs->cl))) {
    free(devs);
    devs = NULL;
  }
  if (!devs)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating the device set");
  devs->types = types;
  devs->local_task = -1;
  phys_device *phys = NULL;
  int nphys = 0, *order = NULL, nvis = 0;
  if (opencl) {
    clg_devices_warm_end();
    code = enumerate(devs, types, &phys, &nphys);
  }
  if (code == CLG_OK)
    code = split_physical(&phys, &nphys);
  if (code != CLG_OK)
    goto fail;
  devs->num_physical = nphys;

  /* The API field wins over the environment. */
  const char *list = cfg->visible_device_list;
  if (!list || !*list)
    list = getenv("CLGRAPH_VISIBLE_DEVICES");
  bool list_given = opencl && list && *list; /* the host alone: no GPU to list */
  if (list_given) {
    code = clg_device_visible_parse(list, nphys, &order, &nvis);
    if (code != CLG_OK)
      goto fail;
  } else {
    order = malloc(((size_t)nphys + 1) * sizeof *order);
    if (!order) {
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory ordering devices");
      goto fail;
    }
    for (int i = 0; i < nphys; i++)
      order[i] = i;
    nvis = nphys;
  }
  code = clg_device_virtual_check(cfg, nvis, list_given);
  if (code != CLG_OK)
    goto fail;

  int total = 1;
  for (int v = 0; v < nvis; v++)
    total += cfg->num_virtual > 0 ? cfg->virtual_devices[v].count : 1;
  devs->devs = calloc((size_t)total, sizeof *devs->devs);
  devs->cl->devices = calloc((size_t)total, sizeof *devs->cl->devices);
  if (!devs->devs || !devs->cl->devices) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating %d devices", total);
    goto fail;
  }
  devs->count = total;
  code = fill_host(&devs->devs[0]);
  int next = 1;
  for (int v = 0; v < nvis && code == CLG_OK; v++) {
    const phys_device *ph = &phys[order[v]];
    int split = cfg->num_virtual > 0 ? cfg->virtual_devices[v].count : 1;
    for (int k = 0; k < split && code == CLG_OK; k++, next++) {
      clg_device *d = &devs->devs[next];
      d->info.index = next;
      d->cl = &devs->cl->devices[next];
      code = fill_gpu(d, ph, devs->cl->platforms[ph->platform_index], order[v], next - 1);
      if (cfg->num_virtual > 0)
        d->info.memory_limit = (uint64_t)cfg->virtual_devices[v].memory_limit_mb[k] << 20;
    }
  }
  if (code == CLG_OK)
    code = create_contexts(devs);
  if (code != CLG_OK)
    goto fail;
  devs->num_local = devs->count;
  free(phys);
  free(order);
  *out = devs;
  return CLG_OK;

fail:
  free(phys);
  free(order);
  clg_devices_free(devs);
  return code;
}

void clg_devices_free(clg_devices *devs)
{
  if (!devs)
    return;
  /* The memory module releases each device's allocator before the set goes. */
  for (int i = 0; i < devs->count; i++) {
    clg_device *d = &devs->devs[i];
    if (d->cl && d->cl->queue)
      clReleaseCommandQueue(d->cl->queue);
    clg_device_info *info = &d->info;
    free((char *)info->name);
    free((char *)info->full_name);
    free((char *)info->cl_name);
    free((char *)info->cl_vendor);
    free((char *)info->driver_version);
    free((char *)info->cl_version);
    free((char *)info->platform_name);
    free((char *)info->pci_bus_id);
  }
  for (int c = 0; c < devs->num_contexts; c++)
    clReleaseContext(devs->cl->contexts[c]);
  free(devs->devs);
  if (devs->cl) {
    free(devs->cl->contexts);
    free(devs->cl->platforms);
    free(devs->cl->devices);
    free(devs->cl);
  }
  free(devs);
}

int clg_devices_count(const clg_devices *devs) { return devs ? devs->count : 0; }

const clg_device_info *clg_devices_get(const clg_devices *devs, int i)
{
  if (!devs || i < 0 || i >= devs->count)
    return NULL;
  return &devs->devs[i].info;
}

clg_device *clg_devices_at(clg_devices *devs, int i)
{
  if (!devs || i < 0 || i >= devs->count)
    return NULL;
  return &devs->devs[i];
}

char *clg_devices_mapping_string(const clg_devices *devs)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  int gpus = 0;
  for (int i = 0; devs && i < devs->count; i++) {
    const clg_device_info *info = &devs->devs[i].info;
    if (devs->devs[i].is_host)
      continue;
    if (gpus++ == 0)
      clg_strbuf_append(&s, "Device mapping:\n");
    clg_strbuf_printf(&s, "%s -> device: %d, name: %s, pci bus id: %s\n", info->full_name,
                      info->physical_index, info->cl_name, info->pci_bus_id);
  }
  if (gpus == 0)
    clg_strbuf_append(&s, "Device mapping: no known devices.\n");
  char *r = clg_strbuf_take(&s);
  if (!r)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory formatting the device mapping");
  return r;
}

/* --- tasks (cluster) --------------------------------------------------------------- */

static char *task_full_name(int task, const clg_device_info *info)
{
  char buf[128];
  snprintf(buf, sizeof buf, "/job:worker/replica:0/task:%d/device:%s:%d", task, info->type,
           info->id);
  return clg_strdup(buf);
}

clg_code clg_devices_set_task(clg_devices *devs, int task)
{
  for (int i = 0; i < devs->num_local; i++) {
    clg_device_info *info = &devs->devs[i].info;
    char *name = task_full_name(task, info);
    if (!name)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory naming %s", info->name);
    free((char *)info->full_name);
    info->full_name = name;
    info->task = task;
  }
  devs->local_task = task;
  return CLG_OK;
}

clg_code clg_devices_add_remote(clg_devices *devs, const clg_device_info *info, bool opencl)
{
  clg_device *grown = realloc(devs->devs, sizeof *grown * (size_t)(devs->count + 1));
  if (!grown)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory adding a remote device");
  devs->devs = grown;
  clg_device *d = &devs->devs[devs->count];
  memset(d, 0, sizeof *d);
  d->remote = true;
  d->is_host = !opencl;
  d->context_index = -1;
  clg_device_info *di = &d->info;
  *di = *info;
  di->index = devs->count;
  di->type = strcmp(info->type, "CPU") == 0 ? "CPU" : "GPU";
  di->cl_type = opencl ? "remote" : "host";
  char local[64];
  snprintf(local, sizeof local, "/device:%s:%d", di->type, di->id);
  di->name = clg_strdup(local);
  di->full_name = task_full_name(info->task, di);
  di->cl_name = clg_strdup(info->cl_name ? info->cl_name : "");
  di->cl_vendor = clg_strdup(info->cl_vendor ? info->cl_vendor : "");
  di->driver_version = clg_strdup("");
  di->cl_version = clg_strdup("");
  di->platform_name = clg_strdup("");
  di->pci_bus_id = clg_strdup(info->pci_bus_id ? info->pci_bus_id : "unknown");
  devs->count++; /* counted now: clg_devices_free releases whatever was copied */
  if (!di->name || !di->full_name || !di->cl_name || !di->cl_vendor || !di->driver_version ||
      !di->cl_version || !di->platform_name || !di->pci_bus_id)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory adding a remote device");
  return CLG_OK;
}
