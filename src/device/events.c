/* The device module's events (device.h): each call goes to the table of the kind that made
 * the event, so that no module below the backends knows what is behind one. */
#include "device/device.h"

clg_event *clg_event_retain(clg_event *e)
{
  if (e)
    e->ops->retain(e);
  return e;
}

void clg_event_release(clg_event *e)
{
  if (e)
    e->ops->release(e);
}

bool clg_event_hold(clg_event *e)
{
  e->ops->retain(e);
  return true;
}

void clg_event_sync(clg_event *e) { (void)e->ops->wait(e); }

clg_code clg_event_wait(int n, clg_event *const *events)
{
  for (int i = 0; i < n; i++) {
    if (!events[i])
      continue;
    clg_code code = events[i]->ops->wait(events[i]);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

bool clg_event_done(clg_event *e) { return !e || e->ops->done(e); }

clg_code clg_event_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns)
{
  if (!e)
    return clg_error(CLG_FAILED_PRECONDITION, "no event to time");
  return e->ops->times(e, start_ns, end_ns);
}
