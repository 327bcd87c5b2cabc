/* Const on the host: an entry without a run, so that a Const may be placed here; the
 * executor uploads the value once per session and caches it. */
#include "backends/host/host.h"

static const clg_kernel_entry entries[] = {
    {&clg_op_Const, {CLG_KIND_HOST, NULL, NULL, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_const, entries);
