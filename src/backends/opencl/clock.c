/* Device clocks on the host's clock. OpenCL event times are on each device's profiling
 * clock (PoCL's runs about 257 ms apart from clg_now_ns); a trace puts every device on the
 * host's monotonic clock with an offset found here. This file alone asks for the OpenCL 2.1
 * declarations (clGetDeviceAndHostTimer); it calls that only where the device and its
 * platform say they have it. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300

#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl.h"

/* OpenCL >= 2.1 and a platform host timer (PoCL 3.1 reports a resolution of 0: none). */
static bool has_host_timer(const clg_device *dev)
{
  char version[128] = "";
  if (clGetDeviceInfo(clg_cl_device_id(dev), CL_DEVICE_VERSION, sizeof version - 1, version,
                      NULL) != CL_SUCCESS)
    return false;
  int major = 0, minor = 0;
  if (sscanf(version, "OpenCL %d.%d", &major, &minor) != 2 || major * 10 + minor < 21)
    return false;
  cl_ulong resolution = 0;
  return clGetPlatformInfo(clg_cl_platform(dev), CL_PLATFORM_HOST_TIMER_RESOLUTION,
                           sizeof resolution, &resolution, NULL) == CL_SUCCESS &&
         resolution > 0;
}

/* clGetDeviceAndHostTimer's device reading between two host readings: the device's time
 * was read somewhere in [h0, h1]. */
static bool timer_offset(clg_device *dev, int64_t *offset, uint64_t *error_ns)
{
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    cl_ulong device_ts = 0, host_ts = 0;
    uint64_t h0 = clg_now_ns();
    cl_int err = clGetDeviceAndHostTimer(clg_cl_device_id(dev), &device_ts, &host_ts);
    uint64_t h1 = clg_now_ns();
    if (err != CL_SUCCESS)
      return false;
    if (h1 - h0 < best) {
      best = h1 - h0;
      *offset = (int64_t)(h0 + (h1 - h0) / 2) - (int64_t)device_ts;
      *error_ns = (h1 - h0 + 1) / 2;
    }
  }
  return true;
}

clg_code clg_device_clock_offset(clg_device *dev, int64_t *host_minus_device_ns, uint64_t *error_ns)
{
  *host_minus_device_ns = 0;
  *error_ns = 0;
  if (dev->is_host)
    return CLG_OK;
  if (has_host_timer(dev) && timer_offset(dev, host_minus_device_ns, error_ns))
    return CLG_OK;
  /* Markers. With q (QUEUED) taken during the enqueue call, [h0, h1] around it, and e (END)
   * before the wait returned at h2: h0 - q <= offset <= h1 - q and offset <= h2 - e. */
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  int64_t loose = 0; /* a drivers that stamps QUEUED late: the tightest midpoint instead */
  uint64_t loose_span = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    cl_event ev = NULL;
    uint64_t h0 = clg_now_ns();
    cl_int err = clEnqueueMarkerWithWaitList(clg_cl_queue(dev), 0, NULL, &ev);
    uint64_t h1 = clg_now_ns();
    if (err == CL_SUCCESS)
      err = clWaitForEvents(1, &ev);
    uint64_t h2 = clg_now_ns();
    cl_ulong q = 0, e = 0;
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
    if (ev)
      clReleaseEvent(ev);
    if (err != CL_SUCCESS)
      return clg_cl_error(err, "clEnqueueMarkerWithWaitList", " timing the clock of %s",
                          dev->info.name);
    int64_t a = (int64_t)h0 - (int64_t)q, b = (int64_t)h1 - (int64_t)q;
    int64_t c = (int64_t)h2 - (int64_t)e;
    if (a > lo)
      lo = a;
    if (b < hi)
      hi = b;
    if (c < hi)
      hi = c;
    if (h2 - h0 < loose_span) {
      loose_span = h2 - h0;
      loose = (int64_t)(h0 + (h2 - h0) / 2) - (int64_t)e;
    }
  }
  if (lo <= hi) {
    *host_minus_device_ns = lo + (hi - lo) / 2;
    *error_ns = (uint64_t)(hi - lo + 1) / 2;
  } else {
    *host_minus_device_ns = loose;
    *error_ns = (loose_span + 1) / 2;
  }
  return CLG_OK;
}
