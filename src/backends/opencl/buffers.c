/* OpenCL devices' buffer table (clg_buffer_ops): the regions the allocator carves, the
 * mapped host buffers of the pinned pool and the queues that fill and map them. src/memory/
 * holds them as opaque handles; a block's handle is its region's cl_mem (clg_cl_mem). Each
 * function makes the same calls, in the same order, as the allocator's code it came from,
 * so that the fault-injection tests count and fail the same calls. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"

static void set_err(clg_region_err *err, cl_int code, const char *call)
{
  err->name = clg_cl_error_name(code);
  err->code = (int)code;
  err->call = call;
}

static void *queue_new(const clg_device *dev, clg_region_err *err)
{
  cl_int code = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(clg_cl_context(dev), clg_cl_device_id(dev), 0, &code);
  if (code != CL_SUCCESS || !q) {
    set_err(err, code, "clCreateCommandQueue");
    return NULL;
  }
  return q;
}

static void queue_finish(void *queue) { clFinish(queue); }

static void queue_release(void *queue) { clReleaseCommandQueue(queue); }

static void *context_retain(const clg_device *dev)
{
  clRetainContext(clg_cl_context(dev));
  return clg_cl_context(dev);
}

static void context_release(void *context) { clReleaseContext(context); }

/* Waits for the fill and asks how it ended: a wait can succeed for a command that failed. */
static cl_int fill_wait(cl_event ev, const char **call)
{
  *call = "clWaitForEvents";
  cl_int err = clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    cl_int e2 = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (e2 == CL_SUCCESS && status < 0) {
      err = status;
      *call = "clEnqueueFillBuffer (execution)";
    }
  }
  clReleaseEvent(ev);
  return err;
}

static bool cpu_type(const clg_device *dev);

/* Whether a new region of dev is filled with zeros at once (CLGRAPH_TOUCH_REGIONS, read on
 * every region). A GPU driver backs a buffer lazily: the fill makes the reservation real,
 * so that a shortage fails here and not in the middle of a kernel. A CPU-type device's
 * buffer is host memory (PoCL's stand-ins): there the fill only writes the whole reservation
 * (2 GiB per stand-in, every session) and its pages still come on first use, so "auto" (the
 * default) skips it; "1" fills on every device, "0" on none. */
static bool touches_regions(const clg_device *dev)
{
  const char *env = getenv("CLGRAPH_TOUCH_REGIONS");
  if (env && strcmp(env, "1") == 0)
    return true;
  if (env && strcmp(env, "0") == 0)
    return false;
  if (env && *env && strcmp(env, "auto") != 0) {
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true))
      clg_log(CLG_LOG_WARNING, "CLGRAPH_TOUCH_REGIONS=\"%s\" is not 0, 1 or auto; using auto", env);
  }
  return !cpu_type(dev);
}

static void *region_create(const clg_device *dev, void *queue, uint64_t size, clg_region_err *err)
{
  cl_int code = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(clg_cl_context(dev), CL_MEM_READ_WRITE, (size_t)size, NULL, &code);
  if (code != CL_SUCCESS || !mem) {
    set_err(err, code != CL_SUCCESS ? code : CL_OUT_OF_RESOURCES, "clCreateBuffer");
    return NULL;
  }
  if (!touches_regions(dev))
    return mem;
  const cl_uint zero = 0;
  cl_event ev = NULL;
  code = clEnqueueFillBuffer(queue, mem, &zero, sizeof zero, 0, (size_t)size, 0, NULL, &ev);
  const char *call = "clEnqueueFillBuffer";
  if (code == CL_SUCCESS)
    code = fill_wait(ev, &call);
  if (code != CL_SUCCESS) {
    clReleaseMemObject(mem);
    set_err(err, code, call);
    return NULL;
  }
  return mem;
}

static void region_release(void *region) { clReleaseMemObject(region); }

static void decline_host(void *queue, void *mem, void *ptr);

static void *map_host(void *context, void *queue, size_t bytes, size_t align, void **mem_out)
{
  cl_int err = CL_SUCCESS;
  cl_mem mem =
      clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
  void *ptr = NULL;
  if (err == CL_SUCCESS && mem)
    ptr = clEnqueueMapBuffer(queue, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                             NULL, &err);
  *mem_out = NULL;
  if (err == CL_SUCCESS && ptr && (uintptr_t)ptr % align == 0) {
    *mem_out = mem;
    return ptr;
  }
  if (mem)
    decline_host(queue, mem, ptr);
  return NULL;
}

static void unmap_host(void *queue, void *mem, void *ptr)
{
  cl_event ev = NULL;
  if (clEnqueueUnmapMemObject(queue, mem, ptr, 0, NULL, &ev) == CL_SUCCESS && ev) {
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  clReleaseMemObject(mem);
}

static void decline_host(void *queue, void *mem, void *ptr)
{
  if (ptr)
    clEnqueueUnmapMemObject(queue, mem, ptr, 0, NULL, NULL);
  clFinish(queue);
  clReleaseMemObject(mem);
}

static bool uses_host_memory(cl_device_id d)
{
  cl_device_type type = 0;
  cl_bool unified = CL_FALSE;
  if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
      (type & CL_DEVICE_TYPE_CPU))
    return true;
  return clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) ==
             CL_SUCCESS &&
         unified == CL_TRUE;
}

static bool device_ready(const clg_device *dev)
{
  return clg_cl_context(dev) && clg_cl_device_id(dev);
}

static bool cpu_type(const clg_device *dev)
{
  return dev->info.cl_type && strcmp(dev->info.cl_type, "CPU") == 0;
}

static bool host_memory(const clg_device *dev)
{
  return cpu_type(dev) || uses_host_memory(clg_cl_device_id(dev));
}

static const void *device_key(const clg_device *dev) { return clg_cl_device_id(dev); }

static int count_peers(const clg_device *dev, bool (*skip)(const void *key))
{
  cl_uint n = 0;
  int count = 0;
  cl_device_id ids[64];
  if (clGetContextInfo(clg_cl_context(dev), CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL) ==
          CL_SUCCESS &&
      n <= sizeof ids / sizeof ids[0] &&
      clGetContextInfo(clg_cl_context(dev), CL_CONTEXT_DEVICES, n * sizeof ids[0], ids, NULL) ==
          CL_SUCCESS)
    for (cl_uint i = 0; i < n; i++)
      if (ids[i] != clg_cl_device_id(dev) && !skip(ids[i]) && uses_host_memory(ids[i]))
        count++;
  return count;
}

const clg_buffer_ops clg_cl_buffer_ops = {
    .device_ready = device_ready,
    .cpu_type = cpu_type,
    .host_memory = host_memory,
    .device_key = device_key,
    .count_peers = count_peers,
    .queue_new = queue_new,
    .queue_finish = queue_finish,
    .queue_release = queue_release,
    .context_retain = context_retain,
    .context_release = context_release,
    .touches_regions = touches_regions,
    .region_create = region_create,
    .region_release = region_release,
    .map_host = map_host,
    .unmap_host = unmap_host,
    .decline_host = decline_host,
};
