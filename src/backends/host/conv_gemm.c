/* Host NHWC Conv2D as im2col + GEMM over chunks of output rows (the chunk's patches stay in
 * cache while the GEMM reads them), its AVX-512 and serial-piece paths, and its gradients
 * (col2im); pooling and LRN are in nn.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

#if defined(__GNUC__) || defined(__clang__)
#define PG_INLINE __attribute__((always_inline)) /* into each ISA variant */
#else
#define PG_INLINE
#endif

/* Scratch per chunk of patch rows: host chunks stay near the last-level cache; OpenCL
 * chunks are large, so a convolution is a few large GEMMs. */
#define HOST_CHUNK_BYTES ((size_t)4 << 20)
#define CL_CHUNK_BYTES ((size_t)64 << 20)

size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows)
{
  size_t budget = opencl ? CL_CHUNK_BYTES : HOST_CHUNK_BYTES;
  /* CLGRAPH_CONV_CHUNK_BYTES (tests): smaller chunks, so that small shapes take many. */
  const char *env = getenv("CLGRAPH_CONV_CHUNK_BYTES");
  if (env && atol(env) > 0)
    budget = (size_t)atol(env);
  size_t per = kdim * es, chunk = budget / (per > 0 ? per : 1);
  if (chunk < 1)
    chunk = 1;
  return chunk < rows ? chunk : rows;
}

void clg_host_im2col(clg_dtype dtype, const void *x, void *p, size_t row0, size_t rows,
                     const clg_window *g)
{
  size_t es = clg_dtype_size(dtype), cb = (size_t)g->c * es;
  const char *xs = x;
  char *dst = p;
  for (size_t r = row0; r < row0 + rows; r++) {
    int64_t ow = (int64_t)(r % (size_t)g->ow), t = (int64_t)(r / (size_t)g->ow);
    int64_t oh = t % g->oh, n = t / g->oh;
    int64_t iw0 = ow * g->sw - g->pl, iw_last = iw0 + (g->kw - 1) * g->dw;
    for (int64_t a = 0; a < g->kh; a++) {
      int64_t ih = oh * g->sh - g->pt + a * g->dh;
      if (g->dw == 1 && ih >= 0 && ih < g->h && iw0 >= 0 && iw_last < g->w) {
        /* The whole filter row is inside the input: one contiguous run of kw * c. */
        memcpy(dst, xs + (size_t)((n * g->h + ih) * g->w + iw0) * cb, (size_t)g->kw * cb);
        dst += (size_t)g->kw * cb;
        continue;
      }
      for (int64_t b = 0; b < g->kw; b++, dst += cb) {
        int64_t iw = ow * g->sw - g->pl + b * g->dw;
        if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
          memset(dst, 0, cb);
        else
          memcpy(dst, xs + (size_t)((n * g->h + ih) * g->w + iw) * cb, cb);
      }
    }
  }
}

/* Whether the input itself is the patch matrix (1x1, stride 1, no padding). */
bool clg_conv_is_direct(const clg_window *g)
{
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
         g->oh == g->h && g->ow == g->w;
}

/* The scratch of a host gradient kernel: the plan's block, else alloc's, else malloc. */
typedef struct host_scratch {
  void *p;
  clg_block blk;
  bool planned, from_alloc;
} host_scratch;

static clg_code scratch_get(clg_allocator *alloc, const clg_block *scratch, size_t bytes,
                            host_scratch *s, const char *what)
{
  memset(s, 0, sizeof *s);
  if (bytes == 0)
    return CLG_OK;
  if (scratch && scratch->host && scratch->size >= bytes) {
    s->p = scratch->host;
    s->planned = true;
  } else if (alloc) {
    if (clg_allocator_alloc(alloc, bytes, &s->blk) != CLG_OK)
      return clg_error_prefix("%s scratch: ", what);
    s->p = s->blk.host;
    s->from_alloc = true;
  } else if (!(s->p = malloc(bytes))) {
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for %s scratch (%zu bytes)", what,
                     bytes);
  }
  return CLG_OK;
}

static void scratch_put(clg_allocator *alloc, host_scratch *s)
{
  if (s->from_alloc)
    clg_allocator_free(alloc, &s->blk, NULL);
  else if (!s->planned)
    free(s->p);
}

/* --- the AVX-512 path: the rows split across cores ---------------------------------------- *
 * Where clg_host_sgemm512_usable(), float convolutions and their gradients give each of T =
 * clg_host_threads() tasks a contiguous share of the patch rows (whole images for the input's
 * gradient, whose col2im scatters within an image); each task runs its own chunks (im2col,
 * then the single-threaded AVX-512 GEMM) in its own part of the scratch. The filter's
 * gradient sums per-task partials in task order: the same result in every run. */
#define FAST_ALIGN 64

typedef struct fast_layout {
  int tasks;
  size_t chunk;                   /* patch rows per chunk */
  size_t piece;                   /* forward: rows per task (at most chunk) */
  int pieces;                     /* forward: tasks */
  size_t patch, work, part, each; /* bytes per task: patches, GEMM packs, partial df */
} fast_layout;

/* Where the kernel beats CBLAS at every shape (usable): every float convolution; also where
 * CBLAS has AVX-512 kernels, a forward pass whose GEMM is thin (the narrow tiles' shapes). On AVX2
 * every forward pass, 1x1 ones too (a GEMM on the input), on clg_host_sgemm256 in the team: CBLAS
 * would start its own threads per call. */
static bool conv_fast(clg_dtype dtype, const clg_window *g, bool forward)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), cout = (size_t)g->cout;
  if (dtype != CLG_FLOAT32 || g->cout <= 0 || g->kdim <= 0 || rows == 0)
    return false;
  bool direct = clg_conv_is_direct(g);
  if (!forward)
    return !direct && clg_host_sgemm512_usable();
  /* Few rows and many columns (a late layer at batch 1): split by rows, every task would read
   * and pack the whole filter; clg_host_matmul splits such GEMMs by columns (as its rule). */
  size_t t = (size_t)clg_host_threads();
  if (rows < 24 * t && cout >= 128 * t)
    return false;
  if (clg_host_sgemm256_usable())
    return true;
  /* 1x1 too where the kernel serves every GEMM (usable): its epilogue runs on each piece's rows
   * in cache rather than in a second pass over the output; where CBLAS has AVX-512 kernels a
   * 1x1 stays with clg_host_matmul (which takes the thin ones to the same kernel) */
  return clg_host_sgemm512_usable() ||
         (!direct && clg_host_sgemm512_thin(rows, cout, (size_t)g->kdim));
}

static size_t round_up(size_t v) { return (v + FAST_ALIGN - 1) / FAST_ALIGN * FAST_ALIGN; }

static fast_layout fast_plan(const clg_window *g, bool filter)
{
  fast_layout l;
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim;
  l.tasks = clg_host_threads();
  /* A few microseconds of work: not worth starting a thread (as clg_host_matmul's rule). */
  if ((double)rows * (double)g->cout * (double)k < (double)(1 << 21))
    l.tasks = 1;
  size_t share = (rows + (size_t)l.tasks - 1) / (size_t)l.tasks;
  l.chunk = clg_conv_chunk_rows(false, k, sizeof(float), share);
  /* The forward pass in pieces taken in turn, four per thread (a member's scratch is its
   * own): on a loaded machine a thread the scheduler stops leaves its pieces to the others.
   * At least 256 rows (each piece packs the filter again), a multiple of 24 (the tiles). */
  size_t want = (rows + 4 * (size_t)l.tasks - 1) / (4 * (size_t)l.tasks);
  want = want < 256 ? 256 : (want + 23) / 24 * 24;
  l.piece = l.tasks == 1 ? rows : want > l.chunk ? l.chunk : want; /* one: a slot for one */
  l.pieces = (int)((rows + l.piece - 1) / l.piece);
  /* a 1x1 forward pass reads its rows from the input itself */
  l.patch = clg_conv_is_direct(g) ? 0 : round_up(l.chunk * k * sizeof(float));
  /* the AVX2 kernel's packs where the ISA choice is avx2 (the forward pass only comes here) */
  size_t work = clg_host_sgemm256_usable() ? clg_host_sgemm256_work() : clg_host_sgemm512_work();
  l.work = round_up(work * sizeof(float));
  l.part = filter ? round_up(k * (size_t)g->cout * sizeof(float)) : 0;
  l.each = l.patch + l.work + l.part;
  return l;
}

static size_t fast_scratch(const clg_window *g, bool filter)
{
  fast_layout l = fast_plan(g, filter);
  /* + the filter transposed, after the tasks' parts (used by the input's gradient only) */
  size_t ft = filter ? 0 : round_up((size_t)g->kdim * (size_t)g->cout * sizeof(float));
  return (size_t)l.tasks * l.each + ft + FAST_ALIGN;
}

typedef struct fast_job {
  const clg_window *g;
  fast_layout l;
  char *base; /* aligned scratch */
  const float *x, *f, *dy;
  float *y;              /* forward: y; input gradient: dx; filter gradient: df */
  float *ft;             /* input gradient: f transposed, [cout][kdim] */
  const clg_epilogue *e; /* forward: applied to each chunk's rows (NULL: none) */
} fast_job;

/* Task t's rows [r0, r1): a fair share of rows, or of whole images (by_image). */
static void task_rows(const fast_job *j, int t, bool by_image, size_t *r0, size_t *r1)
{
  size_t per = (size_t)(j->g->oh * j->g->ow), T = (size_t)j->l.tasks;
  size_t units = by_image ? (size_t)j->g->n : (size_t)j->g->n * per, step = by_image ? per : 1;
  *r0 = units * (size_t)t / T * step;
  *r1 = units * (size_t)(t + 1) / T * step;
}

static void fast_forward_task(void *ctx, int t)
{
  fast_job *j = ctx;
  size_t rows = (size_t)(j->g->n * j->g->oh * j->g->ow), k = (size_t)j->g->kdim;
  size_t cout = (size_t)j->g->cout, r0 = (size_t)t * j->l.piece;
  size_t r1 = rows - r0 < j->l.piece ? rows : r0 + j->l.piece;
  /* one slot when the plan has one: a task nested in another team's keeps that member */
  size_t slot = j->l.tasks > 1 ? (size_t)clg_host_parallel_member() : 0;
  float *p = (float *)(j->base + slot * j->l.each), *w = p + j->l.patch / sizeof(float);
  for (size_t r = r0; r < r1; r += j->l.chunk) {
    size_t nr = r1 - r < j->l.chunk ? r1 - r : j->l.chunk;
    const float *a = j->x + r * k;
    if (j->l.patch) {
      clg_host_im2col(CLG_FLOAT32, j->x, p, r, nr, j->g);
      a = p;
    }
    /* The epilogue on each tile as the kernel stores it (in L1): no pass of its own over the
     * output (one per block of rows in L2 cost 40% of the GEMM's time on mobilenet_v2's 1x1
     * from 16 channels, its scalar loops 0.27 ns an element on an Intel Xeon). */
    if (clg_host_sgemm256_usable())
      clg_host_sgemm256_epi(nr, cout, k, a, k, j->f, cout, j->y + r * cout, cout, w, j->e, r);
    else
      clg_host_sgemm512_epi(nr, cout, k, a, k, j->f, cout, j->y + r * cout, cout, w, j->e, r);
  }
}

static void fast_input_task(void *ctx, int t)
{
  fast_job *j = ctx;
  const clg_window *g = j->g;
  size_t r0, r1, k = (size_t)g->kdim, cout = (size_t)g->cout;
  task_rows(j, t, true, &r0, &r1);
  size_t img = (size_t)(g->h * g->w * g->c), per = (size_t)(g->oh * g->ow);
  memset(j->y + r0 / per * img, 0, (r1 - r0) / per * img * sizeof(float));
  float *p = (float *)(j->base + (size_t)t * j->l.each), *w = p + j->l.patch / sizeof(float);
  for (size_t r = r0; r < r1; r += j->l.chunk) {
    size_t nr = r1 - r < j->l.chunk ? r1 - r : j->l.chunk;
    /* The chunk's patch gradients dy x f^T, then each added back where its patch came from. */
    clg_host_sgemm512(false, false, nr, k, cout, j->dy + r * cout, cout, j->ft, k, p, k, false, w);
    clg_host_col2im(CLG_FLOAT32, p, j->y, r, nr, g);
  }
}

static void fast_filter_task(void *ctx, int t)
{
  fast_job *j = ctx;
  size_t r0, r1, k = (size_t)j->g->kdim, cout = (size_t)j->g->cout;
  task_rows(j, t, false, &r0, &r1);
  float *p = (float *)(j->base + (size_t)t * j->l.each), *w = p + j->l.patch / sizeof(float);
  float *part = t == 0 ? j->y : w + j->l.work / sizeof(float);
  if (r0 == r1)
    memset(part, 0, k * cout * sizeof(float));
  for (size_t r = r0; r < r1; r += j->l.chunk) {
    size_t nr = r1 - r < j->l.chunk ? r1 - r : j->l.chunk;
    clg_host_im2col(CLG_FLOAT32, j->x, p, r, nr, j->g);
    /* part (+)= patches^T x dy over the chunk */
    clg_host_sgemm512(true, false, k, cout, nr, p, k, j->dy + r * cout, cout, part, cout, r > r0,
                      w);
  }
}

/* The filter gradient's partials after task 0's (which is df itself) added in task order,
 * element ranges split across the tasks. */
static void fast_filter_sum(void *ctx, int t)
{
  fast_job *j = ctx;
  size_t count = (size_t)j->g->kdim * (size_t)j->g->cout, T = (size_t)j->l.tasks;
  size_t e0 = count * (size_t)t / T, e1 = count * (size_t)(t + 1) / T;
  for (int s = 1; s < j->l.tasks; s++) {
    const float *part = (const float *)(j->base + (size_t)s * j->l.each + j->l.patch + j->l.work);
    for (size_t e = e0; e < e1; e++)
      j->y[e] += part[e];
  }
}

static clg_code fast_run(clg_allocator *alloc, const clg_block *scratch, fast_job *j, bool filter,
                         void (*task)(void *, int), const char *what)
{
  j->l = fast_plan(j->g, filter);
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, fast_scratch(j->g, filter), &s, what);
  if (code != CLG_OK)
    return code;
  j->base = (char *)(((uintptr_t)s.p + FAST_ALIGN - 1) & ~(uintptr_t)(FAST_ALIGN - 1));
  if (task == fast_input_task) {
    /* f^T once, so that each chunk's GEMM packs B with row copies (a transposed B is packed
     * element by element, again for every chunk). */
    size_t k = (size_t)j->g->kdim, cout = (size_t)j->g->cout;
    j->ft = (float *)(j->base + (size_t)j->l.tasks * j->l.each);
    for (size_t a = 0; a < k; a++)
      for (size_t o = 0; o < cout; o++)
        j->ft[o * k + a] = j->f[a * cout + o];
  }
  clg_host_parallel(task == fast_forward_task ? j->l.pieces : j->l.tasks, task, j);
  if (filter && j->l.tasks > 1)
    clg_host_parallel(j->l.tasks, fast_filter_sum, j);
  scratch_put(alloc, &s);
  return CLG_OK;
}

/* --- small convolutions through CBLAS in serial pieces ------------------------------------ *
 * OpenBLAS runs a GEMM of at most 65536 x GEMM_MULTITHREAD_THRESHOLD (4 by default)
 * multiply-adds in the calling thread and larger ones on its own threads, which spin and then
 * wait for the scheduler: on a loaded 2-core machine (OpenBLAS's Haswell kernels, as on an
 * AVX2 CPU) facemesh's 31 convolutions took 89 ms through it against 2.3 ms on one core. A
 * convolution whose GEMM is larger than that but whose rows are small goes to CBLAS in pieces
 * under that size instead, the pieces spread over the host team (each task its own patches),
 * so that no BLAS thread starts. */
#define BLAS_SERIAL_MACS ((size_t)262144)

typedef struct piece_job {
  clg_dtype dtype;
  const void *x, *f;
  void *y;
  const clg_window *g;
  char *p;            /* scratch: each task's patches (none when direct) */
  size_t piece, part; /* rows per GEMM; scratch bytes per task */
  int tasks;
  bool direct;
  const clg_epilogue *e; /* float32: applied to each piece's rows (NULL: none) */
} piece_job;

static size_t piece_rows(clg_dtype dtype, const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim;
  size_t piece = BLAS_SERIAL_MACS / ((size_t)g->cout * k);
  size_t chunk = clg_conv_chunk_rows(false, k, clg_dtype_size(dtype), rows);
  return piece < chunk ? piece : chunk;
}

/* The CBLAS of this build, a GEMM over OpenBLAS's serial size and at least 32 rows a piece
 * (fewer: the calls' overhead costs more than the threads save; 32 cost 16% over one serial
 * call of the same GEMM, 8 cost 70%, on Haswell kernels); not where sgemm512 serves the
 * float GEMM (conv_fast, or clg_host_matmul's thin products). */
static bool conv_pieces(clg_dtype dtype, const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  if (strcmp(clg_host_matmul_backend(), "OpenBLAS") != 0 || rows == 0 || k == 0 || cout == 0)
    return false;
  if (dtype == CLG_FLOAT32 && clg_host_sgemm512_thin(rows, cout, k))
    return false;
  return (dtype == CLG_FLOAT32 || dtype == CLG_FLOAT64) && cout * k * 32 <= BLAS_SERIAL_MACS &&
         (double)rows * (double)cout * (double)k > (double)BLAS_SERIAL_MACS;
}

static int piece_tasks(clg_dtype dtype, const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), piece = piece_rows(dtype, g);
  size_t pieces = (rows + piece - 1) / piece, t = (size_t)clg_host_threads();
  return (int)(t < pieces ? t : pieces);
}

static void piece_task(void *ctx, int t)
{
  const piece_job *j = ctx;
  const clg_window *g = j->g;
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(j->dtype), T = (size_t)j->tasks;
  size_t r0 = rows * (size_t)t / T, r1 = rows * (size_t)(t + 1) / T;
  void *p = j->p + (size_t)t * j->part;
  for (size_t r = r0; r < r1; r += j->piece) {
    size_t nr = r1 - r < j->piece ? r1 - r : j->piece;
    const void *a = (const char *)j->x + r * k * es;
    if (!j->direct) {
      clg_host_im2col(j->dtype, j->x, p, r, nr, g);
      a = p;
    }
    clg_host_matmul(j->dtype, false, false, nr, cout, k, a, j->f, (char *)j->y + r * cout * es);
    clg_host_epilogue_rows(j->e, j->y, r, nr);
  }
}

static size_t pieces_scratch(clg_dtype dtype, const clg_window *g)
{
  if (clg_conv_is_direct(g))
    return 0;
  return (size_t)piece_tasks(dtype, g) * piece_rows(dtype, g) * (size_t)g->kdim *
         clg_dtype_size(dtype);
}

static clg_code pieces_run(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                           const void *x, const void *f, void *y, const clg_window *g,
                           const clg_epilogue *e)
{
  piece_job j = {dtype,
                 x,
                 f,
                 y,
                 g,
                 NULL,
                 piece_rows(dtype, g),
                 0,
                 piece_tasks(dtype, g),
                 clg_conv_is_direct(g),
                 e};
  j.part = j.direct ? 0 : j.piece * (size_t)g->kdim * clg_dtype_size(dtype);
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, pieces_scratch(dtype, g), &s, "Conv2D");
  if (code != CLG_OK)
    return code;
  j.p = s.p;
  clg_host_parallel(j.tasks, piece_task, &j);
  scratch_put(alloc, &s);
  return CLG_OK;
}

size_t clg_host_conv2d_scratch(clg_dtype dtype, const clg_window *g)
{
  if (dtype == CLG_FLOAT32 && clg_host_conv_stem_usable(g))
    return clg_host_conv_stem_scratch(g);
  if (dtype == CLG_FLOAT32 && clg_host_conv_winograd_usable(g))
    return clg_host_conv_winograd_scratch(g);
  if (dtype == CLG_FLOAT32 && clg_host_conv_direct_usable(g))
    return clg_host_conv_direct_scratch(g);
  if (conv_pieces(dtype, g))
    return pieces_scratch(dtype, g);
  if (conv_fast(dtype, g, true))
    return fast_scratch(g, false);
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, es = clg_dtype_size(dtype);
  if (rows == 0 || g->cout == 0 || k == 0 || clg_conv_is_direct(g))
    return 0;
  return clg_conv_chunk_rows(false, k, es, rows) * k * es;
}

clg_code clg_host_conv2d(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                         const void *x, const void *f, void *y, const clg_window *g)
{
  return clg_host_conv2d_epi(alloc, scratch, dtype, x, f, y, g, NULL);
}

clg_code clg_host_conv2d_epi(clg_allocator *alloc, const clg_block *scratch, clg_dtype dtype,
                             const void *x, const void *f, void *y, const clg_window *g,
                             const clg_epilogue *e)
{
  if (dtype != CLG_FLOAT32) /* the planner fuses float32 only */
    e = NULL;
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (rows == 0 || cout == 0)
    return CLG_OK;
  if (dtype == CLG_FLOAT32 && clg_host_conv_stem_usable(g)) { /* few input channels */
    host_scratch s;
    clg_code code = scratch_get(alloc, scratch, clg_host_conv_stem_scratch(g), &s, "Conv2D");
    if (code != CLG_OK)
      return code;
    clg_host_conv_stem(x, f, y, g, e, s.p);
    scratch_put(alloc, &s);
    return CLG_OK;
  }
  if (dtype == CLG_FLOAT32 && clg_host_conv_winograd_usable(g)) { /* 3x3, stride 1 */
    host_scratch s;
    clg_code code = scratch_get(alloc, scratch, clg_host_conv_winograd_scratch(g), &s, "Conv2D");
    if (code != CLG_OK)
      return code;
    clg_host_conv_winograd(x, f, y, g, e, s.p);
    scratch_put(alloc, &s);
    return CLG_OK;
  }
  if (dtype == CLG_FLOAT32 && clg_host_conv_direct_usable(g)) {
    host_scratch s;
    clg_code code = scratch_get(alloc, scratch, clg_host_conv_direct_scratch(g), &s, "Conv2D");
    if (code != CLG_OK)
      return code;
    clg_host_conv_direct(x, f, y, g, e, s.p);
    scratch_put(alloc, &s);
    return CLG_OK;
  }
  if (conv_pieces(dtype, g))
    return pieces_run(alloc, scratch, dtype, x, f, y, g, e);
  if (conv_fast(dtype, g, true)) {
    fast_job j = {.g = g, .x = x, .f = f, .y = y, .e = e};
    return fast_run(alloc, scratch, &j, false, fast_forward_task, "Conv2D");
  }
  if (clg_conv_is_direct(g) || k == 0) {
    clg_host_matmul(dtype, false, false, rows, cout, k, x, f, y);
    clg_host_epilogue(e, y, 0, rows); /* after the team's GEMM: one pass, in parallel */
    return CLG_OK;
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  clg_block blk = {0};
  void *p = NULL;
  bool planned = scratch && scratch->host && scratch->size >= chunk * k * es;
  if (planned) {
    p = scratch->host;
  } else if (alloc) {
    clg_code code = clg_allocator_alloc(alloc, chunk * k * es, &blk);
    if (code != CLG_OK)
      return clg_error_prefix("Conv2D scratch: ");
    p = blk.host;
  } else if (!(p = malloc(chunk * k * es))) {
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for Conv2D scratch (%zu bytes)",
                     chunk * k * es);
  }
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    clg_host_im2col(dtype, x, p, r0, nr, g);
    clg_host_matmul(dtype, false, false, nr, cout, k, p, f, (char *)y + r0 * cout * es);
    clg_host_epilogue(e, y, r0, nr);
  }
  if (planned)
    return CLG_OK;
  if (alloc)
    clg_allocator_free(alloc, &blk, NULL);
  else
    free(p);
  return CLG_OK;
}

/* --- gradients ------------------------------------------------------------------------- */

/* Scatter-adds patch rows [row0, row0 + rows) of p into x (Conv2DBackpropInput): the host
 * walks the chunk once, where a gather would walk the whole input per chunk. */
#define COL2IM_LOOP(T)                                                                             \
  do {                                                                                             \
    const T *ps = p;                                                                               \
    T *xs = x;                                                                                     \
    for (size_t r = row0; r < row0 + rows; r++) {                                                  \
      int64_t ow = (int64_t)(r % (size_t)g->ow), t = (int64_t)(r / (size_t)g->ow);                 \
      int64_t oh = t % g->oh, n = t / g->oh;                                                       \
      const T *pr = ps + (r - row0) * (size_t)g->kdim;                                             \
      for (int64_t a = 0; a < g->kh; a++) {                                                        \
        int64_t ih = oh * g->sh - g->pt + a * g->dh;                                               \
        if (ih < 0 || ih >= g->h)                                                                  \
          continue;                                                                                \
        for (int64_t b = 0; b < g->kw; b++) {                                                      \
          int64_t iw = ow * g->sw - g->pl + b * g->dw;                                             \
          if (iw < 0 || iw >= g->w)                                                                \
            continue;                                                                              \
          T *dst = xs + (size_t)((n * g->h + ih) * g->w + iw) * (size_t)g->c;                      \
          const T *src = pr + (size_t)((a * g->kw + b) * g->c);                                    \
          for (int64_t c = 0; c < g->c; c++)                                                       \
            dst[c] += src[c];                                                                      \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* Compiled for the baseline and for AVX2 (its channel loop is the hot one of the input's
 * gradient). */
static inline PG_INLINE void col2im_f32_body(const void *p, void *x, size_t row0, size_t rows,
                                             const clg_window *g)
{
  COL2IM_LOOP(float);
}

static void col2im_f32_base(const void *p, void *x, size_t row0, size_t rows, const clg_window *g)
{
  col2im_f32_body(p, x, row0, rows, g);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void col2im_f32_avx2(const void *p, void *x, size_t row0,
                                                                size_t rows, const clg_window *g)
{
  col2im_f32_body(p, x, row0, rows, g);
}
#else
#define col2im_f32_avx2 col2im_f32_base
#endif

void clg_host_col2im(clg_dtype dtype, const void *p, void *x, size_t row0, size_t rows,
                     const clg_window *g)
{
  if (dtype == CLG_FLOAT64)
    COL2IM_LOOP(double);
  else if (clg_host_avx2())
    col2im_f32_avx2(p, x, row0, rows, g);
  else
    col2im_f32_base(p, x, row0, rows, g);
}

size_t clg_host_conv2d_grad_scratch(clg_dtype dtype, const clg_window *g, bool filter)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, es = clg_dtype_size(dtype);
  if (rows == 0 || g->cout == 0 || k == 0 || clg_conv_is_direct(g))
    return 0;
  if (conv_fast(dtype, g, false))
    return fast_scratch(g, filter);
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  return chunk * k * es + (filter && chunk < rows ? k * (size_t)g->cout * es : 0);
}

clg_code clg_host_conv2d_backprop_input(clg_allocator *alloc, const clg_block *scratch,
                                        clg_dtype dtype, const void *f, const void *dy, void *dx,
                                        const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (rows > 0 && k > 0 && conv_fast(dtype, g, false)) { /* each task clears its images */
    fast_job j = {.g = g, .f = f, .dy = dy, .y = dx};
    return fast_run(alloc, scratch, &j, false, fast_input_task, "Conv2DBackpropInput");
  }
  memset(dx, 0, (size_t)(g->n * g->h * g->w * g->c) * es);
  if (rows == 0 || k == 0)
    return CLG_OK;
  if (clg_conv_is_direct(g)) { /* dx = dy x f^T */
    clg_host_matmul(dtype, false, true, rows, k, cout, dy, f, dx);
    return CLG_OK;
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, chunk * k * es, &s, "Conv2DBackpropInput");
  if (code != CLG_OK)
    return code;
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    /* The chunk's patch gradients, then each added back where its patch came from. */
    clg_host_matmul(dtype, false, true, nr, k, cout, (const char *)dy + r0 * cout * es, f, s.p);
    clg_host_col2im(dtype, s.p, dx, r0, nr, g);
  }
  scratch_put(alloc, &s);
  return CLG_OK;
}

clg_code clg_host_conv2d_backprop_filter(clg_allocator *alloc, const clg_block *scratch,
                                         clg_dtype dtype, const void *x, const void *dy, void *df,
                                         const clg_window *g)
{
  size_t rows = (size_t)(g->n * g->oh * g->ow), k = (size_t)g->kdim, cout = (size_t)g->cout;
  size_t es = clg_dtype_size(dtype);
  if (k == 0 || cout == 0)
    return CLG_OK;
  if (rows == 0) {
    memset(df, 0, k * cout * es);
    return CLG_OK;
  }
  if (clg_conv_is_direct(g)) { /* df = x^T x dy */
    clg_host_matmul(dtype, true, false, k, cout, rows, x, dy, df);
    return CLG_OK;
  }
  if (conv_fast(dtype, g, false)) {
    fast_job j = {.g = g, .x = x, .dy = dy, .y = df};
    return fast_run(alloc, scratch, &j, true, fast_filter_task, "Conv2DBackpropFilter");
  }
  size_t chunk = clg_conv_chunk_rows(false, k, es, rows);
  size_t pbytes = chunk * k * es, tbytes = chunk < rows ? k * cout * es : 0;
  host_scratch s;
  clg_code code = scratch_get(alloc, scratch, pbytes + tbytes, &s, "Conv2DBackpropFilter");
  if (code != CLG_OK)
    return code;
  void *part = (char *)s.p + pbytes;
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    size_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    clg_host_im2col(dtype, x, s.p, r0, nr, g);
    /* The first chunk writes df; later ones add their share (the GEMM has no beta). */
    const char *dyc = (const char *)dy + r0 * cout * es;
    clg_host_matmul(dtype, true, false, k, cout, nr, s.p, dyc, r0 == 0 ? df : part);
    if (r0 > 0)
      clg_host_binary(CLG_BINOP_ADD, dtype, df, k * cout, part, k * cout, df, k * cout);
  }
  scratch_put(alloc, &s);
  return CLG_OK;
}
