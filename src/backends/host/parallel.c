/* Host work split across cores: a team of clg_host_threads() - 1 workers that lives for the
 * process (started at the first parallel call, joined at exit), taking tasks in turn from a
 * shared counter with the caller. A region costs a model's host ops once per op, a few to a
 * few hundred microseconds apart, so a worker that finds no region spins on the team's
 * generation for a bounded time (CLGRAPH_HOST_SPIN_US, default 50) before it sleeps on a
 * condition variable: back-to-back regions pay no thread start and no wake-up, and an idle
 * process uses no CPU. The caller waits for the last task the same way.
 *
 * One caller at a time owns the team; a region of another thread meanwhile (sessions run in
 * parallel), of a forked child, or during exit gets a team started for the call instead, as
 * before the persistent team. A thread that is already inside a task runs nested calls itself
 * (no oversubscription). OpenBLAS runs on one thread inside tasks (clg_host_blas_setup, at the
 * team's start), so its own threads never spin beside the team's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backends/host/host.h"

#define MAX_THREADS 64

/* A team started for one call lives on the heap until its last member leaves: the caller
 * returns once every task is done, not when its helpers have exited, so a helper that the scheduler
 * starts late (a loaded machine) costs nothing; it finds no task and frees the team if it is the
 * last. Teams in use stay on a list, so that one whose helper has not started when the process
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

/* A fork while another thread's team is starting or leaving (live_lock held) would leave the
 * child's first spawned team waiting on that lock forever: the fork takes it first. */
static void fork_prepare(void) { pthread_mutex_lock(&live_lock); }
static void fork_release(void) { pthread_mutex_unlock(&live_lock); }

static void threads_init(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("CLGRAPH_HOST_THREADS");
  if (env && atoi(env) >= 1 && atoi(env) < n)
    n = atoi(env);
  host_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
  (void)pthread_atfork(fork_prepare, fork_release, fork_release);
  clg_host_blas_setup();
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

/* A team of threads started for this call (the persistent one is busy or gone). */
static void run_spawned(int nthreads, int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  team *t = calloc(1, sizeof *t);
  if (!t) { /* no memory for a team: the caller runs them all */
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

/* --- the persistent team ---------------------------------------------------------------- */

/* The fields without _Atomic are guarded by lock. A region: the owner waits until no worker is
 * inside the previous one, sets fn, ctx, ntasks and the counters, and bumps gen. A worker
 * that sees gen move enters under lock (inside++) and reads the region there, so the region
 * it reads cannot change until it leaves; one that enters after the last task finds none. */
typedef struct pool {
  pthread_mutex_t lock;
  pthread_cond_t wake, done, idle;
  _Atomic unsigned gen;
  atomic_int next, finished;
  void (*fn)(void *ctx, int task);
  void *ctx;
  int ntasks, sleepers, inside;
  bool owner_waits_done, owner_waits_idle, stop;
  int nworkers;
  pid_t pid;
  uint64_t spin_ns;
  pthread_t tid[MAX_THREADS];
} pool;

static pool the_pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
                        .wake = PTHREAD_COND_INITIALIZER,
                        .done = PTHREAD_COND_INITIALIZER,
                        .idle = PTHREAD_COND_INITIALIZER};
static pthread_mutex_t pool_owner = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Spins until *v differs from seen (worker: gen) or reaches seen (owner: finished), at most
 * spin_ns; whether it did. */
static bool spin_until(atomic_int *counter, _Atomic unsigned *gen, int target, unsigned seen,
                       uint64_t spin_ns)
{
  uint64_t t0 = 0;
  for (unsigned i = 0;; i++) {
    if (gen ? atomic_load_explicit(gen, memory_order_acquire) != seen
            : atomic_load_explicit(counter, memory_order_acquire) >= target)
      return true;
    cpu_relax();
    if ((i & 31) == 0) {
      uint64_t now = mono_ns();
      if (i == 0)
        t0 = now;
      else if (now - t0 >= spin_ns)
        return false;
    }
  }
}

/* Claims and runs tasks of the region until none is left; the worker that finishes the last
 * wakes the owner if it sleeps. */
static void pool_take(pool *p, void (*fn)(void *ctx, int task), void *ctx, int ntasks, bool owner)
{
  for (;;) {
    int task = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (task >= ntasks)
      return;
    fn(ctx, task);
    if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 == ntasks && !owner) {
      pthread_mutex_lock(&p->lock);
      if (p->owner_waits_done)
        pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

static void *pool_worker(void *arg)
{
  pool *p = &the_pool;
  in_task = true; /* for life: a nested call in its tasks runs serially */
  member = (int)(intptr_t)arg;
  unsigned seen = 0;
  for (;;) {
    bool moved = spin_until(NULL, &p->gen, 0, seen, p->spin_ns);
    pthread_mutex_lock(&p->lock);
    if (!moved) {
      p->sleepers++;
      while (!p->stop && atomic_load_explicit(&p->gen, memory_order_relaxed) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
      p->sleepers--;
    }
    if (p->stop) {
      pthread_mutex_unlock(&p->lock);
      return NULL;
    }
    seen = atomic_load_explicit(&p->gen, memory_order_relaxed);
    p->inside++;
    void (*fn)(void *, int) = p->fn;
    void *ctx = p->ctx;
    int ntasks = p->ntasks;
    pthread_mutex_unlock(&p->lock);
    pool_take(p, fn, ctx, ntasks, false);
    pthread_mutex_lock(&p->lock);
    if (--p->inside == 0 && p->owner_waits_idle)
      pthread_cond_signal(&p->idle);
    pthread_mutex_unlock(&p->lock);
  }
}

/* At exit: the workers stop and are joined (their threads' memory is released before a leak
 * check). Not in a forked child, which has none of them. */
static void pool_stop(void)
{
  pool *p = &the_pool;
  if (p->nworkers == 0 || getpid() != p->pid)
    return;
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->nworkers; i++)
    pthread_join(p->tid[i], NULL);
}

static void pool_start(void)
{
  pool *p = &the_pool;
  const char *env = getenv("CLGRAPH_HOST_SPIN_US");
  long us = env ? atol(env) : 50;
  p->spin_ns = (uint64_t)(us < 0 ? 0 : us > 100000 ? 100000 : us) * 1000u;
  p->pid = getpid();
  int want = clg_host_threads() - 1;
  for (int i = 0; i < want; i++)
    if (pthread_create(&p->tid[i], NULL, pool_worker, (void *)(intptr_t)(i + 1)) != 0)
      break; /* fewer workers: the caller takes their share */
    else
      p->nworkers = i + 1;
  if (p->nworkers > 0 && atexit(pool_stop) != 0)
    pool_stop(); /* cannot join them at exit: no persistent team then */
}

/* The region on the persistent team; false where it cannot take it (busy, none, stopped). */
static bool run_pooled(int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  pool *p = &the_pool;
  pthread_once(&pool_once, pool_start);
  if (p->nworkers == 0 || getpid() != p->pid || pthread_mutex_trylock(&pool_owner) != 0)
    return false;
  pthread_mutex_lock(&p->lock);
  if (p->stop) {
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&pool_owner);
    return false;
  }
  p->owner_waits_idle = true; /* a late worker still inside the last region */
  while (p->inside > 0)
    pthread_cond_wait(&p->idle, &p->lock);
  p->owner_waits_idle = false;
  p->fn = fn;
  p->ctx = ctx;
  p->ntasks = ntasks;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  if (p->sleepers > 0)
    pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  in_task = true;
  pool_take(p, fn, ctx, ntasks, true);
  in_task = false;
  if (!spin_until(&p->finished, NULL, ntasks, 0, p->spin_ns)) {
    pthread_mutex_lock(&p->lock);
    p->owner_waits_done = true;
    while (atomic_load_explicit(&p->finished, memory_order_acquire) < ntasks)
      pthread_cond_wait(&p->done, &p->lock);
    p->owner_waits_done = false;
    pthread_mutex_unlock(&p->lock);
  }
  pthread_mutex_unlock(&pool_owner);
  return true;
}

void clg_host_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx)
{
  int nthreads = in_task ? 1 : clg_host_threads();
  if (nthreads > ntasks)
    nthreads = ntasks;
  if (nthreads <= 1)
    run_serial(ntasks, fn, ctx);
  else if (!run_pooled(ntasks, fn, ctx))
    run_spawned(nthreads, ntasks, fn, ctx);
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
  /* Four ranges a thread where the grain allows, taken in turn: a thread that the scheduler
   * holds back on a loaded machine leaves its later ranges to the others instead of keeping
   * the whole call waiting for its one share. */
  int threads = clg_host_threads(), parts = threads > 1 ? 4 * threads : 1;
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
