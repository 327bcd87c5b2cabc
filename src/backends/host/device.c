/* The host CPU:0's table (clg_device_ops): its blocks are plain memory, so data moves by
 * memcpy and every call completes before it returns (no markers; its kernels make no
 * events, and it chains another's by waiting for it: events.c). The remote table
 * (backends/remote/) serves other tasks' devices with these functions. */
#include <string.h>

#include "backends/host/host.h"

clg_code clg_host_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  (void)dev;
  if (bytes && dst->host != src)
    memcpy(dst->host, src, bytes);
  return CLG_OK;
}

clg_code clg_host_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  (void)dev;
  if (bytes && src->host != dst)
    memcpy(dst, src->host, bytes);
  return CLG_OK;
}

clg_code clg_host_copy_from_peer(clg_device *dst, const clg_block *d, clg_device *src,
                                 const clg_block *s, size_t bytes, int nwait,
                                 clg_event *const *wait, clg_event **done)
{
  *done = NULL;
  if (!clg_device_ops_of(src)->host_memory)
    return CLG_UNIMPLEMENTED;
  clg_code code = clg_host_chain(dst, nwait, wait);
  return code == CLG_OK ? clg_host_upload(dst, d, s->host, bytes) : code;
}

clg_code clg_host_marker(clg_device *dev, clg_event **event)
{
  (void)dev;
  *event = NULL;
  return CLG_OK;
}

clg_code clg_host_finish(clg_device *dev)
{
  (void)dev;
  return CLG_OK;
}

clg_code clg_host_clock_offset(clg_device *dev, int64_t *offset, uint64_t *error_ns)
{
  (void)dev;
  *offset = 0;
  *error_ns = 0;
  return CLG_OK;
}

const clg_device_ops clg_host_device_ops = {
    .kind = CLG_KIND_HOST,
    .host_memory = true,
    .upload = clg_host_upload,
    .download = clg_host_download,
    .copy_from_peer = clg_host_copy_from_peer,
    .marker = clg_host_marker,
    .chain = clg_host_chain,
    .events = &clg_host_event_ops,
    .finish = clg_host_finish,
    .clock_offset = clg_host_clock_offset,
    .buffers = NULL, /* the allocator's own aligned mallocs (memory/hostblocks.c) */
};
