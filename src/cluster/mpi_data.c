/* The data of the MPI cluster (see mpi.c for the whole design): point-to-point transfers of a
 * block in chunks (straight from host memory, or through the two staging buffers for a device
 * value), and AllReduce by MPI_Allreduce in place, one exchange between two tasks or a ring,
 * each after its meeting (mpi.c). */
#ifdef CLG_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/mpi_internal.h"
#include "device/device.h"

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
  clg_code code = clg_mpi_check_failed(c);
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
        code = clg_mpi_fail(c, CLG_UNAVAILABLE,
                            "task %d of /job:worker is unavailable: %s failed (%s)", peer, doing,
                            clg_mpi_text(err, text));
        nchunks = i;
        break;
      }
    }
    if (r && code == CLG_OK)
      code = clg_mpi_wait_all(c, (int)nchunks, r, peer, doing);
    if (r && code != CLG_OK)
      clg_mpi_settle(c, (int)nchunks, r); /* no receive stays posted into the caller's block */
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
        if ((code = clg_mpi_wait_request(c, &r[k], peer, doing)) != CLG_OK)
          break;
        if (len && (code = ops->download(dev, &sb, buf[k], len)) != CLG_OK)
          break;
        if (MPI_Isend(buf[k], (int)len, MPI_BYTE, peer, tag, c->comm, &r[k]) != MPI_SUCCESS)
          code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer,
                              doing);
      } else {
        for (; posted < nchunks && posted <= i + 1 && code == CLG_OK; posted++) {
          size_t po = posted * CHUNK, pl = bytes - po < CHUNK ? bytes - po : CHUNK;
          if (MPI_Irecv(buf[posted % 2], (int)pl, MPI_BYTE, peer, tag, c->comm, &r[posted % 2]) !=
              MPI_SUCCESS)
            code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s",
                                peer, doing);
        }
        if (code == CLG_OK)
          code = clg_mpi_wait_request(c, &r[k], peer, doing);
        if (code == CLG_OK && len)
          code = ops->upload(dev, &sb, buf[k], len);
      }
    }
    if (code == CLG_OK)
      code = clg_mpi_wait_all(c, 2, r, peer, doing);
    if (code != CLG_OK)
      clg_mpi_settle(c, 2, r);
  }
  clg_mpi_midway(c, code);
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

/* In place below RING_MIN, after the meeting. With MPI_THREAD_MULTIPLE the blocking
 * MPI_Allreduce under the watchdog; else MPI_Iallreduce, whose wait has the deadline (Open
 * MPI's is 0.65-0.8x as fast here, but nothing else may call MPI while it runs). */
static clg_code reduce_host(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                            const char *what, const char *doing)
{
  clg_code code = CLG_OK;
  if (c->multiple)
    clg_mpi_arm(c, what, true);
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
      code =
          clg_mpi_fail(c, CLG_UNAVAILABLE, "a task of /job:worker is unavailable: %s failed (%s)",
                       doing, clg_mpi_text(err, text));
    } else if (!c->multiple) {
      code = clg_mpi_wait_collective(c, &r, doing);
    }
  }
  if (c->multiple)
    clg_mpi_arm(c, what, false);
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
  meeting m = clg_mpi_reduce_meeting(kind, what, count, dtype, shape);
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  pthread_mutex_lock(&c->lock);
  clg_code code = clg_mpi_check_failed(c);
  if (code == CLG_OK)
    code = clg_mpi_arrive(c, &m, doing);
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
  meeting m = clg_mpi_reduce_meeting(reduce_kind(c, count, dtype), what, count, dtype, shape);
  m.failed = (int32_t)code;
  snprintf(m.why, sizeof m.why, "%.*s", (int)sizeof m.why - 1, why);
  char doing[256];
  snprintf(doing, sizeof doing, "AllReduce '%s' of %zu %s", what, count, clg_dtype_name(dtype));
  pthread_mutex_lock(&c->lock);
  clg_code met = clg_mpi_check_failed(c);
  if (met == CLG_OK)
    met = clg_mpi_arrive(c, &m, doing);
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
        code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", right,
                            doing);
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
          code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", left,
                              doing);
        }
      }
      if (recvs && code == CLG_OK)
        code = clg_mpi_wait_all(c, (int)nin, recvs, left, doing);
      if (recvs && code != CLG_OK)
        clg_mpi_settle(c, (int)nin, recvs); /* no receive stays posted into dst */
      free(recvs);
    } else {
      MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      size_t posted = 0;
      for (size_t i = 0; i < nin && code == CLG_OK; i++) {
        for (; posted < nin && posted <= i + 1 && code == CLG_OK; posted++) {
          size_t n = inn - posted * per < per ? inn - posted * per : per;
          if (MPI_Irecv(tmp[posted % 2], (int)(n * esize), MPI_BYTE, left, 1, c->arrivals,
                        &r[posted % 2]) != MPI_SUCCESS)
            code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s",
                                left, doing);
        }
        if (code == CLG_OK)
          code = clg_mpi_wait_request(c, &r[i % 2], left, doing);
        size_t n = inn - i * per < per ? inn - i * per : per, at = (inf + i * per) * esize;
        if (code == CLG_OK)
          add_into((char *)dst + at, (const char *)src + at, tmp[i % 2], n, dtype);
      }
      if (code != CLG_OK)
        clg_mpi_settle(c, 2, r);
    }
    if (code == CLG_OK)
      code = clg_mpi_wait_all(c, (int)nout, sends, right, doing);
    if (code != CLG_OK)
      clg_mpi_settle(c, (int)nout, sends);
  }
  free(sends);
  return clg_mpi_midway(c, code);
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
    return clg_mpi_midway(c, code);
  void *tmp[2] = {NULL, NULL};
  if (in_place) {
    tmp[0] = clg_tensor_data(c->stage[0]);
    tmp[1] = clg_tensor_data(c->stage[1]);
  }
  MPI_Request *r = malloc(sizeof *r * 2 * n);
  if (!r)
    return clg_mpi_midway(c, clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory: %s", doing));
  for (size_t i = 0; i < 2 * n; i++)
    r[i] = MPI_REQUEST_NULL;
  /* r[2i]: the receive of piece i, r[2i + 1]: its send. */
  for (size_t i = 0; i < n && code == CLG_OK; i++) {
    size_t at = i * per, len = count - at < per ? count - at : per;
    if ((!in_place && MPI_Irecv((char *)dst + at * esize, (int)(len * esize), MPI_BYTE, peer, 1,
                                c->arrivals, &r[2 * i]) != MPI_SUCCESS) ||
        MPI_Isend((const char *)src + at * esize, (int)(len * esize), MPI_BYTE, peer, 1,
                  c->arrivals, &r[2 * i + 1]) != MPI_SUCCESS)
      code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer,
                          doing);
  }
  size_t posted = 0; /* in place: receives posted ahead into the staging buffers */
  for (size_t i = 0; i < n && code == CLG_OK; i++) {
    size_t at = i * per, len = count - at < per ? count - at : per;
    for (; in_place && posted < n && posted <= i + 1 && code == CLG_OK; posted++) {
      size_t pa = posted * per, pl = count - pa < per ? count - pa : per;
      if (MPI_Irecv(tmp[posted % 2], (int)(pl * esize), MPI_BYTE, peer, 1, c->arrivals,
                    &r[2 * posted]) != MPI_SUCCESS)
        code = clg_mpi_fail(c, CLG_UNAVAILABLE, "task %d of /job:worker is unavailable: %s", peer,
                            doing);
    }
    if (code == CLG_OK)
      code = clg_mpi_wait_request(c, &r[2 * i], peer, doing);
    if (code == CLG_OK && in_place)
      code = clg_mpi_wait_request(c, &r[2 * i + 1], peer, doing); /* piece i of src is sent */
    if (code == CLG_OK)
      add_into((char *)dst + at * esize, (const char *)dst + at * esize,
               in_place ? (const void *)tmp[i % 2] : (const char *)src + at * esize, len, dtype);
  }
  for (size_t i = 0; i < n && code == CLG_OK; i++)
    code = clg_mpi_wait_request(c, &r[2 * i + 1], peer, doing);
  if (code != CLG_OK) /* no receive stays posted into dst or the staging buffers */
    clg_mpi_settle(c, (int)(2 * n), r);
  free(r);
  return clg_mpi_midway(c, code);
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

#else
typedef int clg_cluster_mpi_data_unused; /* ISO C: a translation unit must not be empty */
#endif
