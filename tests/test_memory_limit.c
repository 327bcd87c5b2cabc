/* The default mode's limit and reservation: what is left to the driver (TensorFlow's
 * MinSystemMemory, CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB) and a device that gives less than the
 * limit. The GPU rows use a PoCL device whose description says GPU: the allocator reads only
 * the description to pick the share, and the device under it stays real. (A device that
 * gives less than the limit is tested in test_faults, which can make it refuse.) */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "memory/memory.h"
#include "testutil.h"

#define MiB (1ull << 20)

static uint64_t limit_of(clg_device *dev)
{
  clg_memory_options o = {.allow_growth = 1};
  clg_allocator *a = NULL;
  CHECK_OK(clg_allocator_new(dev, &o, &a));
  clg_memory_stats st;
  memset(&st, 0, sizeof st);
  if (a)
    clg_allocator_stats(a, &st);
  clg_allocator_destroy(a);
  return st.bytes_limit;
}

static void test_system_share(clg_device *pocl)
{
  uint64_t total = pocl->info.global_mem;
  /* PoCL's CPU-type devices take host memory: no driver share, the whole memory. */
  CHECK(limit_of(pocl) == total);

  clg_device gpu = *pocl;
  gpu.info.cl_type = "GPU";
  static const struct {
    int cc;
    uint64_t share;
  } rows[] = {{0, 500 * MiB},  {5, 500 * MiB},  {6, 500 * MiB},  {7, 1050 * MiB},
              {8, 1536 * MiB}, {9, 1800 * MiB}, {10, 1800 * MiB}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    gpu.info.nv_cc_major = rows[i].cc;
    CHECK_MSG(limit_of(&gpu) == total - rows[i].share, "cc %d: limit %llu, want %llu", rows[i].cc,
              (unsigned long long)limit_of(&gpu), (unsigned long long)(total - rows[i].share));
  }
  gpu.info.global_mem = 1536 * MiB; /* below 2 GiB: 225 MiB */
  gpu.info.nv_cc_major = 9;
  CHECK(limit_of(&gpu) == 1311 * MiB);

  /* A fraction or a virtual device's limit is taken as given. */
  gpu = *pocl;
  gpu.info.cl_type = "GPU";
  clg_memory_options o = {.allow_growth = 1, .per_process_gpu_memory_fraction = 0.5};
  clg_allocator *a = NULL;
  CHECK_OK(clg_allocator_new(&gpu, &o, &a));
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  CHECK(st.bytes_limit == (total / 2 & ~255ull));
  clg_allocator_destroy(a);
  gpu.info.memory_limit = 64 * MiB;
  CHECK(limit_of(&gpu) == 64 * MiB);
}

static void test_env(clg_device *pocl)
{
  uint64_t total = pocl->info.global_mem;
  clg_device gpu = *pocl;
  gpu.info.cl_type = "GPU";
  setenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", "300", 1);
  CHECK(limit_of(&gpu) == total - 300 * MiB);
  CHECK(limit_of(pocl) == total - 300 * MiB); /* the variable applies to every device */
  setenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", "0", 1);
  CHECK(limit_of(&gpu) == total);

  static const char *bad[] = {"lots", "-5", "12abc", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", bad[i], 1);
    clg_test_log_capture_start(CLG_LOG_WARNING);
    uint64_t got = limit_of(&gpu);
    const char *log = clg_test_log_capture_stop();
    CHECK(got == total - 500 * MiB);
    char want[160];
    snprintf(want, sizeof want,
             "The environment variable CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB=%s is invalid. The "
             "request will be ignored.",
             bad[i]);
    CHECK_CONTAINS(log, want);
  }
  setenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", "4096", 1); /* more than the 2 GiB device */
  clg_test_log_capture_start(CLG_LOG_WARNING);
  uint64_t got = limit_of(&gpu);
  const char *log = clg_test_log_capture_stop();
  CHECK(got == total - 500 * MiB);
  CHECK_CONTAINS(log, "The requested reserved device memory 4.00GiB is larger than the available "
                      "memory of 2.00GiB. The request is ignored.");
  unsetenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB");
}

int main(void)
{
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_memory_limit");
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(NULL, &devs));
  if (devs) {
    clg_device *pocl = clg_devices_at(devs, 1);
    test_system_share(pocl);
    test_env(pocl);
  }
  clg_devices_free(devs);
  return clg_test_summary("test_memory_limit");
}
