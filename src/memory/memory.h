/* The memory module's door.
 *
 * Two layers:
 *  - clg_suballoc: the allocation algorithm on plain offsets inside numbered regions. No
 *    OpenCL: testable anywhere, millions of operations a second.
 *  - clg_allocator: one per device. It owns the regions (buffers of the device kind's
 *    buffer table, or aligned host memory for CPU:0), applies TensorFlow's memory options
 * (reserve-all, allow_growth, fraction, virtual-device limit, CLGRAPH_FORCE_GPU_ALLOW_GROWTH),
 * keeps statistics, and hands out clg_block values. Thread-safe. And clg_pinned: page-locked host
 * memory for large host tensors, which GPUs copy fastest.
 */
#ifndef CLG_MEMORY_H
#define CLG_MEMORY_H

#include "clgraph/memory.h"
#include "core/core.h"
#include "device/device.h"

/* --- the algorithm on offsets ------------------------------------------------------ */

typedef struct clg_suballoc clg_suballoc;

/* alignment: a power of two >= 256; every block offset and size is a multiple of it. */
clg_suballoc *clg_suballoc_new(uint64_t alignment);
void clg_suballoc_free_all(clg_suballoc *a);
/* Adds a region [0, size) with the caller's id (ids need not be dense). */
clg_code clg_suballoc_add_region(clg_suballoc *a, uint32_t region, uint64_t size);
/* Removes a region that has no block in use. */
clg_code clg_suballoc_remove_region(clg_suballoc *a, uint32_t region);
/* Best fit: returns false (no error recorded) when no free block can hold size bytes. */
bool clg_suballoc_alloc(clg_suballoc *a, uint64_t size, uint32_t *region, uint64_t *offset,
                        uint64_t *block_size);
/* Frees the block in use that starts at (region, offset); coalesces with free neighbours.
 * Returns false (and changes nothing) when no block in use starts there. */
bool clg_suballoc_release(clg_suballoc *a, uint32_t region, uint64_t offset);
/* The same, but only if that block's size is `size` (0: any): one lookup to check and free. */
bool clg_suballoc_release_sized(clg_suballoc *a, uint32_t region, uint64_t offset, uint64_t size);
/* Checks every invariant; INTERNAL with a description of the first violation. */
clg_code clg_suballoc_validate(const clg_suballoc *a);

uint64_t clg_suballoc_alignment(const clg_suballoc *a);
/* The size of the block in use at (region, offset), 0 if there is none. */
uint64_t clg_suballoc_block_size(const clg_suballoc *a, uint32_t region, uint64_t offset);
/* The largest free block in bytes (0 when nothing is free). */
uint64_t clg_suballoc_largest_free(const clg_suballoc *a);
/* Bytes in use in a region; UINT64_MAX when there is no such region. */
uint64_t clg_suballoc_region_used(const clg_suballoc *a, uint32_t region);

typedef struct clg_suballoc_info {
  uint64_t bytes_total, bytes_used, bytes_free, largest_free;
  uint64_t used_blocks, free_blocks;
  uint32_t regions;
} clg_suballoc_info;
void clg_suballoc_info_get(const clg_suballoc *a, clg_suballoc_info *out);

/* Calls visit for every block, region by region, in address order. */
typedef void (*clg_suballoc_visit)(void *user, uint32_t region, uint64_t region_size,
                                   uint64_t offset, uint64_t size, bool in_use);
void clg_suballoc_walk(const clg_suballoc *a, clg_suballoc_visit visit, void *user);

/* --- the per-device allocator ------------------------------------------------------ */

typedef struct clg_allocator clg_allocator;

/* Creates the allocator for dev with the given options (NULL: the defaults). A fraction
 * outside [0, 1] (or NaN) is INVALID_ARGUMENT. For an OpenCL device the limit is: the
 * virtual device's memory_limit if set, else fraction x global memory if fraction > 0,
 * else the global memory less what TensorFlow leaves the driver (MinSystemMemory: 225 MiB
 * below 2 GiB, else 500 MiB, or for NVIDIA by compute capability 1050 MiB for 7.x, 1536 for
 * 8.x, 1800 from 9.0; none for CPU-type OpenCL devices such as PoCL's; any device:
 * CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB), rounded down to the alignment (a power of two >= 256
 * and >= the device's base address alignment). Regions are at most the device's largest
 * allocation (info.max_alloc) bytes and are filled with zeros when created, so that lazy drivers
 * commit them at once; not on CPU-type devices (PoCL's), whose memory is the host's and comes
 * on first use anyway (CLGRAPH_TOUCH_REGIONS; hostshare.c counts such regions as taken).
 *  - default (no allow_growth): the first allocation reserves the whole limit (as
 *    TensorFlow's BFC allocator does at its first AllocateRaw), in as few regions as
 *    max_alloc allows. Creating the allocator touches no device memory. A region the
 *    device refuses is retried at 0.9x (up to 8 times); if the device gives less than the
 *    limit, a warning says how much was reserved.
 *  - allow_growth: a 2 MiB region first, then regions of an eighth of the pool (at least
 *    2 MiB, at least the request): geometric growth by 1.125 rather than TensorFlow's
 *    doubling, which can leave half of the newest region unused; or, when larger, twice
 *    the largest request that needed a region (at most the pool plus the request, and
 *    only while as much again stays below the limit), so that a region keeps room for one
 *    more large tensor. Never given back except by garbage collection (below).
 * CLGRAPH_FORCE_GPU_ALLOW_GROWTH ("true"/"false") overrides allow_growth with TensorFlow's
 * warning when it changes the value, or logs TensorFlow's error for other values.
 * CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION ("false" disables; default true): before an OOM,
 * regions with nothing in use are released if that leaves room for a region that fits.
 * The host (dev->is_host): "cpu", 64-byte-aligned blocks, opt->host_limit (0 = none). */
clg_code clg_allocator_new(clg_device *dev, const clg_memory_options *opt, clg_allocator **out);
/* Releases the regions and pending events; blocks still in use become invalid. */
void clg_allocator_destroy(clg_allocator *a);

/* Allocates bytes (> 0; 0 is INVALID_ARGUMENT). Thread-safe. On failure:
 * RESOURCE_EXHAUSTED "OOM when allocating <bytes> bytes on <device full name> by
 * allocator <GPU_0_bfc>: in use <n> bytes, limit <n> bytes, largest free block <n> bytes"
 * (followed by "; ..." with the reason when a region could not be created or the request
 * exceeds the device's largest allocation), and TensorFlow's "Allocator (GPU_0_bfc) ran out
 * of memory trying to allocate ..." summary logged at warning level. Nothing else
 * changes: the allocator stays usable. Before failing it waits (at most 10 s) for blocks
 * freed with a pending event. */
clg_code clg_allocator_alloc(clg_allocator *a, size_t bytes, clg_block *out);
/* Frees a block (NULL or size 0: nothing). If pending is not NULL and not yet complete
 * (an event of a command that may still use the block), the block is not handed out again
 * before that event completes (or fails); the allocator retains the event and releases it.
 * The block counts as freed in the statistics at once (bytes_pending until reclaimed).
 * A block that is not live in this allocator is logged as an error and ignored. */
void clg_allocator_free(clg_allocator *a, const clg_block *b, clg_event *pending);

void clg_allocator_stats(clg_allocator *a, clg_memory_stats *out);
/* Peak in use := in use; num_allocs := 0; largest_alloc_size := 0. */
void clg_allocator_reset_peak(clg_allocator *a);
/* A readable map of regions and blocks; JSON when json is true. malloc'd. */
char *clg_allocator_dump(clg_allocator *a, bool json);
/* Checks the suballocator's invariants and that the statistics match the blocks;
 * INTERNAL naming the first mismatch. For tests. */
clg_code clg_allocator_validate(clg_allocator *a);
/* Names what block b holds ("Const 'a'", "arena of a run: 12 tensors"), for memory maps.
 * The label goes when the block is freed; NULL removes it. Returns false when b is not a
 * live block or memory runs out (the block then stays as it was). */
bool clg_allocator_label(clg_allocator *a, const clg_block *b, const char *label);

/* One block of a snapshot: for an OpenCL device, every block of every region in address
 * order; for the host, every block in use (region 0, offset: the sum of the sizes before
 * it, as if they were laid end to end). */
typedef enum { CLG_BLOCK_FREE, CLG_BLOCK_IN_USE, CLG_BLOCK_PENDING } clg_block_state;
typedef struct clg_alloc_block {
  uint32_t region;
  uint64_t region_size, offset, size;
  clg_block_state state;
  char label[128]; /* "" when none */
} clg_alloc_block;
/* The allocator's blocks and statistics, taken under one lock (so they agree). *blocks is
 * malloc'd (NULL when *n is 0). */
clg_code clg_allocator_snapshot(clg_allocator *a, clg_memory_stats *stats, clg_alloc_block **blocks,
                                size_t *n);
/* The allocator's device. */
const clg_device *clg_allocator_device(const clg_allocator *a);

/* A memory map in SVG (memory/memmap.c): every region as a bar of its blocks to scale (one
 * <rect class="block in-use|free|pending"> each, with data-offset, data-size and data-label;
 * the largest free block outlined), the statistics (also on the root element: data-bytes-
 * in-use, data-largest-free-block, data-fragmentation, ...), the blocks in use side by side,
 * and a chart of the bytes in use over time from pts (none: a note instead). `when` is a
 * line saying which moment this is. *stats_out (may be NULL) gets the statistics drawn.
 * malloc'd; NULL when memory runs out. */
typedef struct clg_memmap_point {
  uint64_t ts_ns, in_use, live;
} clg_memmap_point;
char *clg_allocator_svg(clg_allocator *a, const char *when, const clg_memmap_point *pts, int npts,
                        clg_memory_stats *stats_out);

/* "GPU_0_bfc", "cpu". */
const char *clg_allocator_name(const clg_allocator *a);
/* The alignment of every block's offset and size. */
uint64_t clg_allocator_alignment(const clg_allocator *a);
/* The options the allocator was created with (after CLGRAPH_FORCE_GPU_ALLOW_GROWTH). */
void clg_allocator_options(const clg_allocator *a, clg_memory_options *out);

/* --- pinned host memory (memory/pinned.c) -------------------------------------------- */

/* A pool of mapped host-visible buffers (the device kind's map_host) in dev's context, up to
 * `limit` bytes pinned at once: the host tensor provider (core.h) while the process state lives.
 * NULL when dev is not an OpenCL device, limit is 0 or the pool cannot be made (logged). */
typedef struct clg_pinned clg_pinned;
clg_pinned *clg_pinned_new(const clg_device *dev, size_t limit);
/* The owner's release: frees the kept buffers; the pool goes when the last buffer in use
 * comes back. */
void clg_pinned_close(clg_pinned *p);
/* The provider's functions (pool is a clg_pinned): exact-size reuse of kept buffers, else a
 * new mapped buffer if the limit allows (kept ones of other sizes are freed to make room);
 * NULL when not. */
void *clg_pinned_alloc(void *pool, size_t bytes, clg_host_buf **buf);
void clg_pinned_release(clg_host_buf *buf);

#endif
