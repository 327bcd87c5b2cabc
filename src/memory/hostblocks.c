/* The host CPU:0 allocator ("cpu"): each block is its own 64-byte-aligned malloc, with a
 * header that links it into a list (for dumps and snapshots) and lets a free check that it
 * is a live block. host_limit (0: none) bounds the bytes in use and pending. The lock is
 * held throughout. */
#include "memory/memory_internal.h"

static bool host_fits(clg_allocator *a, uint64_t rounded, clg_block *out)
{
  (void)out;
  return !a->limit || (rounded <= a->limit && a->in_use + a->bytes_pending <= a->limit - rounded);
}

clg_code clg_hostblocks_alloc(clg_allocator *a, size_t bytes, clg_block *out, clg_logq *q)
{
  uint64_t rounded =
      ((uint64_t)bytes + CLG_ALLOC_HOST_ALIGN - 1) & ~(uint64_t)(CLG_ALLOC_HOST_ALIGN - 1);
  if (rounded < bytes || rounded > SIZE_MAX - CLG_ALLOC_HOST_ALIGN)
    return clg_dump_oom(a, bytes, UINT64_MAX & ~(uint64_t)(CLG_ALLOC_HOST_ALIGN - 1), q);
  if (!host_fits(a, rounded, NULL) &&
      !(a->num_pend && clg_pending_wait(a, rounded, NULL, host_fits)))
    return clg_dump_oom(a, bytes, rounded, q);
  clg_host_hdr *h = clg_aligned_alloc(CLG_ALLOC_HOST_ALIGN, (size_t)rounded + CLG_ALLOC_HOST_ALIGN);
  if (!h)
    return clg_dump_oom(a, bytes, rounded, q);
  h->size = (size_t)rounded;
  h->magic = CLG_ALLOC_HOST_MAGIC;
  h->prev = NULL;
  h->next = a->host_blocks;
  if (h->next)
    h->next->prev = h;
  a->host_blocks = h;
  clg_alloc_count_alloc(a, rounded);
  clg_alloc_count_reserve(a, rounded);
  *out = (clg_block){.mem = NULL,
                     .offset = 0,
                     .size = (size_t)rounded,
                     .host = (char *)h + CLG_ALLOC_HOST_ALIGN,
                     .region = 0};
  return CLG_OK;
}

clg_host_hdr *clg_hostblocks_header(const clg_block *b)
{
  return b->host ? (clg_host_hdr *)(void *)((char *)b->host - CLG_ALLOC_HOST_ALIGN) : NULL;
}

void clg_hostblocks_release(clg_allocator *a, const clg_block *b)
{
  clg_host_hdr *h = clg_hostblocks_header(b);
  if (h->prev)
    h->prev->next = h->next;
  else
    a->host_blocks = h->next;
  if (h->next)
    h->next->prev = h->prev;
  h->magic = 0;
  a->reserved -= h->size;
  clg_aligned_free(h);
}

void clg_hostblocks_free_all(clg_allocator *a)
{
  for (clg_host_hdr *h = a->host_blocks, *next; h; h = next) {
    next = h->next;
    h->magic = 0;
    clg_aligned_free(h);
  }
}
