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
 * or in use, stays under the limit. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "memory/memory.h"

struct clg_host_buf {
  clg_pinned *pool;
  cl_mem mem;
  void *ptr;
  size_t bytes;
  clg_host_buf *next; /* in the pool's cache */
};

struct clg_pinned {
  pthread_mutex_t mu;
  cl_context context;
  cl_command_queue queue;
  int refs;             /* the owner's, while open, and one per buffer handed out */
  bool open;            /* the owner has not closed it */
  size_t limit, pinned; /* pinned: bytes in buffers, in use or kept */
  clg_host_buf *cache;
};

static void buf_destroy(clg_pinned *p, clg_host_buf *b)
{
  cl_event ev = NULL;
  if (clEnqueueUnmapMemObject(p->queue, b->mem, b->ptr, 0, NULL, &ev) == CL_SUCCESS && ev) {
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  clReleaseMemObject(b->mem);
  p->pinned -= b->bytes;
  free(b);
}

static void pool_destroy(clg_pinned *p)
{
  clReleaseCommandQueue(p->queue);
  clReleaseContext(p->context);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

clg_pinned *clg_pinned_new(const clg_device *dev, size_t limit)
{
  if (!dev || dev->is_host || !dev->context || limit == 0)
    return NULL;
  clg_pinned *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  cl_int err = CL_SUCCESS;
  p->queue = clCreateCommandQueue(dev->context, dev->cl_device, 0, &err);
  if (err != CL_SUCCESS || !p->queue) {
    clg_log(CLG_LOG_WARNING, "pinned host memory is off: clCreateCommandQueue on %s failed: %s",
            dev->info.name, clg_cl_error_name(err));
    free(p);
    return NULL;
  }
  clRetainContext(dev->context);
  p->context = dev->context;
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
    cl_int err = CL_SUCCESS;
    cl_mem mem =
        clCreateBuffer(p->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    void *ptr = NULL;
    if (err == CL_SUCCESS && mem)
      ptr = clEnqueueMapBuffer(p->queue, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                               NULL, NULL, &err);
    b = err == CL_SUCCESS && ptr && (uintptr_t)ptr % 64 == 0 ? malloc(sizeof *b) : NULL;
    if (b) {
      *b = (clg_host_buf){p, mem, ptr, bytes, NULL};
      p->pinned += bytes;
    } else if (mem) { /* declined: the tensor takes plain memory */
      if (ptr)
        clEnqueueUnmapMemObject(p->queue, mem, ptr, 0, NULL, NULL);
      clFinish(p->queue);
      clReleaseMemObject(mem);
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
