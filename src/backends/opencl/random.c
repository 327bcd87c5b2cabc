/* Initializers on OpenCL devices: made on the host and uploaded, so that the values cannot
 * depend on the device. */
#include <stdlib.h>

#include "backends/opencl/opencl.h"

static clg_code random_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (!bytes)
    return CLG_OK;
  void *buf = malloc(bytes);
  if (!buf)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory generating %zu bytes", bytes);
  clg_random_generate(c->node, buf);
  clg_code code = clg_device_ops_of(c->dev)->upload(c->dev, &c->out[0], buf, bytes);
  free(buf);
  return code;
}

static bool float_dtype(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  clg_dtype d = n->outs[0].dtype;
  return d == CLG_FLOAT32 || d == CLG_FLOAT64 || d == CLG_FLOAT16;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_RandomUniform, {CLG_KIND_OPENCL, float_dtype, random_run, NULL, NULL}},
    {&clg_op_RandomStandardNormal, {CLG_KIND_OPENCL, float_dtype, random_run, NULL, NULL}},
    {&clg_op_TruncatedNormal, {CLG_KIND_OPENCL, float_dtype, random_run, NULL, NULL}},
    {&clg_op_ConstFill, {CLG_KIND_OPENCL, NULL, random_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_random, entries);
