/* The per-device allocator (TensorFlow's GPU_<id>_bfc): regions of device memory carved
 * into blocks by clg_suballoc, TensorFlow's memory options, statistics, dumps.
 *
 * OpenCL devices: each region is one cl_mem of at most CL_DEVICE_MAX_MEM_ALLOC_SIZE bytes,
 * filled with zeros on a private queue as soon as it is created, because drivers (PoCL,
 * NVIDIA) allocate lazily and would otherwise fail later, in the middle of a kernel. The
 * suballocator's region ids are indices in regions[], so a block's cl_mem is one load.
 *
 * The host CPU:0: each block is its own 64-byte-aligned malloc, with a header that links
 * it into a list (for the dump) and lets a free check that it is a live block.
 *
 * One mutex per allocator covers everything; it is dropped only while waiting for events
 * of blocks that were freed with a command still using them.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "memory/memory.h"

#define GROWTH_FIRST_REGION (2ull << 20)
#define HOST_ALIGN 64u
#define HOST_MAGIC 0x636c6762u /* "clgb" */
#define BACKPEDAL_TRIES 8
/* How long an allocation that only pending frees could satisfy waits for their events:
 * TensorFlow's kMaxMillisToWait for allocation retries. */
#define PENDING_WAIT_NS 10000000000ull

typedef struct region {
  cl_mem mem; /* NULL: an empty slot */
  uint64_t size;
} region;

typedef struct pending {
  clg_block block;
  cl_event event;
} pending;

/* Host block header; the memory follows it at HOST_ALIGN. */
typedef struct host_hdr {
  struct host_hdr *prev, *next;
  size_t size;
  uint32_t magic;
} host_hdr;

_Static_assert(sizeof(host_hdr) <= HOST_ALIGN, "the host header fits in one alignment unit");

/* A block's label (clg_allocator_label): OpenCL blocks by (region, offset), host ones by
 * address. */
typedef struct label {
  uint32_t region;
  uint64_t offset;
  void *host;
  char *text;
} label;

/* Messages to log once the lock is dropped. */
typedef struct logq {
  int n;
  clg_log_level level[4];
  char *text[4];
} logq;

struct clg_allocator {
  clg_device *dev;
  char name[32];
  clg_memory_options opt; /* effective: after CLGRAPH_FORCE_GPU_ALLOW_GROWTH */
  bool is_host, growth, gc;
  pthread_mutex_t mu;
  uint64_t limit, align, max_region;

  /* OpenCL devices */
  clg_suballoc *sa;
  region *regions;
  uint32_t num_slots, cap_slots;
  uint64_t next_region_size; /* allow_growth: TensorFlow's curr_region_allocation_bytes_ */
  uint64_t largest_grow;     /* allow_growth: the largest request that needed a new region */
  bool reserve_done;         /* the default mode reserved its limit at first use */
  bool host_memory;          /* the device's memory is the host's (CPU type, unified memory) */
  bool host_share_listed;    /* its reservation is in host_share.reserved */
  cl_command_queue fill_queue;
  char region_error[320]; /* the last failure to create a region, for the OOM message */

  /* blocks freed while a command may still use them */
  pending *pend;
  size_t num_pend, cap_pend;
  uint64_t bytes_pending;

  /* the host */
  host_hdr *host_blocks;

  /* labels of blocks in use, for memory maps; few (arenas, Consts, variables) */
  label *labels;
  size_t num_labels, cap_labels;

  /* statistics */
  uint64_t in_use, peak_in_use, num_allocs, live, largest_alloc;
  uint64_t reserved, peak_reserved;
};

/* --- small helpers ------------------------------------------------------------------ */

static void logq_add(logq *q, clg_log_level level, char *text)
{
  if (!text)
    return;
  if (q->n == 4) {
    free(text);
    return;
  }
  q->level[q->n] = level;
  q->text[q->n++] = text;
}

static void logq_flush(logq *q)
{
  for (int i = 0; i < q->n; i++) {
    clg_log(q->level[i], "%s", q->text[i]);
    free(q->text[i]);
  }
  q->n = 0;
}

static char *format_text(const char *fmt, ...) CLG_PRINTF(1, 2);
static char *format_text(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* TensorFlow's HumanReadableNumBytes: "512B", "1.00MiB", "6.84GiB". */
static const char *human_bytes(uint64_t n, char *buf, size_t size)
{
  static const char units[] = "KMGTPE";
  if (n < 1024) {
    snprintf(buf, size, "%lluB", (unsigned long long)n);
    return buf;
  }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, size, "%.2f%ciB", v, units[u]);
  return buf;
}

static uint64_t round_down(uint64_t n, uint64_t align) { return n & ~(align - 1); }

static void sleep_us(unsigned us)
{
  struct timespec ts = {0, (long)us * 1000};
  nanosleep(&ts, NULL);
}

/* "true" -> 1, "false" -> 0, unset -> -1, anything else -> -2. */
static int env_bool(const char *name, const char **raw)
{
  const char *v = getenv(name);
  *raw = v;
  if (!v)
    return -1;
  if (strcmp(v, "true") == 0)
    return 1;
  if (strcmp(v, "false") == 0)
    return 0;
  return -2;
}

static void stats_on_alloc(clg_allocator *a, uint64_t size)
{
  a->in_use += size;
  if (a->in_use > a->peak_in_use)
    a->peak_in_use = a->in_use;
  a->num_allocs++;
  a->live++;
  if (size > a->largest_alloc)
    a->largest_alloc = size;
}

static void stats_on_reserve(clg_allocator *a, uint64_t size)
{
  a->reserved += size;
  if (a->reserved > a->peak_reserved)
    a->peak_reserved = a->reserved;
}

/* --- creation ----------------------------------------------------------------------- */

/* What the default limit leaves to the driver and other programs: TensorFlow's
 * MinSystemMemory (225 MiB below 2 GiB; else by compute capability, 500 MiB up to 6.x,
 * 1050 MiB for 7.x, 1536 MiB for 8.x, 1800 MiB from 9.0; other vendors get the 500 MiB of
 * the oldest class), or CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB (TF_DEVICE_MIN_SYS_MEMORY_IN_MB).
 * On the H200 a limit of the whole memory failed: its fourth 35 GiB region was refused.
 * OpenCL devices of CPU type (PoCL) take host memory, which has no such driver share. This is
 * the share of the whole card; system_memory gives a part of it its own. */
static uint64_t card_system_memory(const clg_device *dev, logq *q)
{
  const uint64_t MiB = 1ull << 20;
  const uint64_t total = dev->physical_mem ? dev->physical_mem : dev->info.global_mem;
  uint64_t want = 0;
  const char *raw;
  int got = clg_env_mib("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", &want, &raw);
  if (got == 0)
    logq_add(q, CLG_LOG_WARNING,
             format_text("The environment variable CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB=%s is "
                         "invalid. The request will be ignored.",
                         raw));
  else if (got == 1 && want > total)
    logq_add(q, CLG_LOG_WARNING,
             format_text("The requested reserved device memory %.2fGiB is larger than the "
                         "available memory of %.2fGiB. The request is ignored.",
                         (double)want / (double)(1ull << 30),
                         (double)total / (double)(1ull << 30)));
  else if (got == 1)
    return want;
  if (dev->info.cl_type && strcmp(dev->info.cl_type, "CPU") == 0)
    return 0;
  uint64_t sys = 500 * MiB;
  int cc = dev->info.nv_cc_major;
  if (total < 2048 * MiB)
    sys = 225 * MiB;
  else if (cc >= 9)
    sys = 1800 * MiB;
  else if (cc == 8)
    sys = 1536 * MiB;
  else if (cc == 7)
    sys = 1050 * MiB;
  return sys < total ? sys : 0;
}

/* A part of a card (CLGRAPH_VIRTUAL_DEVICES) leaves its fraction of the card's share: the
 * whole share on each 2 GiB part of an H200 would leave 248 MiB of it. */
static uint64_t system_memory(const clg_device *dev, logq *q)
{
  uint64_t sys = card_system_memory(dev, q);
  if (!dev->physical_mem || dev->physical_mem <= dev->info.global_mem)
    return sys;
  return (uint64_t)((double)sys * (double)dev->info.global_mem / (double)dev->physical_mem);
}

/* --- devices whose memory is the host's ---------------------------------------------- */

/* PoCL's CPU devices report most of the host's memory (21.5 GiB per device on a 23 GiB
 * machine) and allocate it lazily: reserving and touching all of it on four stand-ins wakes
 * the OOM killer, and under an address-space limit (ulimit -v) PoCL aborts on a failed
 * allocation (pocl_create_migration_commands: Assertion 'p->mem_ptr != NULL'). So such a
 * device never takes more than the host can spare now, and the default mode's reservations
 * share it: each takes what is spare now divided by the host-memory devices of its context
 * that hold no reservation yet (one reservation at a time, under host_share.mu, so that
 * the next one sees this one's memory gone and the shares come out equal). */
/* The OpenCL C compiler (LLVM, in PoCL) maps hundreds of MiB while it builds a GEMM kernel,
 * and a run reserves every device's arena before its first kernel is built. */
#define HOST_MARGIN_MIN (768ull << 20)

static struct {
  pthread_mutex_t mu;
  cl_device_id *reserved; /* one entry per live default-mode reservation */
  int num, cap;
} host_share = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static bool cl_device_uses_host_memory(cl_device_id d)
{
  cl_device_type type = 0;
  cl_bool unified = CL_FALSE;
  if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
      (type & CL_DEVICE_TYPE_CPU))
    return true;
  return clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) ==
             CL_SUCCESS &&
         unified == CL_TRUE;
}

static bool device_uses_host_memory(const clg_device *dev)
{
  return (dev->info.cl_type && strcmp(dev->info.cl_type, "CPU") == 0) ||
         cl_device_uses_host_memory(dev->cl_device);
}

static bool host_share_listed(cl_device_id d)
{
  for (int i = 0; i < host_share.num; i++)
    if (host_share.reserved[i] == d)
      return true;
  return false;
}

/* How many devices share what the host can spare: the host-memory devices of dev's context
 * without a reservation, dev included (host_share.mu held). */
static int host_share_count(const clg_device *dev)
{
  cl_uint n = 0;
  int count = 0;
  cl_device_id ids[64];
  if (clGetContextInfo(dev->context, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL) == CL_SUCCESS &&
      n <= sizeof ids / sizeof ids[0] &&
      clGetContextInfo(dev->context, CL_CONTEXT_DEVICES, n * sizeof ids[0], ids, NULL) ==
          CL_SUCCESS)
    for (cl_uint i = 0; i < n; i++)
      if (ids[i] != dev->cl_device && !host_share_listed(ids[i]) &&
          cl_device_uses_host_memory(ids[i]))
        count++;
  return count + 1;
}

/* Records a's reservation (host_share.mu held); false when out of host memory. */
static bool host_share_add(clg_allocator *a)
{
  if (host_share.num == host_share.cap) {
    int cap = host_share.cap ? 2 * host_share.cap : 8;
    cl_device_id *p = realloc(host_share.reserved, sizeof *p * (size_t)cap);
    if (!p)
      return false;
    host_share.reserved = p;
    host_share.cap = cap;
  }
  host_share.reserved[host_share.num++] = a->dev->cl_device;
  return true;
}

static void host_share_remove(clg_allocator *a)
{
  pthread_mutex_lock(&host_share.mu);
  for (int i = 0; i < host_share.num; i++)
    if (host_share.reserved[i] == a->dev->cl_device) {
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
static uint64_t host_spare(char *why, size_t why_size)
{
  uint64_t avail = host_mem_available(), headroom = host_as_headroom();
  uint64_t base = avail < headroom ? avail : headroom;
  uint64_t margin = base / 32 > HOST_MARGIN_MIN ? base / 32 : HOST_MARGIN_MIN;
  uint64_t spare = base > margin ? base - margin : 0;
  char b1[32], b2[32], b3[32];
  if (headroom == UINT64_MAX)
    snprintf(b2, sizeof b2, "no limit");
  else
    human_bytes(headroom, b2, sizeof b2);
  snprintf(why, why_size, "MemAvailable %s, RLIMIT_AS headroom %s, less a margin of %s",
           avail == UINT64_MAX ? "unknown" : human_bytes(avail, b1, sizeof b1), b2,
           human_bytes(margin, b3, sizeof b3));
  return spare;
}

clg_code clg_allocator_new(clg_device *dev, const clg_memory_options *opt, clg_allocator **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: out is NULL");
  *out = NULL;
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: dev is NULL");
  clg_memory_options o = {0};
  if (opt)
    o = *opt;
  double f = o.per_process_gpu_memory_fraction;
  char text[CLG_DOUBLE_TEXT];
  if (isnan(f) || f < 0 || f > 1)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "per_process_gpu_memory_fraction = %s is out of range: it must be in [0, 1] "
                     "(0 means the whole memory)",
                     clg_double_text(f, text));
  if (!dev->is_host && (!dev->context || !dev->cl_device))
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: %s has no OpenCL context",
                     dev->info.name ? dev->info.name : "the device");

  clg_allocator *a = calloc(1, sizeof *a);
  if (!a)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an allocator");
  a->dev = dev;
  a->is_host = dev->is_host;
  logq q = {0};
  if (a->is_host) {
    snprintf(a->name, sizeof a->name, "cpu");
    a->align = HOST_ALIGN;
    a->limit = o.host_limit;
  } else {
    snprintf(a->name, sizeof a->name, "GPU_%d_bfc", dev->info.id);
    const char *raw;
    int forced = env_bool("CLGRAPH_FORCE_GPU_ALLOW_GROWTH", &raw);
    int orig = o.allow_growth != 0;
    if (forced == -2)
      logq_add(&q, CLG_LOG_ERROR,
               format_text("The CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set but "
                           "could not be parsed: \"%s\". Valid values are \"true\" or \"false\". "
                           "Using original config value of %d.",
                           raw, orig));
    else if (forced >= 0 && forced != orig)
      logq_add(&q, CLG_LOG_WARNING,
               format_text("Overriding allow_growth setting because the "
                           "CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set. Original "
                           "config value was %d.",
                           orig));
    o.allow_growth = forced >= 0 ? forced : orig;
    int gc = env_bool("CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION", &raw);
    if (gc == -2)
      logq_add(&q, CLG_LOG_ERROR,
               format_text("The CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION environment variable is "
                           "set but could not be parsed: \"%s\". Valid values are \"true\" or "
                           "\"false\". Using the default value \"true\".",
                           raw));
    a->gc = gc != 0;
    a->growth = o.allow_growth;

    /* Offsets must suit the device (CL_DEVICE_MEM_BASE_ADDR_ALIGN) and TensorFlow's 256. */
    uint64_t align = 256;
    while (align < dev->info.base_addr_align)
      align *= 2;
    a->align = align;
    uint64_t limit = dev->info.global_mem;
    if (dev->info.memory_limit)
      limit = dev->info.memory_limit;
    else if (f > 0)
      limit = (uint64_t)((double)dev->info.global_mem * f);
    else
      limit -= system_memory(dev, &q);
    a->limit = round_down(limit, align);
    a->max_region = round_down(dev->info.max_alloc ? dev->info.max_alloc : a->limit, align);
    a->next_region_size = GROWTH_FIRST_REGION < a->limit ? GROWTH_FIRST_REGION : a->limit;
    if (a->next_region_size < align)
      a->next_region_size = align;
    a->host_memory = device_uses_host_memory(dev);
    a->sa = clg_suballoc_new(align);
    if (!a->sa) {
      free(a);
      logq_flush(&q);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an allocator");
    }
  }
  a->opt = o;
  pthread_mutex_init(&a->mu, NULL);

  logq_flush(&q);
  if (clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s on %s: limit %llu bytes%s, alignment %llu, regions up to %llu bytes",
            a->name, dev->info.full_name ? dev->info.full_name : "?", (unsigned long long)a->limit,
            a->is_host ? (a->limit ? "" : " (none)") : (a->growth ? ", allow_growth" : ""),
            (unsigned long long)a->align, (unsigned long long)a->max_region);
  *out = a;
  return CLG_OK;
}

static void release_now(clg_allocator *a, const clg_block *b);

void clg_allocator_destroy(clg_allocator *a)
{
  if (!a)
    return;
  if (a->host_share_listed)
    host_share_remove(a);
  for (size_t i = 0; i < a->num_pend; i++)
    clReleaseEvent(a->pend[i].event);
  free(a->pend);
  for (size_t i = 0; i < a->num_labels; i++)
    free(a->labels[i].text);
  free(a->labels);
  if (a->live && clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s: destroyed with %llu blocks (%llu bytes) in use", a->name,
            (unsigned long long)a->live, (unsigned long long)a->in_use);
  for (uint32_t i = 0; i < a->num_slots; i++)
    if (a->regions[i].mem)
      clReleaseMemObject(a->regions[i].mem); /* the driver keeps it while commands use it */
  free(a->regions);
  if (a->fill_queue) {
    clFinish(a->fill_queue);
    clReleaseCommandQueue(a->fill_queue);
  }
  for (host_hdr *h = a->host_blocks, *next; h; h = next) {
    next = h->next;
    h->magic = 0;
    clg_aligned_free(h);
  }
  clg_suballoc_free_all(a->sa);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

/* --- regions ------------------------------------------------------------------------ */

/* Records why a region could not be made (for the OOM message) and returns
 * RESOURCE_EXHAUSTED. */
static clg_code region_fail(clg_allocator *a, uint64_t size, cl_int err, const char *call)
{
  snprintf(a->region_error, sizeof a->region_error,
           "creating a region of %llu bytes failed: %s (%d) in %s", (unsigned long long)size,
           clg_cl_error_name(err), (int)err, call);
  return clg_error(CLG_RESOURCE_EXHAUSTED, "%s on %s by allocator %s", a->region_error,
                   a->dev->info.full_name, a->name);
}

/* Creates a cl_mem of `size` bytes, makes it real by filling it, adds it as a region. */
static clg_code region_create(clg_allocator *a, uint64_t size)
{
  uint32_t slot = 0;
  while (slot < a->num_slots && a->regions[slot].mem)
    slot++;
  if (slot == a->cap_slots) {
    uint32_t cap = a->cap_slots ? a->cap_slots * 2 : 8;
    region *p = realloc(a->regions, sizeof *p * cap);
    if (!p)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory adding a region to %s", a->name);
    a->regions = p;
    a->cap_slots = cap;
  }
  cl_int err = CL_SUCCESS;
  if (!a->fill_queue) {
    a->fill_queue = clCreateCommandQueue(a->dev->context, a->dev->cl_device, 0, &err);
    if (err != CL_SUCCESS) {
      a->fill_queue = NULL;
      return region_fail(a, size, err, "clCreateCommandQueue");
    }
  }
  uint64_t t0 = clg_now_ns();
  cl_mem mem = clCreateBuffer(a->dev->context, CL_MEM_READ_WRITE, (size_t)size, NULL, &err);
  if (err != CL_SUCCESS || !mem)
    return region_fail(a, size, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES, "clCreateBuffer");
  const cl_uint zero = 0;
  cl_event ev = NULL;
  err = clEnqueueFillBuffer(a->fill_queue, mem, &zero, sizeof zero, 0, (size_t)size, 0, NULL, &ev);
  const char *call = "clEnqueueFillBuffer";
  if (err == CL_SUCCESS) {
    call = "clWaitForEvents";
    err = clWaitForEvents(1, &ev);
    cl_int status = CL_COMPLETE;
    if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
      cl_int e2 =
          clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
      if (e2 == CL_SUCCESS && status < 0) {
        err = status;
        call = "clEnqueueFillBuffer (execution)";
      }
    }
    clReleaseEvent(ev);
  }
  if (err != CL_SUCCESS) {
    clReleaseMemObject(mem);
    return region_fail(a, size, err, call);
  }
  if (clg_suballoc_add_region(a->sa, slot, size) != CLG_OK) {
    clReleaseMemObject(mem);
    return clg_error_prefix("%s: ", a->name);
  }
  a->regions[slot] = (region){mem, size};
  if (slot == a->num_slots)
    a->num_slots++;
  stats_on_reserve(a, size);
  if (clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s: region %u of %llu bytes created and touched in %.1f ms", a->name,
            slot, (unsigned long long)size, (double)(clg_now_ns() - t0) / 1e6);
  return CLG_OK;
}

static void region_destroy(clg_allocator *a, uint32_t slot)
{
  clg_suballoc_remove_region(a->sa, slot);
  clReleaseMemObject(a->regions[slot].mem);
  a->reserved -= a->regions[slot].size;
  a->regions[slot] = (region){NULL, 0};
  while (a->num_slots && !a->regions[a->num_slots - 1].mem)
    a->num_slots--;
}

/* Creates a region of `size` bytes, or smaller ones down to `need` when the driver refuses
 * (TensorFlow's backpedal by 0.9). */
static clg_code region_create_backpedal(clg_allocator *a, uint64_t size, uint64_t need,
                                        uint64_t *made)
{
  clg_code code = CLG_RESOURCE_EXHAUSTED;
  for (int i = 0; i < BACKPEDAL_TRIES; i++) {
    code = region_create(a, size);
    if (code == CLG_OK) {
      *made = size;
      return CLG_OK;
    }
    if (size <= need)
      break;
    uint64_t next = round_down((uint64_t)((double)size * 0.9), a->align);
    size = next > need ? next : need;
  }
  return code;
}

/* Adds a region that can hold `rounded` bytes (TensorFlow's Extend). In growth mode a new
 * region is the largest of:
 *  - next_region_size: an eighth of the pool (at least 2 MiB), geometric growth by 1.125
 *    rather than TensorFlow's doubling, which can leave half of the newest region unused;
 *  - twice the largest request that has needed a region, at most the pool plus the request
 *    (a lone first tensor gets a region of its own size), and only while as much again
 *    stays below the limit (near it, regions of the request's size leave the rest usable);
 *  - the request.
 * Why the second term: a block cannot span two regions, so regions no bigger than the large
 * tensors fill with a few of them plus small blocks, leaving holes no large tensor fits, and
 * the pool grows although a third of it is free. A region of two large tensors keeps room
 * for one more. Peak reserved / peak in use from `clgraph bench alloc` (PoCL 2 GiB and
 * 140 GiB, NVIDIA H200): random trace 1.250 (H200: 1.407) -> 1.282 on all three; the trace
 * 1.568 -> 1.214. Simulated over 24 seeds x base alignments 256 and 512: means 1.354 ->
 * 1.293 (random) and 1.747 -> 1.433 (the trace). The goal of 1.15 on the random trace was
 * not reached by any bounded policy tried (steps of 1/32..1/2 of the pool, exact regions
 * for large requests or for fragmentation failures, separate pools for small and large
 * blocks, lowest-address fit, small blocks from the end of free blocks): one unbounded
 * region alone, with no region boundary and no growth overshoot, has a high-water mark of
 * 1.150 on it (1.12..1.26 over seeds). Regions are never given back (TensorFlow: never
 * release) except by garbage collection before an OOM. */
static clg_code extend(clg_allocator *a, uint64_t rounded)
{
  if (rounded > a->max_region)
    return CLG_RESOURCE_EXHAUSTED;
  uint64_t available = a->limit > a->reserved ? round_down(a->limit - a->reserved, a->align) : 0;
  if (a->host_memory) { /* never more than the host can spare: PoCL aborts, or OOM kills */
    char why[160], b1[32];
    uint64_t spare = round_down(host_spare(why, sizeof why), a->align);
    if (spare < available) {
      available = spare;
      if (rounded > available)
        snprintf(a->region_error, sizeof a->region_error,
                 "the device's memory is the host's, which can spare %s now (%s)",
                 human_bytes(spare, b1, sizeof b1), why);
    }
  }
  if (rounded > available)
    return CLG_RESOURCE_EXHAUSTED;
  uint64_t size = available;
  if (a->growth) {
    uint64_t largest = rounded > a->largest_grow ? rounded : a->largest_grow;
    uint64_t room = largest <= UINT64_MAX / 2 ? 2 * largest : UINT64_MAX;
    if (room > a->reserved + rounded)
      room = a->reserved + rounded;
    size = a->next_region_size > rounded ? a->next_region_size : rounded;
    /* Near the limit the extra room could make a later request fail that would have fit in
     * a smaller region, so it is taken only while as much again stays available. */
    if (room > size && room <= available / 2)
      size = room;
    size = round_down(size + a->align - 1, a->align);
  }
  uint64_t bytes = size < available ? size : available;
  if (bytes > a->max_region)
    bytes = a->max_region;
  uint64_t made = 0;
  if (region_create_backpedal(a, bytes, rounded, &made) != CLG_OK)
    return CLG_RESOURCE_EXHAUSTED;
  if (a->growth) {
    if (rounded > a->largest_grow) /* only once made: a refused request does not count */
      a->largest_grow = rounded;
    uint64_t step = a->reserved / 8;
    a->next_region_size = step > GROWTH_FIRST_REGION ? step : GROWTH_FIRST_REGION;
  }
  return CLG_OK;
}

/* The default mode: reserve the whole limit at first use, in regions of at most
 * max_region bytes. A region the device refuses is retried smaller (0.9x, as TensorFlow's
 * backpedal); when the device gives less than the limit, a warning says how much. */
static void reserve_all(clg_allocator *a, logq *q)
{
  uint64_t t0 = clg_now_ns();
  int made = 0;
  if (a->host_memory) {
    /* Held while reserving, so that the next device's share sees this one's memory gone. */
    pthread_mutex_lock(&host_share.mu);
    int sharing = host_share_count(a->dev);
    char why[160], b1[32], b2[32], b3[32];
    uint64_t spare = host_spare(why, sizeof why);
    uint64_t share = round_down(spare / (uint64_t)sharing, a->align);
    if (share < a->limit) {
      logq_add(q, CLG_LOG_WARNING,
               format_text("%s on %s: the device's memory is the host's, so the default mode "
                           "reserves only %s of its %s limit: the host can spare %s now (%s), "
                           "shared by %d device(s) without a reservation. Set POCL_MEMORY_LIMIT "
                           "(PoCL), per_process_gpu_memory_fraction or allow_growth to ask for "
                           "less.",
                           a->name, a->dev->info.full_name, human_bytes(share, b1, sizeof b1),
                           human_bytes(a->limit, b2, sizeof b2), human_bytes(spare, b3, sizeof b3),
                           why, sharing));
      a->limit = share;
    }
  }
  while (a->limit > a->reserved && round_down(a->limit - a->reserved, a->align) > 0) {
    uint64_t available = round_down(a->limit - a->reserved, a->align);
    uint64_t size = available < a->max_region ? available : a->max_region;
    uint64_t got = 0;
    if (region_create_backpedal(a, size, a->align, &got) != CLG_OK)
      break;
    made++;
    if (got < size)
      break; /* the device is full: smaller pieces would only fragment the pool */
  }
  if (a->host_memory) {
    a->host_share_listed = host_share_add(a);
    pthread_mutex_unlock(&host_share.mu);
  }
  if (a->reserved < a->limit)
    logq_add(q, CLG_LOG_WARNING,
             format_text("%s could reserve only %llu of its %llu-byte limit on %s (%s); "
                         "allocations beyond that fail. Set per_process_gpu_memory_fraction or "
                         "raise CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB to leave the driver more.",
                         a->name, (unsigned long long)a->reserved, (unsigned long long)a->limit,
                         a->dev->info.full_name, a->region_error));
  if (clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s: reserved %llu of %llu bytes in %d regions in %.1f ms", a->name,
            (unsigned long long)a->reserved, (unsigned long long)a->limit, made,
            (double)(clg_now_ns() - t0) / 1e6);
}

/* --- pending frees ------------------------------------------------------------------ */

/* Releases the blocks whose events completed (or failed). Returns how many. */
static size_t reclaim(clg_allocator *a)
{
  size_t done = 0;
  for (size_t i = 0; i < a->num_pend;) {
    cl_int status = CL_COMPLETE;
    cl_int err = clGetEventInfo(a->pend[i].event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                &status, NULL);
    if (err == CL_SUCCESS && status > CL_COMPLETE) {
      i++;
      continue;
    }
    clReleaseEvent(a->pend[i].event);
    a->bytes_pending -= a->pend[i].block.size;
    release_now(a, &a->pend[i].block);
    a->pend[i] = a->pend[--a->num_pend];
    done++;
  }
  return done;
}

/* --- allocation on OpenCL devices --------------------------------------------------- */

static bool try_alloc(clg_allocator *a, uint64_t rounded, clg_block *out)
{
  uint32_t r;
  uint64_t off, size;
  if (!clg_suballoc_alloc(a->sa, rounded, &r, &off, &size))
    return false;
  out->mem = a->regions[r].mem;
  out->offset = (size_t)off;
  out->size = (size_t)size;
  out->host = NULL;
  out->region = r;
  stats_on_alloc(a, size);
  return true;
}

/* Waits (the lock dropped) for pending frees to complete, retrying after each one that
 * does, for at most PENDING_WAIT_NS. Polls rather than calling clWaitForEvents: a user
 * event or a command behind one may never complete, and TensorFlow bounds this wait too. */
typedef bool (*retry_fn)(clg_allocator *a, uint64_t rounded, clg_block *out);

static bool wait_pending(clg_allocator *a, uint64_t rounded, clg_block *out, retry_fn retry)
{
  uint64_t deadline = clg_now_ns() + PENDING_WAIT_NS;
  unsigned us = 20;
  while (a->num_pend) {
    if (reclaim(a)) {
      if (retry(a, rounded, out))
        return true;
      continue;
    }
    if (clg_now_ns() > deadline)
      break;
    pthread_mutex_unlock(&a->mu);
    sleep_us(us);
    pthread_mutex_lock(&a->mu);
    us = us < 1000 ? us * 2 : 1000;
  }
  return retry(a, rounded, out);
}

/* TensorFlow's DeallocateFreeRegions: when regions with nothing in use, given back,
 * leave room for a region that fits the request, give them back. */
static bool garbage_collect(clg_allocator *a, uint64_t rounded, logq *q)
{
  uint64_t free_regions = 0;
  int count = 0;
  for (uint32_t i = 0; i < a->num_slots; i++)
    if (a->regions[i].mem && clg_suballoc_region_used(a->sa, i) == 0) {
      free_regions += a->regions[i].size;
      count++;
    }
  if (!count || rounded > a->max_region || a->limit - a->reserved + free_regions < rounded)
    return false;
  logq_add(q, CLG_LOG_WARNING,
           format_text("Garbage collection: deallocate free memory regions (i.e., allocations) "
                       "so that we can re-allocate a larger region to avoid OOM due to memory "
                       "fragmentation. If you see this message frequently, you are running near "
                       "the threshold of the available device memory and re-allocation may incur "
                       "great performance overhead. You may try smaller batch sizes to observe "
                       "the performance impact. Set CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION=false "
                       "if you'd like to disable this feature."));
  for (uint32_t i = 0; i < a->num_slots; i++)
    if (a->regions[i].mem && clg_suballoc_region_used(a->sa, i) == 0)
      region_destroy(a, i);
  return true;
}

static void append_debug_string(clg_strbuf *s, const clg_memory_stats *st);
static void stats_locked(clg_allocator *a, clg_memory_stats *out);
static void dump_summary(clg_allocator *a, clg_strbuf *s);

/* Records the OOM error and queues the warning-level summary. */
static clg_code oom(clg_allocator *a, size_t bytes, uint64_t rounded, logq *q)
{
  clg_memory_stats st;
  stats_locked(a, &st);
  clg_strbuf extra;
  clg_strbuf_init(&extra);
  if (!a->is_host && rounded > a->max_region)
    clg_strbuf_printf(&extra, "; no block can exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu bytes",
                      (unsigned long long)a->max_region);
  if (a->region_error[0])
    clg_strbuf_printf(&extra, "; %s", a->region_error);
  clg_error(CLG_RESOURCE_EXHAUSTED,
            "OOM when allocating %zu bytes on %s by allocator %s: in use %llu bytes, limit %llu "
            "bytes, largest free block %llu bytes%s",
            bytes, a->dev->info.full_name, a->name, (unsigned long long)st.bytes_in_use,
            (unsigned long long)st.bytes_limit, (unsigned long long)st.largest_free_block,
            extra.buf ? extra.buf : "");
  clg_strbuf_free(&extra);
  if (clg_log_enabled(CLG_LOG_WARNING)) {
    char h[32];
    clg_strbuf s;
    clg_strbuf_init(&s);
    clg_strbuf_printf(&s,
                      "Allocator (%s) ran out of memory trying to allocate %s (rounded to %llu).  "
                      "Current allocation summary follows.\n",
                      a->name, human_bytes(bytes, h, sizeof h), (unsigned long long)rounded);
    dump_summary(a, &s);
    clg_strbuf_append(&s, "Stats: \n");
    append_debug_string(&s, &st);
    if (s.len && s.buf[s.len - 1] == '\n')
      s.buf[--s.len] = '\0';
    logq_add(q, CLG_LOG_WARNING, clg_strbuf_take(&s));
  }
  return CLG_RESOURCE_EXHAUSTED;
}

/* Everything after the first attempt failed (lock held). */
static clg_code alloc_slow(clg_allocator *a, size_t bytes, uint64_t rounded, clg_block *out,
                           logq *q)
{
  a->region_error[0] = '\0';
  if (!a->growth && !a->reserve_done) {
    a->reserve_done = true;
    reserve_all(a, q);
    if (try_alloc(a, rounded, out))
      return CLG_OK;
  }
  if (extend(a, rounded) == CLG_OK && try_alloc(a, rounded, out))
    return CLG_OK;
  if (a->num_pend) {
    if (wait_pending(a, rounded, out, try_alloc))
      return CLG_OK;
    if (extend(a, rounded) == CLG_OK && try_alloc(a, rounded, out))
      return CLG_OK;
  }
  if (a->gc && garbage_collect(a, rounded, q) && extend(a, rounded) == CLG_OK &&
      try_alloc(a, rounded, out))
    return CLG_OK;
  return oom(a, bytes, rounded, q);
}

/* --- the host ----------------------------------------------------------------------- */

static bool host_fits(clg_allocator *a, uint64_t rounded, clg_block *out)
{
  (void)out;
  return !a->limit || (rounded <= a->limit && a->in_use + a->bytes_pending <= a->limit - rounded);
}

static clg_code host_alloc(clg_allocator *a, size_t bytes, clg_block *out, logq *q)
{
  uint64_t rounded = ((uint64_t)bytes + HOST_ALIGN - 1) & ~(uint64_t)(HOST_ALIGN - 1);
  if (rounded < bytes || rounded > SIZE_MAX - HOST_ALIGN)
    return oom(a, bytes, UINT64_MAX & ~(uint64_t)(HOST_ALIGN - 1), q);
  if (!host_fits(a, rounded, NULL) && !(a->num_pend && wait_pending(a, rounded, NULL, host_fits)))
    return oom(a, bytes, rounded, q);
  host_hdr *h = clg_aligned_alloc(HOST_ALIGN, (size_t)rounded + HOST_ALIGN);
  if (!h)
    return oom(a, bytes, rounded, q);
  h->size = (size_t)rounded;
  h->magic = HOST_MAGIC;
  h->prev = NULL;
  h->next = a->host_blocks;
  if (h->next)
    h->next->prev = h;
  a->host_blocks = h;
  stats_on_alloc(a, rounded);
  stats_on_reserve(a, rounded);
  *out = (clg_block){.mem = NULL,
                     .offset = 0,
                     .size = (size_t)rounded,
                     .host = (char *)h + HOST_ALIGN,
                     .region = 0};
  return CLG_OK;
}

static host_hdr *host_header(const clg_block *b)
{
  return b->host ? (host_hdr *)(void *)((char *)b->host - HOST_ALIGN) : NULL;
}

/* --- the public calls --------------------------------------------------------------- */

clg_code clg_allocator_alloc(clg_allocator *a, size_t bytes, clg_block *out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_alloc: out is NULL");
  memset(out, 0, sizeof *out);
  if (!a)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_alloc: allocator is NULL");
  if (bytes == 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_allocator_alloc: bytes must be > 0, got 0 (allocator %s)", a->name);
  logq q = {0};
  clg_code code = CLG_OK;
  pthread_mutex_lock(&a->mu);
  if (a->num_pend)
    reclaim(a);
  if (a->is_host) {
    code = host_alloc(a, bytes, out, &q);
  } else {
    uint64_t rounded = ((uint64_t)bytes + a->align - 1) & ~(a->align - 1);
    if (rounded < bytes) /* wrapped around */
      rounded = UINT64_MAX & ~(a->align - 1);
    if (!try_alloc(a, rounded, out))
      code = alloc_slow(a, bytes, rounded, out, &q);
  }
  pthread_mutex_unlock(&a->mu);
  logq_flush(&q);
  return code;
}

static int label_find(const clg_allocator *a, const clg_block *b)
{
  for (size_t i = 0; i < a->num_labels; i++)
    if (a->is_host ? a->labels[i].host == b->host
                   : a->labels[i].region == b->region && a->labels[i].offset == b->offset)
      return (int)i;
  return -1;
}

static void label_forget(clg_allocator *a, const clg_block *b)
{
  int i = a->num_labels ? label_find(a, b) : -1;
  if (i < 0)
    return;
  free(a->labels[i].text);
  a->labels[i] = a->labels[--a->num_labels];
}

static void release_now(clg_allocator *a, const clg_block *b)
{
  label_forget(a, b);
  if (a->is_host) {
    host_hdr *h = host_header(b);
    if (h->prev)
      h->prev->next = h->next;
    else
      a->host_blocks = h->next;
    if (h->next)
      h->next->prev = h->prev;
    h->magic = 0;
    a->reserved -= h->size;
    clg_aligned_free(h);
  } else {
    clg_suballoc_release(a->sa, b->region, b->offset);
  }
}

/* True when b is a block this allocator handed out and nobody freed yet. */
static bool block_is_live(clg_allocator *a, const clg_block *b)
{
  if (a->is_host) {
    host_hdr *h = host_header(b);
    if (!h || h->magic != HOST_MAGIC || h->size != b->size)
      return false;
  } else {
    if (b->region >= a->num_slots || a->regions[b->region].mem != b->mem ||
        clg_suballoc_block_size(a->sa, b->region, b->offset) != b->size)
      return false;
  }
  for (size_t i = 0; i < a->num_pend; i++)
    if (a->pend[i].block.region == b->region && a->pend[i].block.offset == b->offset &&
        a->pend[i].block.host == b->host)
      return false;
  return true;
}

void clg_allocator_free(clg_allocator *a, const clg_block *b, cl_event pending_event)
{
  if (!a || !b || b->size == 0)
    return;
  pthread_mutex_lock(&a->mu);
  if (!pending_event && !a->is_host && !a->num_pend) {
    /* The common case: checked and freed with one lookup. */
    if (b->region < a->num_slots && a->regions[b->region].mem == b->mem &&
        clg_suballoc_release_sized(a->sa, b->region, b->offset, b->size)) {
      label_forget(a, b);
      a->in_use -= b->size;
      a->live--;
      pthread_mutex_unlock(&a->mu);
      return;
    }
  } else if (block_is_live(a, b)) {
    goto live;
  }
  pthread_mutex_unlock(&a->mu);
  clg_log(CLG_LOG_ERROR,
          "clg_allocator_free: allocator %s has no block in use of %zu bytes at region %u "
          "offset %zu (host %p); ignored",
          a->name, b->size, b->region, b->offset, b->host);
  return;
live:
  a->in_use -= b->size;
  a->live--;
  bool deferred = false;
  if (pending_event) {
    cl_int status = CL_COMPLETE;
    cl_int err = clGetEventInfo(pending_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                &status, NULL);
    if (err == CL_SUCCESS && status > CL_COMPLETE) {
      if (a->num_pend == a->cap_pend) {
        size_t cap = a->cap_pend ? a->cap_pend * 2 : 16;
        pending *p = realloc(a->pend, sizeof *p * cap);
        if (p) {
          a->pend = p;
          a->cap_pend = cap;
        }
      }
      if (a->num_pend < a->cap_pend && clRetainEvent(pending_event) == CL_SUCCESS) {
        a->pend[a->num_pend++] = (pending){*b, pending_event};
        a->bytes_pending += b->size;
        deferred = true;
      } else {
        /* No room to remember it: wait here rather than hand the block out early. */
        pthread_mutex_unlock(&a->mu);
        clWaitForEvents(1, &pending_event);
        pthread_mutex_lock(&a->mu);
      }
    }
  }
  if (!deferred)
    release_now(a, b);
  pthread_mutex_unlock(&a->mu);
}

/* --- statistics and dumps ------------------------------------------------------------ */

static void stats_locked(clg_allocator *a, clg_memory_stats *out)
{
  memset(out, 0, sizeof *out);
  out->bytes_in_use = a->in_use;
  out->peak_bytes_in_use = a->peak_in_use;
  out->bytes_reserved = a->reserved;
  out->peak_bytes_reserved = a->peak_reserved;
  out->num_allocs = a->num_allocs;
  out->live_allocs = a->live;
  out->largest_alloc_size = a->largest_alloc;
  out->bytes_pending = a->bytes_pending;
  if (a->is_host) {
    out->bytes_limit = a->limit ? a->limit : a->dev->info.global_mem;
    uint64_t used = a->in_use + a->bytes_pending;
    out->largest_free_block = out->bytes_limit > used ? out->bytes_limit - used : 0;
    out->num_regions = 0;
    out->fragmentation = 0;
  } else {
    clg_suballoc_info info;
    clg_suballoc_info_get(a->sa, &info);
    out->bytes_limit = a->limit;
    out->num_regions = info.regions;
    out->largest_free_block = info.largest_free;
    out->fragmentation =
        info.bytes_free ? (double)(info.bytes_free - info.largest_free) / (double)info.bytes_free
                        : 0.0;
  }
}

void clg_allocator_stats(clg_allocator *a, clg_memory_stats *out)
{
  if (!out)
    return;
  if (!a) {
    memset(out, 0, sizeof *out);
    return;
  }
  pthread_mutex_lock(&a->mu);
  stats_locked(a, out);
  pthread_mutex_unlock(&a->mu);
}

void clg_allocator_reset_peak(clg_allocator *a)
{
  if (!a)
    return;
  pthread_mutex_lock(&a->mu);
  a->peak_in_use = a->in_use;
  a->num_allocs = 0;
  a->largest_alloc = 0;
  pthread_mutex_unlock(&a->mu);
}

/* TensorFlow's AllocatorStats::DebugString. */
static void append_debug_string(clg_strbuf *s, const clg_memory_stats *st)
{
  clg_strbuf_printf(
      s,
      "Limit:            %20llu\n"
      "InUse:            %20llu\n"
      "MaxInUse:         %20llu\n"
      "NumAllocs:        %20llu\n"
      "MaxAllocSize:     %20llu\n"
      "Reserved:         %20llu\n"
      "PeakReserved:     %20llu\n"
      "LargestFreeBlock: %20llu\n",
      (unsigned long long)st->bytes_limit, (unsigned long long)st->bytes_in_use,
      (unsigned long long)st->peak_bytes_in_use, (unsigned long long)st->num_allocs,
      (unsigned long long)st->largest_alloc_size, (unsigned long long)st->bytes_reserved,
      (unsigned long long)st->peak_bytes_reserved, (unsigned long long)st->largest_free_block);
}

static bool is_pending(const clg_allocator *a, uint32_t region, uint64_t offset)
{
  for (size_t i = 0; i < a->num_pend; i++)
    if (a->pend[i].block.region == region && a->pend[i].block.offset == offset)
      return true;
  return false;
}

/* Per-region totals for the OOM summary. */
typedef struct region_sum {
  uint32_t region;
  uint64_t size, used, used_blocks, free_bytes, free_blocks, largest_free;
  uint64_t *sizes; /* sizes of blocks in use, for the by-size summary */
  size_t num_sizes, cap_sizes;
  bool open, failed;
  clg_strbuf *out;
} region_sum;

static void region_sum_flush(region_sum *rs)
{
  if (!rs->open)
    return;
  clg_strbuf_printf(rs->out,
                    "Region %u of size %llu: %llu in use in %llu blocks, %llu free in %llu blocks, "
                    "largest free block %llu\n",
                    rs->region, (unsigned long long)rs->size, (unsigned long long)rs->used,
                    (unsigned long long)rs->used_blocks, (unsigned long long)rs->free_bytes,
                    (unsigned long long)rs->free_blocks, (unsigned long long)rs->largest_free);
  rs->open = false;
}

static void summary_visit(void *user, uint32_t region, uint64_t region_size, uint64_t offset,
                          uint64_t size, bool in_use)
{
  (void)offset;
  region_sum *rs = user;
  if (!rs->open || rs->region != region) {
    region_sum_flush(rs);
    rs->open = true;
    rs->region = region;
    rs->size = region_size;
    rs->used = rs->used_blocks = rs->free_bytes = rs->free_blocks = rs->largest_free = 0;
  }
  if (in_use) {
    rs->used += size;
    rs->used_blocks++;
    if (rs->num_sizes == rs->cap_sizes && !rs->failed) {
      size_t cap = rs->cap_sizes ? rs->cap_sizes * 2 : 256;
      uint64_t *p = realloc(rs->sizes, sizeof *p * cap);
      if (p) {
        rs->sizes = p;
        rs->cap_sizes = cap;
      } else {
        rs->failed = true;
      }
    }
    if (rs->num_sizes < rs->cap_sizes)
      rs->sizes[rs->num_sizes++] = size;
  } else {
    rs->free_bytes += size;
    rs->free_blocks++;
    if (size > rs->largest_free)
      rs->largest_free = size;
  }
}

static int cmp_u64(const void *x, const void *y)
{
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

/* The OOM summary (TensorFlow's DumpMemoryLog, condensed): one line per region, the blocks
 * in use by size, the pool totals. */
static void dump_summary(clg_allocator *a, clg_strbuf *s)
{
  char h[32];
  if (a->is_host) {
    clg_strbuf_printf(s, "Host blocks in use: %llu, %llu bytes; pending: %llu bytes\n",
                      (unsigned long long)a->live, (unsigned long long)a->in_use,
                      (unsigned long long)a->bytes_pending);
    return;
  }
  region_sum rs = {.out = s};
  clg_suballoc_walk(a->sa, summary_visit, &rs);
  region_sum_flush(&rs);
  if (a->num_slots == 0)
    clg_strbuf_append(s, "<allocator contains no memory>\n");
  clg_strbuf_append(s, "     Summary of in-use Chunks by size: \n");
  if (rs.num_sizes)
    qsort(rs.sizes, rs.num_sizes, sizeof *rs.sizes, cmp_u64);
  uint64_t total = 0;
  int lines = 0;
  for (size_t i = 0; i < rs.num_sizes;) {
    size_t j = i;
    while (j < rs.num_sizes && rs.sizes[j] == rs.sizes[i])
      j++;
    if (lines++ < 64)
      clg_strbuf_printf(s, "%zu Chunks of size %llu totalling %s\n", j - i,
                        (unsigned long long)rs.sizes[i],
                        human_bytes(rs.sizes[i] * (j - i), h, sizeof h));
    total += rs.sizes[i] * (j - i);
    i = j;
  }
  if (lines > 64)
    clg_strbuf_printf(s, "... and %d more sizes\n", lines - 64);
  free(rs.sizes);
  clg_strbuf_printf(s, "Sum Total of in-use chunks: %s\n", human_bytes(total, h, sizeof h));
  clg_strbuf_printf(s,
                    "Total bytes in pool: %llu memory_limit_: %llu available bytes: %llu "
                    "curr_region_allocation_bytes_: %llu\n",
                    (unsigned long long)a->reserved, (unsigned long long)a->limit,
                    (unsigned long long)(a->limit - a->reserved),
                    (unsigned long long)(a->growth ? a->next_region_size : a->max_region));
}

typedef struct dump_ctx {
  clg_allocator *a;
  clg_strbuf *s;
  bool json;
  bool open;
  uint32_t region;
  int blocks;
} dump_ctx;

static void dump_visit(void *user, uint32_t region, uint64_t region_size, uint64_t offset,
                       uint64_t size, bool in_use)
{
  dump_ctx *d = user;
  const char *state = !in_use ? "free" : is_pending(d->a, region, offset) ? "pending" : "in_use";
  if (!d->open || d->region != region) {
    if (d->json) {
      clg_strbuf_printf(d->s, "%s{\"id\":%u,\"size\":%llu,\"blocks\":[", d->open ? "]}," : "",
                        region, (unsigned long long)region_size);
    } else {
      clg_strbuf_printf(d->s, "Region %u of size %llu (cl_mem %p):\n", region,
                        (unsigned long long)region_size, (void *)d->a->regions[region].mem);
    }
    d->open = true;
    d->region = region;
    d->blocks = 0;
  }
  if (d->json) {
    clg_strbuf_printf(d->s, "%s{\"offset\":%llu,\"size\":%llu,\"state\":\"%s\"}",
                      d->blocks ? "," : "", (unsigned long long)offset, (unsigned long long)size,
                      state);
  } else {
    const char *label = !in_use ? "Free   " : strcmp(state, "pending") == 0 ? "Pending" : "InUse  ";
    clg_strbuf_printf(d->s, "  %s at 0x%llx of size %llu\n", label, (unsigned long long)offset,
                      (unsigned long long)size);
  }
  d->blocks++;
}

char *clg_allocator_dump(clg_allocator *a, bool json)
{
  if (!a) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_dump: allocator is NULL");
    return NULL;
  }
  clg_strbuf s;
  clg_strbuf_init(&s);
  pthread_mutex_lock(&a->mu);
  clg_memory_stats st;
  stats_locked(a, &st);
  if (json) {
    clg_strbuf_append(&s, "{\"allocator\":");
    clg_strbuf_json_string(&s, a->name);
    clg_strbuf_append(&s, ",\"device\":");
    clg_strbuf_json_string(&s, a->dev->info.full_name);
    clg_strbuf_printf(
        &s,
        ",\"allow_growth\":%s,\"alignment\":%llu,\"max_region\":%llu,"
        "\"stats\":{\"bytes_limit\":%llu,\"bytes_in_use\":%llu,\"peak_bytes_in_use\":%llu,"
        "\"bytes_reserved\":%llu,\"peak_bytes_reserved\":%llu,\"bytes_pending\":%llu,"
        "\"num_regions\":%llu,\"num_allocs\":%llu,\"live_allocs\":%llu,"
        "\"largest_alloc_size\":%llu,\"largest_free_block\":%llu,\"fragmentation\":%.6f},"
        "\"regions\":[",
        a->growth ? "true" : "false", (unsigned long long)a->align,
        (unsigned long long)a->max_region, (unsigned long long)st.bytes_limit,
        (unsigned long long)st.bytes_in_use, (unsigned long long)st.peak_bytes_in_use,
        (unsigned long long)st.bytes_reserved, (unsigned long long)st.peak_bytes_reserved,
        (unsigned long long)st.bytes_pending, (unsigned long long)st.num_regions,
        (unsigned long long)st.num_allocs, (unsigned long long)st.live_allocs,
        (unsigned long long)st.largest_alloc_size, (unsigned long long)st.largest_free_block,
        st.fragmentation);
  } else {
    clg_strbuf_printf(&s,
                      "Allocator %s for %s: limit %llu bytes, reserved %llu bytes in %llu "
                      "regions, in use %llu bytes in %llu blocks, pending %llu bytes%s\n",
                      a->name, a->dev->info.full_name, (unsigned long long)st.bytes_limit,
                      (unsigned long long)st.bytes_reserved, (unsigned long long)st.num_regions,
                      (unsigned long long)st.bytes_in_use, (unsigned long long)st.live_allocs,
                      (unsigned long long)st.bytes_pending,
                      a->is_host  ? ""
                      : a->growth ? ", allow_growth"
                                  : ", reserve all");
  }
  if (a->is_host) {
    if (json)
      clg_strbuf_append(&s, "],\"blocks\":[");
    int n = 0;
    for (host_hdr *h = a->host_blocks; h; h = h->next, n++) {
      void *p = (char *)h + HOST_ALIGN;
      bool pend = false;
      for (size_t i = 0; i < a->num_pend && !pend; i++)
        pend = a->pend[i].block.host == p;
      if (json)
        clg_strbuf_printf(&s, "%s{\"address\":\"%p\",\"size\":%zu,\"state\":\"%s\"}", n ? "," : "",
                          p, h->size, pend ? "pending" : "in_use");
      else
        clg_strbuf_printf(&s, "  %s at %p of size %zu\n", pend ? "Pending" : "InUse  ", p, h->size);
    }
    if (json)
      clg_strbuf_append(&s, "]}");
  } else {
    dump_ctx d = {.a = a, .s = &s, .json = json};
    clg_suballoc_walk(a->sa, dump_visit, &d);
    if (json)
      clg_strbuf_append(&s, d.open ? "]}]}" : "]}");
    else if (!d.open)
      clg_strbuf_append(&s, "<allocator contains no memory>\n");
  }
  if (!json) {
    clg_strbuf_append(&s, "Stats:\n");
    append_debug_string(&s, &st);
  }
  pthread_mutex_unlock(&a->mu);
  char *out = clg_strbuf_take(&s);
  if (!out)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory dumping allocator %s", a->name);
  return out;
}

clg_code clg_allocator_validate(clg_allocator *a)
{
  if (!a)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_validate: allocator is NULL");
  clg_code code = CLG_OK;
  pthread_mutex_lock(&a->mu);
  uint64_t blocks = 0, bytes = 0;
  if (a->is_host) {
    for (host_hdr *h = a->host_blocks; h; h = h->next) {
      if (h->magic != HOST_MAGIC || (h->next && h->next->prev != h)) {
        code = clg_error(CLG_INTERNAL, "%s: the host block list is corrupt", a->name);
        break;
      }
      blocks++;
      bytes += h->size;
    }
    if (code == CLG_OK && bytes != a->reserved)
      code = clg_error(CLG_INTERNAL, "%s: %llu bytes in host blocks, %llu reserved", a->name,
                       (unsigned long long)bytes, (unsigned long long)a->reserved);
  } else {
    code = clg_suballoc_validate(a->sa);
    clg_suballoc_info info;
    clg_suballoc_info_get(a->sa, &info);
    uint64_t regions = 0;
    for (uint32_t i = 0; i < a->num_slots; i++)
      if (a->regions[i].mem) {
        regions++;
        bytes += a->regions[i].size;
      }
    if (code == CLG_OK &&
        (regions != info.regions || bytes != info.bytes_total || bytes != a->reserved))
      code =
          clg_error(CLG_INTERNAL,
                    "%s: %llu regions of %llu bytes, the suballocator has %u of %llu, "
                    "reserved says %llu",
                    a->name, (unsigned long long)regions, (unsigned long long)bytes, info.regions,
                    (unsigned long long)info.bytes_total, (unsigned long long)a->reserved);
    blocks = info.used_blocks;
    bytes = info.bytes_used;
  }
  uint64_t pend_bytes = 0;
  for (size_t i = 0; i < a->num_pend; i++)
    pend_bytes += a->pend[i].block.size;
  if (code == CLG_OK && (blocks != a->live + a->num_pend || bytes != a->in_use + a->bytes_pending ||
                         pend_bytes != a->bytes_pending))
    code = clg_error(CLG_INTERNAL,
                     "%s: %llu blocks of %llu bytes allocated; statistics say %llu live + %zu "
                     "pending, %llu in use + %llu pending bytes",
                     a->name, (unsigned long long)blocks, (unsigned long long)bytes,
                     (unsigned long long)a->live, a->num_pend, (unsigned long long)a->in_use,
                     (unsigned long long)a->bytes_pending);
  if (code == CLG_OK && (a->peak_in_use < a->in_use || a->peak_reserved < a->reserved ||
                         (!a->is_host && a->reserved > a->limit)))
    code =
        clg_error(CLG_INTERNAL, "%s: a peak is below its value or the limit is exceeded", a->name);
  pthread_mutex_unlock(&a->mu);
  return code;
}

const char *clg_allocator_name(const clg_allocator *a) { return a ? a->name : ""; }

uint64_t clg_allocator_alignment(const clg_allocator *a) { return a ? a->align : 0; }

void clg_allocator_options(const clg_allocator *a, clg_memory_options *out)
{
  if (!out)
    return;
  if (!a) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = a->opt;
}

/* --- labels and snapshots (memory maps) ---------------------------------------------- */

bool clg_allocator_label(clg_allocator *a, const clg_block *b, const char *text)
{
  if (!a || !b || b->size == 0)
    return false;
  bool ok = false;
  pthread_mutex_lock(&a->mu);
  if (!block_is_live(a, b))
    goto done;
  int i = label_find(a, b);
  if (!text) {
    if (i >= 0)
      label_forget(a, b);
    ok = true;
    goto done;
  }
  char *copy = clg_strdup(text);
  if (!copy)
    goto done;
  if (i >= 0) {
    free(a->labels[i].text);
    a->labels[i].text = copy;
    ok = true;
    goto done;
  }
  if (a->num_labels == a->cap_labels) {
    size_t cap = a->cap_labels ? 2 * a->cap_labels : 16;
    label *v = realloc(a->labels, sizeof *v * cap);
    if (!v) {
      free(copy);
      goto done;
    }
    a->labels = v;
    a->cap_labels = cap;
  }
  a->labels[a->num_labels++] = (label){b->region, b->offset, b->host, copy};
  ok = true;
done:
  pthread_mutex_unlock(&a->mu);
  return ok;
}

typedef struct snap_ctx {
  clg_allocator *a;
  clg_alloc_block *v;
  size_t n, cap;
  bool failed;
} snap_ctx;

static clg_alloc_block *snap_push(snap_ctx *c)
{
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    clg_alloc_block *v = realloc(c->v, sizeof *v * cap);
    if (!v) {
      c->failed = true;
      return NULL;
    }
    c->v = v;
    c->cap = cap;
  }
  clg_alloc_block *b = &c->v[c->n++];
  memset(b, 0, sizeof *b);
  return b;
}

static void snap_label(const clg_allocator *a, clg_alloc_block *out, const clg_block *b)
{
  int i = label_find(a, b);
  if (i >= 0)
    snprintf(out->label, sizeof out->label, "%s", a->labels[i].text);
}

static void snap_visit(void *user, uint32_t region, uint64_t region_size, uint64_t offset,
                       uint64_t size, bool in_use)
{
  snap_ctx *c = user;
  clg_alloc_block *b = c->failed ? NULL : snap_push(c);
  if (!b)
    return;
  b->region = region;
  b->region_size = region_size;
  b->offset = offset;
  b->size = size;
  b->state = !in_use                            ? CLG_BLOCK_FREE
             : is_pending(c->a, region, offset) ? CLG_BLOCK_PENDING
                                                : CLG_BLOCK_IN_USE;
  if (in_use)
    snap_label(c->a, b, &(clg_block){.region = region, .offset = offset});
}

clg_code clg_allocator_snapshot(clg_allocator *a, clg_memory_stats *stats, clg_alloc_block **blocks,
                                size_t *n)
{
  if (!a || !stats || !blocks || !n)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_snapshot: a NULL argument");
  snap_ctx c = {.a = a};
  pthread_mutex_lock(&a->mu);
  stats_locked(a, stats);
  if (a->is_host) {
    uint64_t at = 0, total = a->in_use + a->bytes_pending;
    for (host_hdr *h = a->host_blocks; h && !c.failed; h = h->next) {
      clg_alloc_block *b = snap_push(&c);
      if (!b)
        break;
      void *p = (char *)h + HOST_ALIGN;
      bool pend = false;
      for (size_t i = 0; i < a->num_pend && !pend; i++)
        pend = a->pend[i].block.host == p;
      b->region_size = total;
      b->offset = at;
      b->size = h->size;
      b->state = pend ? CLG_BLOCK_PENDING : CLG_BLOCK_IN_USE;
      snap_label(a, b, &(clg_block){.host = p});
      at += h->size;
    }
  } else {
    clg_suballoc_walk(a->sa, snap_visit, &c);
  }
  pthread_mutex_unlock(&a->mu);
  if (c.failed) {
    free(c.v);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory taking a snapshot of %s", a->name);
  }
  *blocks = c.v;
  *n = c.n;
  return CLG_OK;
}

const clg_device *clg_allocator_device(const clg_allocator *a) { return a ? a->dev : NULL; }
