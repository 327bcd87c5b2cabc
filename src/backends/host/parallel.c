/* Host work split across cores: a team of threads started per call (a few tens of
 * microseconds against the milliseconds of the kernels that use it), taking tasks in turn
 * from a shared counter. No task outlives a call, so there is no pool to shut down, and a
 * thread that is already inside a task runs nested calls itself (no oversubscription).
 * Kernels that use it call CBLAS only outside tasks, so OpenBLAS's own threads never run
 * beside a team. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/host/host.h"

#define MAX_THREADS 64

/* A team lives on the heap until its last member leaves: the caller returns once every task
 * is done, not when its helpers have exited, so a helper that the scheduler starts late (a
 * loaded machine) costs nothing; it finds no task and frees the team if it is the last.
 * Teams in use stay on a list, so that one whose helper has not started when the process
 * exits is still reachable (no leak reported). */
typedef struct team {
  pthread_mutex_t lock;
  pthread_cond_t done;
  int next, ntasks, finished, refs, joined;
  void (*fn)(void *ctx, int task);
  void *ctx;
  struct team *prev_live, *next_live;
} team;

static _Thread_local bool in_task;
static _Thread_local int member; /* this thread's index in the team whose tasks it runs */
static int host_threads;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static team *live;

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

static void team_leave(team *t)
{
  pthread_mutex_lock(&t->lock);
  int left = --t->refs;
  pthread_mutex_unlock(&t->lock);
  if (left > 0)
    return;
  pthread_mutex_lock(&live_lock);
  if (t->prev_live)
    t->prev_live->next_live = t->next_live;
  else
    live = t->next_live;
  if (t->next_live)
    t->next_live->prev_live = t->prev_live;
  pthread_mutex_unlock(&live_lock);
  pthread_cond_destroy(&t->done);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* Takes tasks until none is left; the last to finish wakes the caller. */
static void take_tasks(team *t)
{
  bool outer = in_task;
  in_task = true;
  pthread_mutex_lock(&t->lock);
  member = t->joined++; /* distinct, below the team's size */
  pthread_mutex_unlock(&t->lock);
  for (;;) {
    pthread_mutex_lock(&t->lock);
    int task = t->next < t->ntasks ? t->next++ : -1;
    pthread_mutex_unlock(&t->lock);
    if (task < 0)
      break;
    t->fn(t->ctx, task);
    pthread_mutex_lock(&t->lock);
    if (++t->finished == t->ntasks)
      pthread_cond_signal(&t->done);
    pthread_mutex_unlock(&t->lock);
  }
  in_task = outer;
  member = 0;
}

int clg_host_parallel_member(void) { return member; }

static void *helper(void *arg)
{
  take_tasks(arg);
  team_leave(arg);
  return NULL;
}

static void run_serial(int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  bool outer = in_task;
  in_task = true;
  for (int i = 0; i < ntasks; i++)
    fn(ctx, i);
  in_task = outer;
}

void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  int nthreads = in_task ? 1 : clg_host_threads();
  if (nthreads > ntasks)
    nthreads = ntasks;
  team *t = nthreads > 1 ? calloc(1, sizeof *t) : NULL;
  if (!t) { /* one thread, or no memory for a team: the caller runs them all */
    run_serial(ntasks, fn, ctx);
    return;
  }
  *t = (team){.ntasks = ntasks, .fn = fn, .ctx = ctx, .refs = nthreads};
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->done, NULL);
  pthread_mutex_lock(&live_lock);
  t->next_live = live;
  if (live)
    live->prev_live = t;
  live = t;
  pthread_mutex_unlock(&live_lock);
  pthread_attr_t attr;
  bool detached = pthread_attr_init(&attr) == 0;
  if (detached)
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* A thread that cannot start leaves its share to the others (the caller takes tasks too). */
  for (int i = 0; i < nthreads - 1; i++) {
    pthread_t tid;
    if (!detached || pthread_create(&tid, &attr, helper, t) != 0) {
      pthread_mutex_lock(&t->lock);
      t->refs -= nthreads - 1 - i;
      pthread_mutex_unlock(&t->lock);
      break;
    }
  }
  if (detached)
    pthread_attr_destroy(&attr);
  take_tasks(t);
  pthread_mutex_lock(&t->lock);
  while (t->finished < t->ntasks)
    pthread_cond_wait(&t->done, &t->lock);
  pthread_mutex_unlock(&t->lock);
  team_leave(t);
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
