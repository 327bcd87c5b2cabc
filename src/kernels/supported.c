/* Which (op, dtype, device) triples have a kernel: the placer's question. */
#include <string.h>

#include "kernels/kernels.h"

bool clg_kernels_supported(const char *op, clg_dtype dtype, const clg_device *dev)
{
  if (!op || !dev || clg_dtype_size(dtype) == 0)
    return false;
  /* These only move bytes (a buffer copy on OpenCL, memcpy on the host): any dtype. */
  if (strcmp(op, "Const") == 0 || strcmp(op, "Placeholder") == 0 || strcmp(op, "Identity") == 0)
    return true;
  if (strcmp(op, "MatMul") == 0) {
    if (dev->is_host) /* float16 through sgemm, converting on the way in and out */
      return true;
#ifdef CLG_HAVE_CLBLAST
    /* CLBlast decides at run time (no fp64/fp16, a compiler error); when it cannot, the
     * runtime runs the MatMul on the host with the device's data. Refusing here instead
     * would hide such devices from the placer for a case the fallback covers. */
    return true;
#else
    return false;
#endif
  }
  bool elementwise = strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
                     strcmp(op, "AddN") == 0;
  if (!elementwise)
    return false;
  return dtype == CLG_FLOAT32 || (dtype == CLG_FLOAT64 && (dev->is_host || dev->info.has_fp64));
}
