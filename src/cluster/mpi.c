/* Tasks as MPI ranks (Open MPI; any MPI-3 library should do). See cluster.h.
 *
 * Faults: the communicator's error handler returns (MPI_ERRORS_RETURN), and every wait polls
 * a nonblocking request against the deadline, so an error becomes UNAVAILABLE and silence
 * DEADLINE_EXCEEDED, both naming the task; the requests a failed call leaves are cancelled
 * (settle). A collective first meets every task: each task sends its meeting record (the
 * collective, dtype, element count, op name) to every other on a communicator of its own and polls
 * for theirs against the deadline, so a task that stopped answering is found, and named,
 * before anything blocks, and tasks that would reduce different values fail alike before any
 * data moves. Joining meets the same way on MPI_COMM_WORLD before any collective call. How an
 * AllReduce moves its data follows from what every task shares (dtype, element count, number
 * of tasks), never from where a task keeps the value or whether it reduces in place: a value
 * on a device is downloaded whole into host memory first and uploaded after, and both ways
 * of reducing (in place or from another buffer) send the same messages. Below RING_MIN,
 * three tasks or more run the blocking MPI_Allreduce in place (Open MPI's nonblocking
 * MPI_Iallreduce reached 0.65-0.8x of it here) under a watchdog that aborts the job
 * (MPI_Abort) if it outlives the deadline: a task that stops inside the reduction ends the
 * job instead of hanging it (with MPI_THREAD_SERIALIZED only: MPI_Iallreduce, polled). The
 * watchdog costs no system call per reduction: it wakes on a tick and reads the reduction's
 * start time. Two tasks below RING_MIN, and any number from it on, reduce by point-to-point
 * messages (one exchange, or a ring) whose every wait has the deadline.
 *
 * Open MPI 4.1 under mpirun (measured, README "Clusters"): when a rank dies, mpirun kills the
 * others within about a second (exit status 137); with `mpirun --enable-recovery` the
 * others keep running, their waits on the dead task never complete, and they fail with
 * DEADLINE_EXCEEDED after the timeout. */
#ifdef CLG_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster.h"
#include "device/device.h"

/* Bytes per message on the wire; device values move through two staging buffers of this
 * size, one on the network while the other is copied to or from the device. */
#define CHUNK CLG_CLUSTER_CHUNK
/* Bytes from which a reduction goes round the ring of point-to-point messages (README
 * "Benchmarks": 2-3x MPI_Allreduce from 64 MiB on, where Open MPI 4.1 fell under 1 GB/s here,
 * while at 16 MiB it reached 6 GB/s in some runs). Below it, in place: MPI_Allreduce; from
 * another buffer: two tasks exchange their buffers in one round, more copy and call
 * MPI_Allreduce. */
#define RING_MIN ((size_t)32 << 20)
/* Elements per MPI_Allreduce call (counts are int). */
#define REDUCE_MAX ((size_t)1 << 28)

/* What a task brings to a collective, sent to every other task as its arrival token: every
 * task must bring the same kind (the collective and how it moves the data, chosen from facts
 * every task shares: the dtype, the element count and the number of tasks), dtype, element
 * count and name (a hash of the op's: two AllReduces of one size run in another order on
 * some task must not pair), or the collective does not start (desc names it in the message).
 * failed: a task that cannot bring its value (its local staging failed) still comes, with
 * its error code and message (why), so every task fails alike and nothing moves. */
typedef struct meeting {
  uint64_t count, name;
  int32_t kind, dtype, failed, unused;
  char desc[112];
  char why[160];
} meeting;

enum {
  MEET_JOIN = 1,
  MEET_DEVICES,
  MEET_BARRIER,
  MEET_REDUCE_MPI,      /* three tasks or more below RING_MIN: MPI_Allreduce in place */
  MEET_REDUCE_EXCHANGE, /* two tasks below RING_MIN: one exchange */
  MEET_REDUCE_RING,     /* RING_MIN and more */
};

struct clg_cluster {
  MPI_Comm comm;
  MPI_Comm arrivals; /* the arrival tokens of collectives, apart from the data */
  meeting *token_in; /* one per task; this task's own is the one it sends */
  MPI_Request *token_req;
  int task, tasks;
  int tag_ub;
  double timeout_s;
  /* MPI_THREAD_MULTIPLE granted: the blocking MPI_Allreduce may run under the watchdog, which
   * calls MPI_Abort from its own thread. Else (SERIALIZED) reductions poll MPI_Iallreduce. */
  bool multiple;
  /* After a failure MPI may still write into (or read from) memory it was given: a receive
   * that could not be cancelled, a collective that never completed. That memory, this struct
   * included, is then kept for the life of the process instead of freed. */
  bool holds;
  pthread_mutex_t lock; /* one transfer or reduction at a time (the staging buffers) */
  clg_tensor *stage[2]; /* pinned when the process's pinned pool serves host tensors */
  clg_code failed;      /* sticky: the first failure, repeated by every later call */
  char failure[512];
  /* The reductions' watchdog (started on the first reduction): the reducing thread
   * publishes when its blocking call began (0: none) and what it reduces. */
  pthread_mutex_t wmu;
  pthread_cond_t wcv;
  pthread_t watchdog;
  bool watching, wstop;
  _Atomic uint64_t reducing_since;
  _Atomic(const char *) watched;
};

static bool we_initialized, finalize_registered, any_failure;

/* Memory kept after failures (see holds): reachable from here, never freed. */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static void **kept;
static size_t num_kept;

static void keep(void *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&kept_mu);
  void **k = realloc(kept, sizeof *k * (num_kept + 1));
  if (k) {
    kept = k;
    kept[num_kept++] = p;
  }
  pthread_mutex_unlock(&kept_mu);
}

static void finalize_at_exit(void)
{
  int fin = 0;
  MPI_Finalized(&fin);
  /* With a task gone, MPI_Finalize would wait for it forever. */
  if (!fin && !any_failure)
    MPI_Finalize();
}

static const char *mpi_text(int err, char *buf)
{
  int len = 0;
  if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS)
    snprintf(buf, MPI_MAX_ERROR_STRING, "MPI error %d", err);
  return buf;
}

static clg_code fail(clg_cluster *c, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);

static clg_code fail(clg_cluster *c, clg_code code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->failure, sizeof c->failure, fmt, ap);
  va_end(ap);
  c->failed = code;
  any_failure = true;
  return clg_error(code, "%s", c->failure);
}

/* A transfer or reduction that failed midway for any reason (a device copy, host memory) left
 * the tasks out of step: later messages would match this one's. The cluster fails with it. */
static clg_code midway(clg_cluster *c, clg_code code)
{
  if (code != CLG_OK && c->failed == CLG_OK) {
    snprintf(c->failure, sizeof c->failure, "%s (this task stopped midway)", clg_last_error());
    c->failed = code;
    any_failure = true;
  }
  return code;
}

static clg_code check_failed(clg_cluster *c)
{
  if (c->failed == CLG_OK)
    return CLG_OK;
  return clg_error(c->failed, "the cluster failed earlier: %s", c->failure);
}

/* The deadline in nanoseconds (clg_cluster_resolve keeps timeouts where this fits). */
static uint64_t limit_ns(const clg_cluster *c)
{
  double ns = c->timeout_s * 1e9;
  return ns < 1.8e19 ? (uint64_t)ns : UINT64_MAX;
}

/* Between two polls of a wait: spin at first (a message is often microseconds away), then
 * yield the core, and sleep only once the wait has lasted 10 ms. A large message moves only
 * while both sides poll (Open MPI's shared memory copies on the receiver's progress and the
 * sender completes on its answer), so an early sleep stalled transfers by milliseconds. */
static void pause_polling(unsigned spins, uint64_t waited_ns)
{
  if (waited_ns > 10000000u) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  } else if (spins > 200) {
    sched_yield();
  }
}

/* After a failure, n point-to-point requests that may still be posted (MPI_REQUEST_NULL for
 * those done): each is cancelled, receives surely, sends where MPI can, and given a moment
 * to complete (a cancelled receive that had not matched completes at once). One still
 * pending then (its message was under way) is released to MPI, which may still write into
 * or read from its memory: c->holds keeps the memory this module owns for good, and this
 * module makes no MPI call on the failed cluster again, so nothing progresses it. */
static void settle(clg_cluster *c, int n, MPI_Request *r)
{
  for (int i = 0; i < n; i++)
    if (r[i] != MPI_REQUEST_NULL)
      MPI_Cancel(&r[i]);
  uint64_t start = clg_now_ns();
  for (unsigned spins = 0;; spins++) {
    int pending = 0;
    for (int i = 0; i < n; i++) {
      int done = 0;
      if (r[i] != MPI_REQUEST_NULL &&
          (MPI_Test(&r[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done))
        r[i] = MPI_REQUEST_NULL;
      pending += r[i] != MPI_REQUEST_NULL;
    }
    uint64_t waited = clg_now_ns() - start;
    if (!pending || waited > 100000000u)
      break;
    pause_polling(spins, waited);
  }
  for (int i = 0; i < n; i++)
    if (r[i] != MPI_REQUEST_NULL) {
      MPI_Request_free(&r[i]);
      c->holds = true;
    }
}

/* Polls r until it completes, an error, or the deadline. peer < 0: a collective. */
static clg_code wait_request(clg_cluster *c, MPI_Request *r, int peer, const char *doing)
{
  uint64_t start = clg_now_ns(), limit = limit_ns(c);
  for (unsigned spins = 0;; spins++) {
    int done = 0;
    MPI_Status st;
    int err = MPI_Test(r, &done, &st);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      if (peer >= 0)
        return fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s failed (%s)",
                    peer, doing, mpi_text(err, text));
      return fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)", doing,
                  mpi_text(err, text));
    }
    if (done)
      return CLG_OK;
    uint64_t now = clg_now_ns();
    if (now - start > limit) {
      if (peer >= 0)
        return fail(c, CLG_DEADLINE_EXCEEDED,
                    "task %d of /job:worker did not answer within %g s (%s; the timeout is the "
                    "session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
                    peer, c->timeout_s, doing);
      return fail(c, CLG_DEADLINE_EXCEEDED,
                  "not every task of /job:worker answered within %g s (%s, on task %d of %d; the "
                  "timeout is the session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
                  c->timeout_s, doing, c->task, c->tasks);
    }
    pause_polling(spins, now - start);
  }
}

/* A nonblocking collective polled against the deadline. One that fails to complete cannot
 * be cancelled (MPI forbids it): its buffers stay MPI's (c->holds). */
static clg_code wait_collective(clg_cluster *c, MPI_Request *r, const char *doing)
{
  clg_code code = wait_request(c, r, -1, doing);
  if (code != CLG_OK && *r != MPI_REQUEST_NULL)
    c->holds = true;
  return code;
}

static clg_code wait_all(clg_cluster *c, int n, MPI_Request *r, int peer, const char *doing)
{
  clg_code code = CLG_OK;
  for (int i = 0; i < n && code == CLG_OK; i++)
    if (r[i] != MPI_REQUEST_NULL)
      code = wait_request(c, &r[i], peer, doing);
  return code;
}

/* What one task brought, for a message: "AllReduce 'y' of float32 [4] (4 elements)". */
static void meeting_text(char *out, size_t size, const meeting *m)
{
  if (m->count || m->kind >= MEET_REDUCE_MPI)
    snprintf(out, size, "%s (%llu element%s)", m->desc, (unsigned long long)m->count,
             m->count == 1 ? "" : "s");
  else
    snprintf(out, size, "%s", m->desc);
}

/* Every task meets the others before a collective: its meeting record to each, and each
 * one's record polled for against the deadline. On a timeout the tasks whose records did not
 * come are named (cheaper than MPI_Ibarrier here, and a barrier cannot say who is missing).
 * Once every record is in, each task compares them all with task 0's: a task that brought
 * another collective, dtype or element count (a reduction of other sizes would write past
 * the smaller buffers) makes the collective INVALID_ARGUMENT on every task, the same message
 * everywhere, before any data moves; the cluster stays usable. comm and tag: the arrivals
 * communicator and tag 0, but MPI_COMM_WORLD and its top tag when joining. */
static clg_code arrive_on(clg_cluster *c, MPI_Comm comm, int tag, const meeting *mine,
                          const char *doing)
{
  int n = 0;
  MPI_Request *r = c->token_req;
  meeting *in = c->token_in;
  in[c->task] = *mine;
  for (int t = 0; t < c->tasks; t++) {
    if (t == c->task)
      continue;
    r[2 * n] = r[2 * n + 1] = MPI_REQUEST_NULL;
    if (MPI_Irecv(&in[t], (int)sizeof *in, MPI_BYTE, t, tag, comm, &r[2 * n]) != MPI_SUCCESS ||
        MPI_Isend(&in[c->task], (int)sizeof *in, MPI_BYTE, t, tag, comm, &r[2 * n + 1]) !=
            MPI_SUCCESS) {
      settle(c, 2 * n + 2, r);
      return fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", t, doing);
    }
    n++;
  }
  uint64_t start = clg_now_ns(), limit = limit_ns(c);
  bool timed_out = false;
  for (unsigned spins = 0;; spins++) {
    int done = 0;
    int err = MPI_Testall(2 * n, r, &done, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      settle(c, 2 * n, r);
      return fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)", doing,
                  mpi_text(err, text));
    }
    if (done)
      break;
    uint64_t now = clg_now_ns();
    if (now - start > limit) {
      timed_out = true;
      break;
    }
    pause_polling(spins, now - start);
  }
  if (timed_out) {
    /* Name the tasks whose record did not come or that did not take this one's; if every
     * request completed meanwhile, the meeting is whole after all. */
    char who[256] = "";
    size_t len = 0;
    int missing = 0;
    for (int k = 0, t = 0; t < c->tasks; t++) {
      if (t == c->task)
        continue;
      int got = 0, sent = 0;
      if (r[2 * k] == MPI_REQUEST_NULL ||
          MPI_Test(&r[2 * k], &got, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        got = 1;
      if (r[2 * k + 1] == MPI_REQUEST_NULL ||
          MPI_Test(&r[2 * k + 1], &sent, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        sent = 1;
      if (!got || !sent) {
        if (len < sizeof who)
          len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", missing ? ", " : "", t);
        missing++;
      }
      k++;
    }
    if (missing) {
      settle(c, 2 * n, r); /* the cluster stays failed */
      return fail(c, CLG_DEADLINE_EXCEEDED,
                  "task%s %s of /job:worker did not answer within %g s (%s, on task %d of %d; "
                  "the timeout is the session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
                  missing == 1 ? "" : "s", who, c->timeout_s, doing, c->task, c->tasks);
    }
  }
  for (int t = 0; t < c->tasks; t++) { /* what came is printed */
    in[t].desc[sizeof in[t].desc - 1] = 0;
    in[t].why[sizeof in[t].why - 1] = 0;
  }
  /* A task that could not bring its value: every other task fails the same way (that task
   * returns its own error), nothing moves, the cluster stays usable. */
  for (int t = 0; t < c->tasks; t++)
    if (in[t].failed != CLG_OK && t != c->task)
      return clg_error((clg_code)in[t].failed,
                       "%s: task %d of /job:worker could not take part (%s); nothing was reduced",
                       mine->desc, t, in[t].why);
  for (int t = 1; t < c->tasks; t++) {
    const meeting *a = &in[0], *b = &in[t];
    if (a->kind == b->kind && a->dtype == b->dtype && a->count == b->count && a->name == b->name)
      continue;
    char ta[160], tb[160];
    meeting_text(ta, sizeof ta, a);
    meeting_text(tb, sizeof tb, b);
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: the tasks of /job:worker do not agree: task 0 has %s, task %d has %s; "
                     "every task must run the same collectives in the same order, each on the "
                     "same dtype and number of elements",
                     mine->desc, ta, t, tb);
  }
  return CLG_OK;
}

static clg_code arrive(clg_cluster *c, const meeting *mine, const char *doing)
{
  return arrive_on(c, c->arrivals, 0, mine, doing);
}

static meeting meeting_of(int kind, const char *fmt, ...) CLG_PRINTF(2, 3);

static meeting meeting_of(int kind, const char *fmt, ...)
{
  meeting m;
  memset(&m, 0, sizeof m);
  m.kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m.desc, sizeof m.desc, fmt, ap);
  va_end(ap);
  return m;
}

/* FNV-1a of a name: what the tasks compare of an op's name (the record has room for a
 * clipped one only, in desc). */
static uint64_t name_hash(const char *name)
{
  uint64_t h = 1469598103934665603u;
  for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++)
    h = (h ^ *p) * 1099511628211u;
  return h;
}

/* A reduction's record: what ("AllReduce 'y' of float32 [4]"; shape NULL: [count]). */
static meeting reduce_meeting(int kind, const char *what, size_t count, clg_dtype dtype,
                              const char *shape)
{
  meeting m;
  if (shape)
    m = meeting_of(kind, "AllReduce '%s' of %s %s", what, clg_dtype_name(dtype), shape);
  else
    m = meeting_of(kind, "AllReduce '%s' of %s [%zu]", what, clg_dtype_name(dtype), count);
  m.count = count;
  m.dtype = (int32_t)dtype;
  m.name = name_hash(what);
  return m;
}

/* --- joining ----------------------------------------------------------------------------- */

/* A device as it travels: fixed fields, strings clipped. */
typedef struct wire_device {
  int32_t task, id, is_cpu, opencl, physical_index, has_fp64, has_fp16, nv_cc_major;
  uint32_t compute_units, base_addr_align;
  uint64_t global_mem, max_alloc, memory_limit;
  char cl_name[96], cl_vendor[64], pci_bus_id[32];
} wire_device;

static void copy_text(char *dst, size_t size, const char *src)
{
  snprintf(dst, size, "%s", src ? src : "");
}

static clg_code exchange_devices(clg_cluster *c, clg_devices *devs)
{
  int mine = devs->num_local;
  wire_device *local = calloc((size_t)mine, sizeof *local);
  int *counts = calloc((size_t)c->tasks + 1, sizeof *counts);
  int *displs = calloc((size_t)c->tasks, sizeof *displs);
  wire_device *all = NULL;
  clg_code code = CLG_OK;
  if (!local || !counts || !displs) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory exchanging device lists");
    goto done;
  }
  for (int i = 0; i < mine; i++) {
    const clg_device *d = clg_devices_at(devs, i);
    const clg_device_info *in = &d->info;
    wire_device *w = &local[i];
    w->task = c->task;
    w->id = in->id;
    w->is_cpu = strcmp(in->type, "CPU") == 0;
    w->opencl = !d->is_host;
    w->physical_index = in->physical_index;
    w->has_fp64 = in->has_fp64;
    w->has_fp16 = in->has_fp16;
    w->nv_cc_major = in->nv_cc_major;
    w->compute_units = in->compute_units;
    w->base_addr_align = in->base_addr_align;
    w->global_mem = in->global_mem;
    w->max_alloc = in->max_alloc;
    w->memory_limit = in->memory_limit;
    copy_text(w->cl_name, sizeof w->cl_name, in->cl_name);
    copy_text(w->cl_vendor, sizeof w->cl_vendor, in->cl_vendor);
    copy_text(w->pci_bus_id, sizeof w->pci_bus_id, in->pci_bus_id);
  }
  /* counts[tasks]: this task's byte count, sent from the heap like everything a collective
   * reads (one that times out keeps its buffers: c->holds). */
  counts[c->tasks] = mine * (int)sizeof *local;
  MPI_Request r = MPI_REQUEST_NULL;
  meeting m = meeting_of(MEET_DEVICES, "exchanging device lists");
  if ((code = arrive(c, &m, "exchanging device lists")) != CLG_OK)
    goto done;
  int err = MPI_Iallgather(&counts[c->tasks], 1, MPI_INT, counts, 1, MPI_INT, c->comm, &r);
  if (err != MPI_SUCCESS || (code = wait_collective(c, &r, "exchanging device lists")) != CLG_OK) {
    if (err != MPI_SUCCESS)
      code = fail(c, CLG_UNAVAILABLE, "MPI_Iallgather failed exchanging device lists");
    goto done;
  }
  int total = 0;
  for (int t = 0; t < c->tasks; t++) {
    displs[t] = total;
    total += counts[t];
  }
  all = malloc((size_t)total + 1);
  if (!all) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory exchanging device lists");
    goto done;
  }
  err = MPI_Iallgatherv(local, counts[c->tasks], MPI_BYTE, all, counts, displs, MPI_BYTE, c->comm,
                        &r);
  if (err != MPI_SUCCESS || (code = wait_collective(c, &r, "exchanging device lists")) != CLG_OK) {
    if (err != MPI_SUCCESS)
      code = fail(c, CLG_UNAVAILABLE, "MPI_Iallgatherv failed exchanging device lists");
    goto done;
  }
  if ((code = clg_devices_set_task(devs, c->task)) != CLG_OK)
    goto done;
  int n = total / (int)sizeof *all;
  for (int i = 0; i < n && code == CLG_OK; i++) {
    const wire_device *w = &all[i];
    if (w->task == c->task)
      continue;
    clg_device_info info;
    memset(&info, 0, sizeof info);
    info.task = w->task;
    info.id = w->id;
    info.type = w->is_cpu ? "CPU" : "GPU";
    info.physical_index = w->physical_index;
    info.has_fp64 = w->has_fp64;
    info.has_fp16 = w->has_fp16;
    info.nv_cc_major = w->nv_cc_major;
    info.compute_units = w->compute_units;
    info.base_addr_align = w->base_addr_align;
    info.global_mem = w->global_mem;
    info.max_alloc = w->max_alloc;
    info.memory_limit = w->memory_limit;
    info.cl_name = w->cl_name;
    info.cl_vendor = w->cl_vendor;
    info.pci_bus_id = w->pci_bus_id;
    code = clg_devices_add_remote(devs, &info, w->opencl != 0);
  }
done:
  if (c->holds) { /* a collective still under way reads local and writes counts or all */
    keep(local);
    keep(counts);
    keep(displs);
    keep(all);
  } else {
    free(local);
    free(counts);
    free(displs);
    free(all);
  }
  return code;
}

static const char *thread_level_name(int level)
{
  switch (level) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  case MPI_THREAD_MULTIPLE:
    return "MPI_THREAD_MULTIPLE";
  default:
    return "an unknown thread level";
  }
}

/* Duplicates from into *out, polled against the deadline (MPI_Comm_dup would block for good
 * on a task that never comes). */
static clg_code dup_comm(clg_cluster *c, MPI_Comm from, MPI_Comm *out, const char *doing)
{
  MPI_Request r = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(from, out, &r) != MPI_SUCCESS)
    return fail(c, CLG_UNAVAILABLE, "joining the cluster: MPI_Comm_idup failed (%s)", doing);
  clg_code code = wait_collective(c, &r, doing);
  if (code == CLG_OK)
    MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return code;
}

/* The steps of joining, each with the deadline: every task meets the others on
 * MPI_COMM_WORLD (its top tag), so a task that joined MPI but never opened a cluster is
 * named; then the two duplicates of MPI_COMM_WORLD, and the device lists. */
static clg_code join(clg_cluster *c, clg_devices *devs)
{
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  int world_top = flag && ub ? *ub : 32767;
  meeting m = meeting_of(MEET_JOIN, "joining the cluster");
  clg_code code = arrive_on(c, MPI_COMM_WORLD, world_top, &m,
                            "waiting for every task to open a session with the cluster option");
  if (code == CLG_OK)
    code = dup_comm(c, MPI_COMM_WORLD, &c->comm, "joining the cluster (MPI_Comm_idup)");
  if (code != CLG_OK)
    return code;
  MPI_Comm_rank(c->comm, &c->task);
  flag = 0;
  MPI_Comm_get_attr(c->comm, MPI_TAG_UB, &ub, &flag);
  c->tag_ub = flag && ub ? *ub : 32767;
  if ((code = dup_comm(c, c->comm, &c->arrivals, "joining the cluster (MPI_Comm_idup)")) != CLG_OK)
    return code;
  return exchange_devices(c, devs);
}

clg_code clg_cluster_open(clg_devices *devs, double timeout_s, clg_cluster **out)
{
  *out = NULL;
  int inited = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&inited);
  if (!inited) {
    /* MULTIPLE: the AllReduce watchdog may abort while the reducing thread is inside MPI. */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return clg_error(CLG_UNAVAILABLE, "MPI_Init_thread failed: is this process started by "
                                        "mpirun?");
    we_initialized = true;
    if (!finalize_registered) {
      atexit(finalize_at_exit);
      finalize_registered = true;
    }
  } else {
    MPI_Query_thread(&provided);
  }
  (void)we_initialized;
  /* Sessions run on any thread of the program, one cluster call at a time (the lock): MPI
   * must allow that. The watchdog needs MULTIPLE; without it, reductions poll. */
  if (provided < MPI_THREAD_SERIALIZED)
    return clg_error(CLG_FAILED_PRECONDITION,
                     "joining the cluster: MPI grants %s, but clgraph calls MPI from whichever "
                     "thread runs a session (one call at a time) and needs MPI_THREAD_SERIALIZED "
                     "at least, MPI_THREAD_MULTIPLE for the AllReduce watchdog: initialise MPI "
                     "with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or let clgraph do it",
                     thread_level_name(provided));
  clg_cluster *c = calloc(1, sizeof *c);
  if (!c)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory joining the cluster");
  c->timeout_s = timeout_s;
  c->multiple = provided >= MPI_THREAD_MULTIPLE;
  c->comm = c->arrivals = MPI_COMM_NULL;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_cond_init(&c->wcv, NULL);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->task);
  MPI_Comm_size(MPI_COMM_WORLD, &c->tasks);
  c->token_in = calloc((size_t)c->tasks, sizeof *c->token_in);
  c->token_req = calloc((size_t)c->tasks * 2, sizeof *c->token_req);
  if (!c->token_in || !c->token_req) {
    clg_cluster_close(c);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory joining the cluster");
  }
  clg_code code = join(c, devs);
  if (code != CLG_OK) {
    clg_cluster_close(c);
    return clg_error_prefix("joining the cluster (MPI): ");
  }
  if (!c->multiple)
    clg_log(CLG_LOG_INFO,
            "cluster: MPI grants %s, not MPI_THREAD_MULTIPLE: AllReduce below %zu MiB polls "
            "MPI_Iallreduce against the deadline instead of running MPI_Allreduce under a "
            "watchdog thread",
            thread_level_name(provided), RING_MIN >> 20);
  *out = c;
  return CLG_OK;
}

void clg_cluster_close(clg_cluster *c)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->wmu);
  c->wstop = true;
  pthread_cond_signal(&c->wcv);
  pthread_mutex_unlock(&c->wmu);
  if (c->watching)
    pthread_join(c->watchdog, NULL);
  c->watching = false;
  if (c->holds) {
    /* MPI may still write into the tokens, the staging buffers or the communicators'
     * handles: all of it stays, reachable. */
    keep(c);
    return;
  }
  pthread_mutex_destroy(&c->wmu);
  pthread_cond_destroy(&c->wcv);
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && c->failed == CLG_OK && !any_failure) {
    if (c->comm != MPI_COMM_NULL)
      MPI_Comm_free(&c->comm);
    if (c->arrivals != MPI_COMM_NULL)
      MPI_Comm_free(&c->arrivals);
  }
  free(c->token_in);
  free(c->token_req);
  clg_tensor_free(c->stage[0]);
  clg_tensor_free(c->stage[1]);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void clg_cluster_release_tensor(clg_cluster *c, clg_tensor *t)
{
  if (c && c->holds)
    keep(t);
  else
    clg_tensor_free(t);
}

int clg_cluster_task(const clg_cluster *c) { return c ? c->task : 0; }

int clg_cluster_num_tasks(const clg_cluster *c) { return c ? c->tasks : 1; }

double clg_cluster_timeout(const clg_cluster *c)
{
  return c ? c->timeout_s : CLG_CLUSTER_DEFAULT_TIMEOUT_S;
}

/* --- point to point ------------------------------------------------------------------------- */

static clg_block sub_block(const clg_block *b, size_t offset, size_t bytes)
{
  clg_block s = *b;
  s.offset += offset;
  s.size = bytes;
  if (s.host)
    s.host = (char *)s.host + offset;
  return s;
}

/* The staging buffers, made on first use: by then the process's pinned pool serves host
 * tensors of this size. Called with the lock held. */
static clg_code staging(clg_cluster *c)
{
  int64_t dims[1] = {(int64_t)(CHUNK / 4)};
  for (int i = 0; i < 2; i++)
    if (!c->stage[i] && !(c->stage[i] = clg_tensor_new_uninit(CLG_FLOAT32, 1, dims)))
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for staging buffers");
  return CLG_OK;
}

static clg_code transfer(clg_cluster *c, bool send, int peer, int tag, clg_device *dev,
                         const clg_block *blk, size_t bytes, const char *what)
{
  char doing[256];
  snprintf(doing, sizeof doing, "%s '%s' (%zu bytes) %s task %d", send ? "sending" : "receiving",
           what, bytes, send ? "to" : "from", peer);
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  const clg_device_ops *ops = clg_device_ops_of(dev);
  size_t nchunks = bytes ? (bytes + CHUNK - 1) / CHUNK : 1;
  /* Values are numbered from 0; MPI tags go up to tag_ub, INT_MAX in Open MPI (unsigned: the
   * modulus tag_ub + 1 overflows an int). */
  tag = (int)((unsigned)tag % ((unsigned)c->tag_ub + 1u));
  if (code != CLG_OK) {
    /* failed before */
  } else if (ops->host_memory) {
    /* Straight from or into the block: every chunk at once. */
    MPI_Request *r = malloc(sizeof *r * nchunks);
    if (!r)
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory %s", doing);
    for (size_t i = 0; r && i < nchunks; i++)
      r[i] = MPI_REQUEST_NULL;
    for (size_t i = 0; r && i < nchunks; i++) {
      size_t off = i * CHUNK, len = bytes - off < CHUNK ? bytes - off : CHUNK;
      char *p = (char *)blk->host + off;
      int err = send ? MPI_Isend(p, (int)len, MPI_BYTE, peer, tag, c->comm, &r[i])
                     : MPI_Irecv(p, (int)len, MPI_BYTE, peer, tag, c->comm, &r[i]);
      if (err != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s failed (%s)",
                    peer, doing, mpi_text(err, text));
        nchunks = i;
        break;
      }
    }
    if (r && code == CLG_OK)
      code = wait_all(c, (int)nchunks, r, peer, doing);
    if (r && code != CLG_OK)
      settle(c, (int)nchunks, r); /* no receive stays posted into the caller's block */
    free(r);
  } else if ((code = staging(c)) == CLG_OK) {
    /* Through the two staging buffers: the device copy of one chunk overlaps the network
     * transfer of the other. */
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    void *buf[2] = {clg_tensor_data(c->stage[0]), clg_tensor_data(c->stage[1])};
    size_t posted = 0; /* receives posted ahead */
    for (size_t i = 0; i < nchunks && code == CLG_OK; i++) {
      int k = (int)(i % 2);
      size_t off = i * CHUNK, len = bytes - off < CHUNK ? bytes - off : CHUNK;
      clg_block sb = sub_block(blk, off, len);
      if (send) {
        if ((code = wait_request(c, &r[k], peer, doing)) != CLG_OK)
          break;
        if (len && (code = ops->download(dev, &sb, buf[k], len)) != CLG_OK)
          break;
        if (MPI_Isend(buf[k], (int)len, MPI_BYTE, peer, tag, c->comm, &r[k]) != MPI_SUCCESS)
          code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer, doing);
      } else {
        for (; posted < nchunks && posted <= i + 1 && code == CLG_OK; posted++) {
          size_t po = posted * CHUNK, pl = bytes - po < CHUNK ? bytes - po : CHUNK;
          if (MPI_Irecv(buf[posted % 2], (int)pl, MPI_BYTE, peer, tag, c->comm, &r[posted % 2]) !=
              MPI_SUCCESS)
            code =
                fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer, doing);
        }
        if (code == CLG_OK)
          code = wait_request(c, &r[k], peer, doing);
        if (code == CLG_OK && len)
          code = ops->upload(dev, &sb, buf[k], len);
      }
    }
    if (code == CLG_OK)
      code = wait_all(c, 2, r, peer, doing);
    if (code != CLG_OK)
      settle(c, 2, r);
  }
  midway(c, code);
  pthread_mutex_unlock(&c->lock);
  return code;
}

clg_code clg_cluster_send(clg_cluster *c, int to, int tag, clg_device *dev, const clg_block *blk,
                          size_t bytes, const char *what)
{
  return transfer(c, true, to, tag, dev, blk, bytes, what);
}

clg_code clg_cluster_recv(clg_cluster *c, int from, int tag, clg_device *dev, const clg_block *blk,
                          size_t bytes, const char *what)
{
  return transfer(c, false, from, tag, dev, blk, bytes, what);
}

/* --- reductions ------------------------------------------------------------------------------ */

static MPI_Datatype mpi_type(clg_dtype dtype)
{
  switch (dtype) {
  case CLG_FLOAT32:
    return MPI_FLOAT;
  case CLG_FLOAT64:
    return MPI_DOUBLE;
  case CLG_INT32:
    return MPI_INT32_T;
  case CLG_INT64:
    return MPI_INT64_T;
  default:
    return MPI_DATATYPE_NULL;
  }
}

static void divide(void *buf, size_t count, clg_dtype dtype, int n)
{
  for (size_t i = 0; i < count; i++)
    switch (dtype) {
    case CLG_FLOAT32:
      ((float *)buf)[i] /= (float)n;
      break;
    case CLG_FLOAT64:
      ((double *)buf)[i] /= (double)n;
      break;
    case CLG_INT32:
      ((int32_t *)buf)[i] /= n;
      break;
    default:
      ((int64_t *)buf)[i] /= n;
      break;
    }
}

/* The watchdog of blocking reductions: one thread per cluster wakes on a tick (a tenth of
 * the timeout, at most 1 s) and aborts the job (MPI_Abort) when a reduction has been inside
 * MPI_Allreduce longer than the deadline. A reduction only stores its start time: no system
 * call, no wake-up, on the fast path. */
static void *watch(void *arg)
{
  clg_cluster *c = arg;
  double tick = c->timeout_s / 10 < 1 ? c->timeout_s / 10 : 1;
  pthread_mutex_lock(&c->wmu);
  while (!c->wstop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)tick;
    until.tv_nsec += (long)((tick - (double)(time_t)tick) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->wcv, &c->wmu, &until);
    uint64_t since = atomic_load(&c->reducing_since);
    if (c->wstop || !since || clg_now_ns() - since <= (uint64_t)(c->timeout_s * 1e9))
      continue;
    fprintf(stderr,
            "clgraph: task %d: AllReduce '%s': a task stopped answering inside MPI_Allreduce "
            "(more than %g s); aborting the job (MPI_Abort), which cannot return an error\n",
            c->task, atomic_load(&c->watched), c->timeout_s);
    MPI_Abort(c->comm, 124);
  }
  pthread_mutex_unlock(&c->wmu);
  return NULL;
}

/* Marks the start (on) or the end of a blocking reduction of `what`. */
static void arm(clg_cluster *c, const char *what, bool on)
{
  if (on && !c->watching) {
    pthread_mutex_lock(&c->wmu);
    c->watching = pthread_create(&c->watchdog, NULL, watch, c) == 0;
    pthread_mutex_unlock(&c->wmu);
  }
  if (on)
    atomic_store(&c->watched, what);
  atomic_store(&c->reducing_since, on ? clg_now_ns() | 1 : 0);
}

/* In place below RING_MIN, after the meeting. With MPI_THREAD_MULTIPLE the blocking
 * MPI_Allreduce under the watchdog; else MPI_Iallreduce, whose wait has the deadline (Open
 * MPI's is 0.65-0.8x as fast here, but nothing else may call MPI while it runs). */
static clg_code reduce_host(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                            const char *what, const char *doing)
{
  clg_code code = CLG_OK;
  if (c->multiple)
    arm(c, what, true);
  size_t esize = clg_dtype_size(dtype);
  for (size_t off = 0; off < count && code == CLG_OK; off += REDUCE_MAX) {
    size_t n = count - off < REDUCE_MAX ? count - off : REDUCE_MAX;
    void *at = (char *)buf + off * esize;
    MPI_Request r = MPI_REQUEST_NULL;
    int err = c->multiple
                  ? MPI_Allreduce(MPI_IN_PLACE, at, (int)n, mpi_type(dtype), MPI_SUM, c->comm)
                  : MPI_Iallreduce(MPI_IN_PLACE, at, (int)n, mpi_type(dtype), MPI_SUM, c->comm, &r);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      code = fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)", doing,
                  mpi_text(err, text));
    } else if (!c->multiple) {
      code = wait_collective(c, &r, doing);
    }
  }
  if (c->multiple)
    arm(c, what, false);
  return code;
}

static clg_code ring_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                            clg_dtype dtype, const char *doing);
static clg_code exchange_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                                clg_dtype dtype, const char *doing);

/* How count elements move, from facts every task shares (the dtype, the element count, the
 * number of tasks), never from local ones (whether the value is in host memory, whether it
 * is reduced in place): every local variant of a kind sends and receives the same messages.
 * Round the ring from RING_MIN on (2-3x MPI_Allreduce from 64 MiB on, README "Benchmarks",
 * and every wait has the deadline); below it, two tasks exchange their buffers in one round;
 * three or more run MPI_Allreduce in place (from another buffer: a copy first). */
static int reduce_kind(const clg_cluster *c, size_t count, clg_dtype dtype)
{
  if (count * clg_dtype_size(dtype) >= RING_MIN)
    return MEET_REDUCE_RING;
  return c->tasks == 2 ? MEET_REDUCE_EXCHANGE : MEET_REDUCE_MPI;
}

/* Every AllReduce: the meeting (the same kind, dtype and count on every task, or
 * INVALID_ARGUMENT everywhere), then the data. shape: the value's, for messages (NULL:
 * [count]). */
static clg_code reduce(clg_cluster *c, const void *src, void *dst, size_t count, clg_dtype dtype,
                       clg_reduce_op op, const char *what, const char *shape)
{
  if (!clg_cluster_reduce_dtype_ok(dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: AllReduce does not reduce %s", what,
                     clg_dtype_name(dtype));
  if (!c || c->tasks == 1) {
    if (src != dst && count)
      memcpy(dst, src, count * clg_dtype_size(dtype));
    return CLG_OK;
  }
  int kind = reduce_kind(c, count, dtype);
  meeting m = reduce_meeting(kind, what, count, dtype, shape);
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  if (code == CLG_OK)
    code = arrive(c, &m, doing);
  if (code == CLG_OK && count) {
    if (kind == MEET_REDUCE_RING)
      code = ring_reduce(c, src, dst, count, dtype, doing);
    else if (kind == MEET_REDUCE_EXCHANGE)
      code = exchange_reduce(c, src, dst, count, dtype, doing);
    else {
      if (src != dst)
        memcpy(dst, src, count * clg_dtype_size(dtype));
      code = reduce_host(c, dst, count, dtype, what, doing);
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (code == CLG_OK && op == CLG_REDUCE_MEAN)
    divide(dst, count, dtype, c->tasks);
  return code;
}

clg_code clg_cluster_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                               clg_reduce_op op, const char *what)
{
  return reduce(c, buf, buf, count, dtype, op, what, NULL);
}

clg_code clg_cluster_allreduce_to(clg_cluster *c, const void *src, void *dst, size_t count,
                                  clg_dtype dtype, clg_reduce_op op, const char *what,
                                  const char *shape)
{
  return reduce(c, src, dst, count, dtype, op, what, shape);
}

clg_code clg_cluster_withdraw(clg_cluster *c, clg_code code, size_t count, clg_dtype dtype,
                              const char *what, const char *shape)
{
  if (!c || c->tasks == 1 || code == CLG_OK)
    return code;
  char why[512];
  snprintf(why, sizeof why, "%s", clg_last_error());
  meeting m = reduce_meeting(reduce_kind(c, count, dtype), what, count, dtype, shape);
  m.failed = (int32_t)code;
  snprintf(m.why, sizeof m.why, "%.*s", (int)sizeof m.why - 1, why);
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  pthread_mutex_lock(&c->lock);
  clg_code met = check_failed(c);
  if (met == CLG_OK)
    met = arrive(c, &m, doing);
  bool failed = c->failed != CLG_OK;
  pthread_mutex_unlock(&c->lock);
  if (failed)
    return met; /* the meeting itself failed (a deadline): the cluster failed with it */
  return clg_error(code, "%s", why);
}

/* dst[i] = a[i] + b[i] over n elements (one loop per type, so that it vectorises; integers
 * wrap as the hardware does, computed unsigned). dst may be a. */
static void add_into(void *dst, const void *a, const void *b, size_t n, clg_dtype dtype)
{
  if (dtype == CLG_FLOAT32) {
    float *d = dst;
    const float *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
      d[i] = x[i] + y[i];
  } else if (dtype == CLG_FLOAT64) {
    double *d = dst;
    const double *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
      d[i] = x[i] + y[i];
  } else if (dtype == CLG_INT32) {
    uint32_t *d = dst;
    const uint32_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
      d[i] = x[i] + y[i];
  } else {
    uint64_t *d = dst;
    const uint64_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
      d[i] = x[i] + y[i];
  }
}

/* Segment k of P over count elements: [first, first + n). */
static void segment(size_t count, int tasks, int k, size_t *first, size_t *n)
{
  size_t lo = count * (size_t)k / (size_t)tasks, hi = count * (size_t)(k + 1) / (size_t)tasks;
  *first = lo;
  *n = hi - lo;
}

/* A ring reduction from src into dst (the same memory, or not overlapping). From another
 * buffer, a value that may not be overwritten (a fed tensor) needs no copy first:
 * MPI_Allreduce copies its send buffer into the receive buffer before reducing (Open MPI
 * 4.1). Segment k of the P segments travels the ring (reduce-scatter: each task adds its own
 * src to what its left neighbour sends, in pieces through the two staging buffers, the
 * addition of one piece overlapping the arrival of the next), then the reduced segments
 * travel once more (allgather, straight into dst). In place this is correct too: each
 * segment is read as src only when it is summed. Every wait has the deadline and names the
 * peer. The sums are the same on every task (each segment is summed once, then copied). */
static clg_code ring_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                            clg_dtype dtype, const char *doing)
{
  int me = c->task, p = c->tasks, right = (me + 1) % p, left = (me + p - 1) % p;
  size_t esize = clg_dtype_size(dtype), per = CHUNK / esize;
  clg_code code = staging(c);
  void *tmp[2] = {NULL, NULL};
  if (code == CLG_OK) {
    tmp[0] = clg_tensor_data(c->stage[0]);
    tmp[1] = clg_tensor_data(c->stage[1]);
  }
  size_t npieces_max = (count / (size_t)p + 1) / per + 2;
  MPI_Request *sends = code == CLG_OK ? malloc(sizeof *sends * npieces_max) : NULL;
  if (code == CLG_OK && !sends)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory: %s", doing);
  for (int step = 0; step < 2 * (p - 1) && code == CLG_OK; step++) {
    bool gather = step >= p - 1;
    int s = gather ? step - (p - 1) : step;
    /* Reduce-scatter sends segment me - s (its own src at first, then the sums it made) and
     * receives me - s - 1; the allgather sends me + 1 - s and receives me - s. */
    int out_seg = gather ? (me + 1 - s + p) % p : (me - s + p) % p;
    int in_seg = gather ? (me - s + p) % p : (me - s - 1 + 2 * p) % p;
    size_t of, on, inf, inn;
    segment(count, p, out_seg, &of, &on);
    segment(count, p, in_seg, &inf, &inn);
    const char *from = step == 0 ? (const char *)src : (const char *)dst;
    size_t nout = on ? (on + per - 1) / per : 0, nin = inn ? (inn + per - 1) / per : 0;
    for (size_t i = 0; i < nout; i++)
      sends[i] = MPI_REQUEST_NULL;
    for (size_t i = 0; i < nout && code == CLG_OK; i++) {
      size_t n = on - i * per < per ? on - i * per : per;
      if (MPI_Isend(from + (of + i * per) * esize, (int)(n * esize), MPI_BYTE, right, 1,
                    c->arrivals, &sends[i]) != MPI_SUCCESS) {
        nout = i;
        code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", right, doing);
      }
    }
    if (gather) {
      MPI_Request *recvs = malloc(sizeof *recvs * (nin ? nin : 1));
      if (!recvs && code == CLG_OK)
        code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory: %s", doing);
      for (size_t i = 0; recvs && i < nin; i++)
        recvs[i] = MPI_REQUEST_NULL;
      for (size_t i = 0; recvs && i < nin && code == CLG_OK; i++) {
        size_t n = inn - i * per < per ? inn - i * per : per;
        if (MPI_Irecv((char *)dst + (inf + i * per) * esize, (int)(n * esize), MPI_BYTE, left, 1,
                      c->arrivals, &recvs[i]) != MPI_SUCCESS) {
          nin = i;
          code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", left, doing);
        }
      }
      if (recvs && code == CLG_OK)
        code = wait_all(c, (int)nin, recvs, left, doing);
      if (recvs && code != CLG_OK)
        settle(c, (int)nin, recvs); /* no receive stays posted into dst */
      free(recvs);
    } else {
      MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      size_t posted = 0;
      for (size_t i = 0; i < nin && code == CLG_OK; i++) {
        for (; posted < nin && posted <= i + 1 && code == CLG_OK; posted++) {
          size_t n = inn - posted * per < per ? inn - posted * per : per;
          if (MPI_Irecv(tmp[posted % 2], (int)(n * esize), MPI_BYTE, left, 1, c->arrivals,
                        &r[posted % 2]) != MPI_SUCCESS)
            code =
                fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", left, doing);
        }
        if (code == CLG_OK)
          code = wait_request(c, &r[i % 2], left, doing);
        size_t n = inn - i * per < per ? inn - i * per : per, at = (inf + i * per) * esize;
        if (code == CLG_OK)
          add_into((char *)dst + at, (const char *)src + at, tmp[i % 2], n, dtype);
      }
      if (code != CLG_OK)
        settle(c, 2, r);
    }
    if (code == CLG_OK)
      code = wait_all(c, (int)nout, sends, right, doing);
    if (code != CLG_OK)
      settle(c, (int)nout, sends);
  }
  free(sends);
  return midway(c, code);
}

/* Two tasks, below RING_MIN: each sends its whole src and receives the other's in CHUNK
 * messages, adding into dst each piece as it lands (one round; the sum src0 + src1 is the
 * same on both tasks: addition of two numbers commutes). From another buffer the pieces land
 * straight in dst, which then gets src added (no copy); in place they land in the two
 * staging buffers, and a piece of dst is summed only once its own send is done. Both send
 * and receive the same messages, so one task may reduce in place and the other not. */
static clg_code exchange_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                                clg_dtype dtype, const char *doing)
{
  int peer = 1 - c->task;
  bool in_place = src == dst;
  size_t esize = clg_dtype_size(dtype), per = CHUNK / esize;
  size_t n = (count + per - 1) / per;
  clg_code code = in_place ? staging(c) : CLG_OK;
  if (code != CLG_OK)
    return midway(c, code);
  void *tmp[2] = {NULL, NULL};
  if (in_place) {
    tmp[0] = clg_tensor_data(c->stage[0]);
    tmp[1] = clg_tensor_data(c->stage[1]);
  }
  MPI_Request *r = malloc(sizeof *r * 2 * n);
  if (!r)
    return midway(c, clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory: %s", doing));
  for (size_t i = 0; i < 2 * n; i++)
    r[i] = MPI_REQUEST_NULL;
  /* r[2i]: the receive of piece i, r[2i + 1]: its send. */
  for (size_t i = 0; i < n && code == CLG_OK; i++) {
    size_t at = i * per, len = count - at < per ? count - at : per;
    if ((!in_place && MPI_Irecv((char *)dst + at * esize, (int)(len * esize), MPI_BYTE, peer, 1,
                                c->arrivals, &r[2 * i]) != MPI_SUCCESS) ||
        MPI_Isend((const char *)src + at * esize, (int)(len * esize), MPI_BYTE, peer, 1,
                  c->arrivals, &r[2 * i + 1]) != MPI_SUCCESS)
      code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer, doing);
  }
  size_t posted = 0; /* in place: receives posted ahead into the staging buffers */
  for (size_t i = 0; i < n && code == CLG_OK; i++) {
    size_t at = i * per, len = count - at < per ? count - at : per;
    for (; in_place && posted < n && posted <= i + 1 && code == CLG_OK; posted++) {
      size_t pa = posted * per, pl = count - pa < per ? count - pa : per;
      if (MPI_Irecv(tmp[posted % 2], (int)(pl * esize), MPI_BYTE, peer, 1, c->arrivals,
                    &r[2 * posted]) != MPI_SUCCESS)
        code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer, doing);
    }
    if (code == CLG_OK)
      code = wait_request(c, &r[2 * i], peer, doing);
    if (code == CLG_OK && in_place)
      code = wait_request(c, &r[2 * i + 1], peer, doing); /* piece i of src is sent */
    if (code == CLG_OK)
      add_into((char *)dst + at * esize, (const char *)dst + at * esize,
               in_place ? (const void *)tmp[i % 2] : (const char *)src + at * esize, len, dtype);
  }
  for (size_t i = 0; i < n && code == CLG_OK; i++)
    code = wait_request(c, &r[2 * i + 1], peer, doing);
  if (code != CLG_OK)
    settle(c, (int)(2 * n), r); /* no receive stays posted into dst or the staging buffers */
  free(r);
  return midway(c, code);
}

clg_code clg_cluster_reference_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype)
{
  if (!c)
    return clg_error(CLG_UNIMPLEMENTED, "MPI_Allreduce: no cluster");
  for (size_t off = 0; off < count; off += REDUCE_MAX) {
    size_t n = count - off < REDUCE_MAX ? count - off : REDUCE_MAX;
    if (MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * clg_dtype_size(dtype), (int)n,
                      mpi_type(dtype), MPI_SUM, c->comm) != MPI_SUCCESS)
      return clg_error(CLG_UNAVAILABLE, "MPI_Allreduce failed");
  }
  return CLG_OK;
}

clg_code clg_cluster_barrier(clg_cluster *c)
{
  if (!c)
    return CLG_OK;
  meeting m = meeting_of(MEET_BARRIER, "a barrier");
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  if (code == CLG_OK)
    code = arrive(c, &m, "a barrier");
  pthread_mutex_unlock(&c->lock);
  return code;
}

#else
typedef int clg_cluster_mpi_unused; /* ISO C: a translation unit must not be empty */
#endif
