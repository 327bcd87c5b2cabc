/* Data movement on OpenCL devices. Copies inside one context use clEnqueueCopyBuffer on
 * the destination's queue, ordered after the source's event, so no queue is drained. */
#include "device/device.h"

clg_code clg_device_upload(clg_device *dev, cl_mem mem, size_t offset, const void *host,
                           size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err = clEnqueueWriteBuffer(dev->queue, mem, CL_TRUE, offset, bytes, host, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueWriteBuffer", " of %zu bytes on %s", bytes, dev->info.name);
  return CLG_OK;
}

clg_code clg_device_download(clg_device *dev, cl_mem mem, size_t offset, void *host, size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err = clEnqueueReadBuffer(dev->queue, mem, CL_TRUE, offset, bytes, host, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueReadBuffer", " of %zu bytes on %s", bytes, dev->info.name);
  return CLG_OK;
}

clg_code clg_device_copy(clg_device *dst, cl_mem dst_mem, size_t dst_offset, const clg_device *src,
                         cl_mem src_mem, size_t src_offset, size_t bytes, cl_event wait,
                         cl_event *done)
{
  if (dst->is_host || src->is_host || dst->context != src->context)
    return clg_error(CLG_UNIMPLEMENTED, "no direct copy from %s to %s", src->info.name,
                     dst->info.name);
  if (done)
    *done = NULL;
  if (bytes == 0)
    return CLG_OK;
  cl_int err = clEnqueueCopyBuffer(dst->queue, src_mem, dst_mem, src_offset, dst_offset, bytes,
                                   wait ? 1 : 0, wait ? &wait : NULL, done);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueCopyBuffer", " of %zu bytes from %s to %s", bytes,
                        src->info.name, dst->info.name);
  return CLG_OK;
}

clg_code clg_device_marker(clg_device *dev, cl_event *event)
{
  cl_int err = clEnqueueMarkerWithWaitList(dev->queue, 0, NULL, event);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueMarkerWithWaitList", " on %s", dev->info.name);
  return CLG_OK;
}

clg_code clg_device_finish(clg_device *dev)
{
  if (dev->is_host)
    return CLG_OK;
  cl_int err = clFinish(dev->queue);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clFinish", " on %s", dev->info.name);
  return CLG_OK;
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
