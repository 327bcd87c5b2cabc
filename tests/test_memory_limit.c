/* The default mode's limit: what is left to the driver (TensorFlow's
 * MinSystemMemory, CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB). The rows use GPU:0 (PoCL in the
 * tests) with another description (type, memory, compute capability): the allocator reads
 * only the description to pick the share, and the device under it stays real. (A device that
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

/* The real device with another description: OpenCL type, memory size, NVIDIA compute
 * capability. Only the allocator's limit is read, so nothing is reserved on it. */
static clg_device described(const clg_device *real, const char *type, uint64_t mem, int cc)
{
  clg_device d = *real;
  d.info.cl_type = type;
  d.info.global_mem = mem;
  d.info.nv_cc_major = cc;
  d.info.memory_limit = 0;
  d.physical_mem = 0; /* a whole card unless a row says otherwise */
  return d;
}

static void test_system_share(clg_device *real)
{
  /* CPU-type devices (PoCL) take host memory: no driver share, the whole memory. Tests run on
   * PoCL; on a real GPU the table below applies to the device itself. */
  uint64_t total = real->info.global_mem;
  if (strcmp(real->info.cl_type, "CPU") == 0)
    CHECK(limit_of(real) == total);
  else
    CHECK(limit_of(real) < total && limit_of(real) >= total - 1800 * MiB);

  total = 2048 * MiB;
  clg_device cpu = described(real, "CPU", total, 9);
  CHECK(limit_of(&cpu) == total);
  static const struct {
    int cc;
    uint64_t share;
  } rows[] = {{0, 500 * MiB},  {5, 500 * MiB},  {6, 500 * MiB},  {7, 1050 * MiB},
              {8, 1536 * MiB}, {9, 1800 * MiB}, {10, 1800 * MiB}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    clg_device gpu = described(real, "GPU", total, rows[i].cc);
    uint64_t got = limit_of(&gpu);
    CHECK_MSG(got == total - rows[i].share, "cc %d: limit %llu, want %llu", rows[i].cc,
              (unsigned long long)got, (unsigned long long)(total - rows[i].share));
  }
  clg_device small = described(real, "GPU", 1536 * MiB, 9); /* below 2 GiB: 225 MiB */
  CHECK(limit_of(&small) == 1311 * MiB);
  clg_device acc = described(real, "ACCELERATOR", total, 0);
  CHECK(limit_of(&acc) == total - 500 * MiB);
  /* A part of a card (CLGRAPH_VIRTUAL_DEVICES) leaves its fraction of the card's share: a
   * quarter of an 8 GiB card of compute capability 9 leaves 450 MiB of 1800; a part of a
   * card under 2 GiB leaves its fraction of 225 MiB; on a CPU device none. */
  clg_device part = described(real, "GPU", total, 9);
  part.physical_mem = 4 * total;
  CHECK(limit_of(&part) == total - 450 * MiB);
  part = described(real, "GPU", 512 * MiB, 9);
  part.physical_mem = 1536 * MiB;
  CHECK(limit_of(&part) == 512 * MiB - 75 * MiB);
  part = described(real, "CPU", total, 9);
  part.physical_mem = 4 * total;
  CHECK(limit_of(&part) == total);

  /* A fraction or a virtual device's limit is taken as given. */
  clg_device gpu = described(real, "GPU", total, 9);
  clg_memory_options o = {.allow_growth = 1, .per_process_gpu_memory_fraction = 0.5};
  clg_allocator *a = NULL;
  CHECK_OK(clg_allocator_new(&gpu, &o, &a));
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  CHECK(st.bytes_limit == total / 2);
  clg_allocator_destroy(a);
  gpu.info.memory_limit = 64 * MiB;
  CHECK(limit_of(&gpu) == 64 * MiB);
}

static void test_env(clg_device *real)
{
  uint64_t total = 2048 * MiB;
  clg_device gpu = described(real, "GPU", total, 0), cpu = described(real, "CPU", total, 0);
  setenv("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", "300", 1);
  CHECK(limit_of(&gpu) == total - 300 * MiB);
  CHECK(limit_of(&cpu) == total - 300 * MiB); /* the variable applies to every device */
  clg_device part = gpu; /* the variable names the card's share: a quarter part leaves 75 */
  part.physical_mem = 4 * total;
  CHECK(limit_of(&part) == total - 75 * MiB);
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
    clg_device *gpu0 = clg_devices_at(devs, 1);
    test_system_share(gpu0);
    test_env(gpu0);
  }
  clg_devices_free(devs);
  return clg_test_summary("test_memory_limit");
}
