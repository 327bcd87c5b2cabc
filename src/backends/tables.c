/* Which kind's table serves a device (clg_device_ops_of, declared by the device module's
 * door): each kind defines its table in its own folder. */
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "backends/remote/remote.h"

const clg_device_ops *clg_device_ops_of(const clg_device *dev)
{
  if (dev->remote && !dev->is_host)
    return &clg_remote_device_ops;
  return dev->is_host ? &clg_host_device_ops : &clg_cl_device_ops;
}
