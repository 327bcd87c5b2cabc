/* What this build's kernels can do, for the ops' kernel predicates. */
#include "backends/opencl/opencl.h"

bool clg_kernels_have_clblast(void)
{
#ifdef CLG_HAVE_CLBLAST
  return true;
#else
  return false;
#endif
}
