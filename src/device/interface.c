/* The device interface's two tables, the host's and OpenCL's, and the opaque event (a
 * cl_event underneath; NULL is an event that has completed). */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

cl_event clg_event_cl(clg_event *e) { return (cl_event)(void *)e; }

clg_event *clg_event_from_cl(cl_event e) { return (clg_event *)(void *)e; }

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

/* --- the host ------------------------------------------------------------------------- */

static clg_code host_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  (void)dev;
  if (bytes && dst->host != src)
    memcpy(dst->host, src, bytes);
  return CLG_OK;
}

static clg_code host_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  (void)dev;
  if (bytes && src->host != dst)
    memcpy(dst, src->host, bytes);
  return CLG_OK;
}

static clg_code host_copy(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                          size_t bytes, int nwait, clg_event *const *wait, clg_event **done)
{
  (void)nwait, (void)wait;
  *done = NULL;
  if (!clg_device_ops_of(src)->host_memory)
    return CLG_UNIMPLEMENTED;
  return host_upload(dst, d, s->host, bytes);
}

static clg_code host_marker(clg_device *dev, clg_event **event)
{
  (void)dev;
  *event = NULL;
  return CLG_OK;
}

static clg_code host_finish(clg_device *dev)
{
  (void)dev;
  return CLG_OK;
}

static clg_code host_clock_offset(clg_device *dev, int64_t *offset, uint64_t *error_ns)
{
  (void)dev;
  *offset = 0;
  *error_ns = 0;
  return CLG_OK;
}

static const clg_device_ops host_ops = {CLG_KIND_HOST, true,        host_upload, host_download,
                                        host_copy,     host_marker, host_finish, host_clock_offset};

/* --- OpenCL ------------------------------------------------------------------------------ */

static clg_code cl_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  return clg_device_upload(dev, dst->mem, dst->offset, src, bytes);
}

static clg_code cl_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  return clg_device_download(dev, src->mem, src->offset, dst, bytes);
}

static clg_code cl_copy(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                        size_t bytes, int nwait, clg_event *const *wait, clg_event **done)
{
  *done = NULL;
  if (src->is_host || src->context != dst->context)
    return CLG_UNIMPLEMENTED;
  if (bytes == 0)
    return CLG_OK;
  cl_event stack[8], ev = NULL;
  cl_event *list = nwait <= 8 ? stack : malloc(sizeof *list * (size_t)nwait);
  if (!list)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a wait list");
  int n = 0;
  for (int i = 0; i < nwait; i++)
    if (wait[i])
      list[n++] = clg_event_cl(wait[i]);
  cl_int err = clEnqueueCopyBuffer(dst->queue, s->mem, d->mem, s->offset, d->offset, bytes,
                                   (cl_uint)n, n ? list : NULL, &ev);
  if (list != stack)
    free(list);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueCopyBuffer", " of %zu bytes from %s to %s", bytes,
                        src->info.name, dst->info.name);
  *done = clg_event_from_cl(ev);
  return CLG_OK;
}

static clg_code cl_marker(clg_device *dev, clg_event **event)
{
  cl_event ev = NULL;
  clg_code code = clg_device_marker(dev, &ev);
  *event = clg_event_from_cl(ev);
  return code;
}

static const clg_device_ops cl_ops = {
    CLG_KIND_OPENCL, false,     cl_upload,         cl_download,
    cl_copy,         cl_marker, clg_device_finish, clg_device_clock_offset};

/* --- remote devices (cluster) ----------------------------------------------------------- */

/* An OpenCL device of another task (another task's CPU:0 is the host's table): its blocks are host
 * memory of this process (values received from its task land there), so copies to and from it are
 * memcpy; its kind is the owner's, so that kernel predicates answer for it as its task does
 * (placement must agree everywhere). */
static const clg_device_ops remote_cl_ops = {
    CLG_KIND_OPENCL, true,        host_upload, host_download,
    host_copy,       host_marker, host_finish, host_clock_offset};

const clg_device_ops *clg_device_ops_of(const clg_device *dev)
{
  if (dev->remote && !dev->is_host)
    return &remote_cl_ops;
  return dev->is_host ? &host_ops : &cl_ops;
}
