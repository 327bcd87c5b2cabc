/* Data movement on OpenCL devices: uploads, downloads, peer copies and markers. Part of
 * the device module; included by device.h's users through this header until merged. */
#ifndef CLG_DEVICE_TRANSFER_H
#define CLG_DEVICE_TRANSFER_H

#include "device/device.h"

/* Blocking write of bytes from host to (mem, offset) on dev's queue. */
clg_code clg_device_upload(clg_device *dev, cl_mem mem, size_t offset, const void *host, size_t bytes);
/* Blocking read of bytes from (mem, offset) on dev's queue (after all work queued there). */
clg_code clg_device_download(clg_device *dev, cl_mem mem, size_t offset, void *host, size_t bytes);
/* Copies within one context, enqueued on dst's queue after `wait` (may be NULL); *done
 * (if not NULL) receives an event for the copy. Devices of different contexts:
 * UNIMPLEMENTED (callers stage through the host). */
clg_code clg_device_copy(clg_device *dst, cl_mem dst_mem, size_t dst_offset, const clg_device *src,
                         cl_mem src_mem, size_t src_offset, size_t bytes, cl_event wait,
                         cl_event *done);
/* An event that completes when everything enqueued on dev's queue so far has completed. */
clg_code clg_device_marker(clg_device *dev, cl_event *event);
/* Waits for everything enqueued on dev's queue. */
clg_code clg_device_finish(clg_device *dev);
/* Profiling times (ns, device clock) of a completed event. */
clg_code clg_device_event_times(cl_event event, uint64_t *start_ns, uint64_t *end_ns);

#endif
