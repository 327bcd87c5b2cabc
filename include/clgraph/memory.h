/* clgraph: device memory statistics.
 *
 * Each device has one allocator for the life of the process (TensorFlow's GPU_<id>_bfc):
 * regions of device memory (cl_mem buffers, or aligned host memory for CPU:0) carved into
 * blocks. These statistics are kept always, at no measurable cost. For CPU:0 ("cpu") each
 * block is its own host allocation: no regions, bytes_reserved counts the blocks, and
 * bytes_limit is the host limit (or the physical memory when there is none).
 */
#ifndef CLGRAPH_MEMORY_H
#define CLGRAPH_MEMORY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_memory_stats {
  uint64_t bytes_in_use;      /* sum of the (rounded) sizes of live blocks */
  uint64_t peak_bytes_in_use; /* since creation or the last reset */
  uint64_t bytes_limit;       /* the most the allocator may reserve */
  uint64_t bytes_reserved;    /* sum of region sizes */
  uint64_t peak_bytes_reserved;
  uint64_t num_regions;
  uint64_t num_allocs;         /* allocations made since creation or the last reset */
  uint64_t live_allocs;        /* blocks in use now */
  uint64_t largest_alloc_size; /* since creation or the last reset */
  uint64_t largest_free_block;
  double fragmentation; /* (free - largest free block) / free; 0 when nothing is free */
  /* Blocks freed while a command may still use them: neither in use nor free until that
   * command's event completes. */
  uint64_t bytes_pending;
} clg_memory_stats;

/* Memory options, with TensorFlow's meaning (GPUOptions). */
typedef struct clg_memory_options {
  /* Start with a small region (2 MiB) and grow geometrically; never release. */
  int allow_growth;
  /* In (0, 1]: limit = fraction x the device's total memory. 0 means the default
   * (the whole memory). */
  double per_process_gpu_memory_fraction;
  /* Host CPU:0 only: a limit in bytes, 0 for none. */
  uint64_t host_limit;
} clg_memory_options;

#ifdef __cplusplus
}
#endif
#endif
