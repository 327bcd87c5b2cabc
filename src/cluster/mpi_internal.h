/* What the two halves of the MPI cluster share inside src/cluster only: mpi.c (failures,
 * polled waits, the meetings before every collective, joining, the watchdog, the barrier) and
 * mpi_data.c (the data: point-to-point transfers and the AllReduce variants). The module's
 * door stays cluster.h; nothing outside src/cluster/ includes mpi.h. */
#ifndef CLG_CLUSTER_MPI_INTERNAL_H
#define CLG_CLUSTER_MPI_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster/cluster.h"

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

/* --- failures and waits (mpi.c) ----------------------------------------------------------- */

/* MPI's text for err, into buf (MPI_MAX_ERROR_STRING bytes). */
const char *clg_mpi_text(int err, char *buf);
/* Fails the cluster for good with code and the message (the first failure sticks). */
clg_code clg_mpi_fail(clg_cluster *c, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);
/* A transfer or reduction that failed midway (code != OK) fails the cluster with it. */
clg_code clg_mpi_midway(clg_cluster *c, clg_code code);
/* The earlier failure repeated, or OK. */
clg_code clg_mpi_check_failed(clg_cluster *c);
/* After a failure: cancels and releases n requests that may still be posted. */
void clg_mpi_settle(clg_cluster *c, int n, MPI_Request *r);
/* Polls r (n requests) against the deadline; peer < 0: a collective. */
clg_code clg_mpi_wait_request(clg_cluster *c, MPI_Request *r, int peer, const char *doing);
clg_code clg_mpi_wait_collective(clg_cluster *c, MPI_Request *r, const char *doing);
clg_code clg_mpi_wait_all(clg_cluster *c, int n, MPI_Request *r, int peer, const char *doing);

/* --- meetings and the watchdog (mpi.c) ---------------------------------------------------- */

/* Meets every task on the arrivals communicator with this task's record mine. */
clg_code clg_mpi_arrive(clg_cluster *c, const meeting *mine, const char *doing);
/* A reduction's record ("AllReduce 'y' of float32 [4]"; shape NULL: [count]). */
meeting clg_mpi_reduce_meeting(int kind, const char *what, size_t count, clg_dtype dtype,
                               const char *shape);
/* Marks the start (on) or the end of a blocking reduction of what for the watchdog. */
void clg_mpi_arm(clg_cluster *c, const char *what, bool on);

#endif
