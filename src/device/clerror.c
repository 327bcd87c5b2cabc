/* OpenCL error codes by name, and the one way an OpenCL failure becomes a clgraph error. */
#include <stdarg.h>
#include <stdio.h>

#include "device/opencl_handles.h"

#define CLG_ERR(name)                                                                              \
  {                                                                                                \
    name, #name                                                                                    \
  }

static const struct {
  cl_int code;
  const char *name;
} cl_errors[] = {
    CLG_ERR(CL_SUCCESS),
    CLG_ERR(CL_DEVICE_NOT_FOUND),
    CLG_ERR(CL_DEVICE_NOT_AVAILABLE),
    CLG_ERR(CL_COMPILER_NOT_AVAILABLE),
    CLG_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE),
    CLG_ERR(CL_OUT_OF_RESOURCES),
    CLG_ERR(CL_OUT_OF_HOST_MEMORY),
    CLG_ERR(CL_PROFILING_INFO_NOT_AVAILABLE),
    CLG_ERR(CL_MEM_COPY_OVERLAP),
    CLG_ERR(CL_IMAGE_FORMAT_MISMATCH),
    CLG_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED),
    CLG_ERR(CL_BUILD_PROGRAM_FAILURE),
    CLG_ERR(CL_MAP_FAILURE),
    CLG_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET),
    CLG_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
    CLG_ERR(CL_COMPILE_PROGRAM_FAILURE),
    CLG_ERR(CL_LINKER_NOT_AVAILABLE),
    CLG_ERR(CL_LINK_PROGRAM_FAILURE),
    CLG_ERR(CL_DEVICE_PARTITION_FAILED),
    CLG_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
    CLG_ERR(CL_INVALID_VALUE),
    CLG_ERR(CL_INVALID_DEVICE_TYPE),
    CLG_ERR(CL_INVALID_PLATFORM),
    CLG_ERR(CL_INVALID_DEVICE),
    CLG_ERR(CL_INVALID_CONTEXT),
    CLG_ERR(CL_INVALID_QUEUE_PROPERTIES),
    CLG_ERR(CL_INVALID_COMMAND_QUEUE),
    CLG_ERR(CL_INVALID_HOST_PTR),
    CLG_ERR(CL_INVALID_MEM_OBJECT),
    CLG_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
    CLG_ERR(CL_INVALID_IMAGE_SIZE),
    CLG_ERR(CL_INVALID_SAMPLER),
    CLG_ERR(CL_INVALID_BINARY),
    CLG_ERR(CL_INVALID_BUILD_OPTIONS),
    CLG_ERR(CL_INVALID_PROGRAM),
    CLG_ERR(CL_INVALID_PROGRAM_EXECUTABLE),
    CLG_ERR(CL_INVALID_KERNEL_NAME),
    CLG_ERR(CL_INVALID_KERNEL_DEFINITION),
    CLG_ERR(CL_INVALID_KERNEL),
    CLG_ERR(CL_INVALID_ARG_INDEX),
    CLG_ERR(CL_INVALID_ARG_VALUE),
    CLG_ERR(CL_INVALID_ARG_SIZE),
    CLG_ERR(CL_INVALID_KERNEL_ARGS),
    CLG_ERR(CL_INVALID_WORK_DIMENSION),
    CLG_ERR(CL_INVALID_WORK_GROUP_SIZE),
    CLG_ERR(CL_INVALID_WORK_ITEM_SIZE),
    CLG_ERR(CL_INVALID_GLOBAL_OFFSET),
    CLG_ERR(CL_INVALID_EVENT_WAIT_LIST),
    CLG_ERR(CL_INVALID_EVENT),
    CLG_ERR(CL_INVALID_OPERATION),
    CLG_ERR(CL_INVALID_GL_OBJECT),
    CLG_ERR(CL_INVALID_BUFFER_SIZE),
    CLG_ERR(CL_INVALID_MIP_LEVEL),
    CLG_ERR(CL_INVALID_GLOBAL_WORK_SIZE),
    CLG_ERR(CL_INVALID_PROPERTY),
    CLG_ERR(CL_INVALID_IMAGE_DESCRIPTOR),
    CLG_ERR(CL_INVALID_COMPILER_OPTIONS),
    CLG_ERR(CL_INVALID_LINKER_OPTIONS),
    CLG_ERR(CL_INVALID_DEVICE_PARTITION_COUNT),
    /* OpenCL 2.x codes: not defined when targeting 1.2, but newer drivers may return them. */
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    /* cl_khr_icd: what the ICD loader returns when it finds no platform at all. */
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
};

const char *clg_cl_error_name(cl_int err)
{
  for (size_t i = 0; i < sizeof cl_errors / sizeof cl_errors[0]; i++)
    if (cl_errors[i].code == err)
      return cl_errors[i].name;
  return "CL_UNKNOWN_ERROR";
}

clg_code clg_cl_error(cl_int err, const char *call, const char *context_fmt, ...)
{
  char context[1024] = "";
  if (context_fmt) {
    va_list ap;
    va_start(ap, context_fmt);
    vsnprintf(context, sizeof context, context_fmt, ap);
    va_end(ap);
  }
  /* Out-of-memory conditions are recoverable for the caller (TF's ResourceExhausted). */
  clg_code code = CLG_INTERNAL;
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
    code = CLG_RESOURCE_EXHAUSTED;
  return clg_error(code, "%s (%d) in %s%s", clg_cl_error_name(err), (int)err,
                   call ? call : "(unknown call)", context);
}
