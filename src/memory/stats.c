/* The allocator's statistics (TensorFlow's AllocatorStats): the counters are kept by the
 * files that allocate (memory_internal.h's inline counters); this file reads them. */
#include <string.h>

#include "memory/memory_internal.h"

void clg_stats_locked(clg_allocator *a, clg_memory_stats *out)
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
  clg_stats_locked(a, out);
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
void clg_stats_debug_string(clg_strbuf *s, const clg_memory_stats *st)
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
