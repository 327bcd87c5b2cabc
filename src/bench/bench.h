/* The benchmarks' door: what `clgraph bench` (tools/bench_*.c) and `clgraph devices`
 * (tools/cmd_devices.c) use of the library beyond its public API, and nothing else.
 *
 * Why a door at all: a benchmark compares the library with a hand-written baseline on the
 * same device (the same OpenCL C kernel on a bare queue, CLBlast or CBLAS on plain buffers,
 * the library's own im2col and host GEMM, its allocator against malloc, MPI_Allreduce
 * against the AllReduce op), so it needs a device's OpenCL handles and a few kernels and
 * allocator calls that the public API rightly hides. Rather than include the headers of
 * core, device, memory, kernels, runtime and cluster, the tools include this one: the
 * functions it declares are either those modules' own (declared again here; src/bench/bench.c
 * includes both, so the compiler checks that they agree) or small wrappers where a tool
 * would otherwise read a module's structures (a device's fields, a block, a window, a
 * plan's statistics). When a module changes, this header and bench.c change, not the tools.
 * Not installed, not public API. */
#ifndef CLG_BENCH_H
#define CLG_BENCH_H

#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgraph.h"

typedef struct clg_device clg_device; /* one device of a clg_devices (opaque here) */
typedef struct clg_allocator clg_allocator;
typedef struct clg_suballoc clg_suballoc;
typedef struct clg_cluster clg_cluster;

/* --- core --------------------------------------------------------------------------------- */

uint64_t clg_now_ns(void); /* a monotonic clock */
double clg_half_to_double(uint16_t h);
uint16_t clg_half_from_double(double d);

/* --- devices ------------------------------------------------------------------------------ */

clg_device *clg_devices_at(clg_devices *devs, int i);
/* Waits for everything queued on dev. */
clg_code clg_device_finish(clg_device *dev);
/* "CL_OUT_OF_RESOURCES" for -5. */
const char *clg_cl_error_name(cl_int err);
/* The embedded OpenCL C of cl/<name>.cl, or NULL. */
const char *clg_cl_source(const char *name);
const clg_device_info *clg_bench_device_info(const clg_device *dev);
bool clg_bench_device_is_host(const clg_device *dev);
/* An OpenCL device's context, device id and (in-order, profiling) queue; NULL for the host. */
cl_context clg_bench_device_context(const clg_device *dev);
cl_device_id clg_bench_device_id(const clg_device *dev);
cl_command_queue clg_bench_device_queue(const clg_device *dev);

/* --- kernels: the library's own paths, as baselines --------------------------------------- */

/* The portable cache-blocked host GEMM alone; its ISA variant; "OpenBLAS" or "portable". */
void clg_host_matmul_portable(clg_dtype dtype, bool ta, bool tb, size_t m, size_t n, size_t k,
                              const void *a, const void *b, void *c);
const char *clg_host_matmul_portable_isa(void);
const char *clg_host_matmul_backend(void);
/* The host thread team: fn(ctx, t) for t < ntasks on up to clg_host_threads() threads. */
void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx);
int clg_host_threads(void);

/* A convolution's geometry (as the library's Conv2D computes it): input n,h,w,c, output
 * oh,ow, filter kh,kw, strides, dilations, padding before, output channels, taps kh*kw*c. */
typedef struct clg_bench_window {
  int64_t n, h, w, c;
  int64_t oh, ow;
  int64_t kh, kw;
  int64_t sh, sw;
  int64_t dh, dw;
  int64_t pt, pl;
  int64_t cout, kdim;
} clg_bench_window;
/* Rows of one scratch chunk of the library's im2col for patch rows of kdim elements of es
 * bytes (host: opencl false). */
size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows);
/* The im2col rows [row0, row0 + rows) of x into p: on the host, and on an OpenCL device
 * from buffer x (x_bytes) into buffer p (p_bytes). */
void clg_bench_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                           const clg_bench_window *g);
clg_code clg_bench_cl_im2col(clg_device *dev, clg_dtype dtype, cl_mem x, size_t x_bytes, cl_mem p,
                             size_t p_bytes, size_t row0, size_t rows, const clg_bench_window *g);

/* CLBlast as the library sets it up: the card's tuning applied (once per device), a
 * status's name, where the tuning file of a device is looked for. */
void clg_clblast_tune(const clg_device *dev);
const char *clg_clblast_status_name(int status);
clg_code clg_clblast_tuning_path(const char *cl_name, const char *driver_version, char *buf,
                                 size_t size);

/* --- memory: the device allocator and its sub-allocator ----------------------------------- */

clg_code clg_allocator_new(clg_device *dev, const clg_memory_options *opt, clg_allocator **out);
void clg_allocator_destroy(clg_allocator *a);
void clg_allocator_stats(clg_allocator *a, clg_memory_stats *out);
const char *clg_allocator_name(const clg_allocator *a);
uint64_t clg_allocator_alignment(const clg_allocator *a);
/* n blocks of an allocator (zeroed); block i allocated and freed (with no pending event). */
typedef struct clg_bench_blocks clg_bench_blocks;
clg_bench_blocks *clg_bench_blocks_new(size_t n);
void clg_bench_blocks_free(clg_bench_blocks *b);
clg_code clg_bench_blocks_alloc(clg_allocator *a, clg_bench_blocks *b, size_t i, size_t bytes);
void clg_bench_blocks_release(clg_allocator *a, clg_bench_blocks *b, size_t i);

clg_suballoc *clg_suballoc_new(uint64_t alignment);
void clg_suballoc_free_all(clg_suballoc *a);
clg_code clg_suballoc_add_region(clg_suballoc *a, uint32_t region, uint64_t size);
bool clg_suballoc_alloc(clg_suballoc *a, uint64_t size, uint32_t *region, uint64_t *offset,
                        uint64_t *block_size);
bool clg_suballoc_release(clg_suballoc *a, uint32_t region, uint64_t offset);

/* --- runtime and cluster ------------------------------------------------------------------ */

/* Bytes the session's last run moved from the host to devices and back. */
clg_code clg_bench_session_transfers(clg_session *s, uint64_t *host_to_device,
                                     uint64_t *device_to_host);
/* The cluster the session's process joined, or NULL; what the session's AllReduce does, as
 * a sum of float32 in place on the host, and as the plain MPI_Allreduce it is measured
 * against; a barrier of every task. */
clg_cluster *clg_session_cluster(const clg_session *s);
clg_code clg_bench_cluster_allreduce_sum(clg_cluster *c, float *buf, size_t count,
                                         const char *what);
clg_code clg_cluster_reference_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype);
clg_code clg_cluster_barrier(clg_cluster *c);

#endif
