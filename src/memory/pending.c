/* Blocks freed while a command may still use them (clg_allocator_free with an event): kept
 * from reuse until the event completes or fails, the event retained meanwhile (the device
 * module's events); the lock is held throughout, except while waiting. */
#include <stdlib.h>
#include <time.h>

#include "memory/memory_internal.h"

/* How long an allocation that only pending frees could satisfy waits for their events:
 * TensorFlow's kMaxMillisToWait for allocation retries. */
#define PENDING_WAIT_NS 10000000000ull

static void sleep_us(unsigned us)
{
  struct timespec ts = {0, (long)us * 1000};
  nanosleep(&ts, NULL);
}

size_t clg_pending_reclaim(clg_allocator *a)
{
  size_t done = 0;
  for (size_t i = 0; i < a->num_pend;) {
    if (!clg_event_done(a->pend[i].event)) {
      i++;
      continue;
    }
    clg_event_release(a->pend[i].event);
    a->bytes_pending -= a->pend[i].block.size;
    clg_blocks_release_now(a, &a->pend[i].block);
    a->pend[i] = a->pend[--a->num_pend];
    done++;
  }
  return done;
}

/* Waits (the lock dropped) for pending frees to complete, retrying after each one that
 * does, for at most PENDING_WAIT_NS. Polls rather than waiting on an event: a user
 * event or a command behind one may never complete, and TensorFlow bounds this wait too. */
bool clg_pending_wait(clg_allocator *a, uint64_t rounded, clg_block *out, clg_pending_retry retry)
{
  uint64_t deadline = clg_now_ns() + PENDING_WAIT_NS;
  unsigned us = 20;
  while (a->num_pend) {
    if (clg_pending_reclaim(a)) {
      if (retry(a, rounded, out))
        return true;
      continue;
    }
    if (clg_now_ns() > deadline)
      break;
    pthread_mutex_unlock(&a->mu);
    sleep_us(us);
    pthread_mutex_lock(&a->mu);
    us = us < 1000 ? us * 2 : 1000;
  }
  return retry(a, rounded, out);
}

bool clg_pending_defer(clg_allocator *a, const clg_block *b, clg_event *ev)
{
  if (clg_event_done(ev))
    return false;
  if (a->num_pend == a->cap_pend) {
    size_t cap = a->cap_pend ? a->cap_pend * 2 : 16;
    clg_alloc_pending *p = realloc(a->pend, sizeof *p * cap);
    if (p) {
      a->pend = p;
      a->cap_pend = cap;
    }
  }
  if (a->num_pend < a->cap_pend && clg_event_hold(ev)) {
    a->pend[a->num_pend++] = (clg_alloc_pending){*b, ev};
    a->bytes_pending += b->size;
    return true;
  }
  /* No room to remember it: wait here rather than hand the block out early. */
  pthread_mutex_unlock(&a->mu);
  clg_event_sync(ev);
  pthread_mutex_lock(&a->mu);
  return false;
}

bool clg_pending_has(const clg_allocator *a, uint32_t region, uint64_t offset)
{
  for (size_t i = 0; i < a->num_pend; i++)
    if (a->pend[i].block.region == region && a->pend[i].block.offset == offset)
      return true;
  return false;
}

bool clg_pending_has_host(const clg_allocator *a, const void *p)
{
  bool pend = false;
  for (size_t i = 0; i < a->num_pend && !pend; i++)
    pend = a->pend[i].block.host == p;
  return pend;
}

void clg_pending_free_all(clg_allocator *a)
{
  for (size_t i = 0; i < a->num_pend; i++)
    clg_event_release(a->pend[i].event);
  free(a->pend);
}
