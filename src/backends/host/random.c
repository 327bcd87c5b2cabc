/* Initializers on the host: the op's values (ops/random.c) straight into the output. */
#include "backends/host/host.h"

static clg_code random_run(const clg_kernel_ctx *c)
{
  clg_random_generate(c->node, c->out[0].host);
  return CLG_OK;
}

static bool float_dtype(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  clg_dtype d = n->outs[0].dtype;
  return d == CLG_FLOAT32 || d == CLG_FLOAT64 || d == CLG_FLOAT16;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_RandomUniform, {CLG_KIND_HOST, float_dtype, random_run, NULL, NULL}},
    {&clg_op_RandomStandardNormal, {CLG_KIND_HOST, float_dtype, random_run, NULL, NULL}},
    {&clg_op_TruncatedNormal, {CLG_KIND_HOST, float_dtype, random_run, NULL, NULL}},
    {&clg_op_ConstFill, {CLG_KIND_HOST, NULL, random_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_random, entries);
