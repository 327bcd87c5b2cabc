/* What memory maps read: the labels that name what a block holds, and snapshots of every
 * block with its state and label (memmap.c draws them). Labels are few (arenas, Consts,
 * variables), so a list searched in full serves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory_internal.h"

int clg_labels_find(const clg_allocator *a, const clg_block *b)
{
  for (size_t i = 0; i < a->num_labels; i++)
    if (a->is_host ? a->labels[i].host == b->host
                   : a->labels[i].region == b->region && a->labels[i].offset == b->offset)
      return (int)i;
  return -1;
}

void clg_labels_forget(clg_allocator *a, const clg_block *b)
{
  int i = a->num_labels ? clg_labels_find(a, b) : -1;
  if (i < 0)
    return;
  free(a->labels[i].text);
  a->labels[i] = a->labels[--a->num_labels];
}

void clg_labels_free_all(clg_allocator *a)
{
  for (size_t i = 0; i < a->num_labels; i++)
    free(a->labels[i].text);
  free(a->labels);
}

bool clg_allocator_label(clg_allocator *a, const clg_block *b, const char *text)
{
  if (!a || !b || b->size == 0)
    return false;
  bool ok = false;
  pthread_mutex_lock(&a->mu);
  if (!clg_blocks_is_live(a, b))
    goto done;
  int i = clg_labels_find(a, b);
  if (!text) {
    if (i >= 0)
      clg_labels_forget(a, b);
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
    clg_alloc_label *v = realloc(a->labels, sizeof *v * cap);
    if (!v) {
      free(copy);
      goto done;
    }
    a->labels = v;
    a->cap_labels = cap;
  }
  a->labels[a->num_labels++] = (clg_alloc_label){b->region, b->offset, b->host, copy};
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
  int i = clg_labels_find(a, b);
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
  b->state = !in_use                                 ? CLG_BLOCK_FREE
             : clg_pending_has(c->a, region, offset) ? CLG_BLOCK_PENDING
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
  clg_stats_locked(a, stats);
  if (a->is_host) {
    uint64_t at = 0, total = a->in_use + a->bytes_pending;
    for (clg_host_hdr *h = a->host_blocks; h && !c.failed; h = h->next) {
      clg_alloc_block *b = snap_push(&c);
      if (!b)
        break;
      void *p = (char *)h + CLG_ALLOC_HOST_ALIGN;
      bool pend = clg_pending_has_host(a, p);
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
