/* Placeholder on OpenCL devices: an entry without a run, so that a Placeholder may be placed
 * here; the value fed to a run stands in for it (no step runs it). */
#include "backends/opencl/opencl.h"

static const clg_kernel_entry entries[] = {
    {&clg_op_Placeholder, {CLG_KIND_OPENCL, NULL, NULL, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_placeholder, entries);
