// ctest-serial: the towers' overlap is measured in device time, which other tests' load distorts
/* Execution across devices: feeds and fetches, automatic copies between CPU:0 and the
 * GPUs, tensor lifetimes, towers overlapping on two devices (shown with the trace's event
 * times), running out of device memory and recovering, and bad input to runs. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "runtime/runtime.h"
#include "testutil.h"

static const int64_t d22[2] = {2, 2};

static clg_tensor *f32(int rank, const int64_t *dims, const float *v)
{
  return clg_tensor_new(CLG_FLOAT32, rank, dims, v);
}

static void check_values(const clg_tensor *t, const float *want, size_t n)
{
  CHECK(t != NULL);
  if (!t)
    return;
  const float *got = clg_tensor_const_data(t);
  bool same = clg_tensor_count(t) == n;
  for (size_t i = 0; same && i < n; i++)
    same = got[i] == want[i];
  CHECK_MSG(same, "values differ (first: got %g want %g)", (double)got[0], (double)want[0]);
}

/* A chain through every kind of copy: CPU -> GPU:0 -> GPU:1 -> CPU, fed and fetched many
 * times; memory returns to the cached constants after each run. */
static void test_copies_and_feeds(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, d22);
  CHECK_OK(clg_graph_pop_device(g));
  float k[4] = {1, 2, 3, 4};
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *c = clg_const_f32(g, "k", 2, d22, k);
  clg_node *a = clg_add(g, "a", x, c);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *m = clg_mul(g, "m", a, a);
  clg_node *mm = clg_matmul(g, "mm", m, c, false, true);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *out = clg_sub(g, "out", mm, a);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_status(g));

  clg_session_options opt;
  clg_session_options_init(&opt);
#ifndef CLG_HAVE_CLBLAST
  opt.allow_soft_placement = 1; /* 'mm' on GPU:1 falls back to CPU:0 */
#endif
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  if (!s) {
    clg_graph_free(g);
    return;
  }
  for (int run = 0; run < 20; run++) {
    float xv[4] = {(float)run, 1, -2, 0.5f};
    clg_tensor *feed = f32(2, d22, xv);
    clg_tensor *res[2] = {NULL, NULL};
    clg_node *fetch[2] = {out, m};
    CHECK_OK(clg_session_run(s, 1, &x, &feed, 2, fetch, res));
    float av[4], mv[4], mmv[4], want[4];
    for (int i = 0; i < 4; i++) {
      av[i] = xv[i] + k[i];
      mv[i] = av[i] * av[i];
    }
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++)
        mmv[i * 2 + j] = mv[i * 2] * k[j * 2] + mv[i * 2 + 1] * k[j * 2 + 1];
    for (int i = 0; i < 4; i++)
      want[i] = mmv[i] - av[i];
    check_values(res[0], want, 4);
    check_values(res[1], mv, 4);
    clg_tensor_free(res[0]);
    clg_tensor_free(res[1]);
    clg_tensor_free(feed);
  }
  /* The cached Const (one 256-byte block, on GPU:0) and the plan's arenas outlive a run,
   * and nothing else does. */
  const char *devices[3] = {"/device:GPU:0", "/device:GPU:1", "/cpu:0"};
  uint64_t in_use = 0;
  for (int i = 0; i < 3; i++) {
    clg_memory_stats st;
    CHECK_OK(clg_session_memory_stats(s, devices[i], &st));
    in_use += st.bytes_in_use;
  }
  clg_plan_stats ps;
  CHECK_OK(clg_session_plan_stats(s, &ps));
  CHECK_MSG(in_use == 256 + ps.arena_bytes, "%llu bytes in use after the runs, want 256 + %llu",
            (unsigned long long)in_use, (unsigned long long)ps.arena_bytes);
  CHECK(ps.num_plans == 1);
  clg_session_free(s);
  clg_graph_free(g);
}

#ifdef CLG_HAVE_CLBLAST /* the towers are MatMuls on GPU:2 and GPU:3 */
/* Two towers of 192x192 products on GPU:2 and GPU:3: their device-time intervals overlap. */
static void test_towers_overlap(void)
{
  enum { N = 192 };
  int64_t dims[2] = {N, N};
  float *v = malloc(sizeof(float) * N * N);
  for (int i = 0; i < N * N; i++)
    v[i] = (float)((i % 7) - 3) / 4.0f;
  clg_graph *g = clg_graph_new();
  clg_node *tower[2], *first[2];
  const char *gpus[2] = {"/device:GPU:2", "/device:GPU:3"};
  for (int t = 0; t < 2; t++) {
    CHECK_OK(clg_graph_push_device(g, gpus[t]));
    clg_node *a = clg_const_f32(g, NULL, 2, dims, v);
    clg_node *p = first[t] = clg_matmul(g, NULL, a, a, false, false);
    for (int r = 0; r < 3; r++)
      p = clg_matmul(g, NULL, p, a, false, true);
    tower[t] = p;
    CHECK_OK(clg_graph_pop_device(g));
  }
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *sum = clg_add_n(g, NULL, 2, tower);
  CHECK_OK(clg_graph_pop_device(g));
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  if (s) {
    clg_tensor *out = NULL;
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &sum, &out)); /* warm-up: compiles */
    clg_tensor_free(out);
    CHECK_CODE(clg_session_node_times(s, sum, &(uint64_t){0}, &(uint64_t){0}),
               CLG_FAILED_PRECONDITION);
    CHECK_OK(clg_session_set_tracing(s, 1));
    bool overlapped = false;
    /* A tower runs from its first MatMul's start to its last one's end. PoCL's devices
     * share one thread pool, so on a loaded machine a run can serialise them: try a few. */
    for (int attempt = 0; attempt < 20 && !overlapped; attempt++) {
      out = NULL;
      CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &sum, &out));
      clg_tensor_free(out);
      uint64_t start[2] = {0, 0}, end[2] = {0, 0}, ignore;
      for (int t = 0; t < 2; t++) {
        CHECK_OK(clg_session_node_times(s, first[t], &start[t], &ignore));
        CHECK_OK(clg_session_node_times(s, tower[t], &ignore, &end[t]));
        CHECK(start[t] < end[t]);
      }
      overlapped = start[0] < end[1] && start[1] < end[0];
      printf("towers: GPU:2 [0, %.3f] GPU:3 [%.3f, %.3f] ms (relative to GPU:2's start)\n",
             (double)(end[0] - start[0]) / 1e6, ((double)start[1] - (double)start[0]) / 1e6,
             ((double)end[1] - (double)start[0]) / 1e6);
    }
    CHECK_MSG(overlapped, "the two towers never ran at the same time");
  }
  clg_session_free(s);
  clg_graph_free(g);
  free(v);
}
#endif

/* Virtual GPU:0 limited to 1 MiB: a 4 MiB tensor is RESOURCE_EXHAUSTED naming the node,
 * and the session runs a graph that fits afterwards. */
static void test_out_of_memory(void)
{
  clg_graph *g = clg_graph_new();
  int64_t big[2] = {1024, 1024};
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, big);
  clg_node *y = clg_add(g, "y", x, x);
  clg_node *small = clg_placeholder(g, "small", CLG_FLOAT32, 2, d22);
  clg_node *z = clg_add(g, "z", small, small);
  CHECK_OK(clg_graph_pop_device(g));
  clg_session_options opt;
  clg_session_options_init(&opt);
  clg_virtual_devices vd = {1, {1.0}};
  opt.num_virtual = 1;
  opt.virtual_devices = &vd;
  opt.visible_device_list = "0";
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  if (s) {
    clg_tensor *feed = clg_tensor_new(CLG_FLOAT32, 2, big, NULL);
    clg_tensor *out = NULL;
    clg_test_log_capture_start(CLG_LOG_WARNING);
    CHECK_CODE(clg_session_run(s, 1, &x, &feed, 1, &y, &out), CLG_RESOURCE_EXHAUSTED);
    clg_test_log_capture_stop();
    CHECK_CONTAINS(clg_last_error(), "node '");
    CHECK_CONTAINS(clg_last_error(), "OOM when allocating tensor with shape[1024,1024] and type "
                                     "float on /job:localhost/replica:0/task:0/device:GPU:0");
    CHECK(out == NULL);
    float sv[4] = {1, 2, 3, 4}, want[4] = {2, 4, 6, 8};
    clg_tensor *sf = f32(2, d22, sv);
    CHECK_OK(clg_session_run(s, 1, &small, &sf, 1, &z, &out));
    check_values(out, want, 4);
    clg_tensor_free(out);
    clg_tensor_free(sf);
    clg_tensor_free(feed);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

static void test_bad_runs(void)
{
  clg_graph *g = clg_graph_new(), *other = clg_graph_new();
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, d22);
  clg_node *y = clg_identity(g, "y", x);
  clg_node *foreign = clg_placeholder(other, "f", CLG_FLOAT32, 2, d22);
  clg_session *s = NULL;
  CHECK_CODE(clg_session_new(NULL, NULL, &s), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_new(g, NULL, NULL), CLG_INVALID_ARGUMENT);
  CHECK_OK(clg_session_new(g, NULL, &s));
  clg_tensor *out = NULL;
  float v[4] = {1, 2, 3, 4};
  int64_t d3[2] = {2, 3};
  clg_tensor *good = f32(2, d22, v), *wrong_shape = clg_tensor_new(CLG_FLOAT32, 2, d3, NULL);
  clg_tensor *wrong_type = clg_tensor_new(CLG_FLOAT64, 2, d22, NULL);
  CHECK_CODE(clg_session_run(NULL, 0, NULL, NULL, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "You must feed a value for placeholder tensor 'x' with dtype float "
                              "and shape [2,2]");
  CHECK_CODE(clg_session_run(s, 1, &x, &wrong_shape, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "Cannot feed value of shape [2,3] for 'x', which has shape [2,2]");
  CHECK_CODE(clg_session_run(s, 1, &x, &wrong_type, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "Cannot feed value of type double for 'x', which has type float");
  CHECK_CODE(clg_session_run(s, 1, &foreign, &good, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "feed_nodes[0] ('f') is not a node of this session's graph");
  CHECK_CODE(clg_session_run(s, 1, &x, &good, 1, &foreign, &out), CLG_INVALID_ARGUMENT);
  clg_node *twice[2] = {x, x};
  clg_tensor *twice_v[2] = {good, good};
  CHECK_CODE(clg_session_run(s, 2, twice, twice_v, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "'x' is fed twice (feeds 0 and 1)");
  clg_node *null_node = NULL;
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &null_node, &out), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_run(s, 1, &x, NULL, 1, &y, &out), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &y, NULL), CLG_INVALID_ARGUMENT);
  CHECK(out == NULL);
  /* After all that, the session still runs. Feeding a non-placeholder is allowed. */
  CHECK_OK(clg_session_run(s, 1, &x, &good, 1, &y, &out));
  check_values(out, v, 4);
  clg_tensor_free(out);
  out = NULL;
  CHECK_OK(clg_session_run(s, 1, &y, &good, 1, &y, &out));
  check_values(out, v, 4);
  clg_tensor_free(out);
  /* A graph that grows after the session was made is placed again at the next run. */
  clg_node *z = clg_add(g, "z", y, y);
  out = NULL;
  CHECK_OK(clg_session_run(s, 1, &x, &good, 1, &z, &out));
  float twicev[4] = {2, 4, 6, 8};
  check_values(out, twicev, 4);
  clg_tensor_free(out);
  /* A builder error on the graph stops runs. */
  clg_node *p3 = clg_placeholder(g, "p3", CLG_FLOAT32, 2, d3);
  CHECK(clg_matmul(g, "bad", p3, p3, false, false) == NULL);
  CHECK_CODE(clg_session_run(s, 1, &x, &good, 1, &z, &out), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "the graph has a builder error: ");
  clg_session_free(s);
  clg_session_free(NULL);
  clg_tensor_free(good);
  clg_tensor_free(wrong_shape);
  clg_tensor_free(wrong_type);
  clg_graph_free(g);
  clg_graph_free(other);
}

/* warm_matmul compiles the MatMul kernels at session creation; runs then work as usual. */
static void test_warm_matmul(void)
{
  clg_graph *g = clg_graph_new();
  float v[4] = {1, 2, 3, 4}, want[4] = {7, 10, 15, 22};
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *a = clg_const_f32(g, "a", 2, d22, v);
  clg_node *m = clg_matmul(g, "m", a, a, false, false);
  CHECK_OK(clg_graph_pop_device(g));
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.warm_matmul = 1;
  opt.allow_soft_placement = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  clg_tensor *out = NULL;
  if (s)
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &m, &out));
  check_values(out, want, 4);
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
}

/* A fetched result's buffer is reused by the next run's result of the same shape while the
 * session lives (no fresh pages per step), and nothing is kept once the last session goes.
 * (512 KiB: below the pinned memory's 1 MiB floor.) */
static void test_fetch_buffers_recycled(void)
{
  static float v[256 * 512];
  for (int i = 0; i < 256 * 512; i++)
    v[i] = (float)(i % 7);
  const int64_t dims[2] = {256, 512};
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *a = clg_const_f32(g, "a", 2, dims, v);
  clg_node *sum = clg_add(g, "sum", a, a);
  CHECK_OK(clg_graph_pop_device(g));
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  clg_tensor *out1 = NULL, *out2 = NULL;
  if (s) {
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &sum, &out1));
    const void *p = out1 ? clg_tensor_const_data(out1) : NULL;
    CHECK(out1 && !clg_tensor_is_provided(out1));
    clg_tensor_free(out1);
    CHECK(clg_tensor_recycled_bytes() == sizeof v);
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &sum, &out2));
    CHECK(out2 && clg_tensor_const_data(out2) == p);
    CHECK(out2 && ((const float *)clg_tensor_const_data(out2))[8] == 2.0f);
    clg_tensor_free(out2);
  }
  clg_session_free(s);
  CHECK(clg_tensor_recycled_bytes() == 0);
  clg_graph_free(g);
}

/* A session whose graph is one Add on GPU:0 fed by placeholders (Add: builds without
 * CLBlast run this too). */
static clg_session *gpu_session(clg_graph **g, clg_node **a, clg_node **b, clg_node **m)
{
  const int64_t dims[2] = {512, 512};
  *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(*g, "/device:GPU:0"));
  *a = clg_placeholder(*g, "a", CLG_FLOAT32, 2, dims);
  *b = clg_placeholder(*g, "b", CLG_FLOAT32, 2, dims);
  *m = clg_add(*g, "m", *a, *b);
  CHECK_OK(clg_graph_pop_device(*g));
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(*g, &opt, &s));
  return s;
}

/* While a session lives, tensors of 1 MiB and more take pinned host memory (mapped
 * CL_MEM_ALLOC_HOST_PTR buffers of GPU:0's context): feeds and fetches of a GPU Add give
 * the right values, a fetched result outlives the session, freed buffers are reused, and
 * CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB caps what is pinned (0: none). */
static void test_pinned_tensors(void)
{
  const int64_t dims[2] = {512, 512}, half[2] = {256, 512};
  float *va = malloc(sizeof(float) * 512 * 512), *vb = malloc(sizeof(float) * 512 * 512);
  for (int i = 0; i < 512 * 512; i++) {
    va[i] = (float)(i % 5) - 2;
    vb[i] = (float)(i % 3);
  }
  clg_tensor *before = clg_tensor_new(CLG_FLOAT32, 2, dims, va); /* no session yet */
  CHECK(before && !clg_tensor_is_provided(before));
  clg_graph *g;
  clg_node *a, *b, *m;
  clg_session *s = gpu_session(&g, &a, &b, &m);
  clg_tensor *ta = clg_tensor_new(CLG_FLOAT32, 2, dims, va);
  clg_tensor *tb = clg_tensor_new(CLG_FLOAT32, 2, dims, vb);
  clg_tensor *small = clg_tensor_new(CLG_FLOAT32, 2, half, NULL);
  CHECK(ta && clg_tensor_is_provided(ta) && tb && clg_tensor_is_provided(tb));
  CHECK(small && !clg_tensor_is_provided(small));
  CHECK(ta && memcmp(clg_tensor_const_data(ta), va, sizeof(float) * 512 * 512) == 0);
  clg_tensor *out = NULL, *feeds[2] = {ta, tb}, *ref = NULL;
  clg_node *ph[2] = {a, b};
  if (s) {
    CHECK_OK(clg_session_run(s, 2, ph, feeds, 1, &m, &out));
    CHECK(out && clg_tensor_is_provided(out));
    clg_tensor *plain[2] = {before, tb}; /* the same product from plain memory */
    CHECK_OK(clg_session_run(s, 2, ph, plain, 1, &m, &ref));
  }
  CHECK(out && ref &&
        memcmp(clg_tensor_const_data(out), clg_tensor_const_data(ref), sizeof(float) * 512 * 512) ==
            0);
  const float want = va[512 * 512 - 1] + vb[512 * 512 - 1];
  CHECK(out && ((const float *)clg_tensor_const_data(out))[512 * 512 - 1] == want);
  const void *pa = clg_tensor_const_data(ta);
  clg_tensor_free(ta); /* kept for the next tensor of its size */
  clg_tensor *again = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  CHECK(again && clg_tensor_const_data(again) == pa);
  clg_tensor_free(again);
  clg_session_free(s);
  clg_graph_free(g);
  /* The result outlives the session and the device state. */
  CHECK(out && ((const float *)clg_tensor_const_data(out))[512 * 512 - 1] == want);
  clg_tensor *after = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  CHECK(after && !clg_tensor_is_provided(after));
  clg_tensor_free(after);
  clg_tensor_free(out);
  clg_tensor_free(ref);
  clg_tensor_free(tb);
  clg_tensor_free(small);

  /* The limit: 3 MiB holds one 1 MiB tensor and one 2 MiB tensor, not a second 2 MiB. */
  const int64_t two[2] = {1024, 512};
  setenv("CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB", "3", 1);
  s = gpu_session(&g, &a, &b, &m);
  clg_tensor *t1 = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  clg_tensor *t2 = clg_tensor_new(CLG_FLOAT32, 2, two, NULL);
  clg_tensor *t3 = clg_tensor_new(CLG_FLOAT32, 2, two, NULL);
  CHECK(clg_tensor_is_provided(t1) && clg_tensor_is_provided(t2) && !clg_tensor_is_provided(t3));
  const void *p2 = clg_tensor_const_data(t2);
  clg_tensor_free(t3);
  clg_tensor_free(t1); /* both kept: 3 MiB pinned */
  clg_tensor_free(t2);
  t2 = clg_tensor_new(CLG_FLOAT32, 2, two, NULL); /* the kept 2 MiB buffer */
  CHECK(clg_tensor_is_provided(t2) && clg_tensor_const_data(t2) == p2);
  clg_tensor_free(t2);
  const int64_t three[2] = {1536, 512}; /* kept buffers give way to a new size */
  t3 = clg_tensor_new(CLG_FLOAT32, 2, three, NULL);
  CHECK(clg_tensor_is_provided(t3));
  clg_tensor_free(t3);
  clg_session_free(s);
  clg_graph_free(g);
  setenv("CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB", "0", 1);
  s = gpu_session(&g, &a, &b, &m);
  t1 = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  CHECK(t1 && !clg_tensor_is_provided(t1));
  clg_tensor_free(t1);
  clg_session_free(s);
  clg_graph_free(g);
  /* Not a number: a warning, and the default (a quarter of the host's memory). */
  setenv("CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB", "lots", 1);
  clg_test_log_capture_start(CLG_LOG_WARNING);
  s = gpu_session(&g, &a, &b, &m);
  const char *log = clg_test_log_capture_stop();
  CHECK_CONTAINS(log, "CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB=\"lots\" is not a number of MiB; using ");
  t1 = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  CHECK(t1 && clg_tensor_is_provided(t1));
  clg_tensor_free(t1);
  clg_session_free(s);
  clg_graph_free(g);
  unsetenv("CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB");
  clg_tensor_free(before);
  free(va);
  free(vb);
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_execution");
  test_bad_runs();
  test_copies_and_feeds();
  test_out_of_memory();
  test_warm_matmul();
  test_fetch_buffers_recycled();
  test_pinned_tensors();
#ifdef CLG_HAVE_CLBLAST /* the towers are MatMuls on GPU:2 and GPU:3 */
  test_towers_overlap();
#endif
  return clg_test_summary("test_execution");
}
