/* MatMul on OpenCL devices through CLBlast's C API.
 *
 * Operands are (cl_mem, byte offset) blocks; CLBlast takes offsets in elements, so the
 * offsets are divided by the element size (the allocator aligns blocks to 256 bytes).
 * Transposes are passed to CLBlast, never materialised. CLBlast's indirect GEMM path
 * needs scratch memory: it comes from the device's clg_allocator (so the memory limit
 * holds), handed to CLBlast through the *WithTempBuffer routines.
 *
 * CLBlast's C API prints "CLBlast: Run-time error: <code>" (or similar) to stderr itself
 * whenever a routine fails, e.g. for the expected CLBlastNoHalfPrecision on PoCL; clgraph
 * cannot silence it. The status is what counts: it becomes a clgraph error that carries
 * CLBlast's name for the code.
 *
 * CLGRAPH_CLBLAST_DISABLE (a diagnostic switch, read once per process): a comma-separated
 * list of precisions (half, single, double) that CLBlast is treated as unable to run on
 * every device, so MatMuls of those dtypes take the host fallback exactly as on a device
 * without fp16/fp64. It lets tests and users exercise that path on any device.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"

#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>

/* Held across each CLBlast call: CLBlast's calls only enqueue once its caches are warm, so
 * serialising them costs little; a first use per device and precision compiles (from PoCL's
 * disk cache, or seconds cold) while holding it. Nothing under it takes another lock. */
static pthread_mutex_t clblast_mutex = PTHREAD_MUTEX_INITIALIZER;

void clg_clblast_lock(void) { pthread_mutex_lock(&clblast_mutex); }

void clg_clblast_unlock(void) { pthread_mutex_unlock(&clblast_mutex); }

static const char *const precision_names[] = {"half", "single", "double"};
static bool precision_disabled[3];
static pthread_once_t disable_once = PTHREAD_ONCE_INIT;

static int precision_index(clg_dtype dtype)
{
  return dtype == CLG_FLOAT16 ? 0 : dtype == CLG_FLOAT32 ? 1 : 2;
}

static void disable_init(void)
{
  const char *env = getenv("CLGRAPH_CLBLAST_DISABLE");
  if (!env)
    return;
  for (const char *p = env; *p;) {
    size_t len = strcspn(p, ",");
    while (len > 0 && (*p == ' ' || *p == '\t'))
      p++, len--;
    size_t end = len;
    while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
      end--;
    bool known = end == 0; /* empty items ("double,") are harmless */
    for (int i = 0; i < 3 && !known; i++)
      if (strlen(precision_names[i]) == end && strncmp(p, precision_names[i], end) == 0)
        precision_disabled[i] = known = true;
    if (!known)
      clg_log(CLG_LOG_WARNING,
              "CLGRAPH_CLBLAST_DISABLE: '%.*s' ignored: want a comma-separated list of half, "
              "single and double",
              (int)end, p);
    p += len;
    if (*p == ',')
      p++;
  }
  for (int i = 0; i < 3; i++)
    if (precision_disabled[i])
      clg_log(CLG_LOG_DEBUG, "CLGRAPH_CLBLAST_DISABLE: MatMul in %s precision will not use CLBlast",
              precision_names[i]);
}

/* UNIMPLEMENTED, as for a device without the precision, when CLGRAPH_CLBLAST_DISABLE
 * names dtype's precision; OK otherwise. */
static clg_code check_disabled(clg_dtype dtype)
{
  pthread_once(&disable_once, disable_init);
  int i = precision_index(dtype);
  if (!precision_disabled[i])
    return CLG_OK;
  return clg_error(CLG_UNIMPLEMENTED, "CLBlast disabled for %s by CLGRAPH_CLBLAST_DISABLE",
                   precision_names[i]);
}

static clg_code clblast_error(int status, const char *routine, const clg_device *dev,
                              const char **why)
{
  if (why)
    *why = clg_clblast_status_name(status);
  clg_code code = clg_clblast_status_code(status);
  const char *hint = code == CLG_UNIMPLEMENTED ? " (the host kernel can run this MatMul)" : "";
  return clg_error(code, "%s failed: %s (%d) on %s%s", routine, clg_clblast_status_name(status),
                   status, dev->info.name, hint);
}

static size_t elem_size(clg_dtype dtype)
{
  return dtype == CLG_FLOAT32 ? 4 : dtype == CLG_FLOAT64 ? 8 : dtype == CLG_FLOAT16 ? 2 : 0;
}

static const char *gemm_name(clg_dtype dtype, bool temp)
{
  if (dtype == CLG_FLOAT64)
    return temp ? "CLBlastDgemmWithTempBuffer" : "CLBlastDgemm";
  if (dtype == CLG_FLOAT16)
    return temp ? "CLBlastHgemmWithTempBuffer" : "CLBlastHgemm";
  return temp ? "CLBlastSgemmWithTempBuffer" : "CLBlastSgemm";
}

typedef struct gemm_args {
  CLBlastTranspose ta, tb;
  size_t m, n, k;
  cl_mem a, b, c;
  size_t a_off, a_ld, b_off, b_ld, c_off, c_ld; /* in elements */
} gemm_args;

/* C = op(A) op(B) (alpha 1, beta 0); temp NULL lets CLBlast allocate its own scratch. Called
 * with the CLBlast lock held (gemm_call). */
static CLBlastStatusCode gemm_dispatch(clg_dtype dtype, const gemm_args *g, cl_command_queue *q,
                                       cl_event *ev, cl_mem temp)
{
  const CLBlastLayout L = CLBlastLayoutRowMajor;
  switch (dtype) {
  case CLG_FLOAT32:
    if (temp)
      return CLBlastSgemmWithTempBuffer(L, g->ta, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->a_off,
                                        g->a_ld, g->b, g->b_off, g->b_ld, 0.0f, g->c, g->c_off,
                                        g->c_ld, q, ev, temp);
    return CLBlastSgemm(L, g->ta, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->a_off, g->a_ld, g->b,
                        g->b_off, g->b_ld, 0.0f, g->c, g->c_off, g->c_ld, q, ev);
  case CLG_FLOAT64:
    if (temp)
      return CLBlastDgemmWithTempBuffer(L, g->ta, g->tb, g->m, g->n, g->k, 1.0, g->a, g->a_off,
                                        g->a_ld, g->b, g->b_off, g->b_ld, 0.0, g->c, g->c_off,
                                        g->c_ld, q, ev, temp);
    return CLBlastDgemm(L, g->ta, g->tb, g->m, g->n, g->k, 1.0, g->a, g->a_off, g->a_ld, g->b,
                        g->b_off, g->b_ld, 0.0, g->c, g->c_off, g->c_ld, q, ev);
  case CLG_FLOAT16: {
    const cl_half one = 0x3C00, zero = 0; /* IEEE half bit patterns */
    if (temp)
      return CLBlastHgemmWithTempBuffer(L, g->ta, g->tb, g->m, g->n, g->k, one, g->a, g->a_off,
                                        g->a_ld, g->b, g->b_off, g->b_ld, zero, g->c, g->c_off,
                                        g->c_ld, q, ev, temp);
    return CLBlastHgemm(L, g->ta, g->tb, g->m, g->n, g->k, one, g->a, g->a_off, g->a_ld, g->b,
                        g->b_off, g->b_ld, zero, g->c, g->c_off, g->c_ld, q, ev);
  }
  default: /* integer dtypes: no GEMM */
    break;
  }
  return CLBlastNotImplemented;
}

static CLBlastStatusCode gemm_call(const clg_device *dev, clg_dtype dtype, const gemm_args *g,
                                   cl_command_queue *q, cl_event *ev, cl_mem temp)
{
  clg_clblast_tune(dev);
  clg_clblast_lock();
  CLBlastStatusCode st = gemm_dispatch(dtype, g, q, ev, temp);
  clg_clblast_unlock();
  return st;
}

static CLBlastStatusCode temp_size_dispatch(clg_dtype dtype, const gemm_args *g,
                                            cl_command_queue *q, size_t *bytes)
{
  const CLBlastLayout L = CLBlastLayoutRowMajor;
  switch (dtype) {
  case CLG_FLOAT32:
    return CLBlastSGemmTempBufferSize(L, g->ta, g->tb, g->m, g->n, g->k, g->a_off, g->a_ld,
                                      g->b_off, g->b_ld, g->c_off, g->c_ld, q, bytes);
  case CLG_FLOAT64:
    return CLBlastDGemmTempBufferSize(L, g->ta, g->tb, g->m, g->n, g->k, g->a_off, g->a_ld,
                                      g->b_off, g->b_ld, g->c_off, g->c_ld, q, bytes);
  case CLG_FLOAT16:
    return CLBlastHGemmTempBufferSize(L, g->ta, g->tb, g->m, g->n, g->k, g->a_off, g->a_ld,
                                      g->b_off, g->b_ld, g->c_off, g->c_ld, q, bytes);
  default: /* integer dtypes: no GEMM */
    break;
  }
  return CLBlastNotImplemented;
}

static CLBlastStatusCode temp_size_call(const clg_device *dev, clg_dtype dtype, const gemm_args *g,
                                        cl_command_queue *q, size_t *bytes)
{
  clg_clblast_tune(dev); /* the scratch size follows the tuned tile sizes */
  clg_clblast_lock();
  CLBlastStatusCode st = temp_size_dispatch(dtype, g, q, bytes);
  clg_clblast_unlock();
  return st;
}

static const char *temp_size_name(clg_dtype dtype)
{
  return dtype == CLG_FLOAT64   ? "CLBlastDGemmTempBufferSize"
         : dtype == CLG_FLOAT16 ? "CLBlastHGemmTempBufferSize"
                                : "CLBlastSGemmTempBufferSize";
}

static clg_code check_mm_block(const clg_block *b, const char *arg, size_t es, size_t rows,
                               size_t cols)
{
  if (!b)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_matmul: %s is NULL", arg);
  if (!b->mem)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_matmul: %s has no cl_mem (a host block?)", arg);
  if (b->offset % es != 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_cl_matmul: %s offset %zu is not a multiple of the element size %zu", arg,
                     b->offset, es);
  if (cols != 0 && rows > b->size / es / cols)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_cl_matmul: %s holds %zu bytes, too few for [%zu,%zu] of %zu bytes", arg,
                     b->size, rows, cols, es);
  return CLG_OK;
}

/* k = 0: C (bytes at c) is zero. */
static clg_code fill_zero(clg_device *dev, const clg_block *c, size_t es, size_t bytes)
{
  const uint64_t zero = 0;
  cl_int err =
      clEnqueueFillBuffer(clg_cl_queue(dev), c->mem, &zero, es, c->offset, bytes, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clEnqueueFillBuffer", " for MatMul on %s", dev->info.name);
  return CLG_OK;
}

/* CLBlast's kernels take sizes, leading dimensions and offsets as int, and index with
 * them: every element's index (offset + position) must fit. The block checks bound
 * m*k, k*n and m*n by the block sizes, so these sums cannot overflow size_t. */
static bool fits_int(const gemm_args *g)
{
  size_t biggest = g->m > g->n ? g->m : g->n;
  biggest = biggest > g->k ? biggest : g->k;
  return !(biggest > INT_MAX || g->a_off + g->m * g->k > INT_MAX ||
           g->b_off + g->k * g->n > INT_MAX || g->c_off + g->m * g->n > INT_MAX);
}

/* The GEMM with temp_bytes of scratch, from the plan's block when it is big enough, else
 * from alloc (freed after the GEMM's last kernel). */
static clg_code gemm_with_scratch(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                                  clg_dtype dtype, const gemm_args *g, cl_command_queue q,
                                  size_t temp_bytes, const char **why)
{
  /* CLBlast takes the scratch as a whole cl_mem, so the block becomes a sub-buffer, whose
   * origin must be aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN: pad the request so that an
   * aligned origin always fits in it. */
  size_t align = dev->info.base_addr_align ? dev->info.base_addr_align : 1;
  size_t pad = (align <= 256 && 256 % align == 0) ? 0 : align - 1;
  clg_block tmp;
  clg_code code;
  if (clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "MatMul [%zu,%zu]x[%zu,%zu] on %s: %zu bytes of CLBlast scratch", g->m,
            g->k, g->k, g->n, dev->info.name, temp_bytes);
  /* The run's plan holds scratch for this GEMM; should CLBlast want more with the real
   * offsets than the plan asked for, the allocator serves this call. */
  bool planned = scratch && scratch->mem && scratch->size >= temp_bytes + pad;
  if (planned)
    tmp = *scratch;
  else if ((code = clg_allocator_alloc(alloc, temp_bytes + pad, &tmp)) != CLG_OK)
    return clg_error_prefix("CLBlast GEMM scratch for MatMul [%zu,%zu]x[%zu,%zu]: ", g->m, g->k,
                            g->k, g->n);
  cl_buffer_region region = {(tmp.offset + align - 1) / align * align, temp_bytes};
  cl_int err;
  cl_mem sub =
      clCreateSubBuffer(tmp.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  if (err != CL_SUCCESS) {
    if (!planned)
      clg_allocator_free(alloc, &tmp, NULL);
    return clg_cl_error(err, "clCreateSubBuffer", " for the CLBlast GEMM scratch on %s",
                        dev->info.name);
  }
  cl_event ev = NULL;
  CLBlastStatusCode st = gemm_call(dev, dtype, g, &q, &ev, sub);
  /* OpenCL keeps sub alive until the commands using it finish. */
  clReleaseMemObject(sub);
  if (st != CLBlastSuccess) {
    /* Kernels enqueued before the failure may still use the scratch. */
    clFinish(q);
    if (ev)
      clReleaseEvent(ev);
    if (!planned)
      clg_allocator_free(alloc, &tmp, NULL);
    return clblast_error(st, gemm_name(dtype, true), dev, why);
  }
  /* The event is that of CLBlast's last kernel; the queue is in order, so it completes
   * after every kernel that uses the scratch. */
  if (!planned) {
    clg_event *done = clg_cl_event_adopt(dev, ev); /* takes ev's reference */
    clg_allocator_free(alloc, &tmp, done);
    clg_event_release(done);
  } else if (ev) {
    clReleaseEvent(ev);
  }
  return CLG_OK;
}

#endif /* CLG_HAVE_CLBLAST */

clg_code clg_cl_matmul(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                       const clg_block *a, const clg_block *b, const clg_block *c, const char **why)
{
  const char *unused;
  if (!why)
    why = &unused;
  *why = NULL;
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_matmul: dev is NULL");
  if (dev->is_host || !clg_cl_queue(dev))
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_matmul: device %s is not an OpenCL device",
                     dev->info.name ? dev->info.name : "(unnamed)");
#ifndef CLG_HAVE_CLBLAST
  (void)alloc, (void)scratch, (void)dtype, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a;
  (void)b;
  (void)c;
  *why = "no CLBlast in this build";
  return clg_error(CLG_UNIMPLEMENTED,
                   "MatMul on %s needs CLBlast, and this build of clgraph has none "
                   "(CLGRAPH_WITH_CLBLAST=OFF or CLBlast not found)",
                   dev->info.name);
#else
  size_t es = elem_size(dtype);
  if (es == 0)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_matmul: dtype %d is not float, double or half",
                     (int)dtype);
  clg_code code;
  if ((code = check_mm_block(a, "a", es, m, k)) != CLG_OK ||
      (code = check_mm_block(b, "b", es, k, n)) != CLG_OK ||
      (code = check_mm_block(c, "c", es, m, n)) != CLG_OK)
    return code;
  if (m == 0 || n == 0)
    return CLG_OK;
  if (k == 0) /* an empty sum: C is zero (CLBlast rejects k = 0) */
    return fill_zero(dev, c, es, m * n * es);

  gemm_args g = {ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                 tb ? CLBlastTransposeYes : CLBlastTransposeNo,
                 m,
                 n,
                 k,
                 a->mem,
                 b->mem,
                 c->mem,
                 a->offset / es,
                 ta ? m : k,
                 b->offset / es,
                 tb ? k : n,
                 c->offset / es,
                 n};
  if (!fits_int(&g)) {
    *why = "sizes beyond CLBlast's int arguments";
    return clg_error(CLG_UNIMPLEMENTED,
                     "MatMul [%zu,%zu]x[%zu,%zu] on %s exceeds CLBlast's int sizes and offsets", m,
                     k, k, n, dev->info.name);
  }

  if ((code = check_disabled(dtype)) != CLG_OK) {
    *why = "CLGRAPH_CLBLAST_DISABLE";
    return code;
  }

  cl_command_queue q = clg_cl_queue(dev);
  if (!alloc) {
    CLBlastStatusCode st = gemm_call(dev, dtype, &g, &q, NULL, NULL);
    return st == CLBlastSuccess ? CLG_OK : clblast_error(st, gemm_name(dtype, false), dev, why);
  }

  size_t temp_bytes = 0;
  CLBlastStatusCode st = temp_size_call(dev, dtype, &g, &q, &temp_bytes);
  if (st != CLBlastSuccess)
    return clblast_error(st, temp_size_name(dtype), dev, why);
  if (temp_bytes == 0) { /* the direct kernel: no scratch */
    st = gemm_call(dev, dtype, &g, &q, NULL, NULL);
    return st == CLBlastSuccess ? CLG_OK : clblast_error(st, gemm_name(dtype, false), dev, why);
  }

  return gemm_with_scratch(dev, alloc, scratch, dtype, &g, q, temp_bytes, why);
#endif
}

clg_code clg_cl_warm_matmul(clg_device *dev, clg_dtype dtype)
{
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_warm_matmul: dev is NULL");
  if (dev->is_host || !clg_cl_queue(dev) || !clg_cl_context(dev))
    return clg_error(CLG_INVALID_ARGUMENT, "clg_cl_warm_matmul: device %s is not an OpenCL device",
                     dev->info.name ? dev->info.name : "(unnamed)");
#ifndef CLG_HAVE_CLBLAST
  (void)dtype;
  return clg_error(CLG_UNIMPLEMENTED, "MatMul on %s needs CLBlast, and this build has none",
                   dev->info.name);
#else
  size_t es = elem_size(dtype);
  if (es == 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_cl_warm_matmul: dtype %d is not float, double or half", (int)dtype);
  clg_code code = check_disabled(dtype);
  if (code != CLG_OK)
    return code;
  enum { N = 8 };
  uint64_t zeros[N * N] = {0}; /* large enough for N x N of any dtype */
  cl_mem buf[3] = {NULL, NULL, NULL};
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
    buf[i] = clCreateBuffer(clg_cl_context(dev), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            N * N * es, zeros, &err);
  if (err != CL_SUCCESS) {
    code = clg_cl_error(err, "clCreateBuffer", " warming MatMul on %s", dev->info.name);
  } else {
    uint64_t t0 = clg_now_ns();
    gemm_args g = {
        CLBlastTransposeNo, CLBlastTransposeNo, N, N, N, buf[0], buf[1], buf[2], 0, N, 0, N, 0, N};
    cl_command_queue q = clg_cl_queue(dev);
    CLBlastStatusCode st = gemm_call(dev, dtype, &g, &q, NULL, NULL);
    if (st != CLBlastSuccess)
      code = clblast_error(st, gemm_name(dtype, false), dev, NULL);
    else if ((err = clFinish(q)) != CL_SUCCESS)
      code = clg_cl_error(err, "clFinish", " warming MatMul on %s", dev->info.name);
    else
      clg_log(CLG_LOG_DEBUG, "MatMul (%s) ready on %s in %.3f s",
              dtype == CLG_FLOAT64   ? "double"
              : dtype == CLG_FLOAT16 ? "half"
                                     : "float",
              dev->info.name, (double)(clg_now_ns() - t0) * 1e-9);
  }
  for (int i = 0; i < 3; i++)
    if (buf[i])
      clReleaseMemObject(buf[i]);
  return code;
#endif
}

clg_code clg_cl_matmul_scratch(clg_device *dev, clg_dtype dtype, bool ta, bool tb, size_t m,
                               size_t n, size_t k, size_t *bytes)
{
  *bytes = 0;
#ifndef CLG_HAVE_CLBLAST
  (void)dev, (void)dtype, (void)ta, (void)tb, (void)m, (void)n, (void)k;
  return CLG_OK;
#else
  if (!dev || dev->is_host || !clg_cl_queue(dev) || m == 0 || n == 0 || k == 0 || m > INT_MAX ||
      n > INT_MAX || k > INT_MAX || elem_size(dtype) == 0 || check_disabled(dtype) != CLG_OK)
    return CLG_OK; /* the GEMM call itself says why, or needs none */
  gemm_args g = {ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                 tb ? CLBlastTransposeYes : CLBlastTransposeNo,
                 m,
                 n,
                 k,
                 NULL,
                 NULL,
                 NULL,
                 0,
                 ta ? m : k,
                 0,
                 tb ? k : n,
                 0,
                 n};
  cl_command_queue q = clg_cl_queue(dev);
  size_t temp = 0;
  CLBlastStatusCode st = temp_size_call(dev, dtype, &g, &q, &temp);
  if (st != CLBlastSuccess) {
    /* What the host fallback serves (no fp16, no fp64) needs no scratch; the rest fails
     * the run as the GEMM would. */
    const char *why;
    clg_code code = clblast_error(st, temp_size_name(dtype), dev, &why);
    return code == CLG_UNIMPLEMENTED ? CLG_OK : code;
  }
  if (temp == 0)
    return CLG_OK;
  size_t align = dev->info.base_addr_align ? dev->info.base_addr_align : 1;
  size_t pad = (align <= 256 && 256 % align == 0) ? 0 : align - 1;
  /* Offsets change CLBlast's padding a little: leave room for a few rows more. */
  *bytes = temp + pad + temp / 16 + 4096;
  return CLG_OK;
#endif
}
