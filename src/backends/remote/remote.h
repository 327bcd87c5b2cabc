/* The remote backend's door (src/backends/remote/): devices of other tasks of a cluster.
 * They run no kernel here; the cluster module (src/cluster/) moves their values. */
#ifndef CLG_BACKEND_REMOTE_H
#define CLG_BACKEND_REMOTE_H

#include "backends/backend.h"

/* The table of a remote OpenCL device (clg_device_ops_of picks it). */
extern const clg_device_ops clg_remote_device_ops;

#endif
