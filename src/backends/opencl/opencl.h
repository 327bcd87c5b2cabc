/* The OpenCL backend's door (src/backends/opencl/): kernels on OpenCL devices.
 *
 * OpenCL kernels enqueue on the device's in-order queue and return without waiting; the
 * caller orders work across queues (a barrier with a wait list before, a marker after), so
 * these functions take no event lists. Blocks are (cl_mem, byte offset). All tensors are
 * dense row-major; counts are element counts. Only this folder (and src/device/'s
 * enumeration) names OpenCL: reach a device's handles through the accessors below. */
#ifndef CLG_BACKEND_OPENCL_H
#define CLG_BACKEND_OPENCL_H

#include "backends/backend.h"
#include "device/opencl_handles.h"

/* --- a device's and a block's OpenCL handles ------------------------------------------ */

/* NULL for a device that is not a local OpenCL device (the host, a remote device). */
static inline cl_command_queue clg_cl_queue(const clg_device *dev)
{
  return dev->cl ? dev->cl->queue : NULL;
}
static inline cl_context clg_cl_context(const clg_device *dev)
{
  return dev->cl ? dev->cl->context : NULL;
}
static inline cl_device_id clg_cl_device_id(const clg_device *dev)
{
  return dev->cl ? dev->cl->device : NULL;
}
static inline cl_platform_id clg_cl_platform(const clg_device *dev)
{
  return dev->cl ? dev->cl->platform : NULL;
}
static inline cl_mem clg_cl_mem(const clg_block *b) { return (cl_mem)b->mem; }
/* The set's context i (0 <= i < devs->num_contexts). */
static inline cl_context clg_cl_set_context(const clg_devices *devs, int i)
{
  return devs->cl->contexts[i];
}

/* --- events (events.c) ---------------------------------------------------------------- */

/* The table that tags this kind's events. */
extern const clg_event_ops clg_cl_event_ops;
/* An event of dev's context made of ev, whose reference it takes over (NULL for NULL). When no
 * memory is left to keep it, waits for ev and returns NULL (a completed event): so never pass
 * a user event that only the caller can complete. */
clg_event *clg_cl_event_adopt(const clg_device *dev, cl_event ev);
/* The cl_event behind e, or NULL when e is NULL or not an OpenCL event. */
cl_event clg_cl_event_of(clg_event *e);
/* Into list (n entries of room) the cl_events among the n events that dev's queue can wait
 * for (OpenCL events of its context), *count of them; waits on the host for every other. */
clg_code clg_cl_wait_list(const clg_device *dev, int n, clg_event *const *events, cl_event *list,
                          cl_uint *count);
/* The table's chain: a barrier on dev's queue after the events of its context. */
clg_code clg_cl_chain(clg_device *dev, int n, clg_event *const *events);

/* --- the device table (device.c, transfer.c, clock.c, events.c, buffers.c) ----------------- */

/* OpenCL devices' table and their buffer table (clg_device_ops_of picks them). */
extern const clg_device_ops clg_cl_device_ops;
extern const clg_buffer_ops clg_cl_buffer_ops;

/* Blocking write of bytes from host to (mem, offset) on dev's queue; mem is a block's
 * region handle (its cl_mem). */
clg_code clg_device_upload(clg_device *dev, void *mem, size_t offset, const void *host,
                           size_t bytes);
/* Blocking read of bytes from (mem, offset) on dev's queue (after all work queued there). */
clg_code clg_device_download(clg_device *dev, void *mem, size_t offset, void *host, size_t bytes);
/* Copies within one context, enqueued on dst's queue after `wait` (may be NULL); *done
 * (if not NULL) receives an event for the copy. Devices of different contexts:
 * UNIMPLEMENTED (callers stage through the host). */
clg_code clg_device_copy(clg_device *dst, void *dst_mem, size_t dst_offset, const clg_device *src,
                         void *src_mem, size_t src_offset, size_t bytes, clg_event *wait,
                         clg_event **done);
/* An event that completes when everything enqueued on dev's queue so far has completed. */
clg_code clg_device_marker(clg_device *dev, cl_event *event);
/* Waits for everything enqueued on dev's queue (OK at once for the host). */
clg_code clg_device_finish(clg_device *dev);
/* How far the host's monotonic clock (clg_now_ns) is ahead of dev's profiling clock: device
 * time + *host_minus_device_ns = host time, to within +-*error_ns (0 and 0 for the host).
 * From clGetDeviceAndHostTimer bracketed by two host readings when the device is OpenCL >=
 * 2.1 and its platform has a host timer; else from markers: a marker's QUEUED time is taken
 * during the enqueue call and its END before the wait returns, so each marker bounds the
 * offset from both sides, and the bounds of a few markers are intersected. */
clg_code clg_device_clock_offset(clg_device *dev, int64_t *host_minus_device_ns,
                                 uint64_t *error_ns);
/* Profiling times (ns, device clock) of a completed event. */
clg_code clg_device_event_times(cl_event event, uint64_t *start_ns, uint64_t *end_ns);

/* The map as OpenCL kernels take it (struct clg_map in cl/broadcast.cl and cl/reduce.cl). */
typedef struct clg_cl_map {
  cl_ulong rank;
  cl_ulong dims[8];
  cl_ulong sa[8];
  cl_ulong sb[8];
} clg_cl_map;

void clg_strided_to_cl(const clg_strided *m, clg_cl_map *c);

/* On an OpenCL device: as clg_host_gather (backends/host/host.h). */
clg_code clg_cl_gather(clg_device *dev, size_t es, const clg_block *a, const clg_block *out,
                       const clg_strided *m);

/* Fills bytes of out with an element pattern of es bytes (1, 2, 4, 8). */
clg_code clg_cl_fill(clg_device *dev, const clg_block *out, const void *pattern, size_t es,
                     size_t bytes);

/* The OpenCL version (cl/broadcast.cl). */
clg_code clg_cl_broadcast(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                          const clg_block *b, const clg_block *out, const clg_strided *m);

/* Whether this build has CLBlast (MatMul's OpenCL kernel). */
bool clg_kernels_have_clblast(void);

/* Builds (once per context, cached; thread-safe) the embedded cl/ programs for the
 * device: float for every device of its context, double for those with fp64. The
 * element-wise calls below build on first use too; this moves the cost to a known place.
 * Errors: INTERNAL naming the device, with the build log (a failed build is not cached).
 * CLGRAPH_CL_BUILD_OPTIONS, if set, is appended to the build options. */
clg_code clg_cl_prepare(clg_device *dev);

/* Compiles the MatMul routines for dtype on the device (CLBlast's first-call cost: ~10 s
 * per dtype on a cold PoCL cache) by running one tiny GEMM, and waits for it. Errors as
 * clg_cl_matmul's (UNIMPLEMENTED where the device cannot, or without CLBlast). */
clg_code clg_cl_warm_matmul(clg_device *dev, clg_dtype dtype);

/* Element-wise ops with the host's semantics (same results, bit for bit). Blocks are
 * (cl_mem, byte offset) with offsets a multiple of the element size; too small a block or
 * a bad count is INVALID_ARGUMENT; double on a device without fp64 is UNIMPLEMENTED. out
 * may be the same block as an input (for AddN with more than 8 inputs: one of the first
 * 8). */
clg_code clg_cl_binary(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                       size_t na, const clg_block *b, size_t nb, const clg_block *out,
                       size_t count);

/* On an OpenCL device: as clg_host_addn (backends/host/host.h). */
clg_code clg_cl_addn(clg_device *dev, clg_dtype dtype, const clg_block *inputs, int n,
                     const clg_block *out, size_t count);

/* CLBlast GEMM on the blocks, transposes passed through; scratch from `scratch` when it is
 * large enough (the run's plan), else from alloc. On a CLBlast
 * failure that a host fallback can serve (no fp64/fp16, compiler error) returns
 * UNIMPLEMENTED with the reason, so the caller falls back.
 * Details: block offsets must be multiples of the element size (CLBlast counts offsets in
 * elements). alloc NULL lets CLBlast allocate its scratch itself (direct-call benchmarks
 * only: it escapes the memory limit); otherwise the scratch is a block of alloc, wrapped in
 * a sub-buffer (CLBlast takes a whole cl_mem) and freed with the GEMM's event pending.
 * Errors: "CLBlastSgemm failed: CLBlastNoDoublePrecision (-2044) on /device:GPU:0" with
 * UNIMPLEMENTED for NoHalf/NoDoublePrecision, OpenCLCompilerNotAvailable,
 * OpenCLBuildProgramFailure, DatabaseError, NotImplemented and sizes beyond CLBlast's int
 * arguments; RESOURCE_EXHAUSTED for -4/-5/-6 and a scratch allocation that fails;
 * INTERNAL otherwise. CLBlast itself also prints "CLBlast: Run-time error" to stderr on
 * every failure (it cannot be silenced). Without CLBlast in the build: UNIMPLEMENTED.
 * why (may be NULL) receives a short fixed name of the reason for an UNIMPLEMENTED or CLBlast
 * failure (CLBlast's status name, "CLGRAPH_CLBLAST_DISABLE", ...), NULL otherwise: the
 * caller warns once per device and reason with it. */
clg_code clg_cl_matmul(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                       const clg_block *a, const clg_block *b, const clg_block *c,
                       const char **why);

/* The scratch a run should plan for that GEMM into *bytes (0: none needed, or the host
 * fallback will serve it); with it as `scratch`, clg_cl_matmul makes no allocator call.
 * Errors as clg_cl_matmul's, for what would fail the GEMM itself. */
clg_code clg_cl_matmul_scratch(clg_device *dev, clg_dtype dtype, bool ta, bool tb, size_t m,
                               size_t n, size_t k, size_t *bytes);

/* The host path of MatMul's and BatchMatMulV2's kernels (matmul_kernels.c), after
 * clg_cl_matmul's UNIMPLEMENTED (why: its reason): "OP on DEVICE runs on the host instead:
 * ..." warned once per device and reason, then host(n, a, b, c) on the device's data (inputs
 * down, result up). */
typedef clg_code (*clg_cl_gemm_host_fn)(const clg_node *n, const void *a, const void *b, void *c);
clg_code clg_cl_gemm_fallback(const clg_kernel_ctx *c, const char *op, const char *why,
                              clg_cl_gemm_host_fn host);

/* On an OpenCL device: as clg_host_pool (backends/host/host.h). */
clg_code clg_cl_pool(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                     const clg_block *y, const clg_window *g);

/* On an OpenCL device: as clg_host_lrn (backends/host/host.h). */
clg_code clg_cl_lrn(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *y,
                    size_t count, int64_t c, int64_t radius, double bias, double alpha,
                    double beta);

/* On an OpenCL device: as clg_host_conv2d (backends/host/host.h). */
clg_code clg_cl_conv2d(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, const clg_block *x, const clg_block *f, const clg_block *y,
                       const clg_window *g, const char **why);

/* On an OpenCL device: as clg_host_conv2d_scratch (backends/host/host.h). */
clg_code clg_cl_conv2d_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g,
                               size_t *bytes);

/* On an OpenCL device: as clg_host_im2col (backends/host/host.h). */
clg_code clg_cl_im2col(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *p,
                       size_t row0, size_t rows, const clg_window *g);

/* On an OpenCL device: as clg_host_col2im (backends/host/host.h). */
clg_code clg_cl_col2im(clg_device *dev, clg_dtype dtype, const clg_block *p, const clg_block *x,
                       size_t row0, size_t rows, const clg_window *g);

/* On an OpenCL device: as clg_host_conv2d_grad_scratch (backends/host/host.h). */
clg_code clg_cl_conv2d_grad_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g,
                                    bool filter, size_t *bytes);

/* On an OpenCL device: as clg_host_conv2d_backprop (backends/host/host.h). */
clg_code clg_cl_conv2d_backprop(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                                clg_dtype dtype, bool filter, const clg_block *in,
                                const clg_block *dy, const clg_block *out, const clg_window *g,
                                const char **why);

/* On an OpenCL device: as clg_host_pool_grad (backends/host/host.h). */
clg_code clg_cl_pool_grad(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                          const clg_block *dy, const clg_block *dx, const clg_window *g);

/* On an OpenCL device: as clg_host_lrn_grad (backends/host/host.h). */
clg_code clg_cl_lrn_grad(clg_device *dev, clg_dtype dtype, const clg_block *dy, const clg_block *x,
                         const clg_block *y, const clg_block *dx, size_t count, int64_t c,
                         int64_t radius, double bias, double alpha, double beta);

/* OpenCL C text with a name; T is typedef'd to the element type (float, or double with
 * fp64 enabled) before it. Identity matters: one cached program per source object. text
 * NULL: the program is the embedded cl/<name>.cl. */
typedef struct clg_cl_text {
  const char *name;
  const char *text;
} clg_cl_text;

/* One kernel argument, as clSetKernelArg takes it. */
typedef struct clg_cl_arg {
  size_t size;
  const void *value;
} clg_cl_arg;

/* Enqueues `count` work-items (rounded up to the work-group size: kernels check bounds) of
 * kernel `kernel` of src, built on first use for dev's context and dtype and cached.
 * UNIMPLEMENTED for a dtype the device lacks; INTERNAL with the build log. */
clg_code clg_cl_launch(clg_device *dev, clg_dtype dtype, const clg_cl_text *src, const char *kernel,
                       const clg_cl_arg *args, int nargs, size_t count);

/* Enqueues `groups` work-groups of the kernel's work-group size (a power of two <= 256),
 * lowered to the smallest power of two >= max_local: reductions, one group per output. */
clg_code clg_cl_launch_groups(clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                              const char *kernel, const clg_cl_arg *args, int nargs, size_t groups,
                              size_t max_local);

/* y[i] = clg_op(x[i]) for an element-wise op whose source defines `T clg_op(T x)` and
 * includes CLG_CL_UNARY_TEMPLATE. y may be x. */
clg_code clg_cl_unary(clg_device *dev, const clg_cl_text *src, clg_dtype dtype, const clg_block *x,
                      const clg_block *y, size_t count);

#define CLG_CL_UNARY_TEMPLATE                                                                      \
  "__kernel void clg_unary(__global const T *x, ulong xo, __global T *y, ulong yo, ulong n)\n"     \
  "{\n"                                                                                            \
  "  ulong i = get_global_id(0);\n"                                                                \
  "  if (i < n)\n"                                                                                 \
  "    y[yo + i] = clg_op(x[xo + i]);\n"                                                           \
  "}\n"

/* The user's CLGRAPH_CL_BUILD_OPTIONS, checked, into buf ("" when unset). */
clg_code clg_cl_build_options(char *buf, size_t size);

/* How the cache (program.c) builds a source: with a T prelude (clg_cl_launch's sources), or
 * as a file that defines T itself from -DCLG_DOUBLE (cl/elementwise.cl), whose build errors
 * name the file, the options and each failing device's log. One style per source. */
typedef enum clg_cl_style { CLG_CL_PRELUDE, CLG_CL_OWN_T } clg_cl_style;

/* As clg_cl_launch, for a CLG_CL_OWN_T source. */
clg_code clg_cl_launch_own(clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                           const char *kernel, const clg_cl_arg *args, int nargs, size_t count);

/* Builds src for dev's context and dtype now (cached), so that launches find it built. */
clg_code clg_cl_program_prepare(const clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                                clg_cl_style style);

/* Releases the programs and kernels cached for all contexts, and CLBlast's caches (at
 * process-wide teardown, with no kernel call in flight). The cache holds a reference to
 * each context it built for, so call this before expecting the contexts to go away. */
void clg_cl_release_all(void);

/* One process-wide lock around every CLBlast call (defined in cl_matmul.c, in builds with
 * CLBlast). CLBlast 1.5 fills its kernel database and program caches on first use without
 * a lock (CLBlast issue #486, fixed in 1.6.1), while distinct sessions may run MatMuls from
 * several threads at once. */
void clg_clblast_lock(void);

void clg_clblast_unlock(void);

/* CLBlast tuned per card (kernels/clblast_tuning.c): applies the tuning that
 * CLGRAPH_CLBLAST_TUNING or the cache folder holds for dev's physical device, once per device
 * and before CLBlast's first use of it (every CLBlast call of clgraph comes here first; a
 * program calling CLBlast itself on a clgraph device calls it too). Problems are logged as
 * warnings naming the file; CLBlast then keeps its defaults. */
void clg_clblast_tune(const clg_device *dev);

/* Clears CLBlast's program caches (CLBlastClearCache) and forgets which devices were tuned,
 * so that the next call reads the tuning again. What an earlier override set stays until a
 * new one replaces it: CLBlast has no way back to its own parameters within a process. */
void clg_clblast_clear(void);

/* The cache file for a device of this CL_DEVICE_NAME and CL_DRIVER_VERSION:
 * $XDG_CACHE_HOME/clgraph/clblast/<name>--<driver>.json (~/.cache without XDG_CACHE_HOME),
 * with characters other than [A-Za-z0-9._-] written '_'. NOT_FOUND without a home folder. */
clg_code clg_clblast_tuning_path(const char *cl_name, const char *driver_version, char *buf,
                                 size_t size);

/* CLBlast's name for a status code ("CLBlastNoHalfPrecision" for -2045), also in builds
 * without CLBlast; "CLBlastUnknownStatus" for codes it does not define. */
const char *clg_clblast_status_name(int status);

/* The clgraph code for a CLBlast status (OK, UNIMPLEMENTED, RESOURCE_EXHAUSTED, INTERNAL),
 * as clg_cl_matmul maps it. */
clg_code clg_clblast_status_code(int status);

#endif
