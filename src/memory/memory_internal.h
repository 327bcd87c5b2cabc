/* The memory module's internal header: what the allocator's files share, and the region
 * backend they ask for device memory. Included by src/memory/ only; the rest of the code
 * uses memory.h.
 *
 * The allocator's files, one job each:
 *   allocator.c   creation: TensorFlow's options turned into a limit, alignment, mode
 *   blocks.c      clg_allocator_alloc / clg_allocator_free and the slow path's order
 *   regions.c     the region policy: reserve-all, allow_growth, backpedal, collection
 *   hostshare.c   what a device whose memory is the host's may take
 *   hostblocks.c  the host CPU:0 allocator (one aligned malloc per block)
 *   pending.c     blocks freed while a command may still use them
 *   stats.c       statistics; dump.c readable and JSON maps, the OOM report
 *   validate.c    invariants, for tests; labels.c labels and snapshots for memory maps
 *   alloclog.c    messages kept until the lock is dropped, readable byte counts
 * Device memory comes from the device kind's buffer table (clg_buffer_ops in device.h, the
 * OpenCL one in src/backends/opencl/buffers.c): no file here calls a driver, regions and
 * queues are opaque handles and events the device module's clg_event.
 */
#ifndef CLG_MEMORY_INTERNAL_H
#define CLG_MEMORY_INTERNAL_H

#include <pthread.h>

#include "memory/memory.h"

#define CLG_ALLOC_HOST_ALIGN 64u
#define CLG_ALLOC_HOST_MAGIC 0x636c6762u /* "clgb" */
#define CLG_ALLOC_GROWTH_FIRST_REGION (2ull << 20)

/* --- the allocator's state --------------------------------------------------------- */

typedef struct clg_alloc_region {
  void *mem; /* the backend's region; NULL: an empty slot */
  uint64_t size;
  bool untouched; /* host memory not filled at creation (hostshare.c counts it) */
} clg_alloc_region;

typedef struct clg_alloc_pending {
  clg_block block;
  clg_event *event;
} clg_alloc_pending;

/* Host block header; the memory follows it at CLG_ALLOC_HOST_ALIGN. */
typedef struct clg_host_hdr {
  struct clg_host_hdr *prev, *next;
  size_t size;
  uint32_t magic;
} clg_host_hdr;

/* A block's label (clg_allocator_label): device blocks by (region, offset), host ones by
 * address. */
typedef struct clg_alloc_label {
  uint32_t region;
  uint64_t offset;
  void *host;
  char *text;
} clg_alloc_label;

/* Messages to log once the lock is dropped. */
typedef struct clg_logq {
  int n;
  clg_log_level level[4];
  char *text[4];
} clg_logq;

struct clg_allocator {
  clg_device *dev;
  const clg_buffer_ops *buf; /* the device kind's regions; NULL for the host */
  char name[32];
  clg_memory_options opt; /* effective: after CLGRAPH_FORCE_GPU_ALLOW_GROWTH */
  bool is_host, growth, gc;
  pthread_mutex_t mu; /* covers everything; dropped only while waiting for pending frees */
  uint64_t limit, align, max_region;

  /* devices with regions; the suballocator's region ids are indices in regions[], so a
   * block's region handle is one load */
  clg_suballoc *sa;
  clg_alloc_region *regions;
  uint32_t num_slots, cap_slots;
  uint64_t next_region_size; /* allow_growth: TensorFlow's curr_region_allocation_bytes_ */
  uint64_t largest_grow;     /* allow_growth: the largest request that needed a new region */
  bool reserve_done;         /* the default mode reserved its limit at first use */
  bool host_memory;          /* the device's memory is the host's (CPU type, unified memory) */
  bool host_share_listed;    /* its reservation is in hostshare.c's list */
  void *fill_queue;          /* the backend's queue that touches new regions */
  char region_error[320];    /* the last failure to create a region, for the OOM message */

  /* blocks freed while a command may still use them */
  clg_alloc_pending *pend;
  size_t num_pend, cap_pend;
  uint64_t bytes_pending;

  /* the host */
  clg_host_hdr *host_blocks;

  /* labels of blocks in use, for memory maps; few (arenas, Consts, variables) */
  clg_alloc_label *labels;
  size_t num_labels, cap_labels;

  /* statistics */
  uint64_t in_use, peak_in_use, num_allocs, live, largest_alloc;
  uint64_t reserved, peak_reserved;
};

static inline uint64_t clg_alloc_round_down(uint64_t n, uint64_t align) { return n & ~(align - 1); }

/* Inline: on the allocation fast path. */
static inline void clg_alloc_count_alloc(clg_allocator *a, uint64_t size)
{
  a->in_use += size;
  if (a->in_use > a->peak_in_use)
    a->peak_in_use = a->in_use;
  a->num_allocs++;
  a->live++;
  if (size > a->largest_alloc)
    a->largest_alloc = size;
}

static inline void clg_alloc_count_reserve(clg_allocator *a, uint64_t size)
{
  a->reserved += size;
  if (a->reserved > a->peak_reserved)
    a->peak_reserved = a->reserved;
}

/* --- messages (alloclog.c) ----------------------------------------------------------- */

void clg_logq_add(clg_logq *q, clg_log_level level, char *text);
void clg_logq_flush(clg_logq *q);
/* A malloc'd printf; NULL when memory runs out. */
char *clg_logq_format(const char *fmt, ...) CLG_PRINTF(1, 2);
/* TensorFlow's HumanReadableNumBytes: "512B", "1.00MiB", "6.84GiB". */
const char *clg_logq_bytes(uint64_t n, char *buf, size_t size);

/* --- what the host can spare (hostshare.c) ------------------------------------------- */

/* The list of default-mode reservations of host-memory devices, held while one reserves
 * so that the next one's share sees this one's memory gone. */
void clg_hostshare_lock(void);
void clg_hostshare_unlock(void);
/* The host-memory devices of dev's context without a reservation, dev included (held). */
int clg_hostshare_count(const clg_device *dev);
/* Records dev's reservation (held); false when out of host memory. */
bool clg_hostshare_add(const clg_device *dev);
void clg_hostshare_remove(const clg_device *dev);
/* What the host can spare now; why gets the numbers, for warnings. */
uint64_t clg_hostshare_spare(char *why, size_t why_size);
/* Regions of host memory that were not filled at creation take no MemAvailable until used:
 * their bytes are added here while they live, and spare counts them as gone. */
void clg_hostshare_untouched(uint64_t add, uint64_t remove);

/* --- regions (regions.c); the lock held ---------------------------------------------- */

/* Adds a region that can hold rounded bytes; RESOURCE_EXHAUSTED when none can be made. */
clg_code clg_regions_extend(clg_allocator *a, uint64_t rounded);
/* The default mode's reservation of the whole limit at first use. */
void clg_regions_reserve_all(clg_allocator *a, clg_logq *q);
/* Gives back the regions with nothing in use when that makes room for rounded bytes. */
bool clg_regions_collect(clg_allocator *a, uint64_t rounded, clg_logq *q);
/* Releases every region and the fill queue (destruction). */
void clg_regions_free_all(clg_allocator *a);

/* --- blocks (blocks.c); the lock held ------------------------------------------------ */

/* Returns b to the suballocator or the host at once (its statistics already counted). */
void clg_blocks_release_now(clg_allocator *a, const clg_block *b);
/* True when b is a block this allocator handed out and nobody freed yet. */
bool clg_blocks_is_live(clg_allocator *a, const clg_block *b);

/* --- pending frees (pending.c); the lock held ---------------------------------------- */

/* Releases the blocks whose events completed (or failed). Returns how many. */
size_t clg_pending_reclaim(clg_allocator *a);
/* Waits (the lock dropped) for pending frees, retrying after each that completes, for at
 * most 10 s; then retries once more. */
typedef bool (*clg_pending_retry)(clg_allocator *a, uint64_t rounded, clg_block *out);
bool clg_pending_wait(clg_allocator *a, uint64_t rounded, clg_block *out, clg_pending_retry retry);
/* Keeps live block b from reuse until ev completes; false when ev already completed (or
 * the wait happened here), so the caller releases b at once. */
bool clg_pending_defer(clg_allocator *a, const clg_block *b, clg_event *ev);
/* Whether the block at (region, offset), or host block p, waits for an event. */
bool clg_pending_has(const clg_allocator *a, uint32_t region, uint64_t offset);
bool clg_pending_has_host(const clg_allocator *a, const void *p);
/* Releases every retained event (destruction). */
void clg_pending_free_all(clg_allocator *a);

/* --- the host (hostblocks.c); the lock held ------------------------------------------ */

clg_code clg_hostblocks_alloc(clg_allocator *a, size_t bytes, clg_block *out, clg_logq *q);
clg_host_hdr *clg_hostblocks_header(const clg_block *b);
void clg_hostblocks_release(clg_allocator *a, const clg_block *b);
void clg_hostblocks_free_all(clg_allocator *a);

/* --- statistics and reports (stats.c, dump.c); the lock held ------------------------- */

void clg_stats_locked(clg_allocator *a, clg_memory_stats *out);
/* TensorFlow's AllocatorStats::DebugString. */
void clg_stats_debug_string(clg_strbuf *s, const clg_memory_stats *st);
/* Records the OOM error, queues the warning-level summary; RESOURCE_EXHAUSTED. */
clg_code clg_dump_oom(clg_allocator *a, size_t bytes, uint64_t rounded, clg_logq *q);

/* --- labels (labels.c); the lock held ------------------------------------------------ */

int clg_labels_find(const clg_allocator *a, const clg_block *b);
/* Drops b's label, if any (callers skip the call when there are no labels). */
void clg_labels_forget(clg_allocator *a, const clg_block *b);
void clg_labels_free_all(clg_allocator *a);

#endif
