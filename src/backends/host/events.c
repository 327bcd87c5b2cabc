/* The host kind's events (device.h's clg_event, tagged with clg_host_event_ops): a flag that a
 * host thread sets when its work is done, for work that runs beside the caller's thread.
 * CPU:0's own kernels run in the caller's thread and make no event (NULL). The host chains
 * any event by waiting for it: whatever it enqueues next starts after chain returns. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

typedef struct host_ev {
  clg_event tag;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool signalled;
  clg_code code;
  char why[200];
  atomic_int holders;
} host_ev;

static host_ev *host_ev_of(clg_event *e) { return (host_ev *)(void *)e; }

static void ev_retain(clg_event *e) { atomic_fetch_add(&host_ev_of(e)->holders, 1); }

static void ev_release(clg_event *e)
{
  host_ev *h = host_ev_of(e);
  if (atomic_fetch_sub(&h->holders, 1) != 1)
    return;
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static clg_code ev_wait(clg_event *e)
{
  host_ev *h = host_ev_of(e);
  pthread_mutex_lock(&h->mu);
  while (!h->signalled)
    pthread_cond_wait(&h->cv, &h->mu);
  clg_code code = h->code;
  pthread_mutex_unlock(&h->mu);
  if (code != CLG_OK)
    return clg_error(code, "%s", h->why); /* why is fixed once signalled */
  return CLG_OK;
}

static bool ev_done(clg_event *e)
{
  host_ev *h = host_ev_of(e);
  pthread_mutex_lock(&h->mu);
  bool done = h->signalled;
  pthread_mutex_unlock(&h->mu);
  return done;
}

static clg_code ev_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns)
{
  (void)e, (void)start_ns, (void)end_ns;
  return clg_error(CLG_FAILED_PRECONDITION, "a host event keeps no times");
}

const clg_event_ops clg_host_event_ops = {
    .kind = "host",
    .retain = ev_retain,
    .release = ev_release,
    .wait = ev_wait,
    .done = ev_done,
    .times = ev_times,
};

clg_code clg_host_event_new(clg_event **event)
{
  *event = NULL;
  host_ev *h = calloc(1, sizeof *h);
  if (!h)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a host event");
  if (pthread_mutex_init(&h->mu, NULL) != 0) {
    free(h);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "no mutex for a host event");
  }
  if (pthread_cond_init(&h->cv, NULL) != 0) {
    pthread_mutex_destroy(&h->mu);
    free(h);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "no condition variable for a host event");
  }
  h->tag.ops = &clg_host_event_ops;
  atomic_init(&h->holders, 1);
  *event = &h->tag;
  return CLG_OK;
}

clg_code clg_host_event_signal(clg_event *event, clg_code code, const char *why)
{
  if (!event || !clg_event_is(event, &clg_host_event_ops))
    return clg_error(CLG_INVALID_ARGUMENT, "signalling %s: not a host event",
                     event ? event->ops->kind : "a NULL event");
  host_ev *h = host_ev_of(event);
  pthread_mutex_lock(&h->mu);
  bool again = h->signalled;
  if (!again) {
    h->code = code;
    snprintf(h->why, sizeof h->why, "%s", code == CLG_OK ? "" : why ? why : "host work failed");
    h->signalled = true;
    pthread_cond_broadcast(&h->cv);
  }
  pthread_mutex_unlock(&h->mu);
  if (again)
    return clg_error(CLG_FAILED_PRECONDITION, "a host event is signalled once");
  return CLG_OK;
}

clg_code clg_host_chain(clg_device *dev, int n, clg_event *const *events)
{
  for (int i = 0; i < n; i++) {
    clg_event *e = events[i];
    if (e && e->ops->wait(e) != CLG_OK)
      return clg_error_prefix("waiting for an event (%s) before work on %s: ", e->ops->kind,
                              dev->info.name);
  }
  return CLG_OK;
}
