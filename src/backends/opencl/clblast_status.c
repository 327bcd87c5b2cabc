/* CLBlast's status codes: their names and what they mean for clgraph. Pure data, so it
 * exists (and is tested) in builds without CLBlast too. */
#include "backends/opencl/opencl.h"

/* CLBlast 1.5's status codes (clblast_c.h), kept here so that the names exist in builds
 * without CLBlast too. */
static const struct {
  int code;
  const char *name;
} clblast_status_names[] = {
    {0, "CLBlastSuccess"},
    {-3, "CLBlastOpenCLCompilerNotAvailable"},
    {-4, "CLBlastTempBufferAllocFailure"},
    {-5, "CLBlastOpenCLOutOfResources"},
    {-6, "CLBlastOpenCLOutOfHostMemory"},
    {-11, "CLBlastOpenCLBuildProgramFailure"},
    {-30, "CLBlastInvalidValue"},
    {-36, "CLBlastInvalidCommandQueue"},
    {-38, "CLBlastInvalidMemObject"},
    {-42, "CLBlastInvalidBinary"},
    {-43, "CLBlastInvalidBuildOptions"},
    {-44, "CLBlastInvalidProgram"},
    {-45, "CLBlastInvalidProgramExecutable"},
    {-46, "CLBlastInvalidKernelName"},
    {-47, "CLBlastInvalidKernelDefinition"},
    {-48, "CLBlastInvalidKernel"},
    {-49, "CLBlastInvalidArgIndex"},
    {-50, "CLBlastInvalidArgValue"},
    {-51, "CLBlastInvalidArgSize"},
    {-52, "CLBlastInvalidKernelArgs"},
    {-53, "CLBlastInvalidLocalNumDimensions"},
    {-54, "CLBlastInvalidLocalThreadsTotal"},
    {-55, "CLBlastInvalidLocalThreadsDim"},
    {-56, "CLBlastInvalidGlobalOffset"},
    {-57, "CLBlastInvalidEventWaitList"},
    {-58, "CLBlastInvalidEvent"},
    {-59, "CLBlastInvalidOperation"},
    {-61, "CLBlastInvalidBufferSize"},
    {-63, "CLBlastInvalidGlobalWorkSize"},
    {-1024, "CLBlastNotImplemented"},
    {-1022, "CLBlastInvalidMatrixA"},
    {-1021, "CLBlastInvalidMatrixB"},
    {-1020, "CLBlastInvalidMatrixC"},
    {-1019, "CLBlastInvalidVectorX"},
    {-1018, "CLBlastInvalidVectorY"},
    {-1017, "CLBlastInvalidDimension"},
    {-1016, "CLBlastInvalidLeadDimA"},
    {-1015, "CLBlastInvalidLeadDimB"},
    {-1014, "CLBlastInvalidLeadDimC"},
    {-1013, "CLBlastInvalidIncrementX"},
    {-1012, "CLBlastInvalidIncrementY"},
    {-1011, "CLBlastInsufficientMemoryA"},
    {-1010, "CLBlastInsufficientMemoryB"},
    {-1009, "CLBlastInsufficientMemoryC"},
    {-1008, "CLBlastInsufficientMemoryX"},
    {-1007, "CLBlastInsufficientMemoryY"},
    {-2050, "CLBlastInsufficientMemoryTemp"},
    {-2049, "CLBlastInvalidBatchCount"},
    {-2048, "CLBlastInvalidOverrideKernel"},
    {-2047, "CLBlastMissingOverrideParameter"},
    {-2046, "CLBlastInvalidLocalMemUsage"},
    {-2045, "CLBlastNoHalfPrecision"},
    {-2044, "CLBlastNoDoublePrecision"},
    {-2043, "CLBlastInvalidVectorScalar"},
    {-2042, "CLBlastInsufficientMemoryScalar"},
    {-2041, "CLBlastDatabaseError"},
    {-2040, "CLBlastUnknownError"},
    {-2039, "CLBlastUnexpectedError"},
};

const char *clg_clblast_status_name(int status)
{
  for (size_t i = 0; i < sizeof clblast_status_names / sizeof clblast_status_names[0]; i++)
    if (clblast_status_names[i].code == status)
      return clblast_status_names[i].name;
  return "CLBlastUnknownStatus";
}

clg_code clg_clblast_status_code(int status)
{
  switch (status) {
  case 0:
    return CLG_OK;
  /* The device or its compiler cannot run the routine: the host kernel can. */
  case -2045: /* NoHalfPrecision */
  case -2044: /* NoDoublePrecision */
  case -3:    /* OpenCLCompilerNotAvailable */
  case -11:   /* OpenCLBuildProgramFailure */
  case -2041: /* DatabaseError */
  case -1024: /* NotImplemented */
    return CLG_UNIMPLEMENTED;
  /* Out of device or host memory: recoverable, as every OOM in clgraph. */
  case -4:
  case -5:
  case -6:
    return CLG_RESOURCE_EXHAUSTED;
  default:
    return CLG_INTERNAL;
  }
}
