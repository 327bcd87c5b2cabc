/* The device registry on real OpenCL (PoCL): enumeration, contexts and queues, info fields,
 * the visible-device list, virtual devices, the types setting, names and errors.
 *
 * CLG_TEST_MODE says what the variant's environment provides; unset means "four", the
 * default test environment, so that running the binary by hand without PoCL fails. Under
 * CLGRAPH_VIRTUAL_DEVICES (the split4 variant, and the native mode of tests/CMakeLists.txt)
 * the GPUs are parts of fewer physical devices, and the checks against OpenCL's own answers
 * expect what a part reports. */
// ctest: four CLG_TEST_MODE=four
// ctest: one POCL_DEVICES=pthread CLG_TEST_MODE=one
// ctest: default_types CLGRAPH_DEVICE_TYPES= CLG_TEST_MODE=default_types
// ctest: no_platform OCL_ICD_VENDORS=@EMPTY_ICD@ CLG_TEST_MODE=no_platform
// ctest: split4 POCL_DEVICES=pthread POCL_MEMORY_LIMIT=4 CLGRAPH_VIRTUAL_DEVICES=4x1024
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/opencl/opencl.h"
#include "device/device.h"
#include "testutil.h"

static const char expected_types[] = "expected a comma list of gpu, accelerator, cpu, or all";

/* --- pieces that need no device ---------------------------------------------------- */

static void check_types_ok(const char *text, unsigned want)
{
  unsigned mask = 0;
  CHECK_OK(clg_device_types_parse(text, &mask));
  CHECK_MSG(mask == want, "types '%s' gave 0x%x, want 0x%x", text, mask, want);
}

static void check_types_bad(const char *text, const char *message)
{
  unsigned mask = 12345;
  CHECK_CODE(clg_device_types_parse(text, &mask), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), message);
  CHECK(mask == 12345); /* untouched on failure */
}

static void test_types_parser(void)
{
  check_types_ok("gpu", CLG_DEVTYPE_GPU);
  check_types_ok("accelerator", CLG_DEVTYPE_ACCELERATOR);
  check_types_ok("cpu", CLG_DEVTYPE_CPU);
  check_types_ok("all", CLG_DEVTYPE_ALL);
  check_types_ok("gpu,accelerator", CLG_DEVTYPE_DEFAULT);
  check_types_ok("gpu,cpu", CLG_DEVTYPE_GPU | CLG_DEVTYPE_CPU);
  check_types_ok("cpu,accelerator,gpu", CLG_DEVTYPE_ALL);
  check_types_ok("all,cpu", CLG_DEVTYPE_ALL);
  check_types_ok("gpu,gpu", CLG_DEVTYPE_GPU);

  char msg[256];
  snprintf(msg, sizeof msg, "unknown device type 'GPU' in 'GPU'; %s", expected_types);
  check_types_bad("GPU", msg);
  snprintf(msg, sizeof msg, "empty device type in 'gpu,,cpu'; %s", expected_types);
  check_types_bad("gpu,,cpu", msg);
  snprintf(msg, sizeof msg, "unknown device type ' gpu' in ' gpu'; %s", expected_types);
  check_types_bad(" gpu", msg);
  snprintf(msg, sizeof msg, "empty device type list ''; %s", expected_types);
  check_types_bad("", msg);
  snprintf(msg, sizeof msg, "unknown device type 'tpu' in 'tpu'; %s", expected_types);
  check_types_bad("tpu", msg);
  snprintf(msg, sizeof msg, "empty device type in 'gpu,'; %s", expected_types);
  check_types_bad("gpu,", msg);
  snprintf(msg, sizeof msg, "unknown device type 'All' in 'cpu,All'; %s", expected_types);
  check_types_bad("cpu,All", msg);

  unsigned mask;
  CHECK_CODE(clg_device_types_parse(NULL, &mask), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "text");
  CHECK_CODE(clg_device_types_parse("gpu", NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "mask");
}

static void test_cl_errors(void)
{
  CHECK_STR(clg_cl_error_name(CL_SUCCESS), "CL_SUCCESS");
  CHECK_STR(clg_cl_error_name(-1), "CL_DEVICE_NOT_FOUND");
  CHECK_STR(clg_cl_error_name(-5), "CL_OUT_OF_RESOURCES");
  CHECK_STR(clg_cl_error_name(-19), "CL_KERNEL_ARG_INFO_NOT_AVAILABLE");
  CHECK_STR(clg_cl_error_name(-30), "CL_INVALID_VALUE");
  CHECK_STR(clg_cl_error_name(-61), "CL_INVALID_BUFFER_SIZE");
  CHECK_STR(clg_cl_error_name(-68), "CL_INVALID_DEVICE_PARTITION_COUNT");
  CHECK_STR(clg_cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  CHECK_STR(clg_cl_error_name(-25), "CL_UNKNOWN_ERROR");
  CHECK_STR(clg_cl_error_name(7), "CL_UNKNOWN_ERROR");
  /* Every OpenCL 1.2 code has a name; the gap between them has none. */
  int named = 0;
  for (cl_int e = -1; e >= -68; e--) {
    bool unknown = strcmp(clg_cl_error_name(e), "CL_UNKNOWN_ERROR") == 0;
    bool in_gap = e <= -20 && e >= -29;
    CHECK_MSG(unknown == in_gap, "clg_cl_error_name(%d) = %s", (int)e, clg_cl_error_name(e));
    named += !unknown;
  }
  CHECK(named == 19 + 39);

  CHECK_CODE(clg_cl_error(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel", " for node '%s' on %s",
                          "MatMul", "/device:GPU:1"),
             CLG_RESOURCE_EXHAUSTED);
  CHECK_STR(
      clg_last_error(),
      "CL_OUT_OF_RESOURCES (-5) in clEnqueueNDRangeKernel for node 'MatMul' on /device:GPU:1");
  CHECK_CODE(clg_cl_error(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer", "%s", ""),
             CLG_RESOURCE_EXHAUSTED);
  CHECK_CODE(clg_cl_error(CL_OUT_OF_HOST_MEMORY, "clFinish", "%s", ""), CLG_RESOURCE_EXHAUSTED);
  CHECK_CODE(clg_cl_error(CL_INVALID_BUFFER_SIZE, "clCreateBuffer", " of %d bytes", 7),
             CLG_RESOURCE_EXHAUSTED);
  CHECK_STR(clg_last_error(), "CL_INVALID_BUFFER_SIZE (-61) in clCreateBuffer of 7 bytes");
  CHECK_CODE(clg_cl_error(CL_INVALID_CONTEXT, "clEnqueueCopyBuffer", NULL), CLG_INTERNAL);
  CHECK_STR(clg_last_error(), "CL_INVALID_CONTEXT (-34) in clEnqueueCopyBuffer");
}

/* --- helpers ------------------------------------------------------------------------ */

static clg_devices *open_devices(const clg_device_config *cfg)
{
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(cfg, &devs));
  return devs;
}

static void check_new_fails(const clg_device_config *cfg, const char *message)
{
  clg_devices *devs = (clg_devices *)1;
  CHECK_CODE(clg_devices_new(cfg, &devs), CLG_INVALID_ARGUMENT);
  CHECK(devs == NULL);
  CHECK_STR(clg_last_error(), message);
}

static void check_host(const clg_devices *devs)
{
  const clg_device_info *cpu = clg_devices_get(devs, 0);
  CHECK(cpu != NULL);
  if (!cpu)
    return;
  CHECK(cpu->index == 0);
  CHECK_STR(cpu->type, "CPU");
  CHECK(cpu->id == 0);
  CHECK_STR(cpu->name, "/device:CPU:0");
  CHECK_STR(cpu->full_name, "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK_STR(cpu->cl_type, "host");
  CHECK_STR(cpu->cl_name, "");
  CHECK(cpu->physical_index == -1);
  CHECK(cpu->compute_units == (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(cpu->global_mem == (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE));
  CHECK(cpu->global_mem > 0);
  CHECK(cpu->base_addr_align == 64);
  CHECK(cpu->has_fp64 == 1);
  CHECK(cpu->memory_limit == 0);
  const clg_device *d = clg_devices_at((clg_devices *)devs, 0);
  CHECK(d && d->is_host && d->cl == NULL && clg_cl_device_id(d) == NULL &&
        clg_cl_queue(d) == NULL && clg_cl_context(d) == NULL);
}

/* Counts OpenCL devices of the given type mask directly, bypassing the registry. */
static int count_cl_devices(cl_device_type type)
{
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0)
    return 0;
  cl_platform_id ps[16];
  if (np > 16)
    np = 16;
  clGetPlatformIDs(np, ps, NULL);
  int total = 0;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(ps[p], type, 0, NULL, &nd) == CL_SUCCESS)
      total += (int)nd;
  }
  return total;
}

static bool pci_id_well_formed(const char *s)
{
  if (strcmp(s, "unknown") == 0)
    return true;
  /* DDDD:BB:DD.F, lower-case hex */
  const char *shape = "xxxx:xx:xx.x";
  if (strlen(s) != strlen(shape))
    return false;
  for (size_t i = 0; shape[i]; i++) {
    if (shape[i] == 'x' ? !strchr("0123456789abcdef", s[i]) : s[i] != shape[i])
      return false;
  }
  return true;
}

/* The parts of each physical device (clg_test_parts) and the size of a part in MiB in the
 * "NxMiB" form (*mib 0: equal parts). */
static int env_parts(uint64_t *mib)
{
  const char *v = getenv("CLGRAPH_VIRTUAL_DEVICES");
  const char *x = v ? strchr(v, 'x') : NULL;
  *mib = x ? strtoull(x + 1, NULL, 10) : 0;
  return clg_test_parts();
}

/* How many distinct OpenCL devices the GPUs of devs are parts of. */
static int distinct_cl_devices(clg_devices *devs)
{
  int n = 0;
  for (int i = 1; i < clg_devices_count(devs); i++) {
    bool seen = false;
    for (int j = 1; j < i; j++)
      seen = seen ||
             clg_cl_device_id(clg_devices_at(devs, j)) == clg_cl_device_id(clg_devices_at(devs, i));
    n += !seen;
  }
  return n;
}

/* Checks one GPU against direct OpenCL queries. */
static void check_gpu_info(const clg_devices *devs, int index, int id, int physical)
{
  const clg_device_info *g = clg_devices_get(devs, index);
  const clg_device *d = clg_devices_at((clg_devices *)devs, index);
  CHECK(g != NULL && d != NULL);
  if (!g || !d)
    return;
  char want[96];
  CHECK(g->index == index);
  CHECK(g->id == id);
  CHECK_STR(g->type, "GPU");
  snprintf(want, sizeof want, "/device:GPU:%d", id);
  CHECK_STR(g->name, want);
  snprintf(want, sizeof want, "/job:localhost/replica:0/task:0/device:GPU:%d", id);
  CHECK_STR(g->full_name, want);
  CHECK(g->physical_index == physical);
  CHECK(!d->is_host && clg_cl_device_id(d) && clg_cl_context(d) && clg_cl_queue(d) &&
        clg_cl_platform(d));

  char name[256] = "", version[256] = "", ext[8192] = "";
  cl_ulong gmem = 0, maxalloc = 0;
  cl_uint cu = 0, align = 0;
  cl_device_type type = 0;
  CHECK(clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_NAME, sizeof name, name, NULL) ==
        CL_SUCCESS);
  CHECK(clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_VERSION, sizeof version, version, NULL) ==
        CL_SUCCESS);
  CHECK(clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL) ==
        CL_SUCCESS);
  clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
  clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc,
                  NULL);
  clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, NULL);
  clGetDeviceInfo(clg_cl_device_id(d), CL_DEVICE_TYPE, sizeof type, &type, NULL);
  CHECK_STR(g->cl_name, name);
  CHECK_STR(g->cl_version, version);
  CHECK(strncmp(g->cl_version, "OpenCL ", 7) == 0);
  CHECK(strlen(g->cl_vendor) > 0);
  CHECK(strlen(g->driver_version) > 0);
  CHECK(strlen(g->platform_name) > 0);
  uint64_t part_mib;
  int parts = env_parts(&part_mib);
  if (parts > 0) {
    /* A part: its share of the memory, and the device's ratio of max_alloc to memory. */
    uint64_t want_mem = part_mib ? part_mib << 20 : gmem / (uint64_t)parts >> 20 << 20;
    uint64_t want_max =
        (uint64_t)((double)(maxalloc >> 20) * (double)(want_mem >> 20) / (double)(gmem >> 20))
        << 20;
    CHECK_MSG(g->global_mem == want_mem, "%s: global_mem %llu, want %llu (a part of %llu)", g->name,
              (unsigned long long)g->global_mem, (unsigned long long)want_mem,
              (unsigned long long)gmem);
    CHECK_MSG(g->max_alloc == want_max, "%s: max_alloc %llu, want %llu", g->name,
              (unsigned long long)g->max_alloc, (unsigned long long)want_max);
    CHECK(d->physical_mem == gmem); /* the card's memory, for its share of the driver's */
  } else {
    CHECK(g->global_mem == gmem);
    CHECK(g->max_alloc == maxalloc);
    CHECK(d->physical_mem == 0);
  }
  CHECK(g->global_mem > 0 && g->max_alloc > 0 && g->max_alloc <= g->global_mem);
  CHECK(g->compute_units == cu && cu > 0);
  CHECK(g->base_addr_align == align / 8 && g->base_addr_align >= 128);
  CHECK(g->has_fp16 == (strstr(ext, "cl_khr_fp16") != NULL));
  if (strstr(ext, "cl_khr_fp64"))
    CHECK(g->has_fp64 == 1);
  CHECK(pci_id_well_formed(g->pci_bus_id));
  if (!strstr(ext, "pci_bus_info") && !strstr(ext, "cl_nv_device_attribute_query") &&
      !strstr(ext, "cl_amd_device_attribute_query"))
    CHECK_STR(g->pci_bus_id, "unknown");
  const char *want_type = (type & CL_DEVICE_TYPE_GPU)           ? "GPU"
                          : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "ACCELERATOR"
                                                                : "CPU";
  CHECK_STR(g->cl_type, want_type);

  /* The queue is in-order, profiled, and on this device and context. */
  cl_device_id qdev = NULL;
  cl_context qctx = NULL;
  cl_command_queue_properties props = 0;
  clGetCommandQueueInfo(clg_cl_queue(d), CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
  clGetCommandQueueInfo(clg_cl_queue(d), CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
  clGetCommandQueueInfo(clg_cl_queue(d), CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  CHECK(qdev == clg_cl_device_id(d));
  CHECK(qctx == clg_cl_context(d));
  CHECK((props & CL_QUEUE_PROFILING_ENABLE) != 0);
  CHECK((props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0);
  CHECK(d->context_index >= 0 && d->context_index < devs->num_contexts &&
        clg_cl_set_context(devs, d->context_index) == clg_cl_context(d));
}

static char *expected_mapping(const clg_devices *devs)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  int gpus = 0;
  for (int i = 1; i < clg_devices_count(devs); i++, gpus++) {
    const clg_device_info *g = clg_devices_get(devs, i);
    if (gpus == 0)
      clg_strbuf_append(&s, "Device mapping:\n");
    clg_strbuf_printf(&s,
                      "/job:localhost/replica:0/task:0/device:GPU:%d -> device: %d, name: %s, "
                      "pci bus id: %s\n",
                      g->id, g->physical_index, g->cl_name, g->pci_bus_id);
  }
  if (gpus == 0)
    clg_strbuf_append(&s, "Device mapping: no known devices.\n");
  return clg_strbuf_take(&s);
}

static void check_mapping(const clg_devices *devs)
{
  char *got = clg_devices_mapping_string(devs);
  char *want = expected_mapping(devs);
  CHECK_STR(got, want);
  free(got);
  free(want);
}

static void check_find(const clg_devices *devs, const char *name, int want_index)
{
  const clg_device_info *f = clg_devices_find(devs, name);
  if (want_index < 0)
    CHECK_MSG(f == NULL, "find('%s') gave %s, want none", name, f ? f->name : "");
  else
    CHECK_MSG(f == clg_devices_get(devs, want_index), "find('%s') gave %s, want index %d", name,
              f ? f->name : "NULL", want_index);
}

/* A buffer written on one device, copied on another's queue, read on a third: only works
 * when they share one context. */
static void check_shared_context_copy(clg_devices *devs, int a, int b, int c)
{
  clg_device *da = clg_devices_at(devs, a), *db = clg_devices_at(devs, b),
             *dc = clg_devices_at(devs, c);
  int src[256], dst[256];
  for (int i = 0; i < 256; i++)
    src[i] = i * 7 + 1, dst[i] = 0;
  cl_int err = 0;
  cl_mem x = clCreateBuffer(clg_cl_context(da), CL_MEM_READ_WRITE, sizeof src, NULL, &err);
  CHECK(err == CL_SUCCESS);
  cl_mem y = clCreateBuffer(clg_cl_context(da), CL_MEM_READ_WRITE, sizeof src, NULL, &err);
  CHECK(err == CL_SUCCESS);
  cl_event written, copied;
  CHECK(clEnqueueWriteBuffer(clg_cl_queue(da), x, CL_FALSE, 0, sizeof src, src, 0, NULL,
                             &written) == CL_SUCCESS);
  CHECK(clEnqueueCopyBuffer(clg_cl_queue(db), x, y, 0, 0, sizeof src, 1, &written, &copied) ==
        CL_SUCCESS);
  CHECK(clEnqueueReadBuffer(clg_cl_queue(dc), y, CL_TRUE, 0, sizeof dst, dst, 1, &copied, NULL) ==
        CL_SUCCESS);
  CHECK(memcmp(src, dst, sizeof src) == 0);
  clReleaseEvent(written);
  clReleaseEvent(copied);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
}

/* --- the four-device environment ----------------------------------------------------- */

static void test_four(void)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = open_devices(&cfg);
  CHECK_MSG(clg_devices_count(devs) == 5,
            "want CPU:0 + GPU:0..3 (PoCL with POCL_DEVICES=\"pthread pthread pthread pthread\" "
            "and CLGRAPH_DEVICE_TYPES=all), found %d devices",
            clg_devices_count(devs));
  if (clg_devices_count(devs) != 5) {
    clg_devices_free(devs);
    return;
  }
  check_host(devs);
  for (int i = 1; i <= 4; i++)
    check_gpu_info(devs, i, i - 1, i - 1);
  CHECK(devs->num_contexts == 1);
  CHECK(devs->num_physical == 4);
  CHECK(devs->types == CLG_DEVTYPE_ALL);
  /* Parts of one physical device (CLGRAPH_VIRTUAL_DEVICES) share its cl_device_id; whole
   * devices are distinct. */
  uint64_t part_mib;
  int parts = env_parts(&part_mib);
  int per = parts > 0 ? parts : 1;
  for (int i = 1; i <= 4; i++) {
    clg_device *d = clg_devices_at(devs, i);
    CHECK(clg_cl_context(d) == clg_cl_set_context(devs, 0) && d->context_index == 0);
    for (int j = 1; j < i; j++) {
      CHECK(clg_cl_queue(d) != clg_cl_queue(clg_devices_at(devs, j)));
      bool same_physical = (i - 1) / per == (j - 1) / per;
      CHECK((clg_cl_device_id(d) == clg_cl_device_id(clg_devices_at(devs, j))) == same_physical);
    }
  }
  CHECK(distinct_cl_devices(devs) == (4 + per - 1) / per);
  cl_uint nctx = 0;
  clGetContextInfo(clg_cl_set_context(devs, 0), CL_CONTEXT_NUM_DEVICES, sizeof nctx, &nctx, NULL);
  CHECK((int)nctx == distinct_cl_devices(devs));
  check_mapping(devs);
  char *m = clg_devices_mapping_string(devs);
  CHECK(m && strncmp(m,
                     "Device mapping:\n/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, "
                     "name: ",
                     strlen("Device mapping:\n/job:localhost/replica:0/task:0/device:GPU:0 -> "
                            "device: 0, name: ")) == 0);
  free(m);
  check_shared_context_copy(devs, 1, 3, 4);

  /* Every spelling of a name. */
  check_find(devs, "/cpu:0", 0);
  check_find(devs, "/device:CPU:0", 0);
  check_find(devs, "/job:localhost/replica:0/task:0/device:CPU:0", 0);
  check_find(devs, "/job:localhost/replica:0/task:0/cpu:0", 0);
  check_find(devs, "/gpu:1", 2);
  check_find(devs, "/device:GPU:1", 2);
  check_find(devs, "/device:gpu:1", 2);
  check_find(devs, "/job:localhost/replica:0/task:0/device:GPU:1", 2);
  check_find(devs, "/job:localhost/replica:0/task:0/gpu:1", 2);
  check_find(devs, "/job:localhost/device:GPU:3", 4);
  check_find(devs, "/device:GPU:0", 1);
  check_find(devs, "/gpu:4", -1);
  check_find(devs, "/cpu:1", -1);
  check_find(devs, "/device:GPU:*", -1);
  check_find(devs, "/device:GPU", -1);
  check_find(devs, "/job:worker/device:GPU:0", -1);
  check_find(devs, "/job:localhost/replica:1/task:0/device:GPU:0", -1);
  check_find(devs, "/device:TPU:0", -1);
  check_find(devs, "not a device", -1);
  check_find(devs, "", -1);
  CHECK(clg_devices_find(devs, NULL) == NULL);
  CHECK(clg_devices_find(NULL, "/cpu:0") == NULL);
  CHECK(clg_devices_get(devs, -1) == NULL);
  CHECK(clg_devices_get(devs, 5) == NULL);
  CHECK(clg_devices_at(devs, 5) == NULL);

  /* Keep the physical ids to compare the reordered sets against. */
  cl_device_id phys[4];
  for (int i = 0; i < 4; i++)
    phys[i] = clg_cl_device_id(clg_devices_at(devs, i + 1));
  clg_devices_free(devs);

  /* Selection. */
  cfg.visible_device_list = "2";
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 2);
  if (clg_devices_count(devs) == 2) {
    check_host(devs);
    check_gpu_info(devs, 1, 0, 2);
    CHECK(clg_cl_device_id(clg_devices_at(devs, 1)) == phys[2]);
    check_mapping(devs);
    check_find(devs, "/gpu:0", 1);
    check_find(devs, "/gpu:1", -1);
  }
  clg_devices_free(devs);

  /* Reordering: physical 3 becomes GPU:0, physical 1 GPU:1. */
  cfg.visible_device_list = "3,1";
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    check_gpu_info(devs, 1, 0, 3);
    check_gpu_info(devs, 2, 1, 1);
    CHECK(clg_cl_device_id(clg_devices_at(devs, 1)) == phys[3]);
    CHECK(clg_cl_device_id(clg_devices_at(devs, 2)) == phys[1]);
    CHECK(devs->num_contexts == 1);
    cl_uint n = 0;
    clGetContextInfo(clg_cl_set_context(devs, 0), CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL);
    CHECK((int)n == distinct_cl_devices(devs));
    CHECK(n == (3 / per == 1 / per ? 1u : 2u)); /* physical 3 and 1: parts of one device? */
    char *got = clg_devices_mapping_string(devs);
    char want[1024];
    const clg_device_info *g0 = clg_devices_get(devs, 1), *g1 = clg_devices_get(devs, 2);
    snprintf(
        want, sizeof want,
        "Device mapping:\n"
        "/job:localhost/replica:0/task:0/device:GPU:0 -> device: 3, name: %s, pci bus id: %s\n"
        "/job:localhost/replica:0/task:0/device:GPU:1 -> device: 1, name: %s, pci bus id: %s\n",
        g0->cl_name, g0->pci_bus_id, g1->cl_name, g1->pci_bus_id);
    CHECK_STR(got, want);
    free(got);
    check_shared_context_copy(devs, 2, 1, 2);
  }
  clg_devices_free(devs);

  /* absl::SimpleAtoi accepts surrounding spaces and a sign. */
  cfg.visible_device_list = " 1 ,+0";
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    CHECK(clg_devices_get(devs, 1)->physical_index == 1);
    CHECK(clg_devices_get(devs, 2)->physical_index == 0);
  }
  clg_devices_free(devs);

  /* TensorFlow's error texts. */
  cfg.visible_device_list = "a";
  check_new_fails(&cfg, "Could not parse entry in 'visible_device_list': 'a'. "
                        "visible_device_list = a");
  cfg.visible_device_list = "0,,1";
  check_new_fails(&cfg, "Could not parse entry in 'visible_device_list': ''. "
                        "visible_device_list = 0,,1");
  cfg.visible_device_list = "1,2x";
  check_new_fails(&cfg, "Could not parse entry in 'visible_device_list': '2x'. "
                        "visible_device_list = 1,2x");
  cfg.visible_device_list = "99999999999";
  check_new_fails(&cfg, "Could not parse entry in 'visible_device_list': '99999999999'. "
                        "visible_device_list = 99999999999");
  cfg.visible_device_list = "0,4";
  check_new_fails(&cfg,
                  "'visible_device_list' listed an invalid Device id '4' but visible device count "
                  "is 4");
  cfg.visible_device_list = "-1";
  check_new_fails(&cfg, "'visible_device_list' listed an invalid Device id '-1' but visible device "
                        "count is 4");
  cfg.visible_device_list = "1,0,1";
  check_new_fails(&cfg, "visible_device_list contained a duplicate entry: 1,0,1");

  /* The environment variable, and the API field winning over it. */
  cfg.visible_device_list = NULL;
  setenv("CLGRAPH_VISIBLE_DEVICES", "2,0", 1);
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    CHECK(clg_devices_get(devs, 1)->physical_index == 2);
    CHECK(clg_devices_get(devs, 2)->physical_index == 0);
  }
  clg_devices_free(devs);
  cfg.visible_device_list = "1";
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 2);
  if (clg_devices_count(devs) == 2)
    CHECK(clg_devices_get(devs, 1)->physical_index == 1);
  clg_devices_free(devs);
  cfg.visible_device_list = NULL;
  setenv("CLGRAPH_VISIBLE_DEVICES", "7", 1);
  check_new_fails(&cfg, "'visible_device_list' listed an invalid Device id '7' but visible device "
                        "count is 4");
  unsetenv("CLGRAPH_VISIBLE_DEVICES");

  /* Virtual devices: GPU 0 split into two 256 MiB GPUs. */
  clg_virtual_devices vd[5];
  memset(vd, 0, sizeof vd);
  vd[0].count = 2;
  vd[0].memory_limit_mb[0] = 256;
  vd[0].memory_limit_mb[1] = 256;
  cfg.visible_device_list = "0";
  cfg.num_virtual = 1;
  cfg.virtual_devices = vd;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    check_gpu_info(devs, 1, 0, 0);
    check_gpu_info(devs, 2, 1, 0);
    clg_device *a = clg_devices_at(devs, 1), *b = clg_devices_at(devs, 2);
    CHECK(clg_cl_device_id(a) == clg_cl_device_id(b) && clg_cl_device_id(a) == phys[0]);
    CHECK(clg_cl_context(a) == clg_cl_context(b) && a->context_index == b->context_index);
    CHECK(clg_cl_queue(a) != clg_cl_queue(b));
    CHECK(a->info.memory_limit == 256ull << 20);
    CHECK(b->info.memory_limit == 256ull << 20);
    cl_uint n = 0;
    clGetContextInfo(clg_cl_set_context(devs, 0), CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL);
    CHECK(n == 1);
    check_mapping(devs);
    char *m2 = clg_devices_mapping_string(devs);
    CHECK_CONTAINS(m2, "device:GPU:1 -> device: 0, name: ");
    free(m2);
    check_shared_context_copy(devs, 1, 2, 1);
  }
  clg_devices_free(devs);

  /* Without a list, one entry per GPU: {2, 1, 1, 1} gives five GPUs; fractions of a MiB are
   * dropped as TensorFlow does. */
  vd[0].memory_limit_mb[1] = 100.75;
  for (int i = 1; i < 4; i++) {
    vd[i].count = 1;
    vd[i].memory_limit_mb[0] = 64 * i;
  }
  cfg.visible_device_list = NULL;
  cfg.num_virtual = 4;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 6);
  if (clg_devices_count(devs) == 6) {
    const int want_phys[] = {0, 0, 1, 2, 3};
    const uint64_t want_limit[] = {256ull << 20, 100ull << 20, 64ull << 20, 128ull << 20,
                                   192ull << 20};
    for (int i = 0; i < 5; i++) {
      check_gpu_info(devs, i + 1, i, want_phys[i]);
      CHECK(clg_devices_get(devs, i + 1)->memory_limit == want_limit[i]);
    }
  }
  clg_devices_free(devs);

  /* Virtual device errors. */
  cfg.visible_device_list = "0,1";
  cfg.num_virtual = 1;
  check_new_fails(&cfg, "The number of GPUs in visible_device_list doesn't match the number of "
                        "elements in the virtual_devices list.");
  cfg.visible_device_list = NULL;
  cfg.num_virtual = 5;
  vd[4].count = 1;
  vd[4].memory_limit_mb[0] = 1;
  check_new_fails(
      &cfg, "Not enough GPUs to create virtual devices. num_gpus_to_use: 4 #virtual_devices: 5");
  cfg.visible_device_list = "0";
  cfg.num_virtual = 1;
  vd[0].count = 0;
  check_new_fails(&cfg, "clg_device_config.virtual_devices[0].count = 0; expected 1 to 16");
  vd[0].count = 17;
  check_new_fails(&cfg, "clg_device_config.virtual_devices[0].count = 17; expected 1 to 16");
  vd[0].count = 2;
  vd[0].memory_limit_mb[1] = 0;
  check_new_fails(&cfg, "clg_device_config.virtual_devices[0].memory_limit_mb[1] = 0; expected a "
                        "positive memory limit of at least 1 MiB");
  vd[0].memory_limit_mb[1] = -5;
  check_new_fails(&cfg, "clg_device_config.virtual_devices[0].memory_limit_mb[1] = -5; expected a "
                        "positive memory limit of at least 1 MiB");
  vd[0].memory_limit_mb[1] = NAN;
  CHECK_CODE(clg_devices_new(&cfg, &devs), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "memory_limit_mb[1]");
  vd[0].memory_limit_mb[1] = 256;
  cfg.virtual_devices = NULL;
  check_new_fails(&cfg, "clg_device_config.virtual_devices is NULL but num_virtual = 1");
  cfg.virtual_devices = vd;
  cfg.num_virtual = -1;
  check_new_fails(&cfg, "clg_device_config.num_virtual = -1; expected 0 or the number of visible "
                        "GPUs (1)");
  clg_device_config_init(&cfg);

  /* Types: the API field, the environment, and the field winning over the environment. */
  char msg[256];
  setenv("CLGRAPH_DEVICE_TYPES", "gpu,GPU ", 1);
  snprintf(msg, sizeof msg, "CLGRAPH_DEVICE_TYPES: unknown device type 'GPU ' in 'gpu,GPU '; %s",
           expected_types);
  check_new_fails(&cfg, msg);
  cfg.types = CLG_DEVTYPE_CPU;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 5);
  clg_devices_free(devs);
  setenv("CLGRAPH_DEVICE_TYPES", "cpu", 1);
  cfg.types = CLG_DEVTYPE_GPU;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 1 + count_cl_devices(CL_DEVICE_TYPE_GPU));
  clg_devices_free(devs);
  cfg.types = 0;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 5);
  clg_devices_free(devs);
  cfg.types = 8;
  check_new_fails(&cfg, "clg_device_config.types = 0x8 has unknown bits; expected CLG_DEVTYPE_* "
                        "flags (at most 0x7)");
  setenv("CLGRAPH_DEVICE_TYPES", "all", 1);

  /* A NULL configuration means the defaults; a NULL out is refused. */
  devs = open_devices(NULL);
  CHECK(clg_devices_count(devs) == 5);
  clg_devices_free(devs);
  CHECK_CODE(clg_devices_new(NULL, NULL), CLG_INVALID_ARGUMENT);
  clg_devices_free(NULL);
  CHECK(clg_devices_count(NULL) == 0);
  CHECK(clg_devices_get(NULL, 0) == NULL);
}

/* --- the other environments ---------------------------------------------------------- */

/* CLGRAPH_VIRTUAL_DEVICES on the four stand-ins (2 GiB, 512 MiB max_alloc each): the parts
 * come before the visible list and the session's virtual devices, and look like smaller
 * devices of the same kind. */
static void test_split(void)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  cl_device_id phys[4];
  clg_devices *devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 5);
  for (int i = 0; i < 4 && clg_devices_count(devs) == 5; i++)
    phys[i] = clg_cl_device_id(clg_devices_at(devs, i + 1));
  uint64_t gmem = clg_devices_get(devs, 1)->global_mem;
  clg_devices_free(devs);

  /* Two equal parts of each: eight GPUs, a pair per cl_device, one context of four. */
  setenv("CLGRAPH_VIRTUAL_DEVICES", "2", 1);
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 9);
  if (clg_devices_count(devs) == 9) {
    for (int i = 1; i <= 8; i++) {
      check_gpu_info(devs, i, i - 1, i - 1);
      CHECK(clg_cl_device_id(clg_devices_at(devs, i)) == phys[(i - 1) / 2]);
      CHECK(clg_devices_get(devs, i)->global_mem == gmem / 2);
      CHECK(clg_devices_get(devs, i)->max_alloc == 256ull << 20);
      CHECK(clg_devices_get(devs, i)->memory_limit == 0);
    }
    CHECK(devs->num_physical == 8 && devs->num_contexts == 1);
    cl_uint n = 0;
    clGetContextInfo(clg_cl_set_context(devs, 0), CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL);
    CHECK(n == 4);
    check_mapping(devs);
    check_shared_context_copy(devs, 1, 2, 8);
  }
  clg_devices_free(devs);

  /* Parts of given sizes; the visible list picks parts, the session's virtual devices split
   * them further. */
  setenv("CLGRAPH_VIRTUAL_DEVICES", "1024,512", 1);
  cfg.visible_device_list = "3,0";
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    CHECK(clg_devices_get(devs, 1)->physical_index == 3);
    CHECK(clg_devices_get(devs, 2)->physical_index == 0);
    CHECK(clg_devices_get(devs, 1)->global_mem == 512ull << 20);
    CHECK(clg_devices_get(devs, 1)->max_alloc == 128ull << 20);
    CHECK(clg_devices_get(devs, 2)->global_mem == 1024ull << 20);
    CHECK(clg_cl_device_id(clg_devices_at(devs, 1)) == phys[1]);
    CHECK(clg_cl_device_id(clg_devices_at(devs, 2)) == phys[0]);
  }
  clg_devices_free(devs);
  setenv("CLGRAPH_VIRTUAL_DEVICES", "4x256", 1);
  clg_virtual_devices vd = {.count = 2, .memory_limit_mb = {100, 50}};
  cfg.visible_device_list = "5";
  cfg.num_virtual = 1;
  cfg.virtual_devices = &vd;
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 3);
  if (clg_devices_count(devs) == 3) {
    for (int i = 1; i <= 2; i++) {
      CHECK(clg_devices_get(devs, i)->physical_index == 5);
      CHECK(clg_devices_get(devs, i)->global_mem == 256ull << 20);
      CHECK(clg_cl_device_id(clg_devices_at(devs, i)) == phys[1]);
    }
    CHECK(clg_devices_get(devs, 1)->memory_limit == 100ull << 20);
    CHECK(clg_devices_get(devs, 2)->memory_limit == 50ull << 20);
  }
  clg_devices_free(devs);
  clg_device_config_init(&cfg);

  /* More than the device has, and bad syntax: INVALID_ARGUMENT naming the variable. */
  char want[512];
  setenv("CLGRAPH_VIRTUAL_DEVICES", "3x1024", 1);
  devs = (clg_devices *)1;
  CHECK_CODE(clg_devices_new(&cfg, &devs), CLG_INVALID_ARGUMENT);
  CHECK(devs == NULL);
  CHECK_CONTAINS(clg_last_error(), "CLGRAPH_VIRTUAL_DEVICES='3x1024' asks for 3072 MiB of "
                                   "physical GPU 0 (pthread-");
  CHECK_CONTAINS(clg_last_error(), "), which has 2048 MiB");
  const char *bad[] = {"0",
                       "17",
                       "4x",
                       "x4",
                       "4x0",
                       "a",
                       "1,,2",
                       "4X2",
                       "2x1x1",
                       "-1",
                       "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("CLGRAPH_VIRTUAL_DEVICES", bad[i], 1);
    snprintf(want, sizeof want,
             "CLGRAPH_VIRTUAL_DEVICES='%s': expected N (N equal parts of each GPU), NxMiB (N "
             "parts of MiB each) or a comma list of MiB, with 1 to 16 parts",
             bad[i]);
    check_new_fails(&cfg, want);
  }
  /* Unset or empty: whole devices. */
  setenv("CLGRAPH_VIRTUAL_DEVICES", "", 1);
  devs = open_devices(&cfg);
  CHECK(clg_devices_count(devs) == 5);
  clg_devices_free(devs);
  unsetenv("CLGRAPH_VIRTUAL_DEVICES");
}

static void test_one(void)
{
  clg_devices *devs = open_devices(NULL);
  CHECK_MSG(clg_devices_count(devs) == 2, "want CPU:0 + GPU:0 with POCL_DEVICES=pthread, found %d",
            clg_devices_count(devs));
  if (clg_devices_count(devs) == 2) {
    check_host(devs);
    check_gpu_info(devs, 1, 0, 0);
    CHECK(devs->num_contexts == 1);
    check_mapping(devs);
    check_find(devs, "/gpu:0", 1);
    check_find(devs, "/gpu:1", -1);
  }
  clg_devices_free(devs);
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  cfg.visible_device_list = "0,1";
  check_new_fails(&cfg, "'visible_device_list' listed an invalid Device id '1' but visible device "
                        "count is 1");
}

/* Expects CPU:0 and exactly `gpus` GPUs, with the mapping text to match. */
static void check_host_only(int gpus)
{
  clg_devices *devs = open_devices(NULL);
  CHECK_MSG(clg_devices_count(devs) == 1 + gpus, "want %d devices, found %d", 1 + gpus,
            clg_devices_count(devs));
  check_host(devs);
  if (gpus == 0) {
    char *m = clg_devices_mapping_string(devs);
    CHECK_STR(m, "Device mapping: no known devices.\n");
    free(m);
    CHECK(devs->num_contexts == 0);
  } else {
    check_mapping(devs);
  }
  clg_devices_free(devs);
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  if (gpus == 0) {
    cfg.visible_device_list = "0";
    check_new_fails(&cfg, "'visible_device_list' listed an invalid Device id '0' but visible "
                          "device count is 0");
    clg_virtual_devices vd = {.count = 2, .memory_limit_mb = {64, 64}};
    cfg.visible_device_list = NULL;
    cfg.num_virtual = 1;
    cfg.virtual_devices = &vd;
    check_new_fails(&cfg, "Not enough GPUs to create virtual devices. num_gpus_to_use: 0 "
                          "#virtual_devices: 1");
  }
}

static void test_default_types(void)
{
  /* gpu,accelerator: PoCL's CPU devices do not count; on a machine without a GPU that leaves
   * the host alone. */
  const char *env = getenv("CLGRAPH_DEVICE_TYPES");
  CHECK(env != NULL && *env == '\0');
  uint64_t part_mib;
  int parts = env_parts(&part_mib);
  int gpus = count_cl_devices(CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR);
  check_host_only(gpus * (parts > 0 ? parts : 1));
  /* PoCL is there but stays out (the native mode needs no PoCL). */
  const char *platform = getenv("CLG_TEST_PLATFORM");
  if (!platform || strcmp(platform, "native") != 0)
    CHECK(count_cl_devices(CL_DEVICE_TYPE_CPU) >= 1);
}

static void test_no_platform(void)
{
  cl_uint np = 99;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  CHECK_MSG(err == -1001 || (err == CL_SUCCESS && np == 0), "clGetPlatformIDs gave %d, %u", err,
            np);
  check_host_only(0);
}

int main(void)
{
  test_types_parser();
  test_cl_errors();
  const char *mode = getenv("CLG_TEST_MODE");
  uint64_t part_mib;
  if (!mode || strcmp(mode, "four") == 0) {
    test_four();
    if (env_parts(&part_mib) == 0) /* the stand-ins whole: split them here */
      test_split();
  } else if (strcmp(mode, "one") == 0)
    test_one();
  else if (strcmp(mode, "default_types") == 0)
    test_default_types();
  else if (strcmp(mode, "no_platform") == 0)
    test_no_platform();
  else
    CHECK_MSG(false, "unknown CLG_TEST_MODE '%s'", mode);
  return clg_test_summary("test_devices");
}
