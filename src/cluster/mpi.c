/* Tasks as MPI ranks (Open MPI; any MPI-3 library should do). See cluster.h. This file holds
 * the failures, the polled waits, the meetings, joining, the watchdog and the barrier; the
 * data (point-to-point transfers, the AllReduce variants) moves in mpi_data.c.
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

#include "cluster/mpi_internal.h"
#include "device/device.h"

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

const char *clg_mpi_text(int err, char *buf)
{
  int len = 0;
  if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS)
    snprintf(buf, MPI_MAX_ERROR_STRING, "MPI error %d", err);
  return buf;
}

clg_code clg_mpi_fail(clg_cluster *c, clg_code code, const char *fmt, ...)
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
clg_code clg_mpi_midway(clg_cluster *c, clg_code code)
{
  if (code != CLG_OK && c->failed == CLG_OK) {
    snprintf(c->failure, sizeof c->failure, "%s (this task stopped midway)", clg_last_error());
    c->failed = code;
    any_failure = true;
  }
  return code;
}

clg_code clg_mpi_check_failed(clg_cluster *c)
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
void clg_mpi_settle(clg_cluster *c, int n, MPI_Request *r)
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
clg_code clg_mpi_wait_request(clg_cluster *c, MPI_Request *r, int peer, const char *doing)
{
  uint64_t start = clg_now_ns(), limit = limit_ns(c);
  for (unsigned spins = 0;; spins++) {
    int done = 0;
    MPI_Status st;
    int err = MPI_Test(r, &done, &st);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      if (peer >= 0)
        return clg_mpi_fail(c, CLG_UNAVAILABLE,
                            "task %d of /job:worker is unavailable: %s failed (%s)", peer, doing,
                            clg_mpi_text(err, text));
      return clg_mpi_fail(c, CLG_UNAVAILABLE,
                          "a task of /job:worker is unavailable: %s failed (%s)", doing,
                          clg_mpi_text(err, text));
    }
    if (done)
      return CLG_OK;
    uint64_t now = clg_now_ns();
    if (now - start > limit) {
      if (peer >= 0)
        return clg_mpi_fail(
            c, CLG_DEADLINE_EXCEEDED,
            "task %d of /job:worker did not answer within %g s (%s; the timeout is the "
            "session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
            peer, c->timeout_s, doing);
      return clg_mpi_fail(
          c, CLG_DEADLINE_EXCEEDED,
          "not every task of /job:worker answered within %g s (%s, on task %d of %d; the "
          "timeout is the session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
          c->timeout_s, doing, c->task, c->tasks);
    }
    pause_polling(spins, now - start);
  }
}

/* A nonblocking collective polled against the deadline. One that fails to complete cannot
 * be cancelled (MPI forbids it): its buffers stay MPI's (c->holds). */
clg_code clg_mpi_wait_collective(clg_cluster *c, MPI_Request *r, const char *doing)
{
  clg_code code = clg_mpi_wait_request(c, r, -1, doing);
  if (code != CLG_OK && *r != MPI_REQUEST_NULL)
    c->holds = true;
  return code;
}

clg_code clg_mpi_wait_all(clg_cluster *c, int n, MPI_Request *r, int peer, const char *doing)
{
  clg_code code = CLG_OK;
  for (int i = 0; i < n && code == CLG_OK; i++)
    if (r[i] != MPI_REQUEST_NULL)
      code = clg_mpi_wait_request(c, &r[i], peer, doing);
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
      clg_mpi_settle(c, 2 * n + 2, r);
      return clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", t,
                          doing);
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
      clg_mpi_settle(c, 2 * n, r);
      return clg_mpi_fail(c, CLG_UNAVAILABLE,
                          "a task of /job:worker is unavailable: %s failed (%s)", doing,
                          clg_mpi_text(err, text));
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
      clg_mpi_settle(c, 2 * n, r); /* the cluster stays failed */
      return clg_mpi_fail(
          c, CLG_DEADLINE_EXCEEDED,
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

clg_code clg_mpi_arrive(clg_cluster *c, const meeting *mine, const char *doing)
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
meeting clg_mpi_reduce_meeting(int kind, const char *what, size_t count, clg_dtype dtype,
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
  if ((code = clg_mpi_arrive(c, &m, "exchanging device lists")) != CLG_OK)
    goto done;
  int err = MPI_Iallgather(&counts[c->tasks], 1, MPI_INT, counts, 1, MPI_INT, c->comm, &r);
  if (err != MPI_SUCCESS ||
      (code = clg_mpi_wait_collective(c, &r, "exchanging device lists")) != CLG_OK) {
    if (err != MPI_SUCCESS)
      code = clg_mpi_fail(c, CLG_UNAVAILABLE, "MPI_Iallgather failed exchanging device lists");
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
  if (err != MPI_SUCCESS ||
      (code = clg_mpi_wait_collective(c, &r, "exchanging device lists")) != CLG_OK) {
    if (err != MPI_SUCCESS)
      code = clg_mpi_fail(c, CLG_UNAVAILABLE, "MPI_Iallgatherv failed exchanging device lists");
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
    return clg_mpi_fail(c, CLG_UNAVAILABLE, "joining the cluster: MPI_Comm_idup failed (%s)",
                        doing);
  clg_code code = clg_mpi_wait_collective(c, &r, doing);
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
void clg_mpi_arm(clg_cluster *c, const char *what, bool on)
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

clg_code clg_cluster_barrier(clg_cluster *c)
{
  if (!c)
    return CLG_OK;
  meeting m = meeting_of(MEET_BARRIER, "a barrier");
  pthread_mutex_lock(&c->lock);
  clg_code code = clg_mpi_check_failed(c);
  if (code == CLG_OK)
    code = clg_mpi_arrive(c, &m, "a barrier");
  pthread_mutex_unlock(&c->lock);
  return code;
}

#else
typedef int clg_cluster_mpi_unused; /* ISO C: a translation unit must not be empty */
#endif
