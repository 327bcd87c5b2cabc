/* The host thread team of clg_host_parallel (src/backends/host/parallel.c): a persistent team
 * whose workers spin briefly between regions and then sleep. Every task of every region runs
 * exactly once and is done when the call returns (thousands of regions back to back, of 1 to
 * 97 tasks, so a region's counters reused too early would show), member indices stay
 * distinct, nested calls run in the task's own thread, threads calling at the same time (the
 * team's owner and the others, which start a team of their own) all get their results, a
 * forked child still runs regions and exits (also one forked while two other threads run
 * regions), and an idle team uses no CPU: the process's CPU time while it sleeps 300 ms after
 * a region stays within the spin's bound. Also run under ThreadSanitizer (ci/sanitize.sh). */
// ctest: default
// ctest: nospin CLGRAPH_HOST_SPIN_US=0
// ctest: longspin CLGRAPH_HOST_SPIN_US=20000
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/host/host.h"
#include "testutil.h"

#define MAX_TASKS 97

typedef struct region {
  int round;
  atomic_int runs[MAX_TASKS];
  int value[MAX_TASKS];
  atomic_int busy[64];
  atomic_int bad_member;
} region;

static void region_task(void *ctx, int t)
{
  region *r = ctx;
  int m = clg_host_parallel_member();
  if (m < 0 || m >= clg_host_threads() || m >= 64 || atomic_exchange(&r->busy[m], 1) != 0) {
    atomic_fetch_add(&r->bad_member, 1);
  } else {
    /* A little work, more for odd tasks: another thread's task is still running when the
     * caller runs out of tasks to take, and the call must wait for it. */
    volatile int spin = 0;
    for (int i = 0; i < (t % 2 ? 3000 : 300); i++)
      spin = spin + i;
    r->value[t] = r->round * 1000 + t; /* plain store: the call's return must publish it */
    atomic_fetch_add(&r->runs[t], 1);
    atomic_store(&r->busy[m], 0);
  }
}

static void region_init(region *r, int round)
{
  r->round = round;
  for (int i = 0; i < MAX_TASKS; i++) {
    atomic_init(&r->runs[i], 0);
    r->value[i] = -1;
  }
  for (int i = 0; i < 64; i++)
    atomic_init(&r->busy[i], 0);
  atomic_init(&r->bad_member, 0);
}

/* How many of `rounds` regions came back wrong (a task run twice or never, a value unseen, a
 * member index in use); the region's size cycles through 1..MAX_TASKS. */
static int run_regions(int rounds, int seed)
{
  int wrong = 0;
  region *r = malloc(sizeof *r);
  if (!r)
    return rounds;
  for (int k = 0; k < rounds; k++) {
    int n = 1 + (k * 7 + seed) % MAX_TASKS;
    region_init(r, k);
    clg_host_parallel(n, region_task, r);
    bool ok = atomic_load(&r->bad_member) == 0;
    for (int t = 0; t < n; t++)
      ok = ok && atomic_load(&r->runs[t]) == 1 && r->value[t] == k * 1000 + t;
    for (int t = n; t < MAX_TASKS; t++)
      ok = ok && atomic_load(&r->runs[t]) == 0;
    wrong += !ok;
  }
  free(r);
  return wrong;
}

static void test_regions(void)
{
  int wrong = run_regions(3000, 0);
  CHECK_MSG(wrong == 0, "%d of 3000 regions with a task lost, repeated or unpublished", wrong);
  CHECK(clg_host_parallel_member() == 0);
}

/* A call inside a task runs all its tasks in that task's thread. */
typedef struct nested {
  pthread_t outer[8];
  atomic_int foreign, inner_runs;
} nested;

typedef struct nested_inner {
  nested *n;
  pthread_t self;
} nested_inner;

static void inner_task(void *ctx, int t)
{
  (void)t;
  nested_inner *in = ctx;
  if (!pthread_equal(in->self, pthread_self()))
    atomic_fetch_add(&in->n->foreign, 1);
  atomic_fetch_add(&in->n->inner_runs, 1);
}

static void outer_task(void *ctx, int t)
{
  (void)t;
  nested_inner in = {ctx, pthread_self()};
  clg_host_parallel(5, inner_task, &in);
}

static void test_nested(void)
{
  nested n;
  atomic_init(&n.foreign, 0);
  atomic_init(&n.inner_runs, 0);
  clg_host_parallel(8, outer_task, &n);
  CHECK(atomic_load(&n.inner_runs) == 40);
  CHECK_MSG(atomic_load(&n.foreign) == 0, "%d nested tasks ran in another thread",
            atomic_load(&n.foreign));
}

/* Threads calling at once: one owns the persistent team per region, the others start teams of
 * their own; all get every task. */
typedef struct caller {
  int seed, wrong;
} caller;

static pthread_barrier_t start;

static void *caller_main(void *arg)
{
  caller *c = arg;
  pthread_barrier_wait(&start);
  c->wrong = run_regions(400, c->seed);
  return NULL;
}

/* The process's thread count (/proc/self/status), or -1. */
static int thread_count(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1)
      break;
  if (f)
    fclose(f);
  return n;
}

static int threads_before_callers;

static void test_concurrent_callers(void)
{
  enum { CALLERS = 3 };
  threads_before_callers = thread_count();
  pthread_t tid[CALLERS];
  caller c[CALLERS];
  pthread_barrier_init(&start, NULL, CALLERS);
  int started = 0;
  for (int i = 0; i < CALLERS; i++) {
    c[i] = (caller){.seed = i * 13};
    if (pthread_create(&tid[i], NULL, caller_main, &c[i]) == 0)
      started++;
  }
  CHECK(started == CALLERS);
  for (int i = 0; i < started; i++) {
    pthread_join(tid[i], NULL);
    CHECK_MSG(c[i].wrong == 0, "caller %d: %d of 400 regions wrong", i, c[i].wrong);
  }
  pthread_barrier_destroy(&start);
}

/* A forked child has no workers: its regions still run, and its exit does not wait for them. */
static void test_fork(void)
{
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer ends a child of a threaded process that starts threads (die_after_fork),
   * as this child's teams do: checked in the other builds. */
  printf("fork check not run under ThreadSanitizer\n");
  return;
#endif
  /* The other callers' teams' helpers are detached and may still be exiting. GCC 12's
   * AddressSanitizer takes no locks of its own at fork (its thread registry, its allocator),
   * so a fork while one exits can leave the child's first thread start waiting forever (one
   * run in a few hundred under ASan): wait until they are gone, up to 5 s. */
  for (int i = 0; i < 500 && thread_count() > threads_before_callers; i++) {
    struct timespec ms10 = {0, 10 * 1000 * 1000};
    nanosleep(&ms10, NULL);
  }
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a hang (a join of the parent's workers at exit) fails instead */
    int wrong = run_regions(200, 5);
    exit(wrong == 0 ? 0 : 3);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
}

/* Forks while two other threads run regions, one of them on teams started for its calls
 * (their start and end take the list of live teams' lock): every child's own region still
 * runs. Not under AddressSanitizer, whose own locks are not fork-safe in GCC 12 (above). */
static atomic_bool forking_done;

static void *busy_caller(void *arg)
{
  int wrong = 0;
  while (!atomic_load(&forking_done))
    wrong += run_regions(20, (int)(intptr_t)arg);
  return (void *)(intptr_t)wrong;
}

static void test_fork_busy(void)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  printf("fork beside busy callers not run under the sanitizers\n");
  return;
#endif
  if (clg_host_threads() < 2) {
    printf("one host thread: no teams to fork beside\n");
    return;
  }
  pthread_t tid[2];
  atomic_init(&forking_done, false);
  int started = 0;
  for (int i = 0; i < 2; i++)
    started += pthread_create(&tid[i], NULL, busy_caller, (void *)(intptr_t)(i * 3)) == 0;
  CHECK(started == 2);
  int bad = 0;
  for (int i = 0; i < 200 && started == 2; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0)
      break;
    if (pid == 0) {
      alarm(10);
      _exit(run_regions(3, i) == 0 ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    bad += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  atomic_store(&forking_done, true);
  for (int i = 0; i < started; i++) {
    void *wrong = NULL;
    pthread_join(tid[i], &wrong);
    CHECK_MSG(wrong == NULL, "busy caller %d: %d regions wrong", i, (int)(intptr_t)wrong);
  }
  CHECK_MSG(bad == 0, "%d of 200 children forked beside busy callers hung or failed", bad);
}

static double process_cpu_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* After a region the workers spin at most CLGRAPH_HOST_SPIN_US (default 50 us) each, then
 * sleep: 300 ms idle costs at most that per worker plus a margin (a busy wait would cost
 * 300 ms per worker). */
static void test_idle(void)
{
  const char *env = getenv("CLGRAPH_HOST_SPIN_US");
  double spin_ms = (env ? atof(env) : 50.0) * 1e-3;
  int workers = clg_host_threads() - 1;
  if (workers < 1)
    printf("one host thread: no team, the idle check is trivial here\n");
  for (int pass = 0; pass < 3; pass++) {
    CHECK(run_regions(50, pass) == 0);
    double cpu0 = process_cpu_ms();
    struct timespec nap = {0, 300 * 1000 * 1000};
    while (nanosleep(&nap, &nap) != 0) {
    }
    double used = process_cpu_ms() - cpu0, bound = spin_ms * workers + 30.0;
    CHECK_MSG(used <= bound, "pass %d: %.2f ms of CPU in 300 ms idle (bound %.2f)", pass, used,
              bound);
  }
}

int main(void)
{
  test_regions();
  test_nested();
  test_concurrent_callers();
  test_fork();
  test_fork_busy();
  test_idle();
  test_regions(); /* the team still serves after idling */
  return clg_test_summary("test_host_team");
}
