/* What a device whose memory is the host's may take (the region policy asks, regions.c).
 *
 * PoCL's CPU devices report most of the host's memory (21.5 GiB per device on a 23 GiB
 * machine) and allocate it lazily: reserving and touching all of it on four stand-ins wakes
 * the OOM killer, and under an address-space limit (ulimit -v) PoCL aborts on a failed
 * allocation (pocl_create_migration_commands: Assertion 'p->mem_ptr != NULL'). So such a
 * device never takes more than the host can spare now, and the default mode's reservations
 * share it: each takes what is spare now divided by the host-memory devices of its context
 * that hold no reservation yet (one reservation at a time, under host_share.mu, so that
 * the next one sees this one's memory gone and the shares come out equal). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "memory/memory_internal.h"

/* The OpenCL C compiler (LLVM, in PoCL) maps hundreds of MiB while it builds a GEMM kernel,
 * and a run reserves every device's arena before its first kernel is built. */
#define HOST_MARGIN_MIN (768ull << 20)

static struct {
  pthread_mutex_t mu;
  const void **reserved; /* device keys: one entry per live default-mode reservation */
  int num, cap;
} host_share = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Bytes of live regions of host memory that were not filled at creation (regions.c). A
 * region's pages leave MemAvailable only as tensors use them, so spare takes the whole
 * region as gone, as a filled one is: the shares of the default mode come out as when every
 * region was filled. (Pages in use are then counted twice: a later reservation can only get
 * less, never more than the host has.) */
static _Atomic uint64_t untouched_bytes;

void clg_hostshare_untouched(uint64_t add, uint64_t remove)
{
  if (add)
    atomic_fetch_add(&untouched_bytes, add);
  if (remove)
    atomic_fetch_sub(&untouched_bytes, remove);
}

void clg_hostshare_lock(void) { pthread_mutex_lock(&host_share.mu); }

void clg_hostshare_unlock(void) { pthread_mutex_unlock(&host_share.mu); }

static bool host_share_listed(const void *d)
{
  for (int i = 0; i < host_share.num; i++)
    if (host_share.reserved[i] == d)
      return true;
  return false;
}

int clg_hostshare_count(const clg_device *dev)
{
  return clg_device_ops_of(dev)->buffers->count_peers(dev, host_share_listed) + 1;
}

bool clg_hostshare_add(const clg_device *dev)
{
  if (host_share.num == host_share.cap) {
    int cap = host_share.cap ? 2 * host_share.cap : 8;
    const void **p = realloc(host_share.reserved, sizeof *p * (size_t)cap);
    if (!p)
      return false;
    host_share.reserved = p;
    host_share.cap = cap;
  }
  host_share.reserved[host_share.num++] = clg_device_ops_of(dev)->buffers->device_key(dev);
  return true;
}

void clg_hostshare_remove(const clg_device *dev)
{
  const void *key = clg_device_ops_of(dev)->buffers->device_key(dev);
  pthread_mutex_lock(&host_share.mu);
  for (int i = 0; i < host_share.num; i++)
    if (host_share.reserved[i] == key) {
      host_share.reserved[i] = host_share.reserved[--host_share.num];
      break;
    }
  if (host_share.num == 0) {
    free(host_share.reserved);
    host_share.reserved = NULL;
    host_share.cap = 0;
  }
  pthread_mutex_unlock(&host_share.mu);
}

/* MemAvailable from /proc/meminfo in bytes; the free pages of sysconf without it. */
static uint64_t host_mem_available(void)
{
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[128];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
      found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    if (found)
      return (uint64_t)kib << 10;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
}

/* What RLIMIT_AS leaves this process to map: the limit less the mapped size now
 * (/proc/self/statm); UINT64_MAX without a limit. */
static uint64_t host_as_headroom(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return UINT64_MAX;
  uint64_t limit = (uint64_t)rl.rlim_cur, mapped = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    unsigned long long pages = 0;
    long page = sysconf(_SC_PAGESIZE);
    if (fscanf(f, "%llu", &pages) == 1 && page > 0)
      mapped = (uint64_t)pages * (uint64_t)page;
    fclose(f);
  }
  return limit > mapped ? limit - mapped : 0;
}

/* What the host can spare now: the smaller of MemAvailable and the RLIMIT_AS headroom,
 * less a margin (a 32nd, at least HOST_MARGIN_MIN) for the kernel compiler, host tensors
 * and the rest of the program. An eighth cut the tests' 2 GiB devices when two suites ran
 * side by side on a 23 GiB machine (MemAvailable 8.4 GiB for 8 GiB). Fills why with the numbers,
 * for warnings. */
uint64_t clg_hostshare_spare(char *why, size_t why_size)
{
  uint64_t avail = host_mem_available(), headroom = host_as_headroom();
  /* (RLIMIT_AS's headroom already counts them: mapped is mapped) */
  uint64_t untouched = atomic_load(&untouched_bytes);
  if (avail != UINT64_MAX)
    avail = avail > untouched ? avail - untouched : 0;
  uint64_t base = avail < headroom ? avail : headroom;
  uint64_t margin = base / 32 > HOST_MARGIN_MIN ? base / 32 : HOST_MARGIN_MIN;
  uint64_t spare = base > margin ? base - margin : 0;
  char b1[32], b2[32], b3[32];
  if (headroom == UINT64_MAX)
    snprintf(b2, sizeof b2, "no limit");
  else
    clg_logq_bytes(headroom, b2, sizeof b2);
  char b4[32];
  snprintf(why, why_size, "MemAvailable %s%s%s%s, RLIMIT_AS headroom %s, less a margin of %s",
           avail == UINT64_MAX ? "unknown" : clg_logq_bytes(avail, b1, sizeof b1),
           untouched ? " (after " : "", untouched ? clg_logq_bytes(untouched, b4, sizeof b4) : "",
           untouched ? " reserved but not yet used)" : "", b2,
           clg_logq_bytes(margin, b3, sizeof b3));
  return spare;
}
