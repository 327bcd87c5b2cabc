/* The benchmarks' door (bench.h): the wrappers. Including the modules' headers beside
 * bench.h makes the compiler check every declaration bench.h repeats against its module's. */
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "bench/bench.h"
#include "cluster/cluster.h"
#include "core/core.h"
#include "device/device.h"
#include "memory/memory.h"
#include "runtime/runtime.h"

const clg_device_info *clg_bench_device_info(const clg_device *dev) { return &dev->info; }

bool clg_bench_device_is_host(const clg_device *dev) { return dev->is_host; }

cl_context clg_bench_device_context(const clg_device *dev)
{
  return dev->is_host ? NULL : dev->context;
}

cl_device_id clg_bench_device_id(const clg_device *dev)
{
  return dev->is_host ? NULL : dev->cl_device;
}

cl_command_queue clg_bench_device_queue(const clg_device *dev)
{
  return dev->is_host ? NULL : dev->queue;
}

static clg_window window_of(const clg_bench_window *g)
{
  return (clg_window){.n = g->n,
                      .h = g->h,
                      .w = g->w,
                      .c = g->c,
                      .oh = g->oh,
                      .ow = g->ow,
                      .kh = g->kh,
                      .kw = g->kw,
                      .sh = g->sh,
                      .sw = g->sw,
                      .dh = g->dh,
                      .dw = g->dw,
                      .pt = g->pt,
                      .pl = g->pl,
                      .cout = g->cout,
                      .kdim = g->kdim};
}

void clg_bench_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                           const clg_bench_window *g)
{
  clg_window w = window_of(g);
  clg_host_im2col(dtype, x, p, row0, rows, &w);
}

clg_code clg_bench_cl_im2col(clg_device *dev, clg_dtype dtype, cl_mem x, size_t x_bytes, cl_mem p,
                             size_t p_bytes, size_t row0, size_t rows, const clg_bench_window *g)
{
  clg_window w = window_of(g);
  clg_block bx = {.mem = x, .size = x_bytes}, bp = {.mem = p, .size = p_bytes};
  return clg_cl_im2col(dev, dtype, &bx, &bp, row0, rows, &w);
}

struct clg_bench_blocks {
  size_t n;
  clg_block b[];
};

clg_bench_blocks *clg_bench_blocks_new(size_t n)
{
  clg_bench_blocks *b = calloc(1, sizeof *b + n * sizeof b->b[0]);
  if (b)
    b->n = n;
  return b;
}

void clg_bench_blocks_free(clg_bench_blocks *b) { free(b); }

clg_code clg_bench_blocks_alloc(clg_allocator *a, clg_bench_blocks *b, size_t i, size_t bytes)
{
  return clg_allocator_alloc(a, bytes, &b->b[i]);
}

void clg_bench_blocks_release(clg_allocator *a, clg_bench_blocks *b, size_t i)
{
  clg_allocator_free(a, &b->b[i], NULL);
}

clg_code clg_bench_session_transfers(clg_session *s, uint64_t *host_to_device,
                                     uint64_t *device_to_host)
{
  clg_plan_stats ps;
  clg_code code = clg_session_plan_stats(s, &ps);
  if (code == CLG_OK) {
    *host_to_device = ps.host_to_device_bytes;
    *device_to_host = ps.device_to_host_bytes;
  }
  return code;
}

clg_code clg_bench_cluster_allreduce_sum(clg_cluster *c, float *buf, size_t count, const char *what)
{
  return clg_cluster_allreduce(c, buf, count, CLG_FLOAT32, CLG_REDUCE_SUM, what);
}
