/* Pinned host memory for large host tensors: buffers made with CL_MEM_ALLOC_HOST_PTR and
 * kept mapped. Drivers give page-locked memory for these (NVIDIA's documented way to get
 * pinned memory in OpenCL), which a GPU reads and writes by DMA at full speed; from plain
 * (pageable) memory the driver stages every copy through a bounce buffer. On the H200 a
 * session's MatMul spent most of its time in such copies (3-7 GB/s).
 *
 * The pool belongs to the process state, but a tensor can outlive every session, so each
 * buffer handed out holds a reference: the pool (its context and queue, needed to unmap)
 * goes when the owner has closed it and the last buffer has come back. Freed buffers are
 * kept for the next tensor of the same size while the pool is open; everything pinned, kept
 * or in use, stays under the limit. Buffers, queue and context are the device kind's
 * (its buffer table, clg_buffer_ops), which makes every driver call. */
#include <pthread.h>
#include <stdlib.h>

#include "memory/memory_internal.h"

struct clg_host_buf {
  clg_pinned *pool;
  void *mem; /* the backend's buffer */
  void *ptr;
  size_t bytes;
  clg_host_buf *next; /* in the pool's cache */
};

struct clg_pinned {
  pthread_mutex_t mu;
  const clg_buffer_ops *ops;
  void *context, *queue; /* the backend's */
  int refs;              /* the owner's, while open, and one per buffer handed out */
  bool open;             /* the owner has not closed it */
  size_t limit, pinned;  /* pinned: bytes in buffers, in use or kept */
  clg_host_buf *cache;
};

static void buf_destroy(clg_pinned *p, clg_host_buf *b)
{
  p->ops->unmap_host(p->queue, b->mem, b->ptr);
  p->pinned -= b->bytes;
  free(b);
}

static void pool_destroy(clg_pinned *p)
{
  p->ops->queue_release(p->queue);
  p->ops->context_release(p->context);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

clg_pinned *clg_pinned_new(const clg_device *dev, size_t limit)
{
  const clg_buffer_ops *ops = dev && !dev->is_host ? clg_device_ops_of(dev)->buffers : NULL;
  if (!ops || !ops->device_ready(dev) || limit == 0)
    return NULL;
  clg_pinned *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->ops = ops;
  clg_region_err err;
  p->queue = ops->queue_new(dev, &err);
  if (!p->queue) {
    clg_log(CLG_LOG_WARNING, "pinned host memory is off: %s on %s failed: %s", err.call,
            dev->info.name, err.name);
    free(p);
    return NULL;
  }
  p->context = ops->context_retain(dev);
  pthread_mutex_init(&p->mu, NULL);
  p->refs = 1;
  p->open = true;
  p->limit = limit;
  return p;
}

void clg_pinned_close(clg_pinned *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->open = false;
  while (p->cache) {
    clg_host_buf *b = p->cache;
    p->cache = b->next;
    buf_destroy(p, b);
  }
  bool last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (last)
    pool_destroy(p);
}

void *clg_pinned_alloc(void *pool, size_t bytes, clg_host_buf **out)
{
  clg_pinned *p = pool;
  clg_host_buf *b = NULL;
  pthread_mutex_lock(&p->mu);
  for (clg_host_buf **at = &p->cache; *at; at = &(*at)->next)
    if ((*at)->bytes == bytes) {
      b = *at;
      *at = b->next;
      break;
    }
  /* Room first: kept buffers of other sizes give way to a new one. */
  while (!b && p->cache && bytes > p->limit - p->pinned) {
    clg_host_buf *old = p->cache;
    p->cache = old->next;
    buf_destroy(p, old);
  }
  if (!b && bytes <= p->limit - p->pinned) {
    void *mem = NULL;
    void *ptr = p->ops->map_host(p->context, p->queue, bytes, 64, &mem);
    b = ptr ? malloc(sizeof *b) : NULL;
    if (b) {
      *b = (clg_host_buf){p, mem, ptr, bytes, NULL};
      p->pinned += bytes;
    } else if (ptr) { /* declined: the tensor takes plain memory */
      p->ops->decline_host(p->queue, mem, ptr);
    }
  }
  if (b)
    p->refs++;
  pthread_mutex_unlock(&p->mu);
  *out = b;
  return b ? b->ptr : NULL;
}

void clg_pinned_release(clg_host_buf *b)
{
  if (!b)
    return;
  clg_pinned *p = b->pool;
  pthread_mutex_lock(&p->mu);
  if (p->open) {
    b->next = p->cache;
    p->cache = b;
  } else {
    buf_destroy(p, b);
  }
  bool last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (last)
    pool_destroy(p);
}
