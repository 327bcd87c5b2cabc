/* The device module's OpenCL side, for the two that touch OpenCL there: the enumeration
 * (device/registry.c makes the handles) and the OpenCL backend (backends/opencl/opencl.h's
 * accessors). device.h holds the handles as incomplete types. */
#ifndef CLG_DEVICE_OPENCL_HANDLES_H
#define CLG_DEVICE_OPENCL_HANDLES_H

#ifndef CL_TARGET_OPENCL_VERSION /* backends/opencl/clock.c asks for 2.1's declarations */
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "device/device.h"

/* --- OpenCL errors (device/clerror.c) ------------------------------------------------ */

/* "CL_INVALID_BUFFER_SIZE" for -61, "CL_UNKNOWN_ERROR" otherwise. */
const char *clg_cl_error_name(cl_int err);
/* Records "<NAME> (<err>) in <call><context>" as an error with the code that fits
 * (RESOURCE_EXHAUSTED for -4/-5/-6 and CL_INVALID_BUFFER_SIZE, INTERNAL otherwise) and
 * returns it. context is free text such as " for node 'MatMul' on /device:GPU:1". */
clg_code clg_cl_error(cl_int err, const char *call, const char *context_fmt, ...) CLG_PRINTF(3, 4);

/* --- an OpenCL device's handles ------------------------------------------------------ */

/* Virtual devices of one physical device share its device id and context, each with its
 * own queue. */
struct clg_cl_device {
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;     /* shared by the devices of one platform */
  cl_command_queue queue; /* in-order, profiling enabled */
};

struct clg_cl_set {
  cl_platform_id *platforms;     /* every platform the ICD loader returned, in its order */
  cl_context *contexts;          /* contexts[d.context_index] == d.cl->context */
  struct clg_cl_device *devices; /* devs[i].cl == &devices[i] for the local OpenCL devices */
};

#endif
