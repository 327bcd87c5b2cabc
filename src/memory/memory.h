/* The memory module's door.
 *
 * Two layers:
 *  - clg_suballoc: the allocation algorithm on plain offsets inside numbered regions. No
 *    OpenCL: testable anywhere, millions of operations a second.
 *  - clg_allocator: one per device. It owns the regions (cl_mem buffers, or aligned host
 *    memory for CPU:0), applies TensorFlow's memory options (reserve-all, allow_growth,
 *    fraction, virtual-device limit, CLGRAPH_FORCE_GPU_ALLOW_GROWTH), keeps statistics,
 *    and hands out clg_block values. Thread-safe.
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
/* Frees the block that starts at (region, offset); coalesces with free neighbours. */
void clg_suballoc_release(clg_suballoc *a, uint32_t region, uint64_t offset);
/* Checks every invariant; INTERNAL with a description of the first violation. */
clg_code clg_suballoc_validate(const clg_suballoc *a);

/* --- the per-device allocator ------------------------------------------------------ */

/* A block of device memory. For OpenCL devices mem is the region's cl_mem and offset the
 * byte offset in it; for the host, host points at the memory and mem is NULL. */
typedef struct clg_block {
  cl_mem mem;
  size_t offset;
  size_t size;      /* rounded size actually reserved */
  void *host;
  uint32_t region;
} clg_block;

typedef struct clg_allocator clg_allocator;

/* Creates the allocator for dev with the given options (validated: a fraction outside
 * [0, 1] is INVALID_ARGUMENT). For an OpenCL device the limit is: the virtual device's
 * memory_limit if set, else fraction x global memory if fraction > 0, else the global
 * memory. Without allow_growth the whole limit is reserved (and touched) now. */
clg_code clg_allocator_new(clg_device *dev, const clg_memory_options *opt, clg_allocator **out);
void clg_allocator_destroy(clg_allocator *a);

/* Allocates bytes (> 0). On failure: RESOURCE_EXHAUSTED "OOM when allocating <bytes>
 * bytes on <device full name> by allocator <GPU_0_bfc>: in use <n>, limit <n>, largest
 * free block <n>", and a summary logged at warning level. The allocator stays usable. */
clg_code clg_allocator_alloc(clg_allocator *a, size_t bytes, clg_block *out);
/* Frees a block. If pending is not NULL (an event of a queue other than the device's
 * own), the block is not reused before that event completes; the allocator retains the
 * event and releases it. */
void clg_allocator_free(clg_allocator *a, const clg_block *b, cl_event pending);

void clg_allocator_stats(clg_allocator *a, clg_memory_stats *out);
/* Peak in use := in use; num_allocs := 0; largest_alloc_size := 0. */
void clg_allocator_reset_peak(clg_allocator *a);
/* A readable map of regions and blocks; JSON when json is true. malloc'd. */
char *clg_allocator_dump(clg_allocator *a, bool json);
/* "GPU_0_bfc", "cpu". */
const char *clg_allocator_name(const clg_allocator *a);
/* The options the allocator was created with (after CLGRAPH_FORCE_GPU_ALLOW_GROWTH). */
void clg_allocator_options(const clg_allocator *a, clg_memory_options *out);

#endif
