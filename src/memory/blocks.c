/* Handing out and taking back blocks: clg_allocator_alloc and clg_allocator_free. The
 * common cases (a free block fits; a free with no event) stay in this file, in a few loads
 * and one suballocator call; everything else is asked of regions.c, pending.c, hostblocks.c
 * and dump.c in the order of alloc_slow. */
#include <string.h>

#include "memory/memory_internal.h"

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
  clg_alloc_count_alloc(a, size);
  return true;
}

/* Everything after the first attempt failed (lock held). */
static clg_code alloc_slow(clg_allocator *a, size_t bytes, uint64_t rounded, clg_block *out,
                           clg_logq *q)
{
  a->region_error[0] = '\0';
  if (!a->growth && !a->reserve_done) {
    a->reserve_done = true;
    clg_regions_reserve_all(a, q);
    if (try_alloc(a, rounded, out))
      return CLG_OK;
  }
  if (clg_regions_extend(a, rounded) == CLG_OK && try_alloc(a, rounded, out))
    return CLG_OK;
  if (a->num_pend) {
    if (clg_pending_wait(a, rounded, out, try_alloc))
      return CLG_OK;
    if (clg_regions_extend(a, rounded) == CLG_OK && try_alloc(a, rounded, out))
      return CLG_OK;
  }
  if (a->gc && clg_regions_collect(a, rounded, q) && clg_regions_extend(a, rounded) == CLG_OK &&
      try_alloc(a, rounded, out))
    return CLG_OK;
  return clg_dump_oom(a, bytes, rounded, q);
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
  clg_logq q = {0};
  clg_code code = CLG_OK;
  pthread_mutex_lock(&a->mu);
  if (a->num_pend)
    clg_pending_reclaim(a);
  if (a->is_host) {
    code = clg_hostblocks_alloc(a, bytes, out, &q);
  } else {
    uint64_t rounded = ((uint64_t)bytes + a->align - 1) & ~(a->align - 1);
    if (rounded < bytes) /* wrapped around */
      rounded = UINT64_MAX & ~(a->align - 1);
    if (!try_alloc(a, rounded, out))
      code = alloc_slow(a, bytes, rounded, out, &q);
  }
  pthread_mutex_unlock(&a->mu);
  clg_logq_flush(&q);
  return code;
}

void clg_blocks_release_now(clg_allocator *a, const clg_block *b)
{
  if (a->num_labels)
    clg_labels_forget(a, b);
  if (a->is_host)
    clg_hostblocks_release(a, b);
  else
    clg_suballoc_release(a->sa, b->region, b->offset);
}

/* True when b is a block this allocator handed out and nobody freed yet. */
bool clg_blocks_is_live(clg_allocator *a, const clg_block *b)
{
  if (a->is_host) {
    clg_host_hdr *h = clg_hostblocks_header(b);
    if (!h || h->magic != CLG_ALLOC_HOST_MAGIC || h->size != b->size)
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

void clg_allocator_free(clg_allocator *a, const clg_block *b, clg_event *pending_event)
{
  if (!a || !b || b->size == 0)
    return;
  pthread_mutex_lock(&a->mu);
  if (!pending_event && !a->is_host && !a->num_pend) {
    /* The common case: checked and freed with one lookup. */
    if (b->region < a->num_slots && a->regions[b->region].mem == b->mem &&
        clg_suballoc_release_sized(a->sa, b->region, b->offset, b->size)) {
      if (a->num_labels)
        clg_labels_forget(a, b);
      a->in_use -= b->size;
      a->live--;
      pthread_mutex_unlock(&a->mu);
      return;
    }
  } else if (clg_blocks_is_live(a, b)) {
    a->in_use -= b->size;
    a->live--;
    if (!(pending_event && clg_pending_defer(a, b, pending_event)))
      clg_blocks_release_now(a, b);
    pthread_mutex_unlock(&a->mu);
    return;
  }
  pthread_mutex_unlock(&a->mu);
  clg_log(CLG_LOG_ERROR,
          "clg_allocator_free: allocator %s has no block in use of %zu bytes at region %u "
          "offset %zu (host %p); ignored",
          a->name, b->size, b->region, b->offset, b->host);
}
