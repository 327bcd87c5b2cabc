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

typedef enum clg_binop { CLG_BINOP_ADD, CLG_BINOP_SUB, CLG_BINOP_MUL } clg_binop;

/* Does a kernel exist for op type `op` ("MatMul", "Add", "Sub", "Mul", "AddN", "Identity",
 * "Const", "Placeholder") with dtype on this device? For OpenCL devices this reflects the
 * build (CLBlast present for MatMul) and the device (fp64 for double). */
bool clg_kernels_supported(const char *op, clg_dtype dtype, const clg_device *dev);

/* --- host ------------------------------------------------------------------------------ */

/* c[m,n] = op(a) x op(b) where op(a) is [m,k] (a stored [k,m] when ta) and op(b) is
 * [k,n] (b stored [n,k] when tb). CBLAS when built with it, else the portable kernel. */
void clg_host_matmul(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                     const void *a, const void *b, void *c);
/* The portable cache-blocked kernel alone (tests compare both paths). */
void clg_host_matmul_portable(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                              const void *a, const void *b, void *c);
/* "OpenBLAS" or "portable". */
const char *clg_host_matmul_backend(void);

/* out[i] = a[i % na] op b[i % nb] for i < count, where na and nb are count or 1. */
void clg_host_binary(clg_binop op, clg_dtype dtype, const void *a, size_t na, const void *b,
                     size_t nb, void *out, size_t count);
/* out = sum of n inputs of count elements. */
void clg_host_addn(clg_dtype dtype, const void *const *inputs, int n, void *out, size_t count);

/* --- OpenCL ---------------------------------------------------------------------------- */

/* Builds (once per context, cached; thread-safe) the embedded cl/ programs for the
 * device. Errors name the device and include the build log. */
clg_code clg_cl_prepare(clg_device *dev);
/* Compiles the MatMul routines for dtype on the device (CLBlast's first-call cost). */
clg_code clg_cl_warm_matmul(clg_device *dev, clg_dtype dtype);

clg_code clg_cl_binary(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                       size_t na, const clg_block *b, size_t nb, const clg_block *out,
                       size_t count);
clg_code clg_cl_addn(clg_device *dev, clg_dtype dtype, const clg_block *inputs, int n,
                     const clg_block *out, size_t count);
/* CLBlast GEMM on the blocks, transposes passed through; scratch from alloc. On a CLBlast
 * failure that a host fallback can serve (no fp64/fp16, compiler error) returns
 * UNIMPLEMENTED with the reason, so the caller falls back. */
clg_code clg_cl_matmul(clg_device *dev, clg_allocator *alloc, clg_dtype dtype, bool ta, bool tb,
                       size_t m, size_t n, size_t k, const clg_block *a, const clg_block *b,
                       const clg_block *c);

/* Releases the programs cached for all contexts (at process-wide teardown). */
void clg_cl_release_all(void);

#endif
