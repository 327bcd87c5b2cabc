/* VariableV2 and NoOp on OpenCL devices. A variable's storage is bytes, so every dtype lives
 * here: an entry without a run (its value lives in the session, not a step of a run). NoOp
 * does nothing. */
#include "backends/opencl/opencl.h"


static clg_code noop_run(const clg_kernel_ctx *c)
{
  (void)c;
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_VariableV2, {CLG_KIND_OPENCL, NULL, NULL, NULL, NULL}},
    {&clg_op_NoOp, {CLG_KIND_OPENCL, NULL, noop_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_variable, entries);
