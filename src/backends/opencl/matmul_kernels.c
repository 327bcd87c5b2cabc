/* MatMul on OpenCL devices: CLBlast, with the host path on the device's data when CLBlast
 * cannot serve the device (no fp64/fp16, a compiler error), warned once per device and
 * reason (the fallback serves BatchMatMulV2 too); int32 and int64 by a kernel of its own (with
 * or without CLBlast). */
#include <stdio.h>
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"

/* The host path for a device CLBlast cannot serve: inputs down, result up. */
static clg_code cl_on_host(const clg_kernel_ctx *c, clg_cl_gemm_host_fn host)
{
  const clg_node *n = c->node;
  size_t ab = clg_node_out_bytes(n->inputs[0].node, n->inputs[0].index);
  size_t bb = clg_node_out_bytes(n->inputs[1].node, n->inputs[1].index);
  size_t cb = clg_node_out_bytes(n, 0);
  void *a = malloc(ab ? ab : 1), *b = malloc(bb ? bb : 1), *out = malloc(cb ? cb : 1);
  clg_code code = CLG_OK;
  if (!a || !b || !out)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host fallback of '%s'",
                     n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[0]), c->in[0].offset, a, ab);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, clg_cl_mem(&c->in[1]), c->in[1].offset, b, bb);
  if (code == CLG_OK)
    code = host(n, a, b, out);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, clg_cl_mem(&c->out[0]), c->out[0].offset, out, cb);
  free(a);
  free(b);
  free(out);
  return code;
}

/* int32 and int64: one work-item per output element, a plain loop in wrapping (unsigned)
 * arithmetic; CLBlast has no integer GEMM, and these are index computations. */
#define CLG_CL_INT_MATMUL(NAME, T, UT)                                                             \
  "__kernel void " NAME "(__global const " T " *a, ulong ao, __global const " T " *b, ulong bo,\n" \
  "    __global " T " *c, ulong co, ulong m, ulong n, ulong k, uint ta, uint tb)\n"                \
  "{\n"                                                                                            \
  "  ulong t = get_global_id(0);\n"                                                                \
  "  if (t >= m * n)\n"                                                                            \
  "    return;\n"                                                                                  \
  "  ulong i = t / n, j = t % n;\n"                                                                \
  "  " UT " s = 0;\n"                                                                              \
  "  for (ulong q = 0; q < k; q++)\n"                                                              \
  "    s += (" UT ")a[ao + (ta ? q * m + i : i * k + q)] * (" UT                                   \
  ")b[bo + (tb ? j * k + q : q * n + j)];\n"                                                       \
  "  c[co + t] = (" T ")s;\n"                                                                      \
  "}\n"

static const clg_cl_text int_source = {"matmul_int",
                                       CLG_CL_INT_MATMUL("clg_matmul_i32", "int", "uint")
                                           CLG_CL_INT_MATMUL("clg_matmul_i64", "long", "ulong")};

static clg_code cl_int_run(const clg_kernel_ctx *c, bool ta, bool tb, size_t m, size_t nn, size_t k)
{
  bool i64 = c->node->outs[0].dtype == CLG_INT64;
  size_t es = i64 ? 8 : 4;
  cl_ulong ao = c->in[0].offset / es, bo = c->in[1].offset / es, co = c->out[0].offset / es;
  cl_ulong um = m, un = nn, uk = k;
  cl_uint uta = ta, utb = tb;
  if (m == 0 || nn == 0)
    return CLG_OK;
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof ao, &ao},
                       {sizeof(cl_mem), &c->in[1].mem},
                       {sizeof bo, &bo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof co, &co},
                       {sizeof um, &um},
                       {sizeof un, &un},
                       {sizeof uk, &uk},
                       {sizeof uta, &uta},
                       {sizeof utb, &utb}};
  return clg_cl_launch(c->dev, CLG_FLOAT32, &int_source, i64 ? "clg_matmul_i64" : "clg_matmul_i32",
                       args, (int)(sizeof args / sizeof args[0]), m * nn);
}

clg_code clg_cl_gemm_fallback(const clg_kernel_ctx *c, const char *op, const char *why,
                              clg_cl_gemm_host_fn host)
{
  char msg[1024];
  snprintf(msg, sizeof msg, "%s on %s runs on the host instead: %s", op, c->dev->info.full_name,
           clg_last_error());
  /* Keyed on the reason, not on which routine met it: a device without fp16 refuses both
   * the direct Hgemm and the indirect HgemmWithTempBuffer. */
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c, host);
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t m, nn, k;
  bool ta, tb;
  clg_matmul_dims(n, &ta, &tb, &m, &nn, &k);
  if (n->outs[0].dtype == CLG_INT32 || n->outs[0].dtype == CLG_INT64)
    return cl_int_run(c, ta, tb, m, nn, k);
  const char *why = NULL;
  clg_code code = clg_cl_matmul(c->dev, c->alloc, c->scratch, n->outs[0].dtype, ta, tb, m, nn, k,
                                &c->in[0], &c->in[1], &c->out[0], &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  return clg_cl_gemm_fallback(c, "MatMul", why, clg_host_matmul_node);
}

/* CLBlast decides at run time (no fp64/fp16, a compiler error); when it cannot, the host
 * path runs with the device's data. Refusing here instead would hide such devices from the
 * placer for a case the fallback covers. */
static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  if (clg_node_all_dtype(n, CLG_INT32) || clg_node_all_dtype(n, CLG_INT64))
    return true;
  return (clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
          clg_node_all_dtype(n, CLG_FLOAT16)) &&
         clg_kernels_have_clblast();
}

static clg_code cl_warm(const clg_node *n, clg_device *dev)
{
  if (n->outs[0].dtype == CLG_INT32 || n->outs[0].dtype == CLG_INT64)
    return CLG_OK; /* no CLBlast routine; the program builds at its first launch */
  clg_code code = clg_cl_warm_matmul(dev, n->outs[0].dtype);
  return code == CLG_UNIMPLEMENTED ? CLG_OK : code; /* the host fallback needs no warming */
}

static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  if (n->outs[0].dtype == CLG_INT32 || n->outs[0].dtype == CLG_INT64) {
    *bytes = 0;
    return CLG_OK;
  }
  size_t m, nn, k;
  bool ta, tb;
  clg_matmul_dims(n, &ta, &tb, &m, &nn, &k);
  return clg_cl_matmul_scratch(dev, n->outs[0].dtype, ta, tb, m, nn, k, bytes);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_MatMul, {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, cl_warm}},
};
CLG_KERNEL_SET(clg_opencl_kernels_matmul, entries);
