/* The remote table (clg_device_ops): an OpenCL device of another task of a cluster (another
 * task's CPU:0 is served by the host's table). Its blocks are host memory of this process
 * (values received from its task land there; the cluster module moves them), so copies to
 * and from it are the host's memcpy; its kind is the owner's, so that kernel predicates
 * answer for it as its task does (placement must agree everywhere). It makes no events (the
 * cluster module's transfers have completed when they return) and chains another kind's by a
 * host wait, as the host does. */
#include "backends/host/host.h"
#include "backends/remote/remote.h"

const clg_device_ops clg_remote_device_ops = {
    .kind = CLG_KIND_OPENCL,
    .host_memory = true,
    .upload = clg_host_upload,
    .download = clg_host_download,
    .copy_from_peer = clg_host_copy_from_peer,
    .marker = clg_host_marker,
    .chain = clg_host_chain,
    .events = NULL,
    .finish = clg_host_finish,
    .clock_offset = clg_host_clock_offset,
    .buffers = NULL,
};
