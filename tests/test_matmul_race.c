/* Distinct sessions whose first MatMuls run at the same time (session.h: distinct sessions
 * run concurrently). CLBlast 1.5 fills process-wide tables (its kernel database, program
 * caches) on first use without a lock: six threads, a session each, released together by a
 * barrier onto the four PoCL stand-ins, crashed in clblast::Database::Database now and then
 * (heap-use-after-free under ASan, a data race under TSan). clgraph serialises its CLBlast
 * calls; this test is also run under ThreadSanitizer (ci/sanitize.sh).
 *
 * Each round frees every session, which releases the process-wide device state and
 * CLBlast's caches (clg_cl_release_all), so every round's MatMuls are first uses again. */
#include <pthread.h>
#include <stdlib.h>

#include "testutil.h"

#define THREADS 6
#define ROUNDS 3

/* Two MatMuls per graph: a small one (CLBlast's direct kernel) and a larger one (the
 * indirect kernel with scratch), in float on even threads and double on odd ones. */
static const int64_t shapes[2][3] = {{8, 12, 8}, {96, 96, 64}}; /* m, k, n */

static pthread_barrier_t barrier;

typedef struct job {
  int thread;
  int failures;
} job;

/* Small integers: every product and sum is exact in float. */
static double value(int which, int64_t i, int thread)
{
  return (double)((i * (which ? 5 : 3) + thread) % 7 - 3);
}

static clg_node *constant(clg_graph *g, bool dbl, int which, int64_t rows, int64_t cols, int thread)
{
  int64_t dims[2] = {rows, cols};
  size_t count = (size_t)(rows * cols);
  clg_node *n;
  if (dbl) {
    double *v = malloc(count * sizeof *v);
    for (size_t i = 0; v && i < count; i++)
      v[i] = value(which, (int64_t)i, thread);
    n = v ? clg_const_f64(g, NULL, 2, dims, v) : NULL;
    free(v);
  } else {
    float *v = malloc(count * sizeof *v);
    for (size_t i = 0; v && i < count; i++)
      v[i] = (float)value(which, (int64_t)i, thread);
    n = v ? clg_const_f32(g, NULL, 2, dims, v) : NULL;
    free(v);
  }
  return n;
}

/* Compares out with the host product of the constants of shape s; returns mismatches. */
static int check_product(const clg_tensor *out, bool dbl, const int64_t *s, int thread)
{
  int64_t m = s[0], k = s[1], n = s[2];
  if (!out || clg_tensor_bytes(out) != (size_t)(m * n) * (dbl ? 8u : 4u))
    return 1;
  const void *data = clg_tensor_const_data(out);
  int bad = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double want = 0;
      for (int64_t l = 0; l < k; l++)
        want += value(0, i * k + l, thread) * value(1, l * n + j, thread);
      double got = dbl ? ((const double *)data)[i * n + j] : ((const float *)data)[i * n + j];
      bad += got != want;
    }
  return bad;
}

static void *race_main(void *arg)
{
  job *jb = arg;
  int t = jb->thread;
  bool dbl = t % 2 == 1;
  char dev[32];
  snprintf(dev, sizeof dev, "/device:GPU:%d", t % 4);
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, dev);
  clg_node *mm[2];
  for (int i = 0; i < 2; i++) {
    const int64_t *s = shapes[i];
    clg_node *a = constant(g, dbl, 0, s[0], s[1], t);
    clg_node *b = constant(g, dbl, 1, s[1], s[2], t);
    mm[i] = clg_matmul(g, NULL, a, b, false, false);
  }
  clg_graph_pop_device(g);

  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  for (int round = 0; round < ROUNDS; round++) {
    clg_session *s = NULL;
    clg_code code = clg_session_new(g, &opt, &s);
    if (code != CLG_OK) {
      fprintf(stderr, "thread %d: session: %s\n", t, clg_last_error());
      jb->failures++;
    }
    pthread_barrier_wait(&barrier); /* every session exists: the first runs start together */
    clg_tensor *out[2] = {NULL, NULL};
    if (s && (code = clg_session_run(s, 0, NULL, NULL, 2, mm, out)) != CLG_OK) {
      fprintf(stderr, "thread %d: run: %s: %s\n", t, clg_code_name(code), clg_last_error());
      jb->failures++;
    }
    for (int i = 0; s && code == CLG_OK && i < 2; i++) {
      int bad = check_product(out[i], dbl, shapes[i], t);
      if (bad) {
        fprintf(stderr, "thread %d round %d: MatMul %d has %d wrong elements\n", t, round, i, bad);
        jb->failures++;
      }
    }
    clg_tensor_free(out[0]);
    clg_tensor_free(out[1]);
    pthread_barrier_wait(&barrier); /* all runs done before any session is freed */
    clg_session_free(s);
    pthread_barrier_wait(&barrier); /* all freed: the next round starts from no state */
  }
  clg_graph_free(g);
  return NULL;
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_matmul_race");
  CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
  pthread_t th[THREADS];
  job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t] = (job){t, 0};
    CHECK(pthread_create(&th[t], NULL, race_main, &jobs[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(jobs[t].failures == 0, "thread %d: %d failures", t, jobs[t].failures);
  }
  pthread_barrier_destroy(&barrier);
  printf("%d threads x %d rounds: first MatMuls of distinct sessions at once\n", THREADS, ROUNDS);
  return clg_test_summary("test_matmul_race");
}
