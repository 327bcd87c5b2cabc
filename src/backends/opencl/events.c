/* The OpenCL kind's events (device.h's clg_event, tagged with clg_cl_event_ops): a cl_event
 * and the context it belongs to, with a count of the holders of this wrapper (the cl_event
 * keeps one reference for all of them). chain puts events of the queue's own context in a
 * barrier's wait list and waits for every other on the host. */
#include <stdatomic.h>
#include <stdlib.h>

#include "backends/opencl/opencl.h"

typedef struct cl_ev {
  clg_event tag;
  cl_event ev;
  cl_context context;
  atomic_int holders;
} cl_ev;

static cl_ev *cl_ev_of(clg_event *e) { return (cl_ev *)(void *)e; }

static void ev_retain(clg_event *e) { atomic_fetch_add(&cl_ev_of(e)->holders, 1); }

static void ev_release(clg_event *e)
{
  cl_ev *c = cl_ev_of(e);
  if (atomic_fetch_sub(&c->holders, 1) != 1)
    return;
  clReleaseEvent(c->ev);
  free(c);
}

static clg_code ev_wait(clg_event *e)
{
  cl_int err = clWaitForEvents(1, &cl_ev_of(e)->ev);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clWaitForEvents", "%s", "");
  return CLG_OK;
}

static bool ev_done(clg_event *e)
{
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(cl_ev_of(e)->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                     NULL) != CL_SUCCESS)
    return true; /* a failed query: nothing is waiting on it */
  return status <= CL_COMPLETE;
}

static clg_code ev_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns)
{
  return clg_device_event_times(cl_ev_of(e)->ev, start_ns, end_ns);
}

const clg_event_ops clg_cl_event_ops = {
    .kind = "OpenCL",
    .retain = ev_retain,
    .release = ev_release,
    .wait = ev_wait,
    .done = ev_done,
    .times = ev_times,
};

clg_event *clg_cl_event_adopt(const clg_device *dev, cl_event ev)
{
  if (!ev)
    return NULL;
  cl_ev *c = malloc(sizeof *c);
  if (!c) {
    /* No memory to keep it: wait, and hand out the completed event that NULL is. */
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    return NULL;
  }
  c->tag.ops = &clg_cl_event_ops;
  c->ev = ev;
  c->context = clg_cl_context(dev);
  atomic_init(&c->holders, 1);
  return &c->tag;
}

cl_event clg_cl_event_of(clg_event *e)
{
  return e && clg_event_is(e, &clg_cl_event_ops) ? cl_ev_of(e)->ev : NULL;
}

clg_code clg_cl_wait_list(const clg_device *dev, int n, clg_event *const *events, cl_event *list,
                          cl_uint *count)
{
  *count = 0;
  for (int i = 0; i < n; i++) {
    clg_event *e = events[i];
    if (!e)
      continue;
    if (clg_event_is(e, &clg_cl_event_ops) && cl_ev_of(e)->context == clg_cl_context(dev) &&
        clg_cl_context(dev)) {
      list[(*count)++] = cl_ev_of(e)->ev;
      continue;
    }
    /* Another kind's event, or another context's: dev's queue cannot wait for it. */
    clg_code code = e->ops->wait(e);
    if (code != CLG_OK)
      return clg_error_prefix("waiting for an event (%s%s) before work on %s: ", e->ops->kind,
                              clg_event_is(e, &clg_cl_event_ops) ? ", another context" : "",
                              dev->info.name);
  }
  return CLG_OK;
}

clg_code clg_cl_chain(clg_device *dev, int n, clg_event *const *events)
{
  cl_event stack[8];
  cl_event *list = n <= 8 ? stack : malloc(sizeof *list * (size_t)n);
  if (!list)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a wait list");
  cl_uint count = 0;
  clg_code code = clg_cl_wait_list(dev, n, events, list, &count);
  if (code == CLG_OK && count) {
    /* The queue is in order: a barrier holds back everything enqueued after it. */
    cl_int err = clEnqueueBarrierWithWaitList(clg_cl_queue(dev), count, list, NULL);
    if (err != CL_SUCCESS)
      code = clg_cl_error(err, "clEnqueueBarrierWithWaitList", " on %s", dev->info.name);
  }
  if (list != stack)
    free(list);
  return code;
}

clg_code clg_device_event_times(cl_event event, uint64_t *start_ns, uint64_t *end_ns)
{
  cl_ulong s = 0, e = 0;
  cl_int err = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
  if (err == CL_SUCCESS)
    err = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clGetEventProfilingInfo", "%s", "");
  *start_ns = s;
  *end_ns = e;
  return CLG_OK;
}
