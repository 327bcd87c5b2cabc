/* Which (op, dtype, device) triples have a kernel: the placer's question. */
#include <string.h>

#include "kernels/kernels.h"

bool clg_kernels_supported(const char *op, clg_dtype dtype, const clg_device *dev)
{
  if (!op || !dev)
    return false;
  bool matmul = strcmp(op, "MatMul") == 0;
  bool elementwise = strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
                     strcmp(op, "AddN") == 0 || strcmp(op, "Identity") == 0 ||
                     strcmp(op, "Const") == 0 || strcmp(op, "Placeholder") == 0;
  if (!matmul && !elementwise)
    return false;
  if (dev->is_host) /* float16 has no host kernels */
    return dtype == CLG_FLOAT32 || dtype == CLG_FLOAT64;
  if (matmul) {
#ifdef CLG_HAVE_CLBLAST
    return dtype == CLG_FLOAT32 || (dtype == CLG_FLOAT64 && dev->info.has_fp64) ||
           (dtype == CLG_FLOAT16 && dev->info.has_fp16);
#else
    return false;
#endif
  }
  return dtype == CLG_FLOAT32 || (dtype == CLG_FLOAT64 && dev->info.has_fp64);
}
