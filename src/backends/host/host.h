/* The host backend's door (src/backends/host/): kernels on plain host pointers, CPU:0.
 *
 * Host kernels run in the calling thread (and the host thread team of parallel.c); all
 * tensors are dense row-major, counts are element counts. */
#ifndef CLG_BACKEND_HOST_H
#define CLG_BACKEND_HOST_H

#include "backends/backend.h"

/* --- the device table (device.c) ------------------------------------------------------ */

/* CPU:0's table (clg_device_ops_of picks it); its functions serve the remote table too. */
extern const clg_device_ops clg_host_device_ops;

/* memcpy between host memory and a block whose memory is the host's. */
clg_code clg_host_upload(clg_device *dev, const clg_block *dst, const void *src, size_t bytes);
clg_code clg_host_download(clg_device *dev, const clg_block *src, void *dst, size_t bytes);
/* The same from a peer whose blocks are host memory; UNIMPLEMENTED from any other. */
clg_code clg_host_copy_from_peer(clg_device *dst, const clg_block *d, clg_device *src,
                                 const clg_block *s, size_t bytes, int nwait,
                                 clg_event *const *wait, clg_event **done);
/* Synchronous work: no event (NULL), nothing to wait for, the host's own clock. */
clg_code clg_host_marker(clg_device *dev, clg_event **event);
/* The table's chain (the remote table's too): waits on the host for each event. */
clg_code clg_host_chain(clg_device *dev, int n, clg_event *const *events);
clg_code clg_host_finish(clg_device *dev);
clg_code clg_host_clock_offset(clg_device *dev, int64_t *offset, uint64_t *error_ns);

/* --- events (events.c) ---------------------------------------------------------------- */

/* The table that tags host events. */
extern const clg_event_ops clg_host_event_ops;
/* A host event, not yet completed, for work a host thread does beside the caller's: any
 * device's chain and clg_event_wait wait for it until clg_host_event_signal. */
clg_code clg_host_event_new(clg_event **event);
/* Completes a host event of clg_host_event_new, once: with CLG_OK, or with a failure that its
 * waiters return (why, copied, their message). INVALID_ARGUMENT for another kind's event,
 * FAILED_PRECONDITION for a second signal. */
clg_code clg_host_event_signal(clg_event *event, clg_code code, const char *why);

/* --- kernels ------------------------------------------------------------------------- */

/* out[i] = a[ia(i)] op b[ib(i)] over the map (count elements). out may alias a or b when
 * that input is not broadcast. float, double; the comparisons (EQUAL, GREATER_EQUAL, LESS,
 * GREATER, LESS_EQUAL, NOT_EQUAL) take float, double, int32, int64 and write bytes 0/1; AND,
 * OR, EQUAL and NOT_EQUAL take bool. */
void clg_host_broadcast(clg_binop op, clg_dtype dtype, const void *a, const void *b, void *out,
                        const clg_strided *m);

/* out[i] = a[ia(i)] for elements of es bytes (1, 2, 4, 8): Transpose. */
void clg_host_gather(size_t es, const void *a, void *out, const clg_strided *m);

/* c[m,n] = op(a) x op(b) where op(a) is [m,k] (a stored [k,m] when ta) and op(b) is
 * [k,n] (b stored [n,k] when tb). Float on the AVX-512 or AVX2 kernel split across the host
 * team where that is the faster one (basic.c says where), else CBLAS when built with it, else
 * the portable kernel. */
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
/* Whether that choice is avx2 or wider: the CPU runs AVX2 and FMA, within the limit (the
 * element-wise and pooling loops' AVX2 variants). */
bool clg_host_avx2(void);

/* Float GEMM on AVX-512 (host_sgemm512.c), single-threaded: c [m,n] with row stride ldc =
 * op(a) x op(b), or += when accumulate; lda/ldb are the stored rows' strides. work: NULL
 * (packing buffers malloc'd per call) or clg_host_sgemm512_work() floats of the caller's.
 * false (c untouched) when the build lacks it or the buffers cannot be allocated. Use only
 * where clg_host_sgemm512_usable(). */
bool clg_host_sgemm512(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work);

size_t clg_host_sgemm512_work(void);

/* The same, not transposed and not accumulating, with epilogue e applied to each tile of c as
 * its last slice of k is stored (in L1, not a pass of its own): c holds the output's rows
 * [row0, row0 + m), its columns [0, n) are e's (e NULL: clg_host_sgemm512). */
bool clg_host_sgemm512_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0);

/* Whether clg_host_sgemm512 runs here (the portable ISA choice is avx512) and serves every
 * float GEMM: on Intel, and on AMD where the CBLAS of this build lacks AVX-512 kernels for this
 * CPU (or is absent). */
bool clg_host_sgemm512_usable(void);

/* Whether it is the faster one for a product of these sides on this CPU, usable or not: a
 * thin one (a side of 128 or less) on any CPU with AVX-512. */
bool clg_host_sgemm512_thin(size_t m, size_t n, size_t k);

/* The same on AVX2 and FMA (sgemm256.c) with its own packs (clg_host_sgemm256_work() floats
 * of the caller's, or NULL: malloc'd per call); false when the build lacks it or the packs
 * cannot be allocated. Use only where clg_host_sgemm256_usable(). */
bool clg_host_sgemm256(bool ta, bool tb, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate,
                       float *work);

size_t clg_host_sgemm256_work(void);

/* clg_host_sgemm512_epi's counterpart on AVX2. */
bool clg_host_sgemm256_epi(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, float *work, const clg_epilogue *e,
                           size_t row0);

/* Whether the portable ISA choice is avx2 (this CPU, or CLGRAPH_HOST_GEMM_ISA=avx2): where a
 * convolution's GEMMs run on clg_host_sgemm256 in the host team rather than on CBLAS. */
bool clg_host_sgemm256_usable(void);

/* Forward float Conv2D as an implicit GEMM (conv_direct.c): the input read in place through
 * per-tap pointers, no im2col, on the AVX-512 or AVX2 ISA choice. usable: this ISA and window
 * (not a 1x1 stride-1 unpadded one; CLGRAPH_CONV_DIRECT=0 turns it off). scratch: bytes of
 * the scratch clg_host_conv_direct takes (any alignment; 0: it may be NULL); e applied to y's
 * rows (NULL: none). */
bool clg_host_conv_direct_usable(const clg_window *g);
size_t clg_host_conv_direct_scratch(const clg_window *g);
void clg_host_conv_direct(const float *x, const float *f, float *y, const clg_window *g,
                          const clg_epilogue *e, void *scratch);

/* The implicit GEMM's tile kernels (conv_direct.c), by row count MR = 1..6 (index MR - 1):
 * y[0..MR) x [0..nr) = (or += with acc) the sum over tn taps x cn channels of the rows'
 * inputs (ind[t * 6 + r], cn floats each) times the packed strip bp (nrw floats per K value,
 * aligned to 64 bytes). clg_host_conv_tiles gives them and nrw (64 on AVX-512, 16 on AVX2)
 * for this CPU's ISA choice, or NULL where neither runs. */
typedef void (*clg_host_tile_fn)(const float *const *ind, size_t tn, size_t cn, const float *bp,
                                 float *y, size_t ldy, size_t nr, bool acc);
const clg_host_tile_fn *clg_host_conv_tiles(size_t *nrw);

/* Forward float Conv2D of a 3x3 stride-1 window as Winograd's F(2x2, 3x3) (conv_winograd.c):
 * the filter and each 4x4 input tile transformed, 16 products of tiles x channels by the
 * transformed filter on the tile kernels, each 2x2 output tile transformed back (and e
 * applied to it, NULL: none). usable: the tile kernels run here, the window is 3x3, stride 1,
 * dilation 1, with 16 channels or more in and out and at least 150 output tiles in all (fewer
 * do not repay the filter's transform; CLGRAPH_CONV_WINOGRAD_TILES=N lowers it,
 * CLGRAPH_CONV_WINOGRAD=0 turns it off). scratch: bytes clg_host_conv_winograd takes (any
 * alignment). */
bool clg_host_conv_winograd_usable(const clg_window *g);
size_t clg_host_conv_winograd_scratch(const clg_window *g);
void clg_host_conv_winograd(const float *x, const float *f, float *y, const clg_window *g,
                            const clg_epilogue *e, void *scratch);

/* Forward float Conv2D from few input channels (conv_stem.c: c <= 15, K <= 512, as a
 * network's first layer on RGB): tiles of one output row read each filter row's kw * c inputs
 * in place, all output channels in registers, the epilogue e applied there (NULL: none); on
 * the AVX-512 or AVX2 ISA choice. usable: this ISA and window (not a 1x1 stride-1 unpadded one;
 * CLGRAPH_CONV_STEM=0 turns it off). scratch: bytes clg_host_conv_stem takes (any alignment;
 * 0: it may be NULL). */
bool clg_host_conv_stem_usable(const clg_window *g);
size_t clg_host_conv_stem_scratch(const clg_window *g);
void clg_host_conv_stem(const float *x, const float *f, float *y, const clg_window *g,
                        const clg_epilogue *e, void *scratch);

/* c[n] = a[k] x op(b) in float (b is k x n, or n x k with tb), across the host team: a
 * product of one row (clg_host_matmul sends m = 1 here). */
void clg_host_gemv(bool tb, size_t n, size_t k, const float *a, const float *b, float *c);

/* Epilogue e (backend.h) on rows [row0, row0 + rows) of y, a [.., e->cols] float32 output
 * (epilogue.c): row by row, each row's ops while it is in cache. */
void clg_host_epilogue_rows(const clg_epilogue *e, float *y, size_t row0, size_t rows);

/* The same with the rows spread over the host team; nothing when e is NULL. */
void clg_host_epilogue(const clg_epilogue *e, float *y, size_t row0, size_t rows);

/* e on a tile of y that a GEMM kernel just stored (in L1): mr rows and nr columns from c (row
 * stride ldc), which are y's rows from row and columns from col (the residual's and the bias's
 * indices). The same arithmetic as clg_host_epilogue_rows: bit-identical results. On AVX-512
 * or AVX2 (x86-64 with GCC or clang; only where the CPU runs them). */
void clg_host_epilogue_tile512(const clg_epilogue *e, float *c, size_t ldc, size_t row, size_t col,
                               size_t mr, size_t nr);
void clg_host_epilogue_tile256(const clg_epilogue *e, float *c, size_t ldc, size_t row, size_t col,
                               size_t mr, size_t nr);

/* Runs fn(ctx, t) for every t < ntasks on up to clg_host_threads() threads (the caller is
 * one of them) and returns when all are done. Tasks must write disjoint outputs; which thread
 * runs a task is unspecified, so results must depend on t only. A call from inside a task
 * runs its tasks serially in that thread (no nesting of thread teams). */
void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx);

/* Inside a task of clg_host_parallel: the index of the team member running it, distinct per
 * member and below clg_host_threads() (0 in a serial call and outside tasks), so that tasks
 * may outnumber threads with scratch per member. */
int clg_host_parallel_member(void);

/* Threads a parallel call uses: the cores online (CLGRAPH_HOST_THREADS=N lowers it, 1..). */
int clg_host_threads(void);

/* Once per process (the first host kernel does it): OpenBLAS on one thread, its calls split
 * across the host team (CLGRAPH_OPENBLAS_THREADS=keep: left alone). stop_threads also ends
 * the threads OpenBLAS started at load, which spin for 0.1 s first; only for a program that
 * runs no BLAS call of its own on another thread meanwhile (the clgraph tool). */
void clg_host_blas_setup(void);
void clg_host_blas_stop_threads(void);

/* fn over [0, count) cut into contiguous ranges, up to four per thread, each of at least grain
 * items (fewer, or one call in the caller, when count is small). */
void clg_host_parallel_for(size_t count, size_t grain,
                           void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

/* out[i] = a[i % na] op b[i % nb] for i < count, where na and nb are count or 1. */
void clg_host_binary(clg_binop op, clg_dtype dtype, const void *a, size_t na, const void *b,
                     size_t nb, void *out, size_t count);

/* out = sum of n inputs of count elements, added in input order. */
void clg_host_addn(clg_dtype dtype, const void *const *inputs, int n, void *out, size_t count);

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

/* LRN along the last axis (c channels) of count elements. */
void clg_host_lrn(clg_dtype dtype, const void *x, void *y, size_t count, int64_t c, int64_t radius,
                  double bias, double alpha, double beta);

/* Conv2D (cross-correlation) of x [n,h,w,c] with the filter [kh,kw,c,cout] into y
 * [n,oh,ow,cout]: im2col of a chunk of output rows into scratch, then one GEMM per chunk
 * (CBLAS or the portable GEMM on the host, CLBlast on OpenCL devices). A 1x1 filter with
 * stride 1 and no padding is one GEMM on the input itself. Scratch: the plan's block
 * `scratch` when it holds what *_conv2d_scratch asked for, else from alloc (the host's may
 * be NULL: malloc). OpenCL: errors as clg_cl_matmul's (UNIMPLEMENTED with *why where the host
 * could serve). */
clg_code clg_host_conv2d(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                         const void *x, const void *f, void *y, const clg_window *g);

/* The same with an epilogue applied to each chunk of output rows as its GEMM finishes it
 * (float32; e may be NULL: none). */
clg_code clg_host_conv2d_epi(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                             const void *x, const void *f, void *y, const clg_window *g,
                             const clg_epilogue *e);

/* The scratch those want for g, for the run's plan (the patches of one chunk; on OpenCL also
 * CLBlast's GEMM scratch for it). */
size_t clg_host_conv2d_scratch(clg_dtype dtype, const clg_window *g);

/* The im2col rows [row0, row0 + rows) of x into p (host), for benchmarks and tests. */
void clg_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                     const clg_window *g);

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

/* MaxPoolGrad (avg false: dy to each window's first maximum in scan order, overlapping
 * windows adding) or AvgPoolGrad (dy / the window's unpadded count; x unused, may be NULL)
 * into dx [n,h,w,c]. */
void clg_host_pool_grad(clg_dtype dtype, bool avg, const void *x, const void *dy, void *dx,
                        const clg_window *g);

/* LRNGrad along the last axis (c channels) of count elements. */
void clg_host_lrn_grad(clg_dtype dtype, const void *dy, const void *x, const void *y, void *dx,
                       size_t count, int64_t c, int64_t radius, double bias, double alpha,
                       double beta);

/* Host paths of a node, for the host's kernels and for the OpenCL kernels' fallback on the
 * device's data where CLBlast cannot serve it: MatMul (half through float) of a and b into c;
 * Conv2DBackpropInput (in: the filter) or Conv2DBackpropFilter (in: x). Errors name the node. */
clg_code clg_host_matmul_node(const clg_node *n, const void *a, const void *b, void *c);

clg_code clg_host_conv2d_grad_node(const clg_node *n, clg_allocator *alloc,
                                   const clg_block *scratch, const void *in, const void *dy,
                                   void *out, const clg_window *g);

/* BatchMatMulV2 of x and y into out on the host (each batch through clg_host_matmul); the
 * OpenCL kernel's fallback too. Errors name the node. */
clg_code clg_host_batch_matmul_node(const clg_node *n, const void *x, const void *y, void *out);

#endif
