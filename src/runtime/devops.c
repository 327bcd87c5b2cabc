/* The two implementations of the device interface: the host and OpenCL devices. A MatMul
 * that CLBlast cannot serve on a device (no fp64/fp16, compiler error) falls back to the
 * host path here, with a warning once per device and reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "kernels/kernels.h"
#include "runtime/runtime.h"

static clg_binop binop_of(const char *op)
{
  return strcmp(op, "Add") == 0   ? CLG_BINOP_ADD
         : strcmp(op, "Sub") == 0 ? CLG_BINOP_SUB
                                  : CLG_BINOP_MUL;
}

static bool is_binop(const char *op)
{
  return strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0;
}

/* MatMul dimensions: op(a) is [m,k], op(b) is [k,n]. */
static void matmul_dims(const clg_node *n, size_t *m, size_t *nn, size_t *k)
{
  const clg_node *a = n->inputs[0], *b = n->inputs[1];
  *m = (size_t)(n->transpose_a ? a->dims[1] : a->dims[0]);
  *k = (size_t)(n->transpose_a ? a->dims[0] : a->dims[1]);
  *nn = (size_t)(n->transpose_b ? b->dims[0] : b->dims[1]);
}

/* --- host ---------------------------------------------------------------------------- */

/* clg_host_matmul for float and double; half goes through float copies, which can fail. */
static clg_code host_matmul(const clg_node *n, size_t m, size_t nn, size_t k, const void *a,
                            const void *b, void *c)
{
  if (n->dtype == CLG_FLOAT16) {
    clg_code code = clg_host_matmul_half(n->transpose_a, n->transpose_b, m, nn, k, a, b, c);
    if (code != CLG_OK)
      return clg_error_prefix("MatMul '%s': ", n->name);
    return CLG_OK;
  }
  clg_host_matmul(n->dtype, n->transpose_a, n->transpose_b, m, nn, k, a, b, c);
  return CLG_OK;
}

static clg_code host_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  (void)dev;
  if (bytes)
    memcpy(dst->host, src, bytes);
  return CLG_OK;
}

static clg_code host_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  (void)dev;
  if (bytes)
    memcpy(dst, src->host, bytes);
  return CLG_OK;
}

static clg_code host_copy(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                          size_t bytes, cl_event wait, cl_event *done)
{
  (void)wait;
  *done = NULL;
  if (!src->is_host)
    return CLG_UNIMPLEMENTED;
  return host_upload(dst, d, s->host, bytes);
}

static clg_code host_ready_event(clg_device *dev, cl_event *event)
{
  (void)dev;
  *event = NULL;
  return CLG_OK;
}

static clg_code host_finish(clg_device *dev)
{
  (void)dev;
  return CLG_OK;
}

static clg_code host_run(clg_process *p, int device, const clg_node *n, const clg_block *in,
                         const clg_block *out)
{
  (void)p;
  (void)device;
  size_t count = clg_node_count(n);
  if (strcmp(n->op, "MatMul") == 0) {
    size_t m, nn, k;
    matmul_dims(n, &m, &nn, &k);
    return host_matmul(n, m, nn, k, in[0].host, in[1].host, out->host);
  } else if (is_binop(n->op)) {
    clg_host_binary(binop_of(n->op), n->dtype, in[0].host, clg_node_count(n->inputs[0]), in[1].host,
                    clg_node_count(n->inputs[1]), out->host, count);
  } else if (strcmp(n->op, "AddN") == 0) {
    const void *stack[16];
    const void **ptrs = n->num_inputs <= 16 ? stack : malloc(sizeof *ptrs * (size_t)n->num_inputs);
    if (!ptrs)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
    for (int i = 0; i < n->num_inputs; i++)
      ptrs[i] = in[i].host;
    clg_host_addn(n->dtype, ptrs, n->num_inputs, out->host, count);
    if (ptrs != stack)
      free(ptrs);
  } else if (strcmp(n->op, "Identity") == 0) {
    memcpy(out->host, in[0].host, count * clg_dtype_size(n->dtype));
  } else {
    return clg_error(CLG_UNIMPLEMENTED, "no host kernel for op %s (node '%s')", n->op, n->name);
  }
  return CLG_OK;
}

static const clg_devops host_ops = {
    true, host_upload, host_download, host_copy, host_ready_event, host_run, host_finish};

/* --- OpenCL ---------------------------------------------------------------------------- */

static clg_code cl_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes)
{
  return clg_device_upload(dev, dst->mem, dst->offset, src, bytes);
}

static clg_code cl_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes)
{
  return clg_device_download(dev, src->mem, src->offset, dst, bytes);
}

static clg_code cl_copy(clg_device *dst, const clg_block *d, clg_device *src, const clg_block *s,
                        size_t bytes, cl_event wait, cl_event *done)
{
  *done = NULL;
  if (src->is_host || src->context != dst->context)
    return CLG_UNIMPLEMENTED;
  return clg_device_copy(dst, d->mem, d->offset, src, s->mem, s->offset, bytes, wait, done);
}

static clg_code cl_ready_event(clg_device *dev, cl_event *event)
{
  return clg_device_marker(dev, event);
}

/* Runs a MatMul on the host for a device CLBlast cannot serve: inputs down, result up. */
static clg_code cl_matmul_on_host(clg_device *dev, const clg_node *n, const clg_block *in,
                                  const clg_block *out)
{
  size_t m, nn, k, es = clg_dtype_size(n->dtype);
  matmul_dims(n, &m, &nn, &k);
  size_t ab = clg_node_count(n->inputs[0]) * es, bb = clg_node_count(n->inputs[1]) * es;
  size_t cb = m * nn * es;
  void *a = malloc(ab ? ab : 1), *b = malloc(bb ? bb : 1), *c = malloc(cb ? cb : 1);
  clg_code code = CLG_OK;
  if (!a || !b || !c)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host fallback of '%s'",
                     n->name);
  if (code == CLG_OK)
    code = clg_device_download(dev, in[0].mem, in[0].offset, a, ab);
  if (code == CLG_OK)
    code = clg_device_download(dev, in[1].mem, in[1].offset, b, bb);
  if (code == CLG_OK)
    code = host_matmul(n, m, nn, k, a, b, c);
  if (code == CLG_OK)
    code = clg_device_upload(dev, out->mem, out->offset, c, cb);
  free(a);
  free(b);
  free(c);
  return code;
}

static clg_code cl_run(clg_process *p, int device, const clg_node *n, const clg_block *in,
                       const clg_block *out)
{
  clg_device *dev = clg_devices_at(clg_process_devices(p), device);
  size_t count = clg_node_count(n);
  if (strcmp(n->op, "MatMul") == 0) {
    size_t m, nn, k;
    matmul_dims(n, &m, &nn, &k);
    clg_allocator *alloc = NULL;
    const char *why = NULL;
    clg_code code = clg_process_allocator(p, device, &alloc);
    if (code == CLG_OK)
      code = clg_cl_matmul(dev, alloc, n->dtype, n->transpose_a, n->transpose_b, m, nn, k, &in[0],
                           &in[1], out, &why);
    if (code != CLG_UNIMPLEMENTED)
      return code;
    char msg[1024];
    snprintf(msg, sizeof msg, "MatMul on %s runs on the host instead: %s", dev->info.full_name,
             clg_last_error());
    /* Keyed on the reason, not on which routine met it: a device without fp16 refuses both
     * the direct Hgemm and the indirect HgemmWithTempBuffer. */
    clg_process_warn_once(p, device, why ? why : clg_last_error(), msg);
    return cl_matmul_on_host(dev, n, in, out);
  }
  if (is_binop(n->op))
    return clg_cl_binary(dev, binop_of(n->op), n->dtype, &in[0], clg_node_count(n->inputs[0]),
                         &in[1], clg_node_count(n->inputs[1]), out, count);
  if (strcmp(n->op, "AddN") == 0)
    return clg_cl_addn(dev, n->dtype, in, n->num_inputs, out, count);
  if (strcmp(n->op, "Identity") == 0)
    return clg_device_copy(dev, out->mem, out->offset, dev, in[0].mem, in[0].offset,
                           count * clg_dtype_size(n->dtype), NULL, NULL);
  return clg_error(CLG_UNIMPLEMENTED, "no OpenCL kernel for op %s (node '%s')", n->op, n->name);
}

static const clg_devops cl_ops = {false,          cl_upload, cl_download,      cl_copy,
                                  cl_ready_event, cl_run,    clg_device_finish};

const clg_devops *clg_devops_of(const clg_device *dev)
{
  return dev->is_host ? &host_ops : &cl_ops;
}
