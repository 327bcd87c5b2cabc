/* The region backend for OpenCL devices: every OpenCL call of src/memory/. The allocator
 * and the pinned pool hold its regions, queues and contexts as void * handles, so that a
 * second device kind is a second file like this one (issue 22). Each function makes the
 * same calls, in the same order, as the code it came from, so that the fault-injection
 * tests count and fail the same calls. */
#include <stdint.h>
#include <string.h>

#include "memory/memory_internal.h"

static void set_err(clg_region_err *err, cl_int code, const char *call)
{
  err->name = clg_cl_error_name(code);
  err->code = (int)code;
  err->call = call;
}

void *clg_region_queue_new(const clg_device *dev, clg_region_err *err)
{
  cl_int code = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(dev->context, dev->cl_device, 0, &code);
  if (code != CL_SUCCESS || !q) {
    set_err(err, code, "clCreateCommandQueue");
    return NULL;
  }
  return q;
}

void clg_region_queue_finish(void *queue) { clFinish(queue); }

void clg_region_queue_release(void *queue) { clReleaseCommandQueue(queue); }

void *clg_region_context_retain(const clg_device *dev)
{
  clRetainContext(dev->context);
  return dev->context;
}

void clg_region_context_release(void *context) { clReleaseContext(context); }

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

void *clg_region_create(const clg_device *dev, void *queue, uint64_t size, clg_region_err *err)
{
  cl_int code = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, (size_t)size, NULL, &code);
  if (code != CL_SUCCESS || !mem) {
    set_err(err, code != CL_SUCCESS ? code : CL_OUT_OF_RESOURCES, "clCreateBuffer");
    return NULL;
  }
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

void clg_region_release(void *region) { clReleaseMemObject(region); }

void *clg_region_map_host(void *context, void *queue, size_t bytes, size_t align, void **mem_out)
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
    clg_region_decline_host(queue, mem, ptr);
  return NULL;
}

void clg_region_unmap_host(void *queue, void *mem, void *ptr)
{
  cl_event ev = NULL;
  if (clEnqueueUnmapMemObject(queue, mem, ptr, 0, NULL, &ev) == CL_SUCCESS && ev) {
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  clReleaseMemObject(mem);
}

void clg_region_decline_host(void *queue, void *mem, void *ptr)
{
  if (ptr)
    clEnqueueUnmapMemObject(queue, mem, ptr, 0, NULL, NULL);
  clFinish(queue);
  clReleaseMemObject(mem);
}

bool clg_region_event_pending(clg_mem_event ev)
{
  cl_int status = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  return err == CL_SUCCESS && status > CL_COMPLETE;
}

bool clg_region_event_retain(clg_mem_event ev) { return clRetainEvent(ev) == CL_SUCCESS; }

void clg_region_event_release(clg_mem_event ev) { clReleaseEvent(ev); }

void clg_region_event_wait(clg_mem_event ev) { clWaitForEvents(1, &ev); }

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

bool clg_region_device_ready(const clg_device *dev) { return dev->context && dev->cl_device; }

bool clg_region_cpu_type(const clg_device *dev)
{
  return dev->info.cl_type && strcmp(dev->info.cl_type, "CPU") == 0;
}

bool clg_region_host_memory(const clg_device *dev)
{
  return clg_region_cpu_type(dev) || uses_host_memory(dev->cl_device);
}

const void *clg_region_device_key(const clg_device *dev) { return dev->cl_device; }

int clg_region_count_peers(const clg_device *dev, bool (*skip)(const void *key))
{
  cl_uint n = 0;
  int count = 0;
  cl_device_id ids[64];
  if (clGetContextInfo(dev->context, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL) == CL_SUCCESS &&
      n <= sizeof ids / sizeof ids[0] &&
      clGetContextInfo(dev->context, CL_CONTEXT_DEVICES, n * sizeof ids[0], ids, NULL) ==
          CL_SUCCESS)
    for (cl_uint i = 0; i < n; i++)
      if (ids[i] != dev->cl_device && !skip(ids[i]) && uses_host_memory(ids[i]))
        count++;
  return count;
}
