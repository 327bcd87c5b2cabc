/* The per-device allocator on PoCL devices standing in as GPUs: every memory option,
 * running out and recovering, two threads at once, reuse after a pending event, garbage
 * collection, the host allocator, the dumps and exact statistics.
 *
 * Most cases use small limits (virtual devices of a few MiB) because the default mode
 * touches its whole limit; one case reserves 30% of a device (two regions) for real. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/opencl/opencl.h"
#include "core/core.h"
#include "device/device.h"
#include "memory/memory.h"
#include "testutil.h"

#define MiB (1024u * 1024u)

/* --- failure injection: this executable's clCreateBuffer and clEnqueueFillBuffer come
 * first; they fail while the counters are positive and otherwise call the real ones. --- */

static int fail_creates, fail_fills, creates_seen, fills_seen;

static void *real_symbol(const char *name)
{
  void *sym = dlsym(RTLD_NEXT, name);
  CHECK_MSG(sym != NULL, "dlsym(RTLD_NEXT, %s) failed", name);
  return sym;
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
                                               void *host_ptr, cl_int *errcode_ret)
{
  static cl_mem (*real)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  if (!real) {
    void *sym = real_symbol("clCreateBuffer");
    memcpy(&real, &sym, sizeof real);
  }
  creates_seen++;
  if (fail_creates > 0) {
    fail_creates--;
    if (errcode_ret)
      *errcode_ret = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return NULL;
  }
  return real(context, flags, size, host_ptr, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer,
                                                    const void *pattern, size_t pattern_size,
                                                    size_t offset, size_t size, cl_uint num_events,
                                                    const cl_event *wait_list, cl_event *event)
{
  static cl_int (*real)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint,
                        const cl_event *, cl_event *);
  if (!real) {
    void *sym = real_symbol("clEnqueueFillBuffer");
    memcpy(&real, &sym, sizeof real);
  }
  fills_seen++;
  if (fail_fills > 0) {
    fail_fills--;
    return CL_OUT_OF_RESOURCES;
  }
  return real(queue, buffer, pattern, pattern_size, offset, size, num_events, wait_list, event);
}

static cl_uint context_refs(cl_context c)
{
  cl_uint n = 0;
  clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL);
  return n;
}

/* A device set: visible GPU 0 split into virtual GPUs with these limits (MiB); none if
 * n == 0 (then all four devices, whole memory). */
static clg_devices *open_devices(int n, const double *limits_mb)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_virtual_devices v = {0};
  if (n) {
    cfg.visible_device_list = "0";
    v.count = n;
    for (int i = 0; i < n; i++)
      v.memory_limit_mb[i] = limits_mb[i];
    cfg.num_virtual = 1;
    cfg.virtual_devices = &v;
  }
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(&cfg, &devs));
  return devs;
}

static clg_allocator *make(clg_device *dev, int growth, double fraction, uint64_t host_limit)
{
  clg_memory_options o = {.allow_growth = growth,
                          .per_process_gpu_memory_fraction = fraction,
                          .host_limit = host_limit};
  clg_allocator *a = NULL;
  CHECK_OK(clg_allocator_new(dev, &o, &a));
  return a;
}

static clg_memory_stats stats(clg_allocator *a)
{
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  return st;
}

static void write_block(clg_device *dev, const clg_block *b, unsigned char value)
{
  unsigned char *buf = malloc(b->size);
  memset(buf, value, b->size);
  CHECK(clEnqueueWriteBuffer(clg_cl_queue(dev), b->mem, CL_TRUE, b->offset, b->size, buf, 0, NULL,
                             NULL) == CL_SUCCESS);
  free(buf);
}

static bool block_holds(clg_device *dev, const clg_block *b, unsigned char value)
{
  unsigned char *buf = malloc(b->size);
  bool ok = clEnqueueReadBuffer(clg_cl_queue(dev), b->mem, CL_TRUE, b->offset, b->size, buf, 0,
                                NULL, NULL) == CL_SUCCESS;
  for (size_t i = 0; ok && i < b->size; i++)
    ok = buf[i] == value;
  free(buf);
  return ok;
}

/* Counts how many region objects a JSON dump lists. */
static int json_regions(const char *json)
{
  int n = 0;
  for (const char *p = json; (p = strstr(p, "{\"id\":")); p++)
    n++;
  return n;
}

static bool json_balanced(const char *json)
{
  int depth = 0;
  bool in_str = false;
  for (const char *p = json; *p; p++) {
    if (in_str) {
      if (*p == '\\')
        p++;
      else if (*p == '"')
        in_str = false;
    } else if (*p == '"') {
      in_str = true;
    } else if (*p == '{' || *p == '[') {
      depth++;
    } else if (*p == '}' || *p == ']') {
      if (--depth < 0)
        return false;
    }
  }
  return depth == 0 && !in_str;
}

static void test_arguments(clg_devices *devs)
{
  clg_device *gpu = clg_devices_at(devs, 1);
  clg_allocator *a = (clg_allocator *)1;
  double bad[] = {-0.1, 1.5, NAN};
  for (int i = 0; i < 3; i++) {
    clg_memory_options o = {.per_process_gpu_memory_fraction = bad[i]};
    CHECK_CODE(clg_allocator_new(gpu, &o, &a), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "per_process_gpu_memory_fraction");
    CHECK(a == NULL);
  }
  clg_memory_options above_one = {.per_process_gpu_memory_fraction = nextafter(1.0, 2.0)};
  CHECK_CODE(clg_allocator_new(gpu, &above_one, &a), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "per_process_gpu_memory_fraction = 1.0000000000000002 is out");
  char text[CLG_DOUBLE_TEXT];
  CHECK_STR(clg_double_text(0.4, text), "0.4");
  CHECK_STR(clg_double_text(0.1 + 0.2, text), "0.30000000000000004");
  CHECK_STR(clg_double_text(NAN, text), "nan");
  CHECK_CODE(clg_allocator_new(NULL, NULL, &a), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_allocator_new(gpu, NULL, NULL), CLG_INVALID_ARGUMENT);
  a = make(gpu, 1, 0.5, 0);
  clg_block b;
  CHECK_CODE(clg_allocator_alloc(a, 0, &b), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_allocator_alloc(NULL, 1, &b), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_allocator_alloc(a, 1, NULL), CLG_INVALID_ARGUMENT);
  CHECK(stats(a).bytes_reserved == 0); /* nothing touched yet */
  clg_allocator_free(a, NULL, NULL);
  clg_allocator_free(NULL, &b, NULL);
  CHECK_STR(clg_allocator_name(a), "GPU_0_bfc");
  clg_allocator_destroy(a);
  clg_allocator_destroy(NULL);
  a = make(clg_devices_at(devs, 3), 1, 0, 0);
  CHECK_STR(clg_allocator_name(a), "GPU_2_bfc");
  clg_allocator_destroy(a);
}

/* Default mode with a virtual-device limit: the first allocation reserves all of it. */
static void test_reserve_virtual(void)
{
  double limits[] = {4, 8, 48};
  clg_devices *devs = open_devices(3, limits);
  CHECK(clg_devices_count(devs) == 4);
  clg_device *gpu = clg_devices_at(devs, 3); /* GPU:2, 48 MiB */
  CHECK(gpu->info.memory_limit == 48ull * MiB);
  clg_allocator *a = make(gpu, 0, 0, 0);
  CHECK_STR(clg_allocator_name(a), "GPU_2_bfc");
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_limit == 48ull * MiB && st.bytes_reserved == 0 && st.num_regions == 0);
  clg_block b;
  /* Filled as a GPU's regions are (a CPU-type device's only so: test_region_touch). */
  setenv("CLGRAPH_TOUCH_REGIONS", "1", 1);
  CHECK_OK(clg_allocator_alloc(a, 1, &b));
  unsetenv("CLGRAPH_TOUCH_REGIONS");
  st = stats(a);
  CHECK(st.bytes_reserved == 48ull * MiB && st.num_regions == 1);
  CHECK(st.bytes_in_use == 256 && b.size == 256 && b.offset == 0 && b.mem != NULL);
  CHECK(block_holds(gpu, &b, 0)); /* regions are filled with zeros */
  /* An explicit fraction is ignored for a virtual device: its limit wins. */
  clg_allocator *f = make(clg_devices_at(devs, 1), 0, 0.5, 0);
  CHECK(stats(f).bytes_limit == 4ull * MiB);
  clg_allocator_destroy(f);
  clg_allocator_free(a, &b, NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(devs);
}

/* Default mode for real on a PoCL device: 30% of 2 GiB is more than max_alloc (512 MiB),
 * so two regions, both touched. */
static void test_reserve_fraction(clg_devices *devs)
{
  clg_device *gpu = clg_devices_at(devs, 2);
  clg_allocator *a = make(gpu, 0, 0.3, 0);
  uint64_t limit = (uint64_t)((double)gpu->info.global_mem * 0.3) & ~(uint64_t)255;
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_limit == limit);
  uint64_t t0 = clg_now_ns();
  clg_block b;
  CHECK_OK(clg_allocator_alloc(a, 1000, &b));
  double secs = (double)(clg_now_ns() - t0) / 1e9;
  st = stats(a);
  uint64_t want_regions = (limit + gpu->info.max_alloc - 1) / gpu->info.max_alloc;
  CHECK(st.bytes_reserved == limit);
  CHECK(st.num_regions == want_regions && want_regions >= 2);
  printf("reserve: %llu bytes (global %llu, max_alloc %llu) in %llu regions touched in %.2f s "
         "(%.2f GB/s)\n",
         (unsigned long long)limit, (unsigned long long)gpu->info.global_mem,
         (unsigned long long)gpu->info.max_alloc, (unsigned long long)st.num_regions, secs,
         (double)limit / secs / 1e9);
  /* Best fit put the small block in the smaller region; a block as large as max_alloc
   * fits once, in the first region. */
  CHECK(b.region == 1);
  clg_block big, big2;
  CHECK_OK(clg_allocator_alloc(a, gpu->info.max_alloc, &big));
  CHECK(big.size == gpu->info.max_alloc && big.region == 0 && big.offset == 0);
  CHECK_CODE(clg_allocator_alloc(a, gpu->info.max_alloc, &big2), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "largest free block");
  clg_allocator_free(a, &b, NULL);
  /* Beyond max_alloc nothing can ever fit; the message says why. */
  clg_block huge;
  CHECK_CODE(clg_allocator_alloc(a, gpu->info.max_alloc + 1, &huge), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  CHECK(stats(a).bytes_reserved == limit);
  clg_allocator_free(a, &big, NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
}

/* allow_growth: a 2 MiB region first, then regions of an eighth of the pool (at least 2 MiB,
 * at least the request) or, larger, twice the largest request that needed a region (at most
 * the pool plus the request, and only while as much again stays below the limit). */
static void test_growth(clg_devices *devs)
{
  clg_device *gpu = clg_devices_at(devs, 1);
  clg_allocator *a = make(gpu, 1, 0, 0);
  clg_memory_options o;
  clg_allocator_options(a, &o);
  CHECK(o.allow_growth == 1);
  CHECK(stats(a).bytes_limit == (gpu->info.global_mem & ~(uint64_t)255));
  clg_block b[6];
  CHECK_OK(clg_allocator_alloc(a, 1 * MiB, &b[0])); /* 2 MiB: the first region */
  CHECK(stats(a).bytes_reserved == 2 * MiB);
  CHECK_OK(clg_allocator_alloc(a, 1 * MiB, &b[1])); /* fits in the first region */
  CHECK(stats(a).bytes_reserved == 2 * MiB && b[1].mem == b[0].mem);
  /* Twice the request: 3 MiB, room for one more of its size. */
  CHECK_OK(clg_allocator_alloc(a, 3 * MiB / 2, &b[2]));
  CHECK(stats(a).bytes_reserved == 5 * MiB && b[2].mem != b[0].mem);
  CHECK_OK(clg_allocator_alloc(a, 3 * MiB, &b[3])); /* 6 MiB */
  CHECK(stats(a).bytes_reserved == 11 * MiB);
  /* Twice 20 MiB would be more than the pool plus the request: 11 + 20 = 31 MiB. */
  CHECK_OK(clg_allocator_alloc(a, 20 * MiB, &b[4]));
  CHECK(stats(a).bytes_reserved == 42 * MiB);
  CHECK_OK(clg_allocator_alloc(a, 31 * MiB, &b[5])); /* 62 MiB */
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_reserved == 104 * MiB && st.num_regions == 5);
  char *json = clg_allocator_dump(a, true);
  CHECK(json && json_balanced(json));
  CHECK(json_regions(json) == 5);
  CHECK_CONTAINS(json, "{\"id\":0,\"size\":2097152,\"blocks\":[{\"offset\":0,\"size\":1048576,"
                       "\"state\":\"in_use\"},{\"offset\":1048576,\"size\":1048576,\"state\":"
                       "\"in_use\"}]}");
  CHECK_CONTAINS(json, "{\"id\":1,\"size\":3145728,");
  CHECK_CONTAINS(json, "{\"id\":2,\"size\":6291456,");
  CHECK_CONTAINS(json, "{\"id\":3,\"size\":32505856,");
  CHECK_CONTAINS(json, "{\"id\":4,\"size\":65011712,");
  CHECK_CONTAINS(json, "\"allow_growth\":true");
  free(json);
  for (int i = 0; i < 6; i++)
    clg_allocator_free(a, &b[i], NULL);
  st = stats(a);
  CHECK(st.bytes_in_use == 0 && st.bytes_reserved == 104 * MiB); /* never given back */
  CHECK(st.peak_bytes_in_use == 2 * MiB + 3 * MiB / 2 + 3 * MiB + 20 * MiB + 31 * MiB);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);

  /* Near the limit, regions are the request's size (no room for one more) and the last one
   * takes what is left. */
  double limits[] = {10};
  clg_devices *vd = open_devices(1, limits);
  a = make(clg_devices_at(vd, 1), 1, 0, 0);
  clg_block c[4];
  CHECK_OK(clg_allocator_alloc(a, 2 * MiB, &c[0]));
  CHECK_OK(clg_allocator_alloc(a, 4 * MiB, &c[1]));
  CHECK_OK(clg_allocator_alloc(a, 3 * MiB, &c[2]));
  st = stats(a);
  CHECK(st.bytes_reserved == 9 * MiB && st.num_regions == 3);
  CHECK_CODE(clg_allocator_alloc(a, 2 * MiB, &c[3]), CLG_RESOURCE_EXHAUSTED);
  CHECK_OK(clg_allocator_alloc(a, 1 * MiB, &c[3])); /* 2 MiB wanted, 1 MiB left */
  st = stats(a);
  CHECK(st.bytes_reserved == 10 * MiB && st.num_regions == 4);
  for (int i = 0; i < 4; i++)
    clg_allocator_free(a, &c[i], NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(vd);
}

/* allow_growth's room for one more large tensor: a region twice the largest request that
 * needed one, except for a lone first tensor and near the limit. */
static void test_growth_room(void)
{
  double limits[] = {100};
  clg_devices *vd = open_devices(1, limits);
  clg_allocator *a = make(clg_devices_at(vd, 1), 1, 0, 0);
  clg_block b[5];
  CHECK_OK(clg_allocator_alloc(a, 8 * MiB, &b[0])); /* alone: a region of its size */
  CHECK(stats(a).bytes_reserved == 8 * MiB);
  CHECK_OK(clg_allocator_alloc(a, 8 * MiB, &b[1])); /* 16 MiB: room for one more */
  CHECK(stats(a).bytes_reserved == 24 * MiB && b[1].mem != b[0].mem);
  CHECK_OK(clg_allocator_alloc(a, 8 * MiB, &b[2])); /* ... which this one takes */
  CHECK(stats(a).bytes_reserved == 24 * MiB && b[2].mem == b[1].mem);
  /* 60 MiB would leave less than that under the limit: the request's size. */
  CHECK_OK(clg_allocator_alloc(a, 30 * MiB, &b[3]));
  CHECK(stats(a).bytes_reserved == 54 * MiB);
  CHECK_OK(clg_allocator_alloc(a, 8 * MiB, &b[4]));
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_reserved == 62 * MiB && st.num_regions == 4 && st.peak_bytes_in_use == 62 * MiB);
  char *json = clg_allocator_dump(a, true);
  CHECK(json && json_regions(json) == 4);
  CHECK_CONTAINS(json, "{\"id\":0,\"size\":8388608,");
  CHECK_CONTAINS(json, "{\"id\":1,\"size\":16777216,");
  CHECK_CONTAINS(json, "{\"id\":2,\"size\":31457280,");
  CHECK_CONTAINS(json, "{\"id\":3,\"size\":8388608,");
  free(json);
  for (int i = 0; i < 5; i++)
    clg_allocator_free(a, &b[i], NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(vd);
}

static void test_fraction(clg_devices *devs)
{
  clg_device *gpu = clg_devices_at(devs, 4);
  clg_allocator *a = make(gpu, 1, 0.25, 0);
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_limit == ((uint64_t)((double)gpu->info.global_mem * 0.25) & ~(uint64_t)255));
  clg_block b;
  CHECK_CODE(clg_allocator_alloc(a, (size_t)st.bytes_limit + 256, &b), CLG_RESOURCE_EXHAUSTED);
  CHECK(stats(a).bytes_reserved == 0); /* nothing made for a request that cannot fit */
  CHECK_OK(clg_allocator_alloc(a, 4096, &b));
  clg_allocator_free(a, &b, NULL);
  clg_allocator_destroy(a);
  /* fraction 1 is the whole memory; a tiny fraction leaves no room at all. */
  a = make(gpu, 1, 1.0, 0);
  CHECK(stats(a).bytes_limit == (gpu->info.global_mem & ~(uint64_t)255));
  clg_allocator_destroy(a);
  a = make(gpu, 1, 1e-12, 0);
  CHECK(stats(a).bytes_limit == 0);
  CHECK_CODE(clg_allocator_alloc(a, 1, &b), CLG_RESOURCE_EXHAUSTED);
  clg_allocator_destroy(a);
}

static void test_force_growth(clg_devices *devs)
{
  clg_device *gpu = clg_devices_at(devs, 1);
  clg_memory_options o;
  static const struct {
    const char *env;
    int config, want;
    const char *log;
  } cases[] = {
      {"true", 0, 1,
       "Overriding allow_growth setting because the CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment "
       "variable is set. Original config value was 0.\n"},
      {"false", 1, 0,
       "Overriding allow_growth setting because the CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment "
       "variable is set. Original config value was 1.\n"},
      {"true", 1, 1, ""},
      {"false", 0, 0, ""},
      {"yes", 1, 1,
       "The CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: "
       "\"yes\". Valid values are \"true\" or \"false\". Using original config value of 1.\n"},
      {"TRUE", 0, 0,
       "The CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: "
       "\"TRUE\". Valid values are \"true\" or \"false\". Using original config value of 0.\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH", cases[i].env, 1);
    clg_test_log_capture_start(CLG_LOG_INFO);
    clg_allocator *a = make(gpu, cases[i].config, 0.5, 0);
    CHECK_STR(clg_test_log_capture_stop(), cases[i].log);
    clg_allocator_options(a, &o);
    CHECK(o.allow_growth == cases[i].want);
    CHECK(o.per_process_gpu_memory_fraction == 0.5);
    clg_allocator_destroy(a);
  }
  unsetenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH");
  /* The host allocator does not look at it. */
  setenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH", "true", 1);
  clg_test_log_capture_start(CLG_LOG_INFO);
  clg_allocator *h = make(clg_devices_at(devs, 0), 0, 0, 0);
  CHECK_STR(clg_test_log_capture_stop(), "");
  clg_allocator_destroy(h);
  unsetenv("CLGRAPH_FORCE_GPU_ALLOW_GROWTH");
}

/* Running out: the exact message and summary; blocks keep their contents; the next
 * request that fits succeeds. */
static void test_oom_recovery(void)
{
  double limits[] = {4};
  clg_devices *devs = open_devices(1, limits);
  clg_device *gpu = clg_devices_at(devs, 1);
  clg_allocator *a = make(gpu, 0, 0, 0);
  clg_block b[4];
  for (int i = 0; i < 3; i++) {
    CHECK_OK(clg_allocator_alloc(a, MiB, &b[i]));
    write_block(gpu, &b[i], (unsigned char)(0x11 * (i + 1)));
  }
  clg_test_log_capture_start(CLG_LOG_WARNING);
  CHECK_CODE(clg_allocator_alloc(a, 2 * MiB, &b[3]), CLG_RESOURCE_EXHAUSTED);
  const char *log = clg_test_log_capture_stop();
  CHECK_STR(clg_last_error(),
            "OOM when allocating 2097152 bytes on /job:localhost/replica:0/task:0/device:GPU:0 by "
            "allocator GPU_0_bfc: in use 3145728 bytes, limit 4194304 bytes, largest free block "
            "1048576 bytes");
  CHECK(b[3].mem == NULL && b[3].size == 0);
  CHECK_CONTAINS(log, "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00MiB "
                      "(rounded to 2097152).  Current allocation summary follows.\n");
  CHECK_CONTAINS(log, "Region 0 of size 4194304: 3145728 in use in 3 blocks, 1048576 free in "
                      "1 blocks, largest free block 1048576\n");
  CHECK_CONTAINS(log, "3 Chunks of size 1048576 totalling 3.00MiB\n");
  CHECK_CONTAINS(log, "Stats: \nLimit:                         4194304\n"
                      "InUse:                         3145728\n"
                      "MaxInUse:                      3145728\n"
                      "NumAllocs:                           3\n");
  CHECK_CONTAINS(log, "LargestFreeBlock:              1048576\n");
  for (int i = 0; i < 3; i++)
    CHECK(block_holds(gpu, &b[i], (unsigned char)(0x11 * (i + 1))));
  CHECK_OK(clg_allocator_alloc(a, MiB, &b[3]));
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_in_use == 4 * MiB && st.largest_free_block == 0 && st.num_allocs == 4);
  clg_block none;
  CHECK_CODE(clg_allocator_alloc(a, 1, &none), CLG_RESOURCE_EXHAUSTED);
  CHECK_STR(clg_last_error(),
            "OOM when allocating 1 bytes on /job:localhost/replica:0/task:0/device:GPU:0 by "
            "allocator GPU_0_bfc: in use 4194304 bytes, limit 4194304 bytes, largest free block 0 "
            "bytes");
  /* Free the middle two: they coalesce and a 2 MiB block fits where they were. */
  clg_block keep3 = b[3];
  clg_allocator_free(a, &b[1], NULL);
  clg_allocator_free(a, &b[2], NULL);
  clg_block c;
  CHECK_OK(clg_allocator_alloc(a, 2 * MiB, &c));
  CHECK(c.offset == MiB);
  CHECK(block_holds(gpu, &b[0], 0x11));
  /* Larger than the limit: fails cleanly, nothing changes. */
  CHECK_CODE(clg_allocator_alloc(a, 100 * MiB, &b[1]), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "OOM when allocating 104857600 bytes");
  CHECK(stats(a).bytes_reserved == 4 * MiB);
  clg_allocator_free(a, &c, NULL);
  clg_allocator_free(a, &b[0], NULL);
  clg_allocator_free(a, &keep3, NULL);
  st = stats(a);
  CHECK(st.bytes_in_use == 0 && st.live_allocs == 0 && st.largest_free_block == 4 * MiB);
  CHECK(st.fragmentation == 0);
  /* A second free of the same block is reported and ignored. */
  clg_test_log_capture_start(CLG_LOG_ERROR);
  clg_allocator_free(a, &c, NULL);
  CHECK_CONTAINS(clg_test_log_capture_stop(), "clg_allocator_free: allocator GPU_0_bfc has no "
                                              "block in use");
  CHECK(stats(a).bytes_in_use == 0);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(devs);
}

/* Garbage collection: empty regions go so that a larger one can be made. */
static void test_garbage_collection(void)
{
  double limits[] = {8};
  clg_devices *devs = open_devices(1, limits);
  clg_device *gpu = clg_devices_at(devs, 1);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1)
      setenv("CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION", "false", 1);
    clg_allocator *a = make(gpu, 1, 0, 0);
    clg_block x, y, z;
    CHECK_OK(clg_allocator_alloc(a, 3 * MiB / 2, &x)); /* region of 2 MiB */
    CHECK_OK(clg_allocator_alloc(a, 3 * MiB, &y));     /* region of 3 MiB */
    CHECK(stats(a).bytes_reserved == 5 * MiB);
    clg_allocator_free(a, &x, NULL);
    clg_allocator_free(a, &y, NULL);
    clg_test_log_capture_start(CLG_LOG_WARNING);
    clg_code code = clg_allocator_alloc(a, 5 * MiB, &z);
    const char *log = clg_test_log_capture_stop();
    if (pass == 0) {
      CHECK_OK(code);
      CHECK_CONTAINS(log, "Garbage collection: deallocate free memory regions (i.e., "
                          "allocations) so that we can re-allocate a larger region to avoid OOM "
                          "due to memory fragmentation.");
      clg_memory_stats st = stats(a);
      CHECK(st.bytes_reserved == 5 * MiB && st.num_regions == 1 &&
            st.peak_bytes_reserved == 5 * MiB);
      clg_allocator_free(a, &z, NULL);
    } else {
      CHECK_CODE(code, CLG_RESOURCE_EXHAUSTED);
      CHECK(strstr(log, "Garbage collection") == NULL);
      CHECK(stats(a).bytes_reserved == 5 * MiB);
    }
    CHECK_OK(clg_allocator_validate(a));
    clg_allocator_destroy(a);
  }
  unsetenv("CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION");
  clg_devices_free(devs);
}

/* --- two threads ------------------------------------------------------------------ */

#define UNITS_PER_REGION (64u * MiB / 256)

typedef struct shared {
  clg_allocator *a;
  pthread_mutex_t mu;
  unsigned char *units[16]; /* one byte per 256-byte unit of each region: who owns it */
  int overlaps, failures;
  long ops[2];
} shared;

typedef struct worker {
  shared *sh;
  int id;
} worker;

static void *thread_main(void *arg)
{
  worker *w = arg;
  shared *sh = w->sh;
  unsigned long long rng = 0x1234567ull * (unsigned long long)(w->id + 1);
  clg_block live[64];
  int n = 0;
  for (int step = 0; step < 20000; step++) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    if (n < 64 && (n == 0 || rng % 3 != 0)) {
      size_t size = 1 + (size_t)(rng >> 20) % (256 * 1024);
      clg_block b;
      if (clg_allocator_alloc(sh->a, size, &b) != CLG_OK) {
        pthread_mutex_lock(&sh->mu);
        sh->failures++;
        pthread_mutex_unlock(&sh->mu);
        continue;
      }
      pthread_mutex_lock(&sh->mu);
      if (b.region >= 16 || b.offset / 256 + b.size / 256 > UNITS_PER_REGION) {
        sh->overlaps++;
      } else {
        unsigned char *u = sh->units[b.region] + b.offset / 256;
        if (memchr(u, 1, b.size / 256) || memchr(u, 2, b.size / 256))
          sh->overlaps++;
        memset(u, w->id + 1, b.size / 256);
      }
      pthread_mutex_unlock(&sh->mu);
      live[n++] = b;
    } else {
      int i = (int)(rng % (unsigned)n);
      pthread_mutex_lock(&sh->mu);
      if (live[i].region < 16)
        memset(sh->units[live[i].region] + live[i].offset / 256, 0, live[i].size / 256);
      pthread_mutex_unlock(&sh->mu);
      clg_allocator_free(sh->a, &live[i], NULL);
      live[i] = live[--n];
    }
    sh->ops[w->id]++;
  }
  while (n) {
    n--;
    pthread_mutex_lock(&sh->mu);
    memset(sh->units[live[n].region] + live[n].offset / 256, 0, live[n].size / 256);
    pthread_mutex_unlock(&sh->mu);
    clg_allocator_free(sh->a, &live[n], NULL);
  }
  return NULL;
}

static void test_two_threads(void)
{
  double limits[] = {64};
  clg_devices *devs = open_devices(1, limits);
  shared sh = {0};
  sh.a = make(clg_devices_at(devs, 1), 1, 0, 0);
  pthread_mutex_init(&sh.mu, NULL);
  for (int i = 0; i < 16; i++)
    sh.units[i] = calloc(UNITS_PER_REGION, 1);
  pthread_t t[2];
  worker w[2] = {{&sh, 0}, {&sh, 1}};
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, thread_main, &w[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  CHECK(sh.overlaps == 0);
  CHECK(sh.failures == 0);
  clg_memory_stats st = stats(sh.a);
  CHECK(st.bytes_in_use == 0 && st.live_allocs == 0);
  CHECK(st.num_allocs > 20000);
  CHECK(st.bytes_reserved <= 64 * MiB);
  CHECK_OK(clg_allocator_validate(sh.a));
  printf("two threads: %ld + %ld operations, %llu allocations, peak %llu bytes in use, %llu "
         "reserved\n",
         sh.ops[0], sh.ops[1], (unsigned long long)st.num_allocs,
         (unsigned long long)st.peak_bytes_in_use, (unsigned long long)st.bytes_reserved);
  for (int i = 0; i < 16; i++)
    free(sh.units[i]);
  pthread_mutex_destroy(&sh.mu);
  clg_allocator_destroy(sh.a);
  clg_devices_free(devs);
}

/* --- reuse after a pending event ------------------------------------------------------ */

static cl_uint event_refs(cl_event e)
{
  cl_uint n = 0;
  clGetEventInfo(e, CL_EVENT_REFERENCE_COUNT, sizeof n, &n, NULL);
  return n;
}

/* A clgraph event of dev's kind that holds its own reference to ev (the test keeps its own),
 * released by the caller once it has handed the event on. */
static clg_event *wrap(const clg_device *dev, cl_event ev)
{
  clRetainEvent(ev);
  return clg_cl_event_adopt(dev, ev);
}

/* Frees b with a pending OpenCL event: the allocator holds its own reference. */
static void free_pending(clg_allocator *a, const clg_block *b, const clg_device *dev, cl_event ev)
{
  clg_event *e = wrap(dev, ev);
  clg_allocator_free(a, b, e);
  clg_event_release(e);
}

typedef struct {
  cl_event ev;
  unsigned ms;
} completer;

static void *complete_later(void *arg)
{
  completer *c = arg;
  struct timespec ts = {0, (long)c->ms * 1000000};
  nanosleep(&ts, NULL);
  clSetUserEventStatus(c->ev, CL_COMPLETE);
  return NULL;
}

static void test_pending(void)
{
  double limits[] = {4};
  clg_devices *devs = open_devices(1, limits);
  clg_device *gpu = clg_devices_at(devs, 1);
  clg_allocator *a = make(gpu, 0, 0, 0);
  cl_int err;
  clg_block x, y, z, w, v;
  CHECK_OK(clg_allocator_alloc(a, MiB, &x));
  CHECK_OK(clg_allocator_alloc(a, MiB, &y));

  /* Freed with a user event pending: not handed out while it is. */
  cl_event ue = clCreateUserEvent(clg_cl_context(gpu), &err);
  CHECK(err == CL_SUCCESS);
  free_pending(a, &x, gpu, ue);
  CHECK(event_refs(ue) == 2); /* the allocator holds one */
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_in_use == MiB && st.bytes_pending == MiB && st.live_allocs == 1);
  char *text = clg_allocator_dump(a, false);
  CHECK_CONTAINS(text, "  Pending at 0x0 of size 1048576\n");
  CHECK_CONTAINS(text, "  InUse   at 0x100000 of size 1048576\n");
  CHECK_CONTAINS(text, "  Free    at 0x200000 of size 2097152\n");
  free(text);
  char *json = clg_allocator_dump(a, true);
  CHECK_CONTAINS(json, "{\"offset\":0,\"size\":1048576,\"state\":\"pending\"}");
  CHECK_CONTAINS(json, "\"bytes_pending\":1048576");
  free(json);
  CHECK_OK(clg_allocator_alloc(a, MiB, &z));
  CHECK(z.offset == 2 * MiB); /* not x's */
  CHECK(clSetUserEventStatus(ue, CL_COMPLETE) == CL_SUCCESS);
  CHECK_OK(clg_allocator_alloc(a, MiB, &w));
  CHECK(w.offset == 0); /* x's block, now reclaimed: the best fit */
  CHECK(event_refs(ue) == 1);
  clReleaseEvent(ue);
  st = stats(a);
  CHECK(st.bytes_pending == 0 && st.bytes_in_use == 3 * MiB);

  /* Full except a pending block: the allocation waits for the event. */
  cl_event ue2 = clCreateUserEvent(clg_cl_context(gpu), &err);
  free_pending(a, &w, gpu, ue2);
  CHECK_OK(clg_allocator_alloc(a, MiB, &v)); /* the last free MiB */
  completer c = {ue2, 200};
  pthread_t t;
  pthread_create(&t, NULL, complete_later, &c);
  uint64_t t0 = clg_now_ns();
  clg_block u;
  CHECK_OK(clg_allocator_alloc(a, MiB, &u));
  double waited = (double)(clg_now_ns() - t0) / 1e6;
  pthread_join(t, NULL);
  CHECK(u.offset == 0);
  CHECK_MSG(waited >= 150, "waited %.1f ms for the event", waited);
  CHECK(event_refs(ue2) == 1);
  clReleaseEvent(ue2);

  /* A completed event frees at once; so does a real command's event once it is done. */
  clg_allocator_free(a, &u, NULL);
  unsigned char data[256] = {1};
  cl_event wev;
  CHECK(clEnqueueWriteBuffer(clg_cl_queue(gpu), y.mem, CL_FALSE, y.offset, sizeof data, data, 0,
                             NULL, &wev) == CL_SUCCESS);
  free_pending(a, &y, gpu, wev);
  clReleaseEvent(wev);
  clFinish(clg_cl_queue(gpu));
  clg_block big;
  CHECK_OK(clg_allocator_alloc(a, 2 * MiB, &big)); /* x and y's blocks, coalesced */
  CHECK(big.offset == 0);
  clg_allocator_free(a, &big, NULL);
  clg_allocator_free(a, &z, NULL);
  clg_allocator_free(a, &v, NULL);
  st = stats(a);
  CHECK(st.bytes_in_use == 0 && st.bytes_pending == 0 && st.live_allocs == 0);

  /* Destroyed with a block still pending: the event is released. */
  cl_event ue3 = clCreateUserEvent(clg_cl_context(gpu), &err);
  CHECK_OK(clg_allocator_alloc(a, MiB, &x));
  free_pending(a, &x, gpu, ue3);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  CHECK(event_refs(ue3) == 1);
  clSetUserEventStatus(ue3, CL_COMPLETE);
  clReleaseEvent(ue3);
  clg_devices_free(devs);
}

/* --- exact statistics --------------------------------------------------------------- */

static void test_stats(void)
{
  double limits[] = {16};
  clg_devices *devs = open_devices(1, limits);
  clg_allocator *a = make(clg_devices_at(devs, 1), 0, 0, 0);
  clg_block b[3];
  CHECK_OK(clg_allocator_alloc(a, 100, &b[0]));     /* 256 */
  CHECK_OK(clg_allocator_alloc(a, 70000, &b[1]));   /* 70144 */
  CHECK_OK(clg_allocator_alloc(a, 5 * MiB, &b[2])); /* 5 MiB */
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_in_use == 256 + 70144 + 5 * MiB);
  CHECK(st.peak_bytes_in_use == st.bytes_in_use);
  CHECK(st.bytes_limit == 16 * MiB && st.bytes_reserved == 16 * MiB);
  CHECK(st.peak_bytes_reserved == 16 * MiB && st.num_regions == 1);
  CHECK(st.num_allocs == 3 && st.live_allocs == 3 && st.largest_alloc_size == 5 * MiB);
  CHECK(st.largest_free_block == 16 * MiB - st.bytes_in_use);
  CHECK(st.fragmentation == 0);
  clg_allocator_free(a, &b[1], NULL); /* a hole: fragmentation */
  st = stats(a);
  uint64_t free_bytes = 16 * MiB - 256 - 5 * MiB;
  CHECK(st.bytes_in_use == 256 + 5 * MiB && st.live_allocs == 2);
  CHECK(st.peak_bytes_in_use == 256 + 70144 + 5 * MiB);
  CHECK(st.largest_free_block == free_bytes - 70144);
  CHECK(fabs(st.fragmentation - 70144.0 / (double)free_bytes) < 1e-12);
  clg_allocator_reset_peak(a);
  st = stats(a);
  CHECK(st.peak_bytes_in_use == 256 + 5 * MiB && st.num_allocs == 0);
  CHECK(st.largest_alloc_size == 0 && st.live_allocs == 2);
  CHECK_OK(clg_allocator_alloc(a, 1, &b[1]));
  st = stats(a);
  CHECK(st.num_allocs == 1 && st.largest_alloc_size == 256 && b[1].offset == 256);

  char *text = clg_allocator_dump(a, false);
  CHECK_CONTAINS(text, "Allocator GPU_0_bfc for /job:localhost/replica:0/task:0/device:GPU:0: "
                       "limit 16777216 bytes, reserved 16777216 bytes in 1 regions, in use "
                       "5243392 bytes in 3 blocks, pending 0 bytes, reserve all\n");
  CHECK_CONTAINS(text, "Region 0 of size 16777216 (cl_mem ");
  CHECK_CONTAINS(text, "  InUse   at 0x0 of size 256\n  InUse   at 0x100 of size 256\n"
                       "  Free    at 0x200 of size 69888\n  InUse   at 0x11300 of size 5242880\n"
                       "  Free    at 0x511300 of size 11463936\n");
  CHECK_CONTAINS(text, "Stats:\nLimit:                        16777216\n");
  free(text);
  char *json = clg_allocator_dump(a, true);
  CHECK(json_balanced(json));
  CHECK_CONTAINS(json, "{\"allocator\":\"GPU_0_bfc\",\"device\":\"/job:localhost/replica:0/"
                       "task:0/device:GPU:0\",\"allow_growth\":false,");
  CHECK_CONTAINS(json, "\"regions\":[{\"id\":0,\"size\":16777216,\"blocks\":[{\"offset\":0,"
                       "\"size\":256,\"state\":\"in_use\"},{\"offset\":256,\"size\":256,"
                       "\"state\":\"in_use\"},{\"offset\":512,\"size\":69888,\"state\":\"free\"},");
  CHECK_CONTAINS(json, "\"live_allocs\":3");
  free(json);
  for (int i = 0; i < 3; i++)
    clg_allocator_free(a, &b[i], NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(devs);
}

/* --- the host --------------------------------------------------------------------- */

static void test_host(clg_devices *devs)
{
  clg_device *host = clg_devices_at(devs, 0);
  CHECK(host->is_host);
  clg_allocator *a = make(host, 0, 0, MiB);
  CHECK_STR(clg_allocator_name(a), "cpu");
  clg_block b[3];
  CHECK_OK(clg_allocator_alloc(a, 100, &b[0]));
  CHECK(b[0].size == 128 && b[0].mem == NULL && b[0].host != NULL);
  CHECK(((uintptr_t)b[0].host & 63) == 0);
  memset(b[0].host, 0xab, 100);
  CHECK_OK(clg_allocator_alloc(a, 1000, &b[1]));
  CHECK(b[1].size == 1024 && ((uintptr_t)b[1].host & 63) == 0);
  memset(b[1].host, 0xcd, 1000);
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_in_use == 1152 && st.live_allocs == 2 && st.num_allocs == 2);
  CHECK(st.bytes_limit == MiB && st.bytes_reserved == 1152 && st.num_regions == 0);
  CHECK(st.largest_free_block == MiB - 1152 && st.largest_alloc_size == 1024);
  clg_test_log_capture_start(CLG_LOG_WARNING);
  CHECK_CODE(clg_allocator_alloc(a, MiB, &b[2]), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_test_log_capture_stop(), "Allocator (cpu) ran out of memory trying to "
                                              "allocate 1.00MiB (rounded to 1048576).");
  CHECK_STR(clg_last_error(),
            "OOM when allocating 1048576 bytes on /job:localhost/replica:0/task:0/device:CPU:0 by "
            "allocator cpu: in use 1152 bytes, limit 1048576 bytes, largest free block 1047424 "
            "bytes");
  CHECK_OK(clg_allocator_alloc(a, MiB - 1152, &b[2])); /* exactly the rest */
  clg_block none;
  CHECK_CODE(clg_allocator_alloc(a, 1, &none), CLG_RESOURCE_EXHAUSTED);
  CHECK(none.host == NULL && none.size == 0);
  CHECK(((unsigned char *)b[0].host)[99] == 0xab && ((unsigned char *)b[1].host)[999] == 0xcd);
  char *json = clg_allocator_dump(a, true);
  CHECK(json && json_balanced(json));
  CHECK_CONTAINS(json, "\"regions\":[],\"blocks\":[{\"address\":\"");
  CHECK_CONTAINS(json, "\"size\":128,\"state\":\"in_use\"}");
  free(json);
  char *text = clg_allocator_dump(a, false);
  CHECK_CONTAINS(text, "Allocator cpu for /job:localhost/replica:0/task:0/device:CPU:0: limit "
                       "1048576 bytes, reserved 1048576 bytes in 0 regions, in use 1048576 bytes "
                       "in 3 blocks");
  free(text);
  /* Pending frees work on the host too (an asynchronous write may still read it). */
  cl_int err;
  cl_event ue = clCreateUserEvent(clg_cl_context(clg_devices_at(devs, 1)), &err);
  free_pending(a, &b[2], clg_devices_at(devs, 1), ue);
  st = stats(a);
  CHECK(st.bytes_in_use == 1152 && st.bytes_pending == MiB - 1152);
  CHECK(st.largest_free_block == 0);
  clSetUserEventStatus(ue, CL_COMPLETE);
  clReleaseEvent(ue);
  CHECK_OK(clg_allocator_alloc(a, 4096, &b[2]));
  st = stats(a);
  CHECK(st.bytes_pending == 0 && st.bytes_in_use == 1152 + 4096 && st.bytes_reserved == 5248);
  for (int i = 0; i < 3; i++)
    clg_allocator_free(a, &b[i], NULL);
  st = stats(a);
  CHECK(st.bytes_in_use == 0 && st.live_allocs == 0 && st.bytes_reserved == 0);
  CHECK(st.peak_bytes_in_use == MiB && st.num_allocs == 4);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);

  /* No limit: the physical memory is reported as the limit; nothing is enforced. */
  a = make(host, 0, 0, 0);
  CHECK(stats(a).bytes_limit == host->info.global_mem);
  CHECK_OK(clg_allocator_alloc(a, 64 * MiB, &b[0]));
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a); /* frees the block still in use */
}

/* Which regions are filled at creation (CLGRAPH_TOUCH_REGIONS): by default those of a
 * device whose memory is not the host's (a GPU backs a buffer lazily; the fill makes the
 * reservation real), never a CPU-type device's (PoCL's stand-ins: host memory, whose pages
 * come on first use); 1 fills every device's, 0 none, another value warns and is auto. */
static void test_region_touch(void)
{
  double limits[] = {8};
  clg_devices *devs = open_devices(1, limits);
  clg_device *gpu = clg_devices_at(devs, 1);
  bool cpu = gpu->info.cl_type && strcmp(gpu->info.cl_type, "CPU") == 0;
  static const struct {
    const char *value;
    bool cpu_fill, gpu_fill, warns;
  } cases[] = {{NULL, false, true, false},
               {"auto", false, true, false},
               {"1", true, true, false},
               {"0", false, false, false},
               {"yes", false, true, true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].value)
      setenv("CLGRAPH_TOUCH_REGIONS", cases[i].value, 1);
    else
      unsetenv("CLGRAPH_TOUCH_REGIONS");
    clg_allocator *a = make(gpu, 1, 0, 0);
    clg_block b;
    fills_seen = 0;
    clg_test_log_capture_start(CLG_LOG_WARNING);
    CHECK_OK(clg_allocator_alloc(a, MiB, &b));
    const char *log = clg_test_log_capture_stop();
    bool want = cpu ? cases[i].cpu_fill : cases[i].gpu_fill;
    CHECK_MSG(fills_seen == (want ? 1 : 0), "CLGRAPH_TOUCH_REGIONS=%s on a %s device: %d fills",
              cases[i].value ? cases[i].value : "(unset)", cpu ? "CPU-type" : "non-CPU",
              fills_seen);
    /* (the warning comes once per process) */
    if (cases[i].warns)
      CHECK_CONTAINS(log, "CLGRAPH_TOUCH_REGIONS=\"yes\" is not 0, 1 or auto; using auto");
    else
      CHECK(strstr(log, "CLGRAPH_TOUCH_REGIONS") == NULL);
    clg_allocator_free(a, &b, NULL);
    CHECK_OK(clg_allocator_validate(a));
    clg_allocator_destroy(a);
  }
  unsetenv("CLGRAPH_TOUCH_REGIONS");
  clg_devices_free(devs);
}

/* A region the device refuses: RESOURCE_EXHAUSTED naming the call, no cl_mem left behind
 * (each holds a reference to the context), the allocator usable afterwards. */
static void test_region_failures(void)
{
  double limits[] = {8};
  clg_devices *devs = open_devices(1, limits);
  clg_device *gpu = clg_devices_at(devs, 1);
  cl_uint refs0 = context_refs(clg_cl_context(gpu));
  clg_allocator *a = make(gpu, 1, 0, 0);
  clg_block b, c;

  /* Every attempt fails: TensorFlow's backpedal tries smaller sizes, then gives up. */
  fail_creates = 1000;
  creates_seen = 0;
  CHECK_CODE(clg_allocator_alloc(a, MiB, &b), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(
      clg_last_error(),
      "OOM when allocating 1048576 bytes on /job:localhost/replica:0/task:0/device:GPU:0 "
      "by allocator GPU_0_bfc: in use 0 bytes, limit 8388608 bytes, largest free block "
      "0 bytes; creating a region of 1048576 bytes failed: "
      "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) in clCreateBuffer");
  CHECK(creates_seen >= 2 && creates_seen <= 8); /* 2 MiB, 1.8 MiB, ... down to 1 MiB */
  clg_memory_stats st = stats(a);
  CHECK(st.bytes_reserved == 0 && st.num_regions == 0 && st.bytes_in_use == 0);
  fail_creates = 0;

  /* One refusal: the next, 10% smaller, region is accepted. */
  fail_creates = 1;
  CHECK_OK(clg_allocator_alloc(a, MiB, &b));
  CHECK(stats(a).bytes_reserved == ((uint64_t)(2.0 * MiB * 0.9) & ~(uint64_t)255));
  clg_allocator_free(a, &b, NULL);

  /* The fill (which makes the memory real) fails: the buffer is released. A CPU-type
   * device's regions are filled only with CLGRAPH_TOUCH_REGIONS=1 (test_region_touch). */
  setenv("CLGRAPH_TOUCH_REGIONS", "1", 1);
  fail_fills = 1000;
  CHECK_CODE(clg_allocator_alloc(a, 4 * MiB, &c), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "in clEnqueueFillBuffer");
  fail_fills = 0;
  unsetenv("CLGRAPH_TOUCH_REGIONS");
  /* Garbage collection gave the empty 1.8 MiB region back first, hoping for a 4 MiB one. */
  CHECK(stats(a).num_regions == 0 && stats(a).bytes_reserved == 0);
  CHECK_OK(clg_allocator_alloc(a, 4 * MiB, &c)); /* and then it works */
  CHECK(stats(a).num_regions == 1);
  clg_allocator_free(a, &c, NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);

  /* The default mode: the reservation fails at first use, succeeds at the next. */
  a = make(gpu, 0, 0, 0);
  fail_creates = 1000;
  CHECK_CODE(clg_allocator_alloc(a, 1000, &b), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "in clCreateBuffer");
  fail_creates = 0;
  CHECK_OK(clg_allocator_alloc(a, 1000, &b));
  CHECK(stats(a).bytes_reserved == 8 * MiB);
  clg_allocator_free(a, &b, NULL);
  clg_allocator_destroy(a);
  /* No cl_mem or queue left behind. PoCL drops the references its finished commands hold
   * on a background thread, so give it a moment. */
  for (int i = 0; i < 200 && context_refs(clg_cl_context(gpu)) != refs0; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  CHECK(context_refs(clg_cl_context(gpu)) == refs0);
  clg_devices_free(devs);
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_allocator");
  clg_devices *devs = open_devices(0, NULL);
  test_arguments(devs);
  test_reserve_virtual();
  test_reserve_fraction(devs);
  test_growth(devs);
  test_growth_room();
  test_fraction(devs);
  test_force_growth(devs);
  test_oom_recovery();
  test_garbage_collection();
  test_two_threads();
  test_pending();
  test_stats();
  test_host(devs);
  test_region_touch();
  test_region_failures();
  clg_devices_free(devs);
  return clg_test_summary("test_allocator");
}
