/* The kernels module's door: the computations of each op, per device kind.
 *
 * Host kernels work on plain pointers. OpenCL kernels enqueue on the device's in-order
 * queue (dev->queue) and return without waiting; the caller orders work across queues
 * (a barrier with a wait list before, a marker after), so these functions take no event
 * lists. All tensors are dense row-major; counts are element counts.
 */
#ifndef CLG_KERNELS_H
#define CLG_KERNELS_H

#include "core/core.h"
#include "device/device.h"
#include "memory/memory.h"

typedef enum clg_binop {
  CLG_BINOP_ADD,
  CLG_BINOP_SUB,
  CLG_BINOP_MUL,
  CLG_BINOP_DIV,          /* RealDiv */
  CLG_BINOP_MAX,          /* Maximum: x < y ? y : x (a NaN in x wins, as Eigen's max) */
  CLG_BINOP_EQUAL,        /* Equal: a bool output */
  CLG_BINOP_GREATER_EQUAL /* GreaterEqual: x >= y, a bool output (false with a NaN) */
} clg_binop;

/* An output of `rank` dims (merged where the inputs allow) and, per dim, the strides in
 * elements of up to two inputs (0 where an input is broadcast): numpy broadcasting, and
 * Transpose (input a's strides permuted). rank >= 1 (a scalar is [1]). */
typedef struct clg_strided {
  int rank;
  size_t dims[CLG_MAX_RANK];
  size_t sa[CLG_MAX_RANK];
  size_t sb[CLG_MAX_RANK];
} clg_strided;

/* The map of out = a op b with numpy broadcasting (shapes already checked compatible). */
void clg_strided_broadcast(clg_strided *m, int ra, const int64_t *da, int rb, const int64_t *db,
                           int ro, const int64_t *dout);
/* Input a's offset of element i. */
size_t clg_strided_offset(const clg_strided *m, size_t i);
/* The map as OpenCL kernels take it (struct clg_map in cl/broadcast.cl and cl/reduce.cl). */
typedef struct clg_cl_map {
  cl_ulong rank;
  cl_ulong dims[8];
  cl_ulong sa[8];
  cl_ulong sb[8];
} clg_cl_map;
void clg_strided_to_cl(const clg_strided *m, clg_cl_map *c);
/* Merges adjacent dims whose strides continue each other in every input. */
void clg_strided_merge(clg_strided *m);
/* out[i] = a[ia(i)] op b[ib(i)] over the map (count elements). out may alias a or b when
 * that input is not broadcast. float, double; EQUAL and GREATER_EQUAL take float, double,
 * int32, int64 and write bytes 0/1. */
void clg_host_broadcast(clg_binop op, clg_dtype dtype, const void *a, const void *b, void *out,
                        const clg_strided *m);
/* out[i] = a[ia(i)] for elements of es bytes (1, 2, 4, 8): Transpose. */
void clg_host_gather(size_t es, const void *a, void *out, const clg_strided *m);
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

/* --- host ------------------------------------------------------------------------------ */

/* c[m,n] = op(a) x op(b) where op(a) is [m,k] (a stored [k,m] when ta) and op(b) is
 * [k,n] (b stored [n,k] when tb). CBLAS when built with it, else the portable kernel. */
void clg_host_matmul(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k, const void *a,
                     const void *b, void *c);
/* The same for half-precision operands (IEEE binary16 bit patterns): converted to float,
 * multiplied by clg_host_matmul (accumulating in float), rounded back to half (nearest,
 * ties to even). RESOURCE_EXHAUSTED (c untouched) when the
 * float copies cannot be allocated. */
clg_code clg_host_matmul_half(bool ta, bool tb, size_t m, size_t n, size_t k, const uint16_t *a,
                              const uint16_t *b, uint16_t *c);
/* The portable cache-blocked kernel alone (tests compare both paths). */
void clg_host_matmul_portable(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                              const void *a, const void *b, void *c);
/* "OpenBLAS" or "portable". */
const char *clg_host_matmul_backend(void);
/* The portable kernel's instruction-set variant on this CPU: "avx512", "avx2" or "base"
 * (x86-64 builds with GCC or clang pick at run time; CLGRAPH_HOST_GEMM_ISA=base|avx2|avx512
 * can lower the choice, e.g. to test every variant on one machine). */
const char *clg_host_matmul_portable_isa(void);

/* Float GEMM on AVX-512 (host_sgemm512.c), single-threaded: c [m,n] with row stride ldc =
 * op(a) x op(b), or += when accumulate; lda/ldb are the stored rows' strides. work: NULL
 * (packing buffers malloc'd per call) or clg_host_sgemm512_work() floats of the caller's.
 * false (c untouched) when the build lacks it or the buffers cannot be allocated. Use only
 * where clg_host_sgemm512_usable(). */
bool clg_host_sgemm512(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work);
size_t clg_host_sgemm512_work(void);
/* Whether clg_host_sgemm512 runs here (the portable ISA choice is avx512) and is faster than
 * the CBLAS of this build (which lacks AVX-512 kernels on this CPU, or is absent). */
bool clg_host_sgemm512_usable(void);

/* Runs fn(ctx, t) for every t < ntasks on up to clg_host_threads() threads (the caller is
 * one of them) and returns when all are done. Tasks must write disjoint outputs; which thread
 * runs a task is unspecified, so results must depend on t only. A call from inside a task
 * runs its tasks serially in that thread (no nesting of thread teams). */
void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx);
/* Threads a parallel call uses: the cores online (CLGRAPH_HOST_THREADS=N lowers it, 1..). */
int clg_host_threads(void);
/* fn over [0, count) cut into contiguous ranges, one per thread, each of at least grain
 * items (fewer threads, or one call in the caller, when count is small). */
void clg_host_parallel_for(size_t count, size_t grain,
                           void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

/* out[i] = a[i % na] op b[i % nb] for i < count, where na and nb are count or 1. */
void clg_host_binary(clg_binop op, clg_dtype dtype, const void *a, size_t na, const void *b,
                     size_t nb, void *out, size_t count);
/* out = sum of n inputs of count elements, added in input order. */
void clg_host_addn(clg_dtype dtype, const void *const *inputs, int n, void *out, size_t count);

/* --- OpenCL ---------------------------------------------------------------------------- */

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

/* --- NHWC convolution, pooling, LRN (host_nn.c, cl_nn.c, cl/nn.cl) ----------------------- */

/* The geometry of a window op over an NHWC input; the layout matches clg_window in
 * cl/nn.cl. Output (oh, ow) reads input rows oh*sh - pt + a*dh (a < kh), and so on. */
typedef struct clg_window {
  int64_t n, h, w, c; /* input */
  int64_t oh, ow;     /* output */
  int64_t kh, kw;     /* window or filter */
  int64_t sh, sw;     /* strides */
  int64_t dh, dw;     /* dilations */
  int64_t pt, pl;     /* padding before */
  int64_t cout, kdim; /* Conv2D: output channels, kh*kw*c */
} clg_window;

/* The taps [*lo, *hi) of a window of k taps from start that lie inside [0, n), found before
 * any index arithmetic (as clip_window in cl/nn.cl): a window far larger than the input is
 * never walked, and no sum overflows (for start < n, n - start is exact as a uint64_t). */
static inline void clg_window_clip(int64_t start, int64_t k, int64_t n, int64_t *lo, int64_t *hi)
{
  *lo = start < 0 ? 0 : start;
  *hi = start >= n ? *lo : (uint64_t)k >= (uint64_t)n - (uint64_t)start ? n : start + k;
  if (*hi < *lo)
    *hi = *lo;
}

/* MaxPool (avg false) or AvgPool over x [n,h,w,c] into y [n,oh,ow,c]. */
void clg_host_pool(clg_dtype dtype, bool avg, const void *x, void *y, const clg_window *g);
clg_code clg_cl_pool(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                     const clg_block *y, const clg_window *g);
/* LRN along the last axis (c channels) of count elements. */
void clg_host_lrn(clg_dtype dtype, const void *x, void *y, size_t count, int64_t c, int64_t radius,
                  double bias, double alpha, double beta);
clg_code clg_cl_lrn(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *y,
                    size_t count, int64_t c, int64_t radius, double bias, double alpha,
                    double beta);
/* Conv2D (cross-correlation) of x [n,h,w,c] with the filter [kh,kw,c,cout] into y
 * [n,oh,ow,cout]: im2col of a chunk of output rows into scratch, then one GEMM per chunk
 * (CBLAS or the portable GEMM on the host, CLBlast on OpenCL devices). A 1x1 filter with
 * stride 1 and no padding is one GEMM on the input itself. Scratch: the plan's block
 * `scratch` when it holds what *_conv2d_scratch asked for, else from alloc (the host's may
 * be NULL: malloc). OpenCL: errors as clg_cl_matmul's (UNIMPLEMENTED with *why where the host
 * could serve). */
clg_code clg_host_conv2d(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                         const void *x, const void *f, void *y, const clg_window *g);
clg_code clg_cl_conv2d(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                       clg_dtype dtype, const clg_block *x, const clg_block *f, const clg_block *y,
                       const clg_window *g, const char **why);
/* The scratch those want for g, for the run's plan (the patches of one chunk; on OpenCL also
 * CLBlast's GEMM scratch for it). */
size_t clg_host_conv2d_scratch(clg_dtype dtype, const clg_window *g);
clg_code clg_cl_conv2d_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g,
                               size_t *bytes);
/* The im2col rows [row0, row0 + rows) of x into p (host), for benchmarks and tests. */
void clg_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                     const clg_window *g);
clg_code clg_cl_im2col(clg_device *dev, clg_dtype dtype, const clg_block *x, const clg_block *p,
                       size_t row0, size_t rows, const clg_window *g);
/* Whether the input itself is the patch matrix (1x1, stride 1, no padding). */
bool clg_conv_is_direct(const clg_window *g);
/* Rows of one scratch chunk for a patch row of kdim elements of es bytes. */
size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows);

/* Gradients. Conv2DBackpropInput: dx = col2im(dy x f^T) over chunks of patch rows;
 * Conv2DBackpropFilter: df = sum over chunks of patches^T x dy. Scratch as clg_*_conv2d's
 * (the plan's block when large enough, else alloc; host: malloc when alloc is NULL); sizes
 * from *_conv2d_grad_scratch (filter: true for the filter's gradient). OpenCL errors as
 * clg_cl_conv2d's. in is the filter for the input's gradient, x for the filter's. */
void clg_host_col2im(clg_dtype dtype, const void *p, void *x, size_t row0, size_t rows,
                     const clg_window *g);
size_t clg_host_conv2d_grad_scratch(clg_dtype dtype, const clg_window *g, bool filter);
clg_code clg_host_conv2d_backprop_input(clg_allocator *alloc, const clg_block *scratch,
                                        clg_dtype dtype, const void *f, const void *dy, void *dx,
                                        const clg_window *g);
clg_code clg_host_conv2d_backprop_filter(clg_allocator *alloc, const clg_block *scratch,
                                         clg_dtype dtype, const void *x, const void *dy, void *df,
                                         const clg_window *g);
clg_code clg_cl_col2im(clg_device *dev, clg_dtype dtype, const clg_block *p, const clg_block *x,
                       size_t row0, size_t rows, const clg_window *g);
clg_code clg_cl_conv2d_grad_scratch(clg_device *dev, clg_dtype dtype, const clg_window *g,
                                    bool filter, size_t *bytes);
clg_code clg_cl_conv2d_backprop(clg_device *dev, clg_allocator *alloc, const clg_block *scratch,
                                clg_dtype dtype, bool filter, const clg_block *in,
                                const clg_block *dy, const clg_block *out, const clg_window *g,
                                const char **why);
/* MaxPoolGrad (avg false: dy to each window's first maximum in scan order, overlapping
 * windows adding) or AvgPoolGrad (dy / the window's unpadded count; x unused, may be NULL)
 * into dx [n,h,w,c]. */
void clg_host_pool_grad(clg_dtype dtype, bool avg, const void *x, const void *dy, void *dx,
                        const clg_window *g);
clg_code clg_cl_pool_grad(clg_device *dev, clg_dtype dtype, bool avg, const clg_block *x,
                          const clg_block *dy, const clg_block *dx, const clg_window *g);
/* LRNGrad along the last axis (c channels) of count elements. */
void clg_host_lrn_grad(clg_dtype dtype, const void *dy, const void *x, const void *y, void *dx,
                       size_t count, int64_t c, int64_t radius, double bias, double alpha,
                       double beta);
clg_code clg_cl_lrn_grad(clg_device *dev, clg_dtype dtype, const clg_block *dy, const clg_block *x,
                         const clg_block *y, const clg_block *dx, size_t count, int64_t c,
                         int64_t radius, double bias, double alpha, double beta);

/* --- OpenCL programs that ops carry (cl_program.c) ---------------------------------------- */

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
/* Drops the cached op programs (part of clg_cl_release_all). */
void clg_cl_programs_release(void);

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
