/* The device module's opaque events (device.h): a cl_event underneath, NULL an event that
 * has completed. Only OpenCL devices make events; the host and remote devices work
 * synchronously and return NULL. */
#include "backends/opencl/opencl.h"

clg_event *clg_event_retain(clg_event *e)
{
  if (e)
    clRetainEvent(clg_event_cl(e));
  return e;
}

void clg_event_release(clg_event *e)
{
  if (e)
    clReleaseEvent(clg_event_cl(e));
}

bool clg_event_hold(clg_event *e) { return clRetainEvent(clg_event_cl(e)) == CL_SUCCESS; }

void clg_event_sync(clg_event *e)
{
  cl_event ev = clg_event_cl(e);
  clWaitForEvents(1, &ev);
}

clg_code clg_event_wait(int n, clg_event *const *events)
{
  for (int i = 0; i < n; i++) {
    if (!events[i])
      continue;
    cl_event ev = clg_event_cl(events[i]);
    cl_int err = clWaitForEvents(1, &ev);
    if (err != CL_SUCCESS)
      return clg_cl_error(err, "clWaitForEvents", "%s", "");
  }
  return CLG_OK;
}

bool clg_event_done(clg_event *e)
{
  if (!e)
    return true;
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(clg_event_cl(e), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                     NULL) != CL_SUCCESS)
    return true; /* a failed query: nothing is waiting on it */
  return status <= CL_COMPLETE;
}

clg_code clg_event_times(clg_event *e, uint64_t *start_ns, uint64_t *end_ns)
{
  if (!e)
    return clg_error(CLG_FAILED_PRECONDITION, "no event to time");
  return clg_device_event_times(clg_event_cl(e), start_ns, end_ns);
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
