/* Looking a device up by name. Kept apart from registry.c so that programs which never
 * look devices up by name do not need the device-name parser. */
#include <string.h>

#include "device/device.h"

const clg_device_info *clg_devices_find(const clg_devices *devs, const char *name)
{
  if (!devs || !name)
    return NULL;
  clg_devname n;
  if (clg_devname_parse_scope(name, &n) != CLG_OK)
    return NULL;
  /* Only a complete local name names one device. Outside a cluster the job, replica and
   * task, when given, must be this process's (localhost, 0, 0); in a cluster the job is
   * worker and the task picks whose device (this process's when not given). */
  if (!n.has_type || !n.has_id)
    return NULL;
  bool cluster = devs->local_task >= 0;
  int task = n.has_task ? n.task : (cluster ? devs->local_task : 0);
  if ((n.has_job && strcmp(n.job, cluster ? "worker" : "localhost") != 0) ||
      (n.has_replica && n.replica != 0) || (!cluster && task != 0))
    return NULL;
  for (int i = 0; i < devs->count; i++) {
    const clg_device_info *info = &devs->devs[i].info;
    if (strcmp(n.type, info->type) == 0 && n.id == info->id && info->task == task)
      return info;
  }
  return NULL;
}
