/* OpenCL kernels on PoCL devices standing in as GPUs: element-wise ops and AddN at
 * non-zero block offsets against the host kernels (bit for bit), CLBlast MatMul against a
 * double-precision host product over shapes and all transposes on two devices, with the
 * scratch from a clg_allocator, the fallback signal (Hgemm without fp16), argument errors,
 * concurrent launches, the launch overhead, and programs made from the binaries an earlier
 * context's build kept. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "ops/ops.h"
#include "testutil.h"

/* One buffer per test area; blocks are carved by hand at multiples of 256 bytes, as the
 * allocator would, so every offset is non-zero. */
typedef struct arena {
  clg_device *dev;
  cl_mem mem;
  size_t size, next;
} arena;

static bool arena_init(arena *ar, clg_device *dev, size_t size)
{
  cl_int err;
  ar->dev = dev;
  ar->size = size;
  ar->next = 256; /* never offset 0 */
  ar->mem = clCreateBuffer(clg_cl_context(dev), CL_MEM_READ_WRITE, size, NULL, &err);
  CHECK_MSG(err == CL_SUCCESS, "clCreateBuffer(%zu) failed: %d", size, err);
  return err == CL_SUCCESS;
}

static clg_block arena_block(arena *ar, size_t bytes)
{
  clg_block b = {ar->mem, ar->next, bytes, NULL, 0};
  size_t step = (bytes + 255) / 256 * 256 + 256; /* a gap of 256 bytes after each block */
  if (ar->next + step > ar->size) {
    CHECK_MSG(false, "test arena of %zu bytes too small", ar->size);
    b.size = 0;
    return b;
  }
  ar->next += step;
  return b;
}

static void arena_reset(arena *ar) { ar->next = 256; }

static void write_block(clg_device *dev, const clg_block *b, const void *data, size_t bytes)
{
  cl_int err = clEnqueueWriteBuffer(clg_cl_queue(dev), b->mem, CL_TRUE, b->offset, bytes, data, 0,
                                    NULL, NULL);
  CHECK_MSG(err == CL_SUCCESS, "clEnqueueWriteBuffer: %d", err);
}

static void read_block(clg_device *dev, const clg_block *b, void *data, size_t bytes)
{
  cl_int err = clEnqueueReadBuffer(clg_cl_queue(dev), b->mem, CL_TRUE, b->offset, bytes, data, 0,
                                   NULL, NULL);
  CHECK_MSG(err == CL_SUCCESS, "clEnqueueReadBuffer: %d", err);
}

static size_t esize(clg_dtype dt) { return dt == CLG_FLOAT32 ? 4 : 8; }

/* Writes a sentinel pattern of 256 bytes right after block b (in the arena's gap) and
 * checks later that no kernel wrote past the block's end. */
static const unsigned char SENTINEL = 0xA5;
static void put_sentinel(clg_device *dev, const clg_block *b, size_t used)
{
  unsigned char s[256];
  memset(s, SENTINEL, sizeof s);
  clg_block after = *b;
  after.offset += used;
  write_block(dev, &after, s, sizeof s);
}

static bool sentinel_intact(clg_device *dev, const clg_block *b, size_t used)
{
  unsigned char s[256];
  clg_block after = *b;
  after.offset += used;
  read_block(dev, &after, s, sizeof s);
  for (size_t i = 0; i < sizeof s; i++)
    if (s[i] != SENTINEL)
      return false;
  return true;
}

/* --- element-wise ------------------------------------------------------------------- */

static void test_binary(clg_device *dev, arena *ar)
{
  static const size_t counts[] = {1, 3, 1000, 4097};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = dts[d];
    size_t es = esize(dt);
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
      for (int op = CLG_BINOP_ADD; op <= CLG_BINOP_MUL; op++)
        for (int mode = 0; mode < 5; mode++) {
          /* 0 full/full, 1 full/scalar, 2 scalar/full, 3 scalar/scalar, 4 in place over a */
          size_t count = counts[ci];
          size_t na = (mode == 2 || mode == 3) ? 1 : count;
          size_t nb = (mode == 1 || mode == 3) ? 1 : count;
          void *ha = malloc(na * es), *hb = malloc(nb * es), *want = malloc(count * es);
          void *got = malloc(count * es);
          clg_test_fill_random(dt, ha, na);
          clg_test_fill_random(dt, hb, nb);
          clg_test_fill_nan(dt, got, count);
          clg_host_binary((clg_binop)op, dt, ha, na, hb, nb, want, count);
          arena_reset(ar);
          clg_block a = arena_block(ar, na * es), b = arena_block(ar, nb * es);
          clg_block out = mode == 4 ? a : arena_block(ar, count * es);
          write_block(dev, &a, ha, na * es);
          write_block(dev, &b, hb, nb * es);
          if (mode != 4)
            write_block(dev, &out, got, count * es); /* NaN: unwritten elements fail */
          put_sentinel(dev, &out, count * es);
          CHECK_OK(clg_cl_binary(dev, (clg_binop)op, dt, &a, na, &b, nb, &out, count));
          read_block(dev, &out, got, count * es);
          CHECK_MSG(memcmp(got, want, count * es) == 0,
                    "clg_cl_binary op %d dtype %d mode %d count %zu on %s differs from the host",
                    op, (int)dt, mode, count, dev->info.name);
          CHECK_MSG(sentinel_intact(dev, &out, count * es), "wrote past the output block");
          free(ha), free(hb), free(want), free(got);
        }
  }
}

static void test_addn(clg_device *dev, arena *ar)
{
  static const int ns[] = {1, 2, 3, 8, 9, 15, 17};
  static const size_t counts[] = {1, 777, 5000};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = dts[d];
    size_t es = esize(dt);
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int inplace = 0; inplace < 2; inplace++) {
          int n = ns[ni];
          size_t count = counts[ci];
          void *host[17];
          clg_block blk[17];
          arena_reset(ar);
          for (int j = 0; j < n; j++) {
            host[j] = malloc(count * es);
            clg_test_fill_random(dt, host[j], count);
            blk[j] = arena_block(ar, count * es);
            write_block(dev, &blk[j], host[j], count * es);
          }
          void *want = malloc(count * es), *got = malloc(count * es);
          clg_host_addn(dt, (const void *const *)host, n, want, count);
          clg_block out = inplace ? blk[0] : arena_block(ar, count * es);
          if (!inplace) {
            clg_test_fill_nan(dt, got, count);
            write_block(dev, &out, got, count * es);
          }
          put_sentinel(dev, &out, count * es);
          CHECK_OK(clg_cl_addn(dev, dt, blk, n, &out, count));
          read_block(dev, &out, got, count * es);
          CHECK_MSG(memcmp(got, want, count * es) == 0,
                    "clg_cl_addn dtype %d n=%d count=%zu inplace=%d on %s differs from the host",
                    (int)dt, n, count, inplace, dev->info.name);
          CHECK_MSG(sentinel_intact(dev, &out, count * es), "wrote past the output block");
          for (int j = 0; j < n; j++)
            free(host[j]);
          free(want), free(got);
        }
  }
}

static void test_elementwise_errors(clg_device *dev, clg_device *host, arena *ar)
{
  arena_reset(ar);
  clg_block a = arena_block(ar, 64), b = arena_block(ar, 64), out = arena_block(ar, 64);
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 3, &b, 16, &out, 16),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "na is 3");
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 16, &b, 16, &out, 17),
             CLG_INVALID_ARGUMENT); /* na 16 is neither 1 nor 17 */
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 1, &b, 1, &out, 17),
             CLG_INVALID_ARGUMENT); /* out holds 16 floats */
  CHECK_CONTAINS(clg_last_error(), "out holds 64 bytes");
  clg_block odd = a;
  odd.offset += 2;
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_SUB, CLG_FLOAT32, &odd, 1, &b, 1, &out, 4),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "not a multiple of the element size");
  CHECK_CODE(clg_cl_binary(dev, (clg_binop)9, CLG_FLOAT32, &a, 1, &b, 1, &out, 4),
             CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_MUL, CLG_FLOAT32, NULL, 1, &b, 1, &out, 4),
             CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_MUL, CLG_FLOAT16, &a, 1, &b, 1, &out, 4),
             CLG_UNIMPLEMENTED);
  CHECK_CODE(clg_cl_binary(host, CLG_BINOP_MUL, CLG_FLOAT32, &a, 1, &b, 1, &out, 4),
             CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_cl_binary(NULL, CLG_BINOP_MUL, CLG_FLOAT32, &a, 1, &b, 1, &out, 4),
             CLG_INVALID_ARGUMENT);
  CHECK_OK(clg_cl_binary(dev, CLG_BINOP_MUL, CLG_FLOAT32, NULL, 0, NULL, 0, NULL, 0));
  CHECK_CODE(clg_cl_addn(dev, CLG_FLOAT32, &a, 0, &out, 4), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "n is 0");
  clg_block two[2] = {a, b};
  two[1].size = 8;
  CHECK_CODE(clg_cl_addn(dev, CLG_FLOAT32, two, 2, &out, 4), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "inputs[1]");
  clg_block hostblk = {NULL, 0, 64, &two, 0};
  CHECK_CODE(clg_cl_addn(dev, CLG_FLOAT32, &hostblk, 1, &out, 4), CLG_INVALID_ARGUMENT);
  /* A device without cl_khr_fp64 has no double kernels. */
  clg_device no64 = *dev;
  no64.info.has_fp64 = 0;
  CHECK_CODE(clg_cl_binary(&no64, CLG_BINOP_ADD, CLG_FLOAT64, &a, 1, &b, 1, &out, 4),
             CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "no double precision");
  CHECK_CODE(clg_cl_prepare(host), CLG_INVALID_ARGUMENT);

  /* A program that does not build: INTERNAL, naming the device, with PoCL's build log. The
   * failure is not cached: the next call builds again. */
  clg_cl_release_all();
  setenv("CLGRAPH_CL_BUILD_OPTIONS", "-DCLG_TEST_BUILD_ERROR", 1);
  CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 1, &b, 1, &out, 4), CLG_INTERNAL);
  CHECK_CONTAINS(clg_last_error(), "building cl/elementwise.cl (float");
  CHECK_CONTAINS(clg_last_error(), dev->info.name);
  CHECK_CONTAINS(clg_last_error(), "CL_BUILD_PROGRAM_FAILURE (-11)");
  CHECK_CONTAINS(clg_last_error(), "build log for OpenCL device 0 of the context");
  CHECK_CONTAINS(clg_last_error(), "build failure requested with -DCLG_TEST_BUILD_ERROR");
  CHECK_CODE(clg_cl_prepare(dev), CLG_INTERNAL);

  /* Options whose syntax is wrong never reach clBuildProgram (PoCL 3.1 segfaults on a -D or
   * -I without its argument): INVALID_ARGUMENT naming the variable and the bad option. */
  static const struct {
    const char *options, *says;
  } bad_options[] = {
      {"-D", "option '-D' needs an argument"},
      {"-I", "option '-I' needs an argument"},
      {"  -D  ", "option '-D' needs an argument"},
      {"-D X -I", "option '-I' needs an argument"},
      {"-DX -D", "option '-D' needs an argument"},
      {"-cl-std=CL1.2 -I", "option '-I' needs an argument"},
      {"-x", "option '-x' needs an argument"},
      {"-D -I", "option '-D' needs an argument, but is followed by '-I'"},
      {"-D=", "-D needs a macro name (an identifier) in '='"},
      {"-D 1X", "-D needs a macro name (an identifier) in '1X'"},
      {"-D\"a", "unbalanced double quote in option '-D\"a'"},
      {"-DX='1", "unbalanced single quote in option '-DX='1'"},
      {"-cl-std=", "option '-cl-std=' needs a value after '='"},
      {"-w foo", "'foo' is not an option (options start with '-')"},
      {"-DX\x01", "control character 0x01 at offset 3"},
  };
  for (size_t i = 0; i < sizeof bad_options / sizeof bad_options[0]; i++) {
    setenv("CLGRAPH_CL_BUILD_OPTIONS", bad_options[i].options, 1);
    CHECK_CODE(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 1, &b, 1, &out, 4),
               CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "CLGRAPH_CL_BUILD_OPTIONS='");
    CHECK_CONTAINS(clg_last_error(), bad_options[i].says);
  }
  /* Well-formed options, with arguments attached and separate, still build. */
  setenv("CLGRAPH_CL_BUILD_OPTIONS", " -D CLG_T1=1\t-DCLG_T2 -I /tmp -I/tmp -cl-opt-disable -w ",
         1);
  CHECK_OK(clg_cl_prepare(dev));
  clg_cl_release_all();
  unsetenv("CLGRAPH_CL_BUILD_OPTIONS");
  CHECK_OK(clg_cl_prepare(dev));
  CHECK_CODE(clg_cl_prepare(NULL), CLG_INVALID_ARGUMENT);
}

/* --- programs kept as binaries across contexts -------------------------------------- */

/* A build on a new context: whether the log says it came from kept binaries. */
static bool prepare_from_kept(clg_device *dev)
{
  clg_test_log_capture_start(CLG_LOG_DEBUG);
  CHECK_OK(clg_cl_prepare(dev));
  const char *log = clg_test_log_capture_stop();
  const char *line = strstr(log, "built cl/elementwise.cl (float) for ");
  CHECK_MSG(line != NULL, "no build of cl/elementwise.cl (float) logged: %s", log);
  if (!line)
    return false;
  const char *end = strchr(line, '\n'), *kept = strstr(line, "from the binaries kept");
  return kept && (!end || kept < end);
}

/* Another device set has contexts of its own (as a new session's process state does): its
 * programs come from the binaries the first context's build kept, and their kernels give
 * the host's values bit for bit; without the binaries (CLGRAPH_CL_PROGRAM_BINARIES=0) or
 * with other options, the source is built. */
static void test_kept_binaries(const clg_device_config *cfg)
{
  clg_devices *set = NULL;
  CHECK_OK(clg_devices_new(cfg, &set));
  if (!set)
    return;
  clg_device *dev = clg_devices_at(set, 1);
  arena ar;
  if (arena_init(&ar, dev, 32u << 20)) {
    setenv("CLGRAPH_CL_PROGRAM_BINARIES", "0", 1);
    CHECK(!prepare_from_kept(dev));
    clg_cl_release_all();
    unsetenv("CLGRAPH_CL_PROGRAM_BINARIES");
    setenv("CLGRAPH_CL_BUILD_OPTIONS", "-DCLG_KEPT_TEST=1", 1);
    CHECK(!prepare_from_kept(dev)); /* other options: another key */
    clg_cl_release_all();
    CHECK(prepare_from_kept(dev)); /* (kept by the build just before) */
    clg_cl_release_all();
    unsetenv("CLGRAPH_CL_BUILD_OPTIONS");
    CHECK(prepare_from_kept(dev)); /* kept by main's first build */
    test_binary(dev, &ar);
    test_addn(dev, &ar);
    clReleaseMemObject(ar.mem);
  }
  clg_cl_release_all();
  clg_devices_free(set);
}

/* Two threads launch on each of two devices at once (four threads, two per device): the
 * per-device kernel lock keeps the arguments of one launch from mixing with another's. */
typedef struct race_job {
  clg_device *dev;
  clg_block a, b, out;
  float scale;
  int iters;
  clg_code code;
} race_job;

static void *race_thread(void *p)
{
  race_job *j = p;
  j->code = CLG_OK;
  for (int i = 0; i < j->iters && j->code == CLG_OK; i++)
    j->code =
        clg_cl_binary(j->dev, CLG_BINOP_MUL, CLG_FLOAT32, &j->a, 1024, &j->b, 1, &j->out, 1024);
  if (j->code == CLG_OK && clFinish(clg_cl_queue(j->dev)) != CL_SUCCESS)
    j->code = CLG_INTERNAL;
  return NULL;
}

static void test_concurrent(clg_device *d0, clg_device *d1, arena *ar0, arena *ar1)
{
  race_job jobs[4];
  arena_reset(ar0);
  arena_reset(ar1);
  float ones[1024];
  for (int i = 0; i < 1024; i++)
    ones[i] = 1;
  for (int t = 0; t < 4; t++) {
    arena *ar = t < 2 ? ar0 : ar1;
    race_job *j = &jobs[t];
    j->dev = t < 2 ? d0 : d1;
    j->a = arena_block(ar, sizeof ones);
    j->b = arena_block(ar, 4);
    j->out = arena_block(ar, sizeof ones);
    j->scale = (float)(t + 2);
    j->iters = 200;
    write_block(j->dev, &j->a, ones, sizeof ones);
    write_block(j->dev, &j->b, &j->scale, 4);
  }
  pthread_t th[4];
  for (int t = 0; t < 4; t++)
    pthread_create(&th[t], NULL, race_thread, &jobs[t]);
  for (int t = 0; t < 4; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; t < 4; t++) {
    CHECK_OK(jobs[t].code);
    float got[1024];
    read_block(jobs[t].dev, &jobs[t].out, got, sizeof got);
    bool ok = true;
    for (int i = 0; i < 1024; i++)
      ok = ok && got[i] == jobs[t].scale;
    CHECK_MSG(ok, "thread %d: concurrent launches mixed their arguments", t);
  }
}

/* Launch cost of a tiny kernel, enqueue to completion (printed, not asserted: the machine
 * is shared), against what creating a kernel object per launch would add. */
static void measure_overhead(clg_device *dev, arena *ar)
{
  arena_reset(ar);
  clg_block a = arena_block(ar, 4), b = arena_block(ar, 4), out = arena_block(ar, 4);
  float one = 1;
  write_block(dev, &a, &one, 4);
  write_block(dev, &b, &one, 4);
  CHECK_OK(clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 1, &b, 1, &out, 1));
  clFinish(clg_cl_queue(dev));
  const int n = 2000;
  uint64_t t0 = clg_now_ns();
  for (int i = 0; i < n; i++)
    clg_cl_binary(dev, CLG_BINOP_ADD, CLG_FLOAT32, &a, 1, &b, 1, &out, 1);
  uint64_t t1 = clg_now_ns();
  clFinish(clg_cl_queue(dev));
  uint64_t t2 = clg_now_ns();

  /* clCreateKernel + clReleaseKernel on a tiny program, as a per-launch alternative */
  const char *src = "__kernel void k(__global float *x) { x[0] += 1.0f; }";
  cl_int err;
  cl_program p = clCreateProgramWithSource(clg_cl_context(dev), 1, &src, NULL, &err);
  CHECK(err == CL_SUCCESS);
  cl_device_id id = clg_cl_device_id(dev);
  err = clBuildProgram(p, 1, &id, "", NULL, NULL);
  CHECK(err == CL_SUCCESS);
  uint64_t t3 = clg_now_ns();
  for (int i = 0; i < n; i++) {
    cl_kernel k = clCreateKernel(p, "k", &err);
    if (k)
      clReleaseKernel(k);
  }
  uint64_t t4 = clg_now_ns();
  clReleaseProgram(p);
  printf("launch overhead on %s: %.2f us per tiny Add enqueued, %.2f us to completion; "
         "clCreateKernel+clReleaseKernel would add %.2f us per launch\n",
         dev->info.name, (double)(t1 - t0) / n / 1e3, (double)(t2 - t0) / n / 1e3,
         (double)(t4 - t3) / n / 1e3);
}

/* --- MatMul ------------------------------------------------------------------------- */

typedef struct shape {
  size_t m, n, k;
} shape;

/* ||c - ref|| / ||ref|| with ref the host's double product of the same inputs. */
static double rel_error(clg_dtype dt, bool ta, bool tb, size_t m, size_t n, size_t k, const void *a,
                        const void *b, const void *c)
{
  double *ad = malloc(m * k * sizeof(double)), *bd = malloc(k * n * sizeof(double));
  double *ref = malloc(m * n * sizeof(double));
  for (size_t i = 0; i < m * k; i++)
    ad[i] = dt == CLG_FLOAT32 ? ((const float *)a)[i] : ((const double *)a)[i];
  for (size_t i = 0; i < k * n; i++)
    bd[i] = dt == CLG_FLOAT32 ? ((const float *)b)[i] : ((const double *)b)[i];
  clg_host_matmul(CLG_FLOAT64, ta, tb, m, n, k, ad, bd, ref);
  double num = 0, den = 0;
  for (size_t i = 0; i < m * n; i++) {
    double g = dt == CLG_FLOAT32 ? ((const float *)c)[i] : ((const double *)c)[i];
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  free(ad), free(bd), free(ref);
  return den == 0 ? sqrt(num) : sqrt(num / den);
}

/* One checked product at non-zero offsets, C poisoned with NaN and followed by a sentinel. */
static void check_matmul(clg_device *dev, clg_allocator *alloc, arena *ar, clg_dtype dt, bool ta,
                         bool tb, size_t m, size_t n, size_t k)
{
  size_t es = esize(dt);
  double tol = dt == CLG_FLOAT32 ? 1e-5 : 1e-12;
  void *ha = malloc(m * k * es), *hb = malloc(k * n * es), *hc = malloc(m * n * es);
  clg_test_fill_random(dt, ha, m * k);
  clg_test_fill_random(dt, hb, k * n);
  clg_test_fill_nan(dt, hc, m * n);
  arena_reset(ar);
  clg_block a = arena_block(ar, m * k * es), b = arena_block(ar, k * n * es);
  clg_block c = arena_block(ar, m * n * es);
  write_block(dev, &a, ha, m * k * es);
  write_block(dev, &b, hb, k * n * es);
  write_block(dev, &c, hc, m * n * es);
  put_sentinel(dev, &c, m * n * es);
  CHECK_OK(clg_cl_matmul(dev, alloc, NULL, dt, ta, tb, m, n, k, &a, &b, &c, NULL));
  read_block(dev, &c, hc, m * n * es);
  double err = rel_error(dt, ta, tb, m, n, k, ha, hb, hc);
  CHECK_MSG(err < tol, "CLBlast %s m=%zu n=%zu k=%zu ta=%d tb=%d on %s%s: relative error %g",
            dt == CLG_FLOAT32 ? "float" : "double", m, n, k, ta, tb, dev->info.name,
            alloc ? " (scratch from the allocator)" : "", err);
  CHECK_MSG(sentinel_intact(dev, &c, m * n * es), "MatMul wrote past C");
  free(ha), free(hb), free(hc);
}

#ifdef CLG_HAVE_CLBLAST
static void test_matmul(clg_device *d0, clg_device *d1, clg_allocator *al0, clg_allocator *al1,
                        arena *ar0, arena *ar1)
{
  /* CLBlast's direct kernel (small products) ... */
  static const shape small[] = {{1, 1, 1},    {7, 7, 7},    {13, 13, 13}, {31, 31, 31},
                                {64, 64, 64}, {97, 97, 97}, {257, 7, 31}, {7, 257, 13},
                                {1, 257, 64}, {257, 1, 97}, {13, 97, 1},  {128, 33, 257}};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++)
    for (size_t s = 0; s < sizeof small / sizeof small[0]; s++)
      for (int t = 0; t < 4; t++) {
        /* alternate the two devices, and the scratch source on the first */
        bool first = (s + (size_t)t) % 2 == 0;
        check_matmul(first ? d0 : d1, first ? (t < 2 ? al0 : NULL) : al1, first ? ar0 : ar1, dts[d],
                     t & 1, t & 2, small[s].m, small[s].n, small[s].k);
      }

  /* ... and the indirect path (float: m*n*k >= 896^3 on PoCL), whose padding and transposes need
   * the scratch buffer: it must come from the allocator and go back to it. */
  clg_memory_stats st;
  clg_allocator_reset_peak(al0);
  clg_allocator_reset_peak(al1);
  for (int t = 0; t < 4; t++)
    check_matmul(t % 2 ? d1 : d0, t % 2 ? al1 : al0, t % 2 ? ar1 : ar0, CLG_FLOAT32, t & 1, t & 2,
                 997, 1001, 743);
  /* double goes indirect later (above 1280^3 here) */
  check_matmul(d0, al0, ar0, CLG_FLOAT64, false, true, 999, 901, 817);
  check_matmul(d1, al1, ar1, CLG_FLOAT64, true, false, 1283, 1291, 1279);
  clFinish(clg_cl_queue(d0));
  clFinish(clg_cl_queue(d1));
  clg_allocator_stats(al0, &st);
  CHECK_MSG(st.peak_bytes_in_use > 0, "the indirect GEMM took no scratch from the allocator");
  CHECK_MSG(st.bytes_in_use == 0, "scratch not returned: %llu bytes in use",
            (unsigned long long)st.bytes_in_use);
  clg_allocator_stats(al1, &st);
  CHECK(st.peak_bytes_in_use > 0);
  CHECK(st.bytes_in_use == 0);
  /* CLBlast allocating its own scratch (alloc NULL) gives the same result */
  check_matmul(d1, NULL, ar1, CLG_FLOAT32, false, false, 997, 1001, 743);
}

static void test_matmul_errors(clg_device *dev, clg_allocator *alloc, arena *ar)
{
  arena_reset(ar);
  clg_block a = arena_block(ar, 1024), b = arena_block(ar, 1024), c = arena_block(ar, 1024);
  /* PoCL has no cl_khr_fp16: CLBlast says so, and the caller can fall back to the host. */
  CHECK_CODE(clg_cl_matmul(dev, NULL, NULL, CLG_FLOAT16, false, false, 4, 4, 4, &a, &b, &c, NULL),
             CLG_UNIMPLEMENTED);
  char want[160];
  snprintf(want, sizeof want, "CLBlastHgemm failed: CLBlastNoHalfPrecision (-2045) on %s",
           dev->info.name);
  CHECK_CONTAINS(clg_last_error(), want);
  const char *why = "unset";
  CHECK_CODE(
      clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT16, true, false, 16, 16, 16, &a, &b, &c, &why),
      CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "CLBlastNoHalfPrecision (-2045)");
  CHECK_STR(why, "CLBlastNoHalfPrecision"); /* the reason alone, for warning once */
  CHECK_CODE(clg_cl_warm_matmul(dev, CLG_FLOAT16), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "CLBlastNoHalfPrecision (-2045)");
  /* ...yet the table offers it: the runtime runs it on the host (tests/test_fallback.c). */
  CHECK(clg_backend_supported("MatMul", CLG_FLOAT16, dev));

  /* Arguments are checked before CLBlast sees them. */
  CHECK_CODE(
      clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT32, false, false, 16, 17, 16, &a, &b, &c, NULL),
      CLG_INVALID_ARGUMENT); /* b holds 256 floats, not 16 x 17 */
  CHECK_CONTAINS(clg_last_error(), "b holds 1024 bytes");
  clg_block odd = a;
  odd.offset += 4;
  CHECK_CODE(
      clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT64, false, false, 2, 2, 2, &odd, &b, &c, NULL),
      CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_cl_matmul(dev, alloc, NULL, (clg_dtype)5, false, false, 2, 2, 2, &a, &b, &c, NULL),
             CLG_INVALID_ARGUMENT);
  CHECK_CODE(
      clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT32, false, false, 2, 2, 2, NULL, &b, &c, NULL),
      CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_cl_matmul(NULL, alloc, NULL, CLG_FLOAT32, false, false, 2, 2, 2, &a, &b, &c, NULL),
             CLG_INVALID_ARGUMENT);

  /* k = 0: an empty sum, C becomes zeros */
  float poison[12];
  clg_test_fill_nan(CLG_FLOAT32, poison, 12);
  write_block(dev, &c, poison, sizeof poison);
  CHECK_OK(clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT32, false, false, 3, 4, 0, &a, &b, &c, NULL));
  read_block(dev, &c, poison, sizeof poison);
  bool zero = true;
  for (int i = 0; i < 12; i++)
    zero = zero && poison[i] == 0.0f;
  CHECK_MSG(zero, "k = 0 must give zeros");
  /* m = 0 or n = 0: nothing to do */
  why = "unset";
  CHECK_OK(clg_cl_matmul(dev, alloc, NULL, CLG_FLOAT32, false, false, 0, 4, 3, &a, &b, &c, &why));
  CHECK(why == NULL);
}
#endif

int main(void)
{
  clg_test_seed(7);
  if (!clg_test_require_gpus(2))
    return clg_test_summary("test_cl_kernels");
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *set = NULL;
  CHECK_OK(clg_devices_new(&cfg, &set));
  if (!set)
    return clg_test_summary("test_cl_kernels");
  clg_device *host = clg_devices_at(set, 0), *d0 = clg_devices_at(set, 1);
  clg_device *d1 = clg_devices_at(set, 2);
  /* Two devices, or two parts of one (CLGRAPH_VIRTUAL_DEVICES: the native mode). */
  CHECK((clg_cl_device_id(d0) == clg_cl_device_id(d1)) == (clg_test_parts() > 1));
  CHECK(d0->info.has_fp64); /* PoCL's CPU devices have fp64: the double tests below run */

  arena ar0, ar1;
  if (!arena_init(&ar0, d0, 32u << 20) || !arena_init(&ar1, d1, 48u << 20))
    return clg_test_summary("test_cl_kernels");

  CHECK_OK(clg_cl_prepare(d0));
  CHECK_OK(clg_cl_prepare(d1));
  test_binary(d0, &ar0);
  test_binary(d1, &ar1);
  test_addn(d1, &ar1);
  test_addn(d0, &ar0);
  test_elementwise_errors(d0, host, &ar0);
  test_concurrent(d0, d1, &ar0, &ar1);
  measure_overhead(d0, &ar0);

  CHECK(clg_backend_supported("Add", CLG_FLOAT64, d0));
#ifdef CLG_HAVE_CLBLAST
  CHECK(clg_backend_supported("MatMul", CLG_FLOAT32, d0));
  CHECK(clg_backend_supported("MatMul", CLG_FLOAT64, d1));
  clg_memory_options mo;
  memset(&mo, 0, sizeof mo);
  mo.allow_growth = 1; /* reserving the whole limit would touch 2 GiB per device */
  clg_allocator *al0 = NULL, *al1 = NULL;
  CHECK_OK(clg_allocator_new(d0, &mo, &al0));
  CHECK_OK(clg_allocator_new(d1, &mo, &al1));
  if (al0 && al1) {
    uint64_t t0 = clg_now_ns();
    CHECK_OK(clg_cl_warm_matmul(d0, CLG_FLOAT32));
    CHECK_OK(clg_cl_warm_matmul(d0, CLG_FLOAT64));
    printf("MatMul warm-up (float, double) on %s: %.2f s\n", d0->info.name,
           (double)(clg_now_ns() - t0) * 1e-9);
    test_matmul(d0, d1, al0, al1, &ar0, &ar1);
    test_matmul_errors(d0, al0, &ar0);
  }
  clg_allocator_destroy(al0);
  clg_allocator_destroy(al1);
#else
  /* Built without CLBlast: MatMul has no OpenCL kernel, and says so. */
  CHECK(!clg_backend_supported("MatMul", CLG_FLOAT32, d0));
  CHECK(!clg_backend_supported("MatMul", CLG_FLOAT64, d0));
  CHECK(!clg_backend_supported("MatMul", CLG_FLOAT16, d0));
  {
    arena_reset(&ar0);
    clg_block a = arena_block(&ar0, 64), b = arena_block(&ar0, 64), c = arena_block(&ar0, 64);
    CHECK_CODE(clg_cl_matmul(d0, NULL, NULL, CLG_FLOAT32, false, false, 2, 2, 2, &a, &b, &c, NULL),
               CLG_UNIMPLEMENTED);
    CHECK_CONTAINS(clg_last_error(), "needs CLBlast");
    CHECK_CODE(clg_cl_warm_matmul(d0, CLG_FLOAT32), CLG_UNIMPLEMENTED);
    (void)check_matmul;
  }
#endif
  CHECK(clg_backend_supported("MatMul", CLG_FLOAT32, host));
  CHECK(clg_backend_supported("MatMul", CLG_FLOAT16, host));
  CHECK(!clg_backend_supported("Add", CLG_FLOAT16, d0));
  CHECK(clg_backend_supported("Identity", CLG_FLOAT16, d0));

  test_kept_binaries(&cfg);

  clReleaseMemObject(ar0.mem);
  clReleaseMemObject(ar1.mem);
  clg_cl_release_all();
  /* Usable again after a release: programs are rebuilt on demand. */
  CHECK_OK(clg_cl_prepare(d0));
  clg_cl_release_all();
  clg_devices_free(set);
  return clg_test_summary("test_cl_kernels");
}
