/* Data movement on OpenCL devices. Copies inside one context use clEnqueueCopyBuffer on
 * the destination's queue, ordered after the source's event, so no queue is drained. */
#include "backends/opencl/opencl.h"

clg_code clg_device_upload(clg_device *dev, void *mem, size_t offset, const void *host,
                           size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err =
      clEnqueueWriteBuffer(clg_cl_queue(dev), mem, CL_TRUE, offset, bytes, host, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueWriteBuffer", " of %zu bytes on %s", bytes, dev->info.name);
  return CLG_OK;
}

clg_code clg_device_download(clg_device *dev, void *mem, size_t offset, void *host, size_t bytes)
{
  if (bytes == 0)
    return CLG_OK;
  cl_int err =
      clEnqueueReadBuffer(clg_cl_queue(dev), mem, CL_TRUE, offset, bytes, host, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueReadBuffer", " of %zu bytes on %s", bytes, dev->info.name);
  return CLG_OK;
}

clg_code clg_device_copy(clg_device *dst, void *dst_mem, size_t dst_offset, const clg_device *src,
                         void *src_mem, size_t src_offset, size_t bytes, clg_event *wait,
                         clg_event **done)
{
  if (dst->is_host || src->is_host || clg_cl_context(dst) != clg_cl_context(src))
    return clg_error(CLG_UNIMPLEMENTED, "no direct copy from %s to %s", src->info.name,
                     dst->info.name);
  if (done)
    *done = NULL;
  if (bytes == 0)
    return CLG_OK;
  cl_event ev = NULL, copied = NULL;
  cl_uint nev = 0;
  clg_code code = clg_cl_wait_list(dst, 1, &wait, &ev, &nev);
  if (code != CLG_OK)
    return code;
  cl_int err = clEnqueueCopyBuffer(clg_cl_queue(dst), src_mem, dst_mem, src_offset, dst_offset,
                                   bytes, nev, nev ? &ev : NULL, done ? &copied : NULL);
  if (done)
    *done = clg_cl_event_adopt(dst, copied);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueCopyBuffer", " of %zu bytes from %s to %s", bytes,
                        src->info.name, dst->info.name);
  return CLG_OK;
}

clg_code clg_device_marker(clg_device *dev, cl_event *event)
{
  cl_int err = clEnqueueMarkerWithWaitList(clg_cl_queue(dev), 0, NULL, event);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueMarkerWithWaitList", " on %s", dev->info.name);
  return CLG_OK;
}

clg_code clg_device_finish(clg_device *dev)
{
  if (dev->is_host)
    return CLG_OK;
  cl_int err = clFinish(clg_cl_queue(dev));
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clFinish", " on %s", dev->info.name);
  return CLG_OK;
}
