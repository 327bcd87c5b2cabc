/* clg_allocator_validate: the suballocator's invariants and the statistics checked
 * against the blocks, for tests. */
#include "memory/memory_internal.h"

clg_code clg_allocator_validate(clg_allocator *a)
{
  if (!a)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_validate: allocator is NULL");
  clg_code code = CLG_OK;
  pthread_mutex_lock(&a->mu);
  uint64_t blocks = 0, bytes = 0;
  if (a->is_host) {
    for (clg_host_hdr *h = a->host_blocks; h; h = h->next) {
      if (h->magic != CLG_ALLOC_HOST_MAGIC || (h->next && h->next->prev != h)) {
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
