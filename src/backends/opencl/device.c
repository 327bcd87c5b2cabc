/* OpenCL devices' table (clg_device_ops): blocking copies to and from the host, copies
 * between devices of one context on the destination's queue, markers, events and their
 * chains (events.c), the clock, and the buffer table of buffers.c. */
#include <stdlib.h>

#include "backends/opencl/opencl.h"

static clg_code cl_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  return clg_device_upload(dev, clg_cl_mem(dst), dst->offset, src, bytes);
}

static clg_code cl_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  return clg_device_download(dev, clg_cl_mem(src), src->offset, dst, bytes);
}

static clg_code cl_copy(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                        size_t bytes, int nwait, clg_event *const *wait, clg_event **done)
{
  *done = NULL;
  if (src->is_host || clg_cl_context(src) != clg_cl_context(dst))
    return CLG_UNIMPLEMENTED;
  if (bytes == 0)
    return CLG_OK;
  cl_event stack[8], ev = NULL;
  cl_event *list = nwait <= 8 ? stack : malloc(sizeof *list * (size_t)nwait);
  if (!list)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a wait list");
  cl_uint n = 0;
  clg_code code = clg_cl_wait_list(dst, nwait, wait, list, &n);
  cl_int err = CL_SUCCESS;
  if (code == CLG_OK)
    err = clEnqueueCopyBuffer(clg_cl_queue(dst), clg_cl_mem(s), clg_cl_mem(d), s->offset, d->offset,
                              bytes, n, n ? list : NULL, &ev);
  if (list != stack)
    free(list);
  if (code != CLG_OK)
    return code;
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueCopyBuffer", " of %zu bytes from %s to %s", bytes,
                        src->info.name, dst->info.name);
  *done = clg_cl_event_adopt(dst, ev);
  return CLG_OK;
}

static clg_code cl_marker(clg_device *dev, clg_event **event)
{
  cl_event ev = NULL;
  clg_code code = clg_device_marker(dev, &ev);
  *event = clg_cl_event_adopt(dev, ev);
  return code;
}

const clg_device_ops clg_cl_device_ops = {
    .kind = CLG_KIND_OPENCL,
    .host_memory = false,
    .upload = cl_upload,
    .download = cl_download,
    .copy_from_peer = cl_copy,
    .marker = cl_marker,
    .chain = clg_cl_chain,
    .events = &clg_cl_event_ops,
    .finish = clg_device_finish,
    .clock_offset = clg_device_clock_offset,
    .buffers = &clg_cl_buffer_ops,
};
