/* Tasks as MPI ranks (Open MPI; any MPI-3 library should do). See cluster.h.
 *
 * Faults: the communicator's error handler returns (MPI_ERRORS_RETURN), and every wait polls
 * a nonblocking request against the deadline, so an error becomes UNAVAILABLE and silence
 * DEADLINE_EXCEEDED, both naming the task. A collective first meets every task: each task
 * sends a one-byte arrival token to every other on a communicator of its own and polls for
 * theirs against the deadline, so a task that stopped answering is found, and named, before
 * anything blocks. An AllReduce in place below RING_MIN then runs the blocking MPI_Allreduce
 * (Open MPI's nonblocking MPI_Iallreduce reached 0.65-0.8x of it here) under a watchdog that
 * aborts the job (MPI_Abort) if it outlives the deadline: a task that stops inside the
 * reduction ends the job instead of hanging it. The watchdog costs no system call per
 * reduction: it wakes on a tick and reads the reduction's start time. From RING_MIN on, and
 * from a buffer into another, reductions are point-to-point messages (a ring, or one exchange
 * for two tasks) whose every wait has the deadline.
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

struct clg_cluster {
  MPI_Comm comm;
  MPI_Comm arrivals; /* the arrival tokens of collectives, apart from the data */
  char *token_in;    /* one byte per task */
  MPI_Request *token_req;
  int task, tasks;
  int tag_ub;
  double timeout_s;
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

static clg_cluster *current;
static bool we_initialized, finalize_registered, any_failure;

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

static clg_code check_failed(clg_cluster *c)
{
  if (c->failed == CLG_OK)
    return CLG_OK;
  return clg_error(c->failed, "the cluster failed earlier: %s", c->failure);
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

/* Polls r until it completes, an error, or the deadline. peer < 0: a collective. */
static clg_code wait_request(clg_cluster *c, MPI_Request *r, int peer, const char *doing)
{
  uint64_t start = clg_now_ns(), limit = (uint64_t)(c->timeout_s * 1e9);
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

static clg_code wait_all(clg_cluster *c, int n, MPI_Request *r, int peer, const char *doing)
{
  clg_code code = CLG_OK;
  for (int i = 0; i < n && code == CLG_OK; i++)
    if (r[i] != MPI_REQUEST_NULL)
      code = wait_request(c, &r[i], peer, doing);
  return code;
}

/* Every task meets the others before a collective: a one-byte token to each, and each one's
 * token polled for against the deadline. On a timeout the tasks whose tokens did not come are
 * named (cheaper than MPI_Ibarrier here, and a barrier cannot say who is missing). */
static clg_code arrive(clg_cluster *c, const char *doing)
{
  int n = 0;
  MPI_Request *r = c->token_req;
  for (int t = 0; t < c->tasks; t++) {
    if (t == c->task)
      continue;
    if (MPI_Irecv(&c->token_in[t], 1, MPI_BYTE, t, 0, c->arrivals, &r[2 * n]) != MPI_SUCCESS ||
        MPI_Isend(&c->token_in[c->task], 1, MPI_BYTE, t, 0, c->arrivals, &r[2 * n + 1]) !=
            MPI_SUCCESS)
      return fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", t, doing);
    n++;
  }
  uint64_t start = clg_now_ns(), limit = (uint64_t)(c->timeout_s * 1e9);
  for (unsigned spins = 0;; spins++) {
    int done = 0;
    int err = MPI_Testall(2 * n, r, &done, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      return fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)", doing,
                  mpi_text(err, text));
    }
    if (done)
      return CLG_OK;
    uint64_t now = clg_now_ns();
    if (now - start > limit)
      break;
    pause_polling(spins, now - start);
  }
  /* Name the silent tasks; their receives are cancelled (the cluster stays failed). */
  char who[256] = "";
  size_t len = 0;
  int missing = 0;
  for (int k = 0, t = 0; t < c->tasks; t++) {
    if (t == c->task)
      continue;
    int got = 0;
    MPI_Test(&r[2 * k], &got, MPI_STATUS_IGNORE);
    if (!got) {
      MPI_Cancel(&r[2 * k]);
      MPI_Request_free(&r[2 * k]);
      if (len < sizeof who)
        len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", missing ? ", " : "", t);
      missing++;
    }
    if (r[2 * k + 1] != MPI_REQUEST_NULL)
      MPI_Request_free(&r[2 * k + 1]);
    k++;
  }
  return fail(c, CLG_DEADLINE_EXCEEDED,
              "task%s %s of /job:worker did not answer within %g s (%s, on task %d of %d; the "
              "timeout is the session's cluster_timeout_s or CLGRAPH_CLUSTER_TIMEOUT)",
              missing == 1 ? "" : "s", who, c->timeout_s, doing, c->task, c->tasks);
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
  int *counts = calloc((size_t)c->tasks, sizeof *counts);
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
  int bytes = mine * (int)sizeof *local;
  MPI_Request r;
  if ((code = arrive(c, "exchanging device lists")) != CLG_OK)
    goto done;
  int err = MPI_Iallgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, c->comm, &r);
  if (err != MPI_SUCCESS || (code = wait_request(c, &r, -1, "exchanging device lists")) != CLG_OK) {
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
  err = MPI_Iallgatherv(local, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, c->comm, &r);
  if (err != MPI_SUCCESS || (code = wait_request(c, &r, -1, "exchanging device lists")) != CLG_OK) {
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
  free(local);
  free(counts);
  free(displs);
  free(all);
  return code;
}

clg_code clg_cluster_open(clg_devices *devs, double timeout_s, clg_cluster **out)
{
  *out = NULL;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    /* MULTIPLE: the AllReduce watchdog may abort while the reducing thread is inside MPI. */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return clg_error(CLG_UNAVAILABLE, "MPI_Init_thread failed: is this process started by "
                                        "mpirun?");
    we_initialized = true;
    if (!finalize_registered) {
      atexit(finalize_at_exit);
      finalize_registered = true;
    }
  }
  (void)we_initialized;
  clg_cluster *c = calloc(1, sizeof *c);
  if (!c)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory joining the cluster");
  c->timeout_s = timeout_s;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_cond_init(&c->wcv, NULL);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) {
    pthread_mutex_destroy(&c->wmu);
    pthread_cond_destroy(&c->wcv);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return clg_error(CLG_UNAVAILABLE, "MPI_Comm_dup(MPI_COMM_WORLD) failed");
  }
  MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->comm, &c->task);
  MPI_Comm_size(c->comm, &c->tasks);
  c->arrivals = MPI_COMM_NULL;
  c->token_in = calloc((size_t)c->tasks, 1);
  c->token_req = calloc((size_t)c->tasks * 2, sizeof *c->token_req);
  if (!c->token_in || !c->token_req || MPI_Comm_dup(c->comm, &c->arrivals) != MPI_SUCCESS) {
    clg_cluster_close(c);
    return clg_error(CLG_UNAVAILABLE, "joining the cluster (MPI): out of memory or MPI_Comm_dup "
                                      "failed");
  }
  MPI_Comm_set_errhandler(c->arrivals, MPI_ERRORS_RETURN);
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(c->comm, MPI_TAG_UB, &ub, &flag);
  c->tag_ub = flag && ub ? *ub : 32767;
  clg_code code = exchange_devices(c, devs);
  if (code != CLG_OK) {
    clg_cluster_close(c);
    return clg_error_prefix("joining the cluster (MPI): ");
  }
  current = c;
  *out = c;
  return CLG_OK;
}

void clg_cluster_close(clg_cluster *c)
{
  if (!c)
    return;
  if (current == c)
    current = NULL;
  pthread_mutex_lock(&c->wmu);
  c->wstop = true;
  pthread_cond_signal(&c->wcv);
  pthread_mutex_unlock(&c->wmu);
  if (c->watching)
    pthread_join(c->watchdog, NULL);
  pthread_mutex_destroy(&c->wmu);
  pthread_cond_destroy(&c->wcv);
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && c->failed == CLG_OK && !any_failure) {
    MPI_Comm_free(&c->comm);
    if (c->arrivals != MPI_COMM_NULL)
      MPI_Comm_free(&c->arrivals);
  }
  /* After a failure a cancelled token receive may still be pending: its byte stays. */
  if (c->failed == CLG_OK && !any_failure)
    free(c->token_in);
  free(c->token_req);
  clg_tensor_free(c->stage[0]);
  clg_tensor_free(c->stage[1]);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

clg_cluster *clg_cluster_current(void) { return current; }

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
  }
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

static clg_code reduce_host(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                            const char *what)
{
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  /* Every task must be here before the blocking reduction starts. */
  clg_code code = arrive(c, doing);
  if (code != CLG_OK)
    return code;
  arm(c, what, true);
  size_t esize = clg_dtype_size(dtype);
  for (size_t off = 0; off < count && code == CLG_OK; off += REDUCE_MAX) {
    size_t n = count - off < REDUCE_MAX ? count - off : REDUCE_MAX;
    int err = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * esize, (int)n, mpi_type(dtype),
                            MPI_SUM, c->comm);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      code = fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)", doing,
                  mpi_text(err, text));
    }
  }
  arm(c, what, false);
  return code;
}

static clg_code ring_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                            clg_dtype dtype, const char *doing);

clg_code clg_cluster_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                               clg_reduce_op op, const char *what)
{
  if (!clg_cluster_reduce_dtype_ok(dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: AllReduce does not reduce %s", what,
                     clg_dtype_name(dtype));
  if (!c || c->tasks == 1 || count == 0)
    return CLG_OK;
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  if (code == CLG_OK && count * clg_dtype_size(dtype) >= RING_MIN) {
    /* Round the ring in place: 2-3x MPI_Allreduce from 64 MiB on (README "Benchmarks"),
     * and every wait has the deadline (no watchdog needed). */
    char doing[256];
    snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
    if ((code = arrive(c, doing)) == CLG_OK)
      code = ring_reduce(c, buf, buf, count, dtype, doing);
  } else if (code == CLG_OK) {
    code = reduce_host(c, buf, count, dtype, what);
  }
  pthread_mutex_unlock(&c->lock);
  if (code == CLG_OK && op == CLG_REDUCE_MEAN)
    divide(buf, count, dtype, c->tasks);
  return code;
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
    }
    if (code == CLG_OK)
      code = wait_all(c, (int)nout, sends, right, doing);
  }
  free(sends);
  return code;
}

/* Two tasks, below RING_MIN: each sends its whole src and receives the other's straight into
 * dst, in CHUNK messages, adding its own src into each piece as it lands (one round, no
 * copy; the sum src0 + src1 is the same on both tasks: addition of two numbers commutes). */
static clg_code exchange_reduce(clg_cluster *c, const void *src, void *dst, size_t count,
                                clg_dtype dtype, const char *doing)
{
  int peer = 1 - c->task;
  size_t esize = clg_dtype_size(dtype), per = CHUNK / esize;
  size_t n = (count + per - 1) / per;
  MPI_Request *r = malloc(sizeof *r * 2 * n);
  if (!r)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory: %s", doing);
  clg_code code = CLG_OK;
  size_t posted = 0;
  for (; posted < n && code == CLG_OK; posted++) {
    size_t at = posted * per, len = count - at < per ? count - at : per;
    if (MPI_Irecv((char *)dst + at * esize, (int)(len * esize), MPI_BYTE, peer, 1, c->arrivals,
                  &r[2 * posted]) != MPI_SUCCESS ||
        MPI_Isend((const char *)src + at * esize, (int)(len * esize), MPI_BYTE, peer, 1,
                  c->arrivals, &r[2 * posted + 1]) != MPI_SUCCESS)
      code = fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer, doing);
  }
  for (size_t i = 0; i < n && code == CLG_OK; i++) {
    size_t at = i * per, len = count - at < per ? count - at : per;
    if ((code = wait_request(c, &r[2 * i], peer, doing)) == CLG_OK)
      add_into((char *)dst + at * esize, (const char *)dst + at * esize,
               (const char *)src + at * esize, len, dtype);
  }
  for (size_t i = 0; i < n && code == CLG_OK; i++)
    code = wait_request(c, &r[2 * i + 1], peer, doing);
  free(r);
  return code;
}

clg_code clg_cluster_allreduce_to(clg_cluster *c, const void *src, void *dst, size_t count,
                                  clg_dtype dtype, clg_reduce_op op, const char *what)
{
  /* Two tasks exchange their buffers; more go round the ring from RING_MIN on, else copy and
   * call MPI_Allreduce. */
  bool small = count * clg_dtype_size(dtype) < RING_MIN;
  if (src == dst || !c || c->tasks == 1 || (small && c->tasks > 2)) {
    if (src != dst && count)
      memcpy(dst, src, count * clg_dtype_size(dtype));
    return clg_cluster_allreduce(c, dst, count, dtype, op, what);
  }
  if (!clg_cluster_reduce_dtype_ok(dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: AllReduce does not reduce %s", what,
                     clg_dtype_name(dtype));
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  if (code == CLG_OK)
    code = arrive(c, doing);
  if (code == CLG_OK)
    code = small ? exchange_reduce(c, src, dst, count, dtype, doing)
                 : ring_reduce(c, src, dst, count, dtype, doing);
  pthread_mutex_unlock(&c->lock);
  if (code == CLG_OK && op == CLG_REDUCE_MEAN)
    divide(dst, count, dtype, c->tasks);
  return code;
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
  pthread_mutex_lock(&c->lock);
  clg_code code = check_failed(c);
  if (code == CLG_OK)
    code = arrive(c, "a barrier");
  pthread_mutex_unlock(&c->lock);
  return code;
}

#else
typedef int clg_cluster_mpi_unused; /* ISO C: a translation unit must not be empty */
#endif
