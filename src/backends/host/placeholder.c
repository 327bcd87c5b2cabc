/* Placeholder on the host: an entry without a run, so that a Placeholder may be placed
 * here; the value fed to a run stands in for it (no step runs it). */
#include "backends/host/host.h"

static const clg_kernel_entry entries[] = {
    {&clg_op_Placeholder, {CLG_KIND_HOST, NULL, NULL, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_placeholder, entries);
