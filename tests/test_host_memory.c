/* PoCL's CPU devices take the host's memory, and without POCL_MEMORY_LIMIT each reports most
 * of it (21.5 GiB on a 23 GiB machine). The default mode reserves a device's whole memory;
 * under an address-space limit (ulimit -v 1500000) PoCL aborted in
 * pocl_create_migration_commands, and without one four stand-ins touched 86 GiB and woke
 * the OOM killer. The allocator now reserves, on a device whose memory is the host's, at
 * most what the host can spare (MemAvailable, RLIMIT_AS headroom, less a margin), shared
 * by the devices still to reserve, and says so in a warning.
 *
 *  - a child process, with RLIMIT_AS 1.5 GB above what it maps at start and POCL_MEMORY_LIMIT
 *    unset, runs a default-mode session on the four stand-ins: it succeeds (never aborts),
 *    the warning is logged and the reservations fit in the limit; then an allow_growth
 *    allocator refuses a request beyond what is spare with RESOURCE_EXHAUSTED and serves a
 *    small one;
 *  - this process, with the tests' POCL_MEMORY_LIMIT=2, still reserves each 2 GiB device
 *    whole when the host has room. */
// ctest-serial
// ctest-pocl-only: about devices whose memory is the host's (PoCL's)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "memory/memory.h"
#include "testutil.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define CHILD_LIMIT 1500000000ull /* ulimit -v 1500000 (KiB), roughly */

static uint64_t mapped_now(void)
{
  unsigned long long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%llu", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t mem_available(void)
{
  unsigned long long kib = 0;
  char line[128];
  FILE *f = fopen("/proc/meminfo", "r");
  while (f && fgets(line, sizeof line, f) && sscanf(line, "MemAvailable: %llu kB", &kib) != 1)
    ;
  if (f)
    fclose(f);
  return (uint64_t)kib << 10;
}

static const int64_t dims[2] = {2, 2};
static const float one[4] = {1, 2, 3, 4};

/* The child: a default-mode session on the four stand-ins under RLIMIT_AS. */
static void limited_session(uint64_t limit)
{
  clg_graph *g = clg_graph_new();
  clg_node *parts[4];
  for (int i = 0; i < 4; i++) {
    char dev[32];
    snprintf(dev, sizeof dev, "/device:GPU:%d", i);
    clg_graph_push_device(g, dev);
    clg_node *a = clg_const_f32(g, NULL, 2, dims, one);
    parts[i] = i == 0 ? clg_matmul(g, NULL, a, a, false, false) : clg_add(g, NULL, a, a);
    clg_graph_pop_device(g);
  }
  clg_node *sum = clg_add_n(g, "sum", 4, parts);

  clg_test_log_capture_start(CLG_LOG_WARNING);
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  clg_tensor *out = NULL;
  clg_code code = s ? clg_session_run(s, 0, NULL, NULL, 1, &sum, &out) : CLG_INTERNAL;
  const char *log = clg_test_log_capture_stop();
  CHECK_MSG(code == CLG_OK ||
                (code == CLG_RESOURCE_EXHAUSTED && strstr(clg_last_error(), "OOM when")),
            "run: %s: %s", clg_code_name(code), clg_last_error());
  if (code == CLG_OK) { /* [[7,10],[15,22]] + 3 x [[2,4],[6,8]] */
    static const float want[4] = {13, 22, 33, 46};
    CHECK(out && clg_tensor_bytes(out) == sizeof want &&
          memcmp(clg_tensor_const_data(out), want, sizeof want) == 0);
  }
  clg_tensor_free(out);
  CHECK_CONTAINS(log, "the device's memory is the host's, so the default mode reserves only");
  CHECK_CONTAINS(log, "RLIMIT_AS headroom");
  CHECK_CONTAINS(log, "device(s) without a reservation");
  uint64_t reserved = 0;
  for (int i = 0; s && i < 4; i++) {
    char dev[32];
    snprintf(dev, sizeof dev, "/device:GPU:%d", i);
    clg_memory_stats st;
    CHECK_OK(clg_session_memory_stats(s, dev, &st));
    CHECK_MSG(st.bytes_limit < 4 * GiB, "GPU:%d limit %llu: not cut to what the host spares", i,
              (unsigned long long)st.bytes_limit);
    CHECK(st.bytes_reserved <= st.bytes_limit);
    reserved += st.bytes_reserved;
  }
  CHECK_MSG(reserved < limit, "the four devices reserved %llu bytes, over RLIMIT_AS %llu",
            (unsigned long long)reserved, (unsigned long long)limit);
  printf("under RLIMIT_AS %llu MiB: the four stand-ins reserved %llu MiB in all\n",
         (unsigned long long)(limit / MiB), (unsigned long long)(reserved / MiB));
  clg_session_free(s);
  clg_graph_free(g);
}

/* The child: an allow_growth allocator asked for more than the host can spare. */
static void limited_growth(void)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(&cfg, &devs));
  clg_device *gpu = devs ? clg_devices_at(devs, 1) : NULL; /* GPU:0 */
  clg_memory_options opt = {0};
  opt.allow_growth = 1;
  clg_allocator *a = NULL;
  if (gpu)
    CHECK_OK(clg_allocator_new(gpu, &opt, &a));
  if (a) {
    clg_block big, small;
    CHECK_CODE(clg_allocator_alloc(a, (size_t)(1200 * MiB), &big), CLG_RESOURCE_EXHAUSTED);
    CHECK_CONTAINS(clg_last_error(), "the device's memory is the host's, which can spare");
    CHECK_OK(clg_allocator_alloc(a, (size_t)MiB, &small));
    clg_allocator_free(a, &small, NULL);
    clg_allocator_destroy(a);
  }
  clg_devices_free(devs);
}

static int child_main(void)
{
  unsetenv("POCL_MEMORY_LIMIT");
  /* Relative to what is mapped now, so that a sanitizer's shadow memory does not count. */
  uint64_t limit = mapped_now() + CHILD_LIMIT;
  struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_host_memory (child)");
  limited_session(CHILD_LIMIT);
  limited_growth();
  return clg_test_summary("test_host_memory (child)");
}

/* This process: 2 GiB devices (POCL_MEMORY_LIMIT=2) are reserved whole when the host has
 * room for four of them and the margin. */
static void whole_when_room(void)
{
  uint64_t avail = mem_available();
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(&cfg, &devs));
  clg_allocator *a[4] = {NULL};
  clg_test_log_capture_start(CLG_LOG_WARNING);
  for (int i = 0; devs && i < 4; i++) {
    clg_device *gpu = clg_devices_at(devs, 1 + i);
    CHECK(gpu && gpu->info.global_mem == 2 * GiB);
    CHECK_OK(clg_allocator_new(gpu, NULL, &a[i]));
    clg_block b;
    if (a[i])
      CHECK_OK(clg_allocator_alloc(a[i], 4096, &b)); /* the first use reserves */
  }
  const char *log = clg_test_log_capture_stop();
  bool room = avail > 12 * GiB;
  for (int i = 0; i < 4; i++) {
    clg_memory_stats st;
    if (!a[i])
      continue;
    clg_allocator_stats(a[i], &st);
    if (room)
      CHECK_MSG(st.bytes_reserved == 2 * GiB && st.bytes_limit == 2 * GiB,
                "GPU:%d reserved %llu of a %llu limit, want all 2 GiB (MemAvailable %llu MiB)", i,
                (unsigned long long)st.bytes_reserved, (unsigned long long)st.bytes_limit,
                (unsigned long long)(avail / MiB));
    clg_allocator_destroy(a[i]);
  }
  if (room)
    CHECK_MSG(!strstr(log, "the host's"), "unexpected warning: %s", log);
  else
    printf("NOTE: MemAvailable %llu MiB is under 12 GiB: full reservations not required\n",
           (unsigned long long)(avail / MiB));
  clg_devices_free(devs);
}

int main(void)
{
  fflush(stdout);
  pid_t pid = fork(); /* before OpenCL starts its threads */
  CHECK(pid >= 0);
  if (pid == 0)
    exit(child_main());
  int status = 0;
  CHECK(pid < 0 || waitpid(pid, &status, 0) == pid);
  CHECK_MSG(pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
            "the child under RLIMIT_AS %s %d", WIFSIGNALED(status) ? "died of signal" : "exited",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_host_memory");
  whole_when_room();
  return clg_test_summary("test_host_memory");
}
