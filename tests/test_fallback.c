/* MatMul fallbacks, through sessions on real PoCL devices.
 *
 * With CLBlast: a MatMul that CLBlast cannot run on its device still runs there as far as
 * the graph is concerned: its inputs come down to the host, the host kernel computes it,
 * the result goes back up, and one warning per device and reason says so. PoCL has no
 * cl_khr_fp16, so float16 MatMuls take that path for real (CLBlastNoHalfPrecision); PoCL
 * has fp64, so the "nofp64" variant makes CLBlast refuse double with the diagnostic switch
 * CLGRAPH_CLBLAST_DISABLE=double, and float64 MatMuls take the same path.
 * Without CLBlast: MatMul has no OpenCL kernel; an explicit GPU MatMul is TensorFlow's "no
 * supported kernel" error, and soft placement moves it to CPU:0.
 *
 * CLBlast prints "CLBlast: Run-time error" lines to stderr for the refused calls: expected.
 */
// ctest: half
// ctest: nofp64 CLGRAPH_CLBLAST_DISABLE=double
#include <math.h>
#include <stdlib.h>

#include "core/core.h"
#include "testutil.h"

#define GPU_FULL "/job:localhost/replica:0/task:0/device:GPU:"
#define CPU_FULL "/job:localhost/replica:0/task:0/device:CPU:0"
#define FALLBACK_GPU(i) "MatMul on " GPU_FULL #i " runs on the host instead: "

static bool double_disabled; /* CLGRAPH_CLBLAST_DISABLE names double (the nofp64 variant) */

static int count(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* A MatMul graph: placeholders a and b and the product, all built under `device` (NULL:
 * no device scope). With `extra` a second product of the same inputs is built under it
 * (another device, or the same one). */
typedef struct mm_graph {
  clg_graph *g;
  clg_node *a, *b, *mm, *mm2;
  size_t m, n, k;
  bool ta, tb;
} mm_graph;

static bool build(mm_graph *t, clg_dtype dt, const char *device, const char *extra, size_t m,
                  size_t n, size_t k, bool ta, bool tb)
{
  memset(t, 0, sizeof *t);
  t->m = m, t->n = n, t->k = k, t->ta = ta, t->tb = tb;
  t->g = clg_graph_new();
  if (!t->g)
    return false;
  int64_t da[2] = {(int64_t)(ta ? k : m), (int64_t)(ta ? m : k)};
  int64_t db[2] = {(int64_t)(tb ? n : k), (int64_t)(tb ? k : n)};
  if (device)
    CHECK_OK(clg_graph_push_device(t->g, device));
  t->a = clg_placeholder(t->g, "a", dt, 2, da);
  t->b = clg_placeholder(t->g, "b", dt, 2, db);
  t->mm = clg_matmul(t->g, "mm", t->a, t->b, ta, tb);
  if (device)
    CHECK_OK(clg_graph_pop_device(t->g));
  if (extra) {
    CHECK_OK(clg_graph_push_device(t->g, extra));
    t->mm2 = clg_matmul(t->g, "mm2", t->a, t->b, ta, tb);
    CHECK_OK(clg_graph_pop_device(t->g));
  }
  CHECK_MSG(clg_graph_status(t->g) == CLG_OK, "building the graph: %s", clg_graph_error(t->g));
  return clg_graph_status(t->g) == CLG_OK;
}

static double value(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT16:
    return clg_half_to_double(((const uint16_t *)p)[i]);
  case CLG_FLOAT32:
    return ((const float *)p)[i];
  case CLG_FLOAT64:
    return ((const double *)p)[i];
  default:
    break;
  }
  return NAN;
}

/* Fresh inputs: half gets integers in [-4, 4] (every product and sum of up to 128 of them
 * is exact in half), the others uniform values in [-1, 1). */
static clg_tensor *input(const clg_node *p)
{
  int64_t dims[2] = {clg_node_dim(p, 0), clg_node_dim(p, 1)};
  clg_dtype dt = clg_node_dtype(p);
  clg_tensor *t = clg_tensor_new(dt, 2, dims, NULL);
  if (!t)
    return NULL;
  size_t count = clg_tensor_count(t);
  void *d = clg_tensor_data(t);
  for (size_t i = 0; i < count; i++) {
    if (dt == CLG_FLOAT16)
      ((uint16_t *)d)[i] = clg_half_from_double((double)((int)(clg_test_rand() % 9) - 4));
    else if (dt == CLG_FLOAT32)
      ((float *)d)[i] = (float)clg_test_uniform(-1, 1);
    else
      ((double *)d)[i] = clg_test_uniform(-1, 1);
  }
  return t;
}

/* ||out - ref|| / ||ref|| against a long-double product of the inputs; for half (exact
 * inputs) any difference at all is reported as 1. */
static double rel_error(const mm_graph *t, const clg_tensor *a, const clg_tensor *b,
                        const clg_tensor *out)
{
  if (!out || clg_tensor_dtype(out) != clg_node_dtype(t->mm) ||
      clg_tensor_count(out) != t->m * t->n)
    return INFINITY;
  long double num = 0, den = 0;
  bool exact = true;
  for (size_t i = 0; i < t->m; i++)
    for (size_t j = 0; j < t->n; j++) {
      long double s = 0;
      for (size_t p = 0; p < t->k; p++)
        s += (long double)value(a, t->ta ? p * t->m + i : i * t->k + p) *
             value(b, t->tb ? j * t->k + p : p * t->n + j);
      long double d = value(out, i * t->n + j) - s;
      exact = exact && d == 0;
      num += d * d;
      den += s * s;
    }
  if (clg_tensor_dtype(out) == CLG_FLOAT16)
    return exact ? 0.0 : 1.0;
  return den > 0 ? (double)sqrtl(num / den) : (double)sqrtl(num);
}

/* Runs the graph with fresh inputs, fetching `fetch`, and checks each result. */
static void run_and_check(clg_session *s, const mm_graph *t, int nf, clg_node *const *fetch,
                          double tol, const char *what)
{
  clg_tensor *feeds[2] = {input(t->a), input(t->b)};
  clg_node *const feed_nodes[2] = {t->a, t->b};
  clg_tensor *out[2] = {NULL, NULL};
  CHECK(feeds[0] && feeds[1]);
  if (feeds[0] && feeds[1]) {
    CHECK_OK(clg_session_run(s, 2, feed_nodes, feeds, nf, fetch, out));
    for (int i = 0; i < nf; i++) {
      double err = rel_error(t, feeds[0], feeds[1], out[i]);
      CHECK_MSG(err < tol, "%s, fetch %s: relative error %g (want < %g)", what,
                clg_node_name(fetch[i]), err, tol);
      clg_tensor_free(out[i]);
    }
  }
  clg_tensor_free(feeds[0]);
  clg_tensor_free(feeds[1]);
}

static void check_device(clg_session *s, const clg_node *n, const char *want)
{
  const char *dev = clg_session_node_device(s, n);
  CHECK_MSG(dev && strcmp(dev, want) == 0, "'%s' placed on %s, want %s", clg_node_name(n),
            dev ? dev : "(null)", want);
}

#ifdef CLG_HAVE_CLBLAST

/* The fallback for one dtype: runs on GPU:0 three times (one warning naming `reason`),
 * then on GPU:1 (a second warning), then both again (nothing new). Transposed and odd
 * shapes; a second product on the same device and reason adds no warning either. */
static void check_fallback(clg_dtype dt, const char *reason, double tol)
{
  mm_graph t;
  if (!build(&t, dt, "/device:GPU:0", "/device:GPU:1", 37, 23, 61, true, false)) {
    clg_graph_free(t.g);
    return;
  }
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.warm_matmul = 1; /* warming a MatMul CLBlast refuses is not an error */
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(t.g, &opt, &s));
  if (!s) {
    clg_graph_free(t.g);
    return;
  }
  check_device(s, t.mm, GPU_FULL "0");
  check_device(s, t.mm2, GPU_FULL "1");
  check_device(s, t.a, GPU_FULL "0");

  clg_test_log_capture_start(CLG_LOG_WARNING);
  for (int run = 0; run < 3; run++)
    run_and_check(s, &t, 1, &t.mm, tol, "GPU:0");
  const char *log = clg_test_log_capture_stop();
  printf("%s MatMul on GPU:0, 3 runs, logged: %s", clg_dtype_name(dt), log);
  CHECK_MSG(count(log, FALLBACK_GPU(0)) == 1 && count(log, "\n") == 1,
            "want one fallback warning for GPU:0 after 3 runs, got:\n%s", log);
  CHECK_CONTAINS(log, reason);
  CHECK(count(log, FALLBACK_GPU(1)) == 0);

  /* Another device: its own warning, once. */
  clg_test_log_capture_start(CLG_LOG_WARNING);
  run_and_check(s, &t, 1, &t.mm2, tol, "GPU:1");
  clg_node *both[2] = {t.mm, t.mm2};
  run_and_check(s, &t, 2, both, tol, "GPU:0 and GPU:1");
  log = clg_test_log_capture_stop();
  CHECK_MSG(count(log, FALLBACK_GPU(1)) == 1 && count(log, "\n") == 1,
            "want one fallback warning for GPU:1, got:\n%s", log);
  CHECK_CONTAINS(log, reason);

  /* A larger product takes CLBlast's indirect GEMM (the *WithTempBuffer routine: scratch
   * from the allocator, then CLBlast refuses) where the one above took the direct one. In
   * another session of the same process state, on the device already warned about: the
   * same reason, so no new warning, and no scratch left behind. */
  mm_graph u;
  clg_session *s2 = NULL;
  if (build(&u, dt, "/device:GPU:0", "/device:GPU:0", 300, 260, 100, false, true))
    CHECK_OK(clg_session_new(u.g, NULL, &s2));
  if (s2) {
    clg_node *fetch[2] = {u.mm, u.mm2};
    clg_memory_stats st1, st2;
    clg_test_log_capture_start(CLG_LOG_WARNING);
    run_and_check(s2, &u, 2, fetch, tol, "two larger MatMuls on GPU:0");
    CHECK_OK(clg_session_memory_stats(s2, "/device:GPU:0", &st1));
    run_and_check(s2, &u, 2, fetch, tol, "again");
    run_and_check(s, &t, 1, &t.mm, tol, "the first session again");
    CHECK_OK(clg_session_memory_stats(s2, "/device:GPU:0", &st2));
    log = clg_test_log_capture_stop();
    CHECK_MSG(log[0] == '\0', "GPU:0 was warned about already, yet:\n%s", log);
    CHECK_MSG(st2.bytes_in_use == st1.bytes_in_use && st2.live_allocs == st1.live_allocs,
              "GPU:0 holds %llu bytes in %llu blocks, %llu in %llu before",
              (unsigned long long)st2.bytes_in_use, (unsigned long long)st2.live_allocs,
              (unsigned long long)st1.bytes_in_use, (unsigned long long)st1.live_allocs);
  }
  clg_session_free(s);
  clg_session_free(s2);
  clg_graph_free(t.g);

  /* The warnings live with the process state: after the last session is freed, a new
   * session warns again, once. */
  s2 = NULL;
  if (u.g && clg_graph_status(u.g) == CLG_OK)
    CHECK_OK(clg_session_new(u.g, NULL, &s2));
  if (s2) {
    clg_test_log_capture_start(CLG_LOG_WARNING);
    for (int run = 0; run < 2; run++)
      run_and_check(s2, &u, 1, &u.mm2, tol, "a new process state");
    log = clg_test_log_capture_stop();
    CHECK_MSG(count(log, FALLBACK_GPU(0)) == 1 && count(log, "\n") == 1,
              "want one warning for GPU:0 in a new process state, got:\n%s", log);
    CHECK_CONTAINS(log, reason);
    clg_session_free(s2);
  }
  clg_graph_free(u.g);
}

/* An unspecified MatMul goes to GPU:0 (the default rule: the lowest-id GPU with a kernel)
 * and falls back the same way. Its result then moves on to GPU:1 through an Identity
 * (a plain buffer copy, for any dtype). */
static void check_unspecified(clg_dtype dt, const char *reason, double tol)
{
  mm_graph t;
  if (!build(&t, dt, NULL, NULL, 9, 1, 17, false, false)) {
    clg_graph_free(t.g);
    return;
  }
  CHECK_OK(clg_graph_push_device(t.g, "/device:GPU:1"));
  clg_node *id = clg_identity(t.g, "id", t.mm);
  CHECK_OK(clg_graph_pop_device(t.g));
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(t.g, NULL, &s));
  if (s && id) {
    check_device(s, t.mm, GPU_FULL "0");
    check_device(s, t.a, GPU_FULL "0");
    check_device(s, id, GPU_FULL "1");
    clg_test_log_capture_start(CLG_LOG_WARNING);
    clg_node *fetch[2] = {t.mm, id};
    run_and_check(s, &t, 2, fetch, tol, "unspecified MatMul");
    run_and_check(s, &t, 2, fetch, tol, "unspecified MatMul, run 2");
    const char *log = clg_test_log_capture_stop();
    CHECK_MSG(count(log, FALLBACK_GPU(0)) == 1 && count(log, "\n") == 1,
              "want one fallback warning for GPU:0, got:\n%s", log);
    CHECK_CONTAINS(log, reason);
  }
  clg_session_free(s);
  clg_graph_free(t.g);
}

/* A dtype CLBlast does run: on the device, no warning. */
static void check_no_fallback(clg_dtype dt, double tol)
{
  mm_graph t;
  if (!build(&t, dt, "/device:GPU:0", NULL, 31, 17, 45, false, true)) {
    clg_graph_free(t.g);
    return;
  }
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(t.g, NULL, &s));
  if (s) {
    clg_test_log_capture_start(CLG_LOG_WARNING);
    run_and_check(s, &t, 1, &t.mm, tol, clg_dtype_name(dt));
    const char *log = clg_test_log_capture_stop();
    CHECK_MSG(log[0] == '\0', "CLBlast ran %s, yet: %s", clg_dtype_name(dt), log);
    clg_session_free(s);
  }
  clg_graph_free(t.g);
}

#else /* !CLG_HAVE_CLBLAST */

/* No OpenCL MatMul at all: explicit GPU placement fails, soft placement and the default
 * rule take CPU:0, and nothing warns (nothing falls back at run time). */
static void check_without_clblast(clg_dtype dt, double tol)
{
  mm_graph t;
  if (!build(&t, dt, "/device:GPU:0", NULL, 37, 23, 61, true, false)) {
    clg_graph_free(t.g);
    return;
  }
  clg_session *s = NULL;
  CHECK_CODE(clg_session_new(t.g, NULL, &s), CLG_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK_CONTAINS(clg_last_error(), "Cannot assign a device to node 'mm': Could not satisfy "
                                   "explicit device specification '/device:GPU:0' because no "
                                   "supported kernel for GPU devices is available");
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = 1;
  CHECK_OK(clg_session_new(t.g, &opt, &s));
  if (s) {
    check_device(s, t.mm, CPU_FULL);
    check_device(s, t.a, GPU_FULL "0"); /* the inputs stay where they were asked to be */
    clg_test_log_capture_start(CLG_LOG_WARNING);
    for (int run = 0; run < 2; run++)
      run_and_check(s, &t, 1, &t.mm, tol, "soft-placed MatMul");
    const char *log = clg_test_log_capture_stop();
    CHECK_MSG(count(log, "\n") == 0, "unexpected warnings: %s", log);
    clg_session_free(s);
  }
  clg_graph_free(t.g);

  if (!build(&t, dt, NULL, NULL, 9, 1, 17, false, false)) {
    clg_graph_free(t.g);
    return;
  }
  CHECK_OK(clg_session_new(t.g, NULL, &s));
  if (s) {
    check_device(s, t.mm, CPU_FULL);
    run_and_check(s, &t, 1, &t.mm, tol, "unspecified MatMul");
    clg_session_free(s);
  }
  clg_graph_free(t.g);
}

#endif

int main(void)
{
  clg_test_seed(5);
  const char *disable = getenv("CLGRAPH_CLBLAST_DISABLE");
  double_disabled = disable && strstr(disable, "double");
  if (!clg_test_require_gpus(2))
    return clg_test_summary("test_fallback");
  const double half_tol = 0.5; /* rel_error is 0 or 1 for half: exact results only */
#ifdef CLG_HAVE_CLBLAST
  const char *no_half = "CLBlastNoHalfPrecision (-2045)";
  check_fallback(CLG_FLOAT16, no_half, half_tol);
  check_unspecified(CLG_FLOAT16, no_half, half_tol);
  if (double_disabled) {
    const char *no_double = "CLBlast disabled for double by CLGRAPH_CLBLAST_DISABLE";
    check_fallback(CLG_FLOAT64, no_double, 1e-12);
    check_unspecified(CLG_FLOAT64, no_double, 1e-12);
    check_no_fallback(CLG_FLOAT32, 1e-5); /* only double is disabled */
  } else {
    check_no_fallback(CLG_FLOAT64, 1e-12);
  }
#else
  check_without_clblast(CLG_FLOAT16, half_tol);
  check_without_clblast(double_disabled ? CLG_FLOAT64 : CLG_FLOAT32,
                        double_disabled ? 1e-12 : 1e-5);
#endif
  return clg_test_summary("test_fallback");
}
