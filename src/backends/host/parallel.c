/* Host work split across cores: a team of threads started per call (a few tens of
 * microseconds against the milliseconds of the kernels that use it), taking tasks in turn
 * from a shared counter. Nothing outlives a call, so there is no pool to shut down, and a
 * thread that is already inside a task runs nested calls itself (no oversubscription).
 * Kernels that use it call CBLAS only outside tasks, so OpenBLAS's own threads never run
 * beside a team. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/host/host.h"

#define MAX_THREADS 64

typedef struct team {
  pthread_mutex_t lock;
  int next, ntasks;
  void (*fn)(void *ctx, int task);
  void *ctx;
} team;

static _Thread_local bool in_task;
static int host_threads;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void threads_init(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("CLGRAPH_HOST_THREADS");
  if (env && atoi(env) >= 1 && atoi(env) < n)
    n = atoi(env);
  host_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int clg_host_threads(void)
{
  pthread_once(&threads_once, threads_init);
  return host_threads;
}

static void *run_tasks(void *arg)
{
  team *t = arg;
  bool outer = in_task;
  in_task = true;
  for (;;) {
    pthread_mutex_lock(&t->lock);
    int task = t->next < t->ntasks ? t->next++ : -1;
    pthread_mutex_unlock(&t->lock);
    if (task < 0)
      break;
    t->fn(t->ctx, task);
  }
  in_task = outer;
  return NULL;
}

void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  int nthreads = in_task ? 1 : clg_host_threads();
  if (nthreads > ntasks)
    nthreads = ntasks;
  if (nthreads <= 1) {
    bool outer = in_task;
    in_task = true;
    for (int i = 0; i < ntasks; i++)
      fn(ctx, i);
    in_task = outer;
    return;
  }
  team t = {.next = 0, .ntasks = ntasks, .fn = fn, .ctx = ctx};
  pthread_mutex_init(&t.lock, NULL);
  pthread_t tid[MAX_THREADS];
  int started = 0;
  /* A thread that cannot start leaves its share to the others (the caller takes tasks too). */
  while (started < nthreads - 1 && pthread_create(&tid[started], NULL, run_tasks, &t) == 0)
    started++;
  run_tasks(&t);
  for (int i = 0; i < started; i++)
    pthread_join(tid[i], NULL);
  pthread_mutex_destroy(&t.lock);
}

typedef struct range_job {
  size_t count;
  int parts;
  void (*fn)(void *ctx, size_t begin, size_t end);
  void *ctx;
} range_job;

static void range_task(void *arg, int t)
{
  range_job *j = arg;
  size_t b = j->count * (size_t)t / (size_t)j->parts,
         e = j->count * (size_t)(t + 1) / (size_t)j->parts;
  if (b < e)
    j->fn(j->ctx, b, e);
}

void clg_host_parallel_for(size_t count, size_t grain,
                           void (*fn)(void *ctx, size_t begin, size_t end), void *ctx)
{
  int parts = clg_host_threads();
  if (grain < 1)
    grain = 1;
  if ((size_t)parts > count / grain)
    parts = (int)(count / grain);
  if (parts <= 1) {
    if (count > 0)
      fn(ctx, 0, count);
    return;
  }
  range_job j = {count, parts, fn, ctx};
  clg_host_parallel(parts, range_task, &j);
}
