/* Concurrency, on four PoCL devices (ci/sanitize.sh also runs it under ThreadSanitizer):
 *  - several threads, each with its own sessions (created and freed while the others run,
 *    so the process-wide device state is shared, and created and released under load),
 *    running graphs on shared devices: every result equals the single-threaded one;
 *  - one session run from several threads at once (the API serialises runs of a session):
 *    each thread feeds its own value and gets its own result;
 *  - the allocator of one device and the host allocator driven by several threads: blocks
 *    never overlap (host blocks carry a pattern that must survive), statistics add up;
 *  - the thread-local last error: each thread reads its own message. */
#include <pthread.h>
#include <stdlib.h>

#include "memory/memory.h"
#include "testutil.h"

#define THREADS 4

static const int64_t dims_a[2] = {2, 3}, dims_b[2] = {3, 2}, dims_x[2] = {3, 3};
static const float values[6] = {1, 2, 3, 4, 5, 6};

/* --- graphs ---------------------------------------------------------------------------------- */

/* Graph kind k (0..3):
 *  0: S7, towers on GPU:2 and GPU:3, AddN on the CPU;
 *  1: S3, a and b on the CPU, MatMul on the default GPU;
 *  2: element-wise on GPU:1 and GPU:0 (a device-to-device copy) with a fed x;
 *  3: a MatMul chain on GPU:<thread> with a fed x, and the same on the CPU. */
typedef struct work {
  clg_graph *g;
  clg_node *x;     /* placeholder [3,3] or NULL */
  clg_node *fetch; /* the result */
} work;

static void build(work *w, int kind, int thread)
{
  char dev[32];
  memset(w, 0, sizeof *w);
  w->g = clg_graph_new();
  if (kind == 0) {
    clg_node *mm[2];
    for (int i = 0; i < 2; i++) {
      snprintf(dev, sizeof dev, "/device:GPU:%d", 2 + i);
      clg_graph_push_device(w->g, dev);
      clg_node *a = clg_const_f32(w->g, NULL, 2, dims_a, values);
      clg_node *b = clg_const_f32(w->g, NULL, 2, dims_b, values);
      mm[i] = clg_matmul(w->g, NULL, a, b, false, false);
      clg_graph_pop_device(w->g);
    }
    clg_graph_push_device(w->g, "/cpu:0");
    w->fetch = clg_add_n(w->g, NULL, 2, mm);
    clg_graph_pop_device(w->g);
  } else if (kind == 1) {
    clg_graph_push_device(w->g, "/cpu:0");
    clg_node *a = clg_const_f32(w->g, "a", 2, dims_a, values);
    clg_node *b = clg_const_f32(w->g, "b", 2, dims_b, values);
    clg_graph_pop_device(w->g);
    w->fetch = clg_matmul(w->g, NULL, a, b, false, false);
  } else if (kind == 2) {
    static const float cv[9] = {1, -1, 2, -2, 3, -3, 4, -4, 5};
    clg_graph_push_device(w->g, "/device:GPU:1");
    w->x = clg_placeholder(w->g, "x", CLG_FLOAT32, 2, dims_x);
    clg_node *c = clg_const_f32(w->g, "c", 2, dims_x, cv);
    clg_node *y = clg_add(w->g, "y", w->x, c);
    clg_graph_pop_device(w->g);
    clg_graph_push_device(w->g, "/device:GPU:0");
    clg_node *z = clg_mul(w->g, "z", y, y);
    clg_node *in[3] = {z, y, z};
    w->fetch = clg_add_n(w->g, "s", 3, in);
    clg_graph_pop_device(w->g);
  } else {
    snprintf(dev, sizeof dev, "/device:GPU:%d", thread % 4);
    clg_graph_push_device(w->g, dev);
    w->x = clg_placeholder(w->g, "x", CLG_FLOAT32, 2, dims_x);
    clg_node *m = clg_matmul(w->g, NULL, w->x, w->x, false, true);
    clg_node *m2 = clg_matmul(w->g, NULL, m, w->x, false, false);
    clg_graph_pop_device(w->g);
    clg_graph_push_device(w->g, "/cpu:0");
    clg_node *h = clg_matmul(w->g, NULL, w->x, w->x, false, true);
    clg_node *h2 = clg_matmul(w->g, NULL, h, w->x, false, false);
    clg_graph_pop_device(w->g);
    w->fetch = clg_sub(w->g, NULL, m2, h2); /* zero, computed on two devices */
    clg_node *in[2] = {w->fetch, m2};
    w->fetch = clg_add_n(w->g, NULL, 2, in);
  }
}

/* The fed value for a thread and iteration: small integers, so every result is exact. */
static void feed_values(float *v, int thread, int iter)
{
  for (int i = 0; i < 9; i++)
    v[i] = (float)((thread * 7 + iter * 3 + i) % 5 - 2);
}

/* Runs w once with feed value v; returns the result (caller frees) or NULL. */
static clg_tensor *run_work(clg_session *s, const work *w, const float *v)
{
  clg_tensor *feed = w->x ? clg_tensor_new(CLG_FLOAT32, 2, dims_x, v) : NULL;
  clg_tensor *out = NULL;
  clg_code code = clg_session_run(s, w->x ? 1 : 0, &w->x, &feed, 1, &w->fetch, &out);
  clg_tensor_free(feed);
  if (code != CLG_OK) {
    fprintf(stderr, "run failed: %s: %s\n", clg_code_name(code), clg_last_error());
    return NULL;
  }
  return out;
}

static bool same_tensor(const clg_tensor *a, const clg_tensor *b)
{
  return a && b && clg_tensor_bytes(a) == clg_tensor_bytes(b) &&
         memcmp(clg_tensor_const_data(a), clg_tensor_const_data(b), clg_tensor_bytes(a)) == 0;
}

/* --- many threads, their own sessions ----------------------------------------------------------
 */

#define ITERATIONS 12
#define ROUNDS 2

/* Single-threaded results, [kind][thread][iter]. */
static clg_tensor *expected[4][THREADS][ITERATIONS];

static void compute_expected(void)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  for (int kind = 0; kind < 4; kind++)
    for (int t = 0; t < THREADS; t++) {
      work w;
      build(&w, kind, t);
      clg_session *s = NULL;
      CHECK_OK(clg_session_new(w.g, &opt, &s));
      for (int i = 0; i < ITERATIONS && s; i++) {
        float v[9];
        feed_values(v, t, i);
        expected[kind][t][i] = run_work(s, &w, v);
        CHECK(expected[kind][t][i] != NULL);
      }
      clg_session_free(s);
      clg_graph_free(w.g);
    }
}

typedef struct own_args {
  int thread;
  int failures;
  int runs;
} own_args;

static void *own_sessions_main(void *arg)
{
  own_args *a = arg;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  for (int round = 0; round < ROUNDS; round++) {
    int kind = (a->thread + round) % 4;
    work w;
    build(&w, kind, a->thread);
    clg_session *s = NULL;
    if (clg_session_new(w.g, &opt, &s) != CLG_OK) {
      fprintf(stderr, "thread %d: session: %s\n", a->thread, clg_last_error());
      a->failures++;
    }
    for (int i = 0; i < ITERATIONS && s; i++) {
      float v[9];
      feed_values(v, a->thread, i);
      clg_tensor *out = run_work(s, &w, v);
      a->runs++;
      if (!same_tensor(out, expected[kind][a->thread][i])) {
        fprintf(stderr, "thread %d: graph %d iteration %d differs from the single-threaded run\n",
                a->thread, kind, i);
        a->failures++;
      }
      clg_tensor_free(out);
    }
    clg_session_free(s); /* may release the process-wide state while others start */
    clg_graph_free(w.g);
  }
  return NULL;
}

static void test_own_sessions(void)
{
  compute_expected();
  pthread_t th[THREADS];
  own_args args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (own_args){t, 0, 0};
    CHECK(pthread_create(&th[t], NULL, own_sessions_main, &args[t]) == 0);
  }
  int runs = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(args[t].failures == 0, "thread %d: %d failures", t, args[t].failures);
    runs += args[t].runs;
  }
  CHECK(runs == THREADS * ROUNDS * ITERATIONS);
  printf("own sessions: %d threads, %d runs equal to the single-threaded results\n", THREADS, runs);
  for (int k = 0; k < 4; k++)
    for (int t = 0; t < THREADS; t++)
      for (int i = 0; i < ITERATIONS; i++)
        clg_tensor_free(expected[k][t][i]);
}

/* --- one session, several threads --------------------------------------------------------------
 */

typedef struct shared_args {
  clg_session *s;
  const work *w;
  int thread;
  int failures;
} shared_args;

/* The reference for graph kind 2, computed on the host: y = x + c; z = y*y; z + y + z. */
static void kind2_expected(const float *x, float *out)
{
  static const float cv[9] = {1, -1, 2, -2, 3, -3, 4, -4, 5};
  for (int i = 0; i < 9; i++) {
    float y = x[i] + cv[i];
    out[i] = y * y + y + y * y;
  }
}

static void *shared_session_main(void *arg)
{
  shared_args *a = arg;
  for (int i = 0; i < ITERATIONS * 2; i++) {
    float v[9], want[9];
    feed_values(v, a->thread, i);
    kind2_expected(v, want);
    clg_tensor *out = run_work(a->s, a->w, v);
    if (!out || memcmp(clg_tensor_const_data(out), want, sizeof want) != 0) {
      fprintf(stderr, "shared session, thread %d iteration %d: wrong result\n", a->thread, i);
      a->failures++;
    }
    clg_tensor_free(out);
    /* Queries from another thread while runs go on. */
    clg_memory_stats st;
    if (clg_session_memory_stats(a->s, "/device:GPU:0", &st) != CLG_OK)
      a->failures++;
    if (!clg_session_node_device(a->s, a->w->fetch))
      a->failures++;
  }
  return NULL;
}

static void test_shared_session(void)
{
  work w;
  build(&w, 2, 0);
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(w.g, &opt, &s));
  pthread_t th[THREADS];
  shared_args args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (shared_args){s, &w, t, 0};
    CHECK(pthread_create(&th[t], NULL, shared_session_main, &args[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(args[t].failures == 0, "thread %d: %d failures", t, args[t].failures);
  }
  clg_memory_stats st;
  CHECK_OK(clg_session_memory_stats(s, "/device:GPU:0", &st));
  /* Only the cached Const is left in use once the runs are over. */
  CHECK_MSG(st.live_allocs <= 1, "%llu blocks in use on GPU:0 after the runs",
            (unsigned long long)st.live_allocs);
  clg_session_free(s);
  clg_graph_free(w.g);
  printf("shared session: %d threads x %d runs, each its own result\n", THREADS, ITERATIONS * 2);
}

/* --- allocators ----------------------------------------------------------------------------------
 */

#define LIVE_MAX 48
#define ALLOC_OPS 3000

typedef struct alloc_args {
  clg_allocator *a;
  bool host;
  int thread;
  int failures;
} alloc_args;

/* Every live block of every thread, to check that none overlap. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static clg_block live_all[THREADS * LIVE_MAX];
static int live_owner[THREADS * LIVE_MAX];

static bool overlaps(const clg_block *x, const clg_block *y)
{
  if (x->host || y->host) {
    const char *p = x->host, *q = y->host;
    return p < q + y->size && q < p + x->size;
  }
  return x->mem == y->mem && x->offset < y->offset + y->size && y->offset < x->offset + x->size;
}

/* Registers b in slot (thread, i); false when it overlaps another live block. */
static bool live_add(int thread, int i, const clg_block *b)
{
  bool ok = true;
  pthread_mutex_lock(&live_lock);
  for (int k = 0; k < THREADS * LIVE_MAX; k++)
    if (live_owner[k] && overlaps(&live_all[k], b))
      ok = false;
  live_all[thread * LIVE_MAX + i] = *b;
  live_owner[thread * LIVE_MAX + i] = 1;
  pthread_mutex_unlock(&live_lock);
  return ok;
}

static void live_remove(int thread, int i)
{
  pthread_mutex_lock(&live_lock);
  live_owner[thread * LIVE_MAX + i] = 0;
  pthread_mutex_unlock(&live_lock);
}

static void *alloc_main(void *arg)
{
  alloc_args *a = arg;
  clg_block blocks[LIVE_MAX];
  bool used[LIVE_MAX] = {false};
  unsigned long long r = 0x9E3779B97F4A7C15ull * (unsigned long long)(a->thread + 1);
  for (int op = 0; op < ALLOC_OPS; op++) {
    r ^= r >> 12;
    r ^= r << 25;
    r ^= r >> 27;
    unsigned long long x = r * 2685821657736338717ull;
    int i = (int)(x % LIVE_MAX);
    if (used[i]) {
      /* A host block must still hold its owner's pattern. */
      if (a->host) {
        const unsigned char *p = blocks[i].host;
        for (size_t k = 0; k < blocks[i].size; k += 97)
          if (p[k] != (unsigned char)(a->thread * LIVE_MAX + i))
            a->failures++;
      }
      live_remove(a->thread, i);
      clg_allocator_free(a->a, &blocks[i], NULL);
      used[i] = false;
    } else {
      size_t size = (size_t)(256u << ((x >> 8) % 13)) + (size_t)((x >> 20) % 1000);
      if (clg_allocator_alloc(a->a, size, &blocks[i]) != CLG_OK) {
        fprintf(stderr, "thread %d: alloc of %zu: %s\n", a->thread, size, clg_last_error());
        a->failures++;
        continue;
      }
      if (blocks[i].size < size || !live_add(a->thread, i, &blocks[i]))
        a->failures++;
      if (a->host)
        memset(blocks[i].host, a->thread * LIVE_MAX + i, blocks[i].size);
      used[i] = true;
    }
  }
  for (int i = 0; i < LIVE_MAX; i++)
    if (used[i]) {
      live_remove(a->thread, i);
      clg_allocator_free(a->a, &blocks[i], NULL);
    }
  return NULL;
}

static void stress_allocator(clg_device *dev, bool host)
{
  clg_memory_options mo = {1, 0, 0}; /* allow_growth: regions are added under contention */
  clg_allocator *a = NULL;
  CHECK_OK(clg_allocator_new(dev, &mo, &a));
  if (!a)
    return;
  pthread_t th[THREADS];
  alloc_args args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (alloc_args){a, host, t, 0};
    CHECK(pthread_create(&th[t], NULL, alloc_main, &args[t]) == 0);
  }
  /* Statistics and dumps from this thread while the others allocate. */
  for (int i = 0; i < 50; i++) {
    clg_memory_stats st;
    clg_allocator_stats(a, &st);
    CHECK(st.bytes_in_use <= st.bytes_reserved);
    char *dump = clg_allocator_dump(a, i % 2);
    CHECK(dump != NULL);
    free(dump);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(args[t].failures == 0, "%s allocator, thread %d: %d failures",
              host ? "host" : "device", t, args[t].failures);
  }
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  CHECK_OK(clg_allocator_validate(a));
  CHECK_MSG(st.bytes_in_use == 0 && st.live_allocs == 0, "%llu bytes in %llu blocks left",
            (unsigned long long)st.bytes_in_use, (unsigned long long)st.live_allocs);
  CHECK(st.num_allocs > 0);
  printf("%s allocator: %d threads x %d operations, %llu allocations, peak %llu bytes in %llu "
         "regions\n",
         host ? "host" : "GPU:0", THREADS, ALLOC_OPS, (unsigned long long)st.num_allocs,
         (unsigned long long)st.peak_bytes_in_use, (unsigned long long)st.num_regions);
  clg_allocator_destroy(a);
}

static void test_allocators(void)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(&cfg, &devs));
  if (!devs)
    return;
  stress_allocator(clg_devices_at(devs, 1), false);
  stress_allocator(clg_devices_at(devs, 0), true);
  clg_devices_free(devs);
}

/* --- thread-local errors ------------------------------------------------------------------------
 */

static void *error_main(void *arg)
{
  int *failures = arg;
  char spec[64];
  for (int i = 0; i < 200; i++) {
    snprintf(spec, sizeof spec, "/device:GPU:%p%d", (void *)failures, i);
    clg_graph *g = clg_graph_new();
    if (clg_graph_push_device(g, spec) != CLG_INVALID_ARGUMENT || !strstr(clg_last_error(), spec))
      (*failures)++;
    clg_graph_free(g);
  }
  return NULL;
}

static void test_errors(void)
{
  pthread_t th[THREADS];
  int failures[THREADS] = {0};
  for (int t = 0; t < THREADS; t++)
    CHECK(pthread_create(&th[t], NULL, error_main, &failures[t]) == 0);
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(failures[t] == 0, "thread %d read another thread's error %d times", t, failures[t]);
  }
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_concurrency");
  test_errors();
  test_own_sessions();
  test_shared_session();
  test_allocators();
  return clg_test_summary("test_concurrency");
}
