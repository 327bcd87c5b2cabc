/* Test-only fault injection: definitions of the OpenCL and CLBlast functions clgraph calls,
 * which count each call made from the test executable and fail the armed one, forwarding
 * everything else to the real function (dlsym(RTLD_NEXT)). See faultinject.h. */
#define _GNU_SOURCE
#include "faultinject.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>
#define FI_CLBLAST_CALLS(X)                                                                        \
  X(CLBlastSgemm)                                                                                  \
  X(CLBlastDgemm)                                                                                  \
  X(CLBlastSgemmWithTempBuffer)                                                                    \
  X(CLBlastDgemmWithTempBuffer)                                                                    \
  X(CLBlastSGemmTempBufferSize)                                                                    \
  X(CLBlastDGemmTempBufferSize)
#else
#define FI_CLBLAST_CALLS(X)
#endif

#define FI_CALLS(X)                                                                                \
  X(clGetPlatformIDs)                                                                              \
  X(clGetPlatformInfo)                                                                             \
  X(clGetDeviceIDs)                                                                                \
  X(clGetDeviceInfo)                                                                               \
  X(clCreateContext)                                                                               \
  X(clGetContextInfo)                                                                              \
  X(clCreateCommandQueue)                                                                          \
  X(clCreateBuffer)                                                                                \
  X(clCreateSubBuffer)                                                                             \
  X(clCreateProgramWithSource)                                                                     \
  X(clBuildProgram)                                                                                \
  X(clCreateKernel)                                                                                \
  X(clSetKernelArg)                                                                                \
  X(clGetKernelWorkGroupInfo)                                                                      \
  X(clEnqueueNDRangeKernel)                                                                        \
  X(clEnqueueReadBuffer)                                                                           \
  X(clEnqueueWriteBuffer)                                                                          \
  X(clEnqueueCopyBuffer)                                                                           \
  X(clEnqueueFillBuffer)                                                                           \
  X(clEnqueueMarkerWithWaitList)                                                                   \
  X(clFinish)                                                                                      \
  X(clWaitForEvents)                                                                               \
  X(clGetEventInfo)                                                                                \
  FI_CLBLAST_CALLS(X)

#define FI_ENUM(name) FI_##name,
#define FI_NAME(name) #name,
enum { FI_CALLS(FI_ENUM) FI_NUM_CALLS };
static const char *const fi_names[] = {FI_CALLS(FI_NAME)};

static pthread_mutex_t fi_lock = PTHREAD_MUTEX_INITIALIZER;
static long fi_counts[FI_NUM_CALLS];
static int fi_armed = -1;
static long fi_nth;
static int fi_error;
static bool fi_did_fire;
static bool fi_counting = true;
static char fi_anchor; /* an object of the executable: dladdr gives the executable's base */

static int fi_index(const char *call)
{
  for (int i = 0; i < FI_NUM_CALLS; i++)
    if (strcmp(fi_names[i], call) == 0)
      return i;
  fprintf(stderr, "faultinject: '%s' is not an interposed call\n", call);
  abort();
}

/* Whether caller (a return address) lies in the test executable, which holds clgraph. */
static bool fi_from_clgraph(void *caller)
{
  static void *exe_base;
  Dl_info info;
  if (!exe_base) {
    if (!dladdr(&fi_anchor, &info))
      return false;
    exe_base = info.dli_fbase;
  }
  return dladdr(caller, &info) && info.dli_fbase == exe_base;
}

/* Counts one call of id from caller; true (with the error) when it must fail. */
static bool fi_should_fail(int id, void *caller, int *error)
{
  if (!fi_from_clgraph(caller))
    return false;
  bool fail = false;
  pthread_mutex_lock(&fi_lock);
  if (fi_counting)
    fi_counts[id]++;
  if (fi_counting && id == fi_armed && fi_counts[id] == fi_nth) {
    fail = true;
    fi_did_fire = true;
    *error = fi_error;
  }
  pthread_mutex_unlock(&fi_lock);
  return fail;
}

/* The real function named name, from the next object in the lookup order. */
static void fi_real(const char *name, void *slot, size_t size)
{
  void *sym = dlsym(RTLD_NEXT, name);
  if (!sym) {
    fprintf(stderr, "faultinject: no real %s: %s\n", name, dlerror());
    abort();
  }
  memcpy(slot, &sym, size); /* a function pointer from dlsym, as POSIX allows */
}

#define FI_REAL(var, name)                                                                         \
  do {                                                                                             \
    if (!(var))                                                                                    \
      fi_real(#name, &(var), sizeof(var));                                                         \
  } while (0)

/* Declares `err`; if the call must fail, runs `on_fail`. */
#define FI_ENTER(name, on_fail)                                                                    \
  int err_;                                                                                        \
  if (fi_should_fail(FI_##name, __builtin_return_address(0), &err_)) {                             \
    on_fail;                                                                                       \
  }

/* --- control ---------------------------------------------------------------------------- */

void clg_fault_reset(void)
{
  pthread_mutex_lock(&fi_lock);
  memset(fi_counts, 0, sizeof fi_counts);
  fi_armed = -1;
  fi_did_fire = false;
  fi_counting = true;
  pthread_mutex_unlock(&fi_lock);
}

void clg_fault_arm(const char *call, long nth, int error)
{
  int id = fi_index(call);
  pthread_mutex_lock(&fi_lock);
  memset(fi_counts, 0, sizeof fi_counts);
  fi_armed = id;
  fi_nth = nth;
  fi_error = error;
  fi_did_fire = false;
  fi_counting = true;
  pthread_mutex_unlock(&fi_lock);
}

void clg_fault_disarm(void)
{
  pthread_mutex_lock(&fi_lock);
  fi_armed = -1;
  fi_counting = false;
  pthread_mutex_unlock(&fi_lock);
}

bool clg_fault_fired(void)
{
  pthread_mutex_lock(&fi_lock);
  bool fired = fi_did_fire;
  pthread_mutex_unlock(&fi_lock);
  return fired;
}

long clg_fault_count(const char *call)
{
  int id = fi_index(call);
  pthread_mutex_lock(&fi_lock);
  long n = fi_counts[id];
  pthread_mutex_unlock(&fi_lock);
  return n;
}

const char *const *clg_fault_calls(int *count)
{
  *count = FI_NUM_CALLS;
  return fi_names;
}

/* --- platforms, devices, contexts, queues ------------------------------------------------ */

cl_int CL_API_CALL clGetPlatformIDs(cl_uint n, cl_platform_id *platforms, cl_uint *num)
{
  FI_ENTER(clGetPlatformIDs, return err_);
  static cl_int(CL_API_CALL * real)(cl_uint, cl_platform_id *, cl_uint *);
  FI_REAL(real, clGetPlatformIDs);
  return real(n, platforms, num);
}

cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p, cl_platform_info what, size_t size,
                                     void *value, size_t *size_ret)
{
  FI_ENTER(clGetPlatformInfo, return err_);
  static cl_int(CL_API_CALL * real)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
  FI_REAL(real, clGetPlatformInfo);
  return real(p, what, size, value, size_ret);
}

cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id p, cl_device_type type, cl_uint n,
                                  cl_device_id *devices, cl_uint *num)
{
  FI_ENTER(clGetDeviceIDs, return err_);
  static cl_int(CL_API_CALL * real)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                                    cl_uint *);
  FI_REAL(real, clGetDeviceIDs);
  return real(p, type, n, devices, num);
}

cl_int CL_API_CALL clGetDeviceInfo(cl_device_id d, cl_device_info what, size_t size, void *value,
                                   size_t *size_ret)
{
  FI_ENTER(clGetDeviceInfo, return err_);
  static cl_int(CL_API_CALL * real)(cl_device_id, cl_device_info, size_t, void *, size_t *);
  FI_REAL(real, clGetDeviceInfo);
  return real(d, what, size, value, size_ret);
}

cl_context CL_API_CALL clCreateContext(const cl_context_properties *props, cl_uint n,
                                       const cl_device_id *devices,
                                       void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                                 void *),
                                       void *user, cl_int *errcode)
{
  FI_ENTER(clCreateContext, if (errcode) *errcode = err_; return NULL);
  static cl_context(CL_API_CALL * real)(
      const cl_context_properties *, cl_uint, const cl_device_id *,
      void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *);
  FI_REAL(real, clCreateContext);
  return real(props, n, devices, notify, user, errcode);
}

cl_int CL_API_CALL clGetContextInfo(cl_context c, cl_context_info what, size_t size, void *value,
                                    size_t *size_ret)
{
  FI_ENTER(clGetContextInfo, return err_);
  static cl_int(CL_API_CALL * real)(cl_context, cl_context_info, size_t, void *, size_t *);
  FI_REAL(real, clGetContextInfo);
  return real(c, what, size, value, size_ret);
}

cl_command_queue CL_API_CALL clCreateCommandQueue(cl_context c, cl_device_id d,
                                                  cl_command_queue_properties props,
                                                  cl_int *errcode)
{
  FI_ENTER(clCreateCommandQueue, if (errcode) *errcode = err_; return NULL);
  static cl_command_queue(CL_API_CALL * real)(cl_context, cl_device_id, cl_command_queue_properties,
                                              cl_int *);
  FI_REAL(real, clCreateCommandQueue);
  return real(c, d, props, errcode);
}

/* --- memory ------------------------------------------------------------------------------ */

cl_mem CL_API_CALL clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void *host,
                                  cl_int *errcode)
{
  FI_ENTER(clCreateBuffer, if (errcode) *errcode = err_; return NULL);
  static cl_mem(CL_API_CALL * real)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  FI_REAL(real, clCreateBuffer);
  return real(c, flags, size, host, errcode);
}

cl_mem CL_API_CALL clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type,
                                     const void *info, cl_int *errcode)
{
  FI_ENTER(clCreateSubBuffer, if (errcode) *errcode = err_; return NULL);
  static cl_mem(CL_API_CALL * real)(cl_mem, cl_mem_flags, cl_buffer_create_type, const void *,
                                    cl_int *);
  FI_REAL(real, clCreateSubBuffer);
  return real(buffer, flags, type, info, errcode);
}

/* --- programs and kernels ------------------------------------------------------------------ */

cl_program CL_API_CALL clCreateProgramWithSource(cl_context c, cl_uint count, const char **strings,
                                                 const size_t *lengths, cl_int *errcode)
{
  FI_ENTER(clCreateProgramWithSource, if (errcode) *errcode = err_; return NULL);
  static cl_program(CL_API_CALL * real)(cl_context, cl_uint, const char **, const size_t *,
                                        cl_int *);
  FI_REAL(real, clCreateProgramWithSource);
  return real(c, count, strings, lengths, errcode);
}

cl_int CL_API_CALL clBuildProgram(cl_program p, cl_uint n, const cl_device_id *devices,
                                  const char *options,
                                  void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
  FI_ENTER(clBuildProgram, return err_);
  static cl_int(CL_API_CALL * real)(cl_program, cl_uint, const cl_device_id *, const char *,
                                    void(CL_CALLBACK *)(cl_program, void *), void *);
  FI_REAL(real, clBuildProgram);
  return real(p, n, devices, options, notify, user);
}

cl_kernel CL_API_CALL clCreateKernel(cl_program p, const char *name, cl_int *errcode)
{
  FI_ENTER(clCreateKernel, if (errcode) *errcode = err_; return NULL);
  static cl_kernel(CL_API_CALL * real)(cl_program, const char *, cl_int *);
  FI_REAL(real, clCreateKernel);
  return real(p, name, errcode);
}

cl_int CL_API_CALL clSetKernelArg(cl_kernel k, cl_uint index, size_t size, const void *value)
{
  FI_ENTER(clSetKernelArg, return err_);
  static cl_int(CL_API_CALL * real)(cl_kernel, cl_uint, size_t, const void *);
  FI_REAL(real, clSetKernelArg);
  return real(k, index, size, value);
}

cl_int CL_API_CALL clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d,
                                            cl_kernel_work_group_info what, size_t size,
                                            void *value, size_t *size_ret)
{
  FI_ENTER(clGetKernelWorkGroupInfo, return err_);
  static cl_int(CL_API_CALL * real)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                    void *, size_t *);
  FI_REAL(real, clGetKernelWorkGroupInfo);
  return real(k, d, what, size, value, size_ret);
}

/* --- commands ------------------------------------------------------------------------------ */

cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims,
                                          const size_t *offset, const size_t *global,
                                          const size_t *local, cl_uint nwait, const cl_event *wait,
                                          cl_event *event)
{
  FI_ENTER(clEnqueueNDRangeKernel, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                    const size_t *, const size_t *, cl_uint, const cl_event *,
                                    cl_event *);
  FI_REAL(real, clEnqueueNDRangeKernel);
  return real(q, k, dims, offset, global, local, nwait, wait, event);
}

cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                       size_t offset, size_t size, void *ptr, cl_uint nwait,
                                       const cl_event *wait, cl_event *event)
{
  FI_ENTER(clEnqueueReadBuffer, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                    cl_uint, const cl_event *, cl_event *);
  FI_REAL(real, clEnqueueReadBuffer);
  return real(q, m, blocking, offset, size, ptr, nwait, wait, event);
}

cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                        size_t offset, size_t size, const void *ptr, cl_uint nwait,
                                        const cl_event *wait, cl_event *event)
{
  FI_ENTER(clEnqueueWriteBuffer, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                    cl_uint, const cl_event *, cl_event *);
  FI_REAL(real, clEnqueueWriteBuffer);
  return real(q, m, blocking, offset, size, ptr, nwait, wait, event);
}

cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst,
                                       size_t src_offset, size_t dst_offset, size_t size,
                                       cl_uint nwait, const cl_event *wait, cl_event *event)
{
  FI_ENTER(clEnqueueCopyBuffer, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t,
                                    cl_uint, const cl_event *, cl_event *);
  FI_REAL(real, clEnqueueCopyBuffer);
  return real(q, src, dst, src_offset, dst_offset, size, nwait, wait, event);
}

cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue q, cl_mem m, const void *pattern,
                                       size_t pattern_size, size_t offset, size_t size,
                                       cl_uint nwait, const cl_event *wait, cl_event *event)
{
  FI_ENTER(clEnqueueFillBuffer, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t,
                                    cl_uint, const cl_event *, cl_event *);
  FI_REAL(real, clEnqueueFillBuffer);
  return real(q, m, pattern, pattern_size, offset, size, nwait, wait, event);
}

cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nwait,
                                               const cl_event *wait, cl_event *event)
{
  FI_ENTER(clEnqueueMarkerWithWaitList, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
  FI_REAL(real, clEnqueueMarkerWithWaitList);
  return real(q, nwait, wait, event);
}

cl_int CL_API_CALL clFinish(cl_command_queue q)
{
  FI_ENTER(clFinish, return err_);
  static cl_int(CL_API_CALL * real)(cl_command_queue);
  FI_REAL(real, clFinish);
  return real(q);
}

cl_int CL_API_CALL clWaitForEvents(cl_uint n, const cl_event *events)
{
  FI_ENTER(clWaitForEvents, return err_);
  static cl_int(CL_API_CALL * real)(cl_uint, const cl_event *);
  FI_REAL(real, clWaitForEvents);
  return real(n, events);
}

cl_int CL_API_CALL clGetEventInfo(cl_event e, cl_event_info what, size_t size, void *value,
                                  size_t *size_ret)
{
  FI_ENTER(clGetEventInfo, return err_);
  static cl_int(CL_API_CALL * real)(cl_event, cl_event_info, size_t, void *, size_t *);
  FI_REAL(real, clGetEventInfo);
  return real(e, what, size, value, size_ret);
}

/* --- CLBlast ------------------------------------------------------------------------------- */

#ifdef CLG_HAVE_CLBLAST

#define FI_GEMM_PARAMS(T)                                                                          \
  const CLBlastLayout layout, const CLBlastTranspose ta, const CLBlastTranspose tb,                \
      const size_t m, const size_t n, const size_t k, const T alpha, const cl_mem a,               \
      const size_t a_off, const size_t a_ld, const cl_mem b, const size_t b_off,                   \
      const size_t b_ld, const T beta, cl_mem c, const size_t c_off, const size_t c_ld,            \
      cl_command_queue *queue, cl_event *event
#define FI_GEMM_TYPES(T)                                                                           \
  const CLBlastLayout, const CLBlastTranspose, const CLBlastTranspose, const size_t, const size_t, \
      const size_t, const T, const cl_mem, const size_t, const size_t, const cl_mem, const size_t, \
      const size_t, const T, cl_mem, const size_t, const size_t, cl_command_queue *, cl_event *
#define FI_GEMM_ARGS                                                                               \
  layout, ta, tb, m, n, k, alpha, a, a_off, a_ld, b, b_off, b_ld, beta, c, c_off, c_ld, queue, event

CLBlastStatusCode CLBlastSgemm(FI_GEMM_PARAMS(float))
{
  FI_ENTER(CLBlastSgemm, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_GEMM_TYPES(float));
  FI_REAL(real, CLBlastSgemm);
  return real(FI_GEMM_ARGS);
}

CLBlastStatusCode CLBlastDgemm(FI_GEMM_PARAMS(double))
{
  FI_ENTER(CLBlastDgemm, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_GEMM_TYPES(double));
  FI_REAL(real, CLBlastDgemm);
  return real(FI_GEMM_ARGS);
}

CLBlastStatusCode CLBlastSgemmWithTempBuffer(FI_GEMM_PARAMS(float), cl_mem temp)
{
  FI_ENTER(CLBlastSgemmWithTempBuffer, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_GEMM_TYPES(float), cl_mem);
  FI_REAL(real, CLBlastSgemmWithTempBuffer);
  return real(FI_GEMM_ARGS, temp);
}

CLBlastStatusCode CLBlastDgemmWithTempBuffer(FI_GEMM_PARAMS(double), cl_mem temp)
{
  FI_ENTER(CLBlastDgemmWithTempBuffer, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_GEMM_TYPES(double), cl_mem);
  FI_REAL(real, CLBlastDgemmWithTempBuffer);
  return real(FI_GEMM_ARGS, temp);
}

#define FI_SIZE_PARAMS                                                                             \
  const CLBlastLayout layout, const CLBlastTranspose ta, const CLBlastTranspose tb,                \
      const size_t m, const size_t n, const size_t k, const size_t a_off, const size_t a_ld,       \
      const size_t b_off, const size_t b_ld, const size_t c_off, const size_t c_ld,                \
      cl_command_queue *queue, size_t *bytes
#define FI_SIZE_TYPES                                                                              \
  const CLBlastLayout, const CLBlastTranspose, const CLBlastTranspose, const size_t, const size_t, \
      const size_t, const size_t, const size_t, const size_t, const size_t, const size_t,          \
      const size_t, cl_command_queue *, size_t *
#define FI_SIZE_ARGS layout, ta, tb, m, n, k, a_off, a_ld, b_off, b_ld, c_off, c_ld, queue, bytes

CLBlastStatusCode CLBlastSGemmTempBufferSize(FI_SIZE_PARAMS)
{
  FI_ENTER(CLBlastSGemmTempBufferSize, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_SIZE_TYPES);
  FI_REAL(real, CLBlastSGemmTempBufferSize);
  return real(FI_SIZE_ARGS);
}

CLBlastStatusCode CLBlastDGemmTempBufferSize(FI_SIZE_PARAMS)
{
  FI_ENTER(CLBlastDGemmTempBufferSize, return (CLBlastStatusCode)err_);
  static CLBlastStatusCode (*real)(FI_SIZE_TYPES);
  FI_REAL(real, CLBlastDGemmTempBufferSize);
  return real(FI_SIZE_ARGS);
}

#endif /* CLG_HAVE_CLBLAST */
