/* The cluster module's door: tasks of /job:worker as MPI ranks (issue 17).
 *
 * Every process of `mpirun -np P` builds the same graph and creates its sessions with a
 * cluster option; rank K is /job:worker/replica:0/task:K. The module owns MPI: it
 * initialises it on first use (unless the program did), duplicates MPI_COMM_WORLD with an
 * error handler that returns, and is released with the process's device state. Every wait is
 * a nonblocking poll against a deadline (clg_cluster_timeout), so a task that stops answering
 * makes the others fail with DEADLINE_EXCEEDED naming it, an MPI error with UNAVAILABLE naming
 * it, never a hang. After a failure the cluster stays failed: later calls return the first
 * error at once (MPI's state with a dead peer cannot be trusted), and this module makes no
 * MPI call on it again. The receives a failed call had posted are cancelled before it
 * returns; one whose message was already under way cannot be, and the memory it may still
 * be written into is kept when this module owns it (clg_cluster_release_tensor). Memory of
 * the caller's (a block received into) is only safe because nothing calls MPI on the failed
 * cluster again: a program should not make MPI calls of its own after such a failure.
 *
 * MPI must grant MPI_THREAD_SERIALIZED at least (a program that initialised MPI itself with
 * less gets FAILED_PRECONDITION); without MPI_THREAD_MULTIPLE, reductions poll
 * MPI_Iallreduce instead of running MPI_Allreduce under a watchdog thread. Joining meets
 * every task on MPI_COMM_WORLD (one small message per pair of tasks, on MPI_COMM_WORLD's
 * top tag), so that a task that never joins is named; everything else runs on duplicates.
 *
 * Built without MPI (CLGRAPH_WITH_MPI=OFF or no MPI found), clg_cluster_open answers
 * UNIMPLEMENTED and everything else behaves as for one task. This header does not include
 * mpi.h: nothing outside src/cluster/ sees MPI. */
#ifndef CLG_CLUSTER_H
#define CLG_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

struct clg_devices;
struct clg_device;
struct clg_block;

typedef struct clg_cluster clg_cluster;

/* Bytes per message on the wire and per staged chunk of a device value. */
#define CLG_CLUSTER_CHUNK ((size_t)4 << 20)

/* The default deadline of a wait, in seconds (CLGRAPH_CLUSTER_TIMEOUT overrides it, a
 * session's cluster_timeout_s overrides both). */
#define CLG_CLUSTER_DEFAULT_TIMEOUT_S 60.0
/* The longest deadline, in seconds (about 31 years): its nanoseconds fit a uint64_t. */
#define CLG_CLUSTER_MAX_TIMEOUT_S 1e9

/* Resolves a session's cluster request: `kind` (the option; NULL or "" means
 * CLGRAPH_CLUSTER, then none) must be "mpi" or "none". *want is true for "mpi". The timeout
 * (option > 0, else CLGRAPH_CLUSTER_TIMEOUT, else the default) goes to *timeout_s; it must be
 * at most CLG_CLUSTER_MAX_TIMEOUT_S. INVALID_ARGUMENT naming a bad word or number. */
clg_code clg_cluster_resolve(const char *kind, double timeout_option, bool *want,
                             double *timeout_s);

/* Joins the cluster (initialising MPI when needed): renames the local devices of devs to
 * /job:worker/replica:0/task:K/..., exchanges every task's device list and appends the other
 * tasks' devices to devs as remote devices. UNIMPLEMENTED without MPI support. */
clg_code clg_cluster_open(struct clg_devices *devs, double timeout_s, clg_cluster **out);
/* Leaves the cluster; finalises MPI when this module initialised it and no failure left a
 * peer unanswered (MPI_Finalize would wait for a dead task forever). NULL is a no-op. */
void clg_cluster_close(clg_cluster *c);

/* No process-wide "current" cluster: a run's kernels get theirs from their context
 * (clg_kernel_ctx.cluster, the session's). */
int clg_cluster_task(const clg_cluster *c);      /* 0 for NULL */
int clg_cluster_num_tasks(const clg_cluster *c); /* 1 for NULL */
double clg_cluster_timeout(const clg_cluster *c);

/* Point-to-point transfer of one value between tasks, tagged by the value's number in the
 * graph. The block lives on dev (local); a device that is not host memory is staged through
 * two pinned host buffers in chunks, the device copy of chunk i+1 overlapping the network
 * transfer of chunk i. Returns when the data has left (send) or arrived (recv). Errors name
 * the peer task and what (a node name) was moving. */
clg_code clg_cluster_send(clg_cluster *c, int to, int tag, struct clg_device *dev,
                          const struct clg_block *blk, size_t bytes, const char *what);
clg_code clg_cluster_recv(clg_cluster *c, int from, int tag, struct clg_device *dev,
                          const struct clg_block *blk, size_t bytes, const char *what);

/* Reductions over all tasks. */
typedef enum clg_reduce_op { CLG_REDUCE_SUM = 0, CLG_REDUCE_MEAN = 1 } clg_reduce_op;

/* Whether clg_cluster_allreduce handles dtype. */
bool clg_cluster_reduce_dtype_ok(clg_dtype dtype);
/* In place over count elements of host memory: every task ends with the sum (or the mean:
 * the sum divided by the number of tasks, truncated for integers) of all tasks' buf.
 * Without a cluster (c NULL) the sum of one task is buf itself. */
clg_code clg_cluster_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                               clg_reduce_op op, const char *what);
/* Every task must reduce the same dtype and number of elements, under the same name (the
 * op's), in the same order: the tasks compare what they bring before any data moves, and a
 * mismatch is INVALID_ARGUMENT on every task, naming `what` and both tasks' values (the
 * cluster stays usable). Where each task keeps its value (host memory or a device) and
 * whether it reduces in place need not agree: how the data moves follows from the dtype,
 * the element count and the number of tasks only. */
/* The same from src into dst (count elements of host memory each, not overlapping unless
 * the same): src is read, never written, and not copied first. shape: the value's shape
 * for messages ("[2,3]"; NULL: [count]). */
clg_code clg_cluster_allreduce_to(clg_cluster *c, const void *src, void *dst, size_t count,
                                  clg_dtype dtype, clg_reduce_op op, const char *what,
                                  const char *shape);
/* The same from a block of a device into another (or the same) block of it: host blocks
 * by clg_cluster_allreduce_to; other devices through a host buffer of the whole value
 * (download, clg_cluster_allreduce_to in place, upload). */
clg_code clg_cluster_allreduce_block(clg_cluster *c, struct clg_device *dev,
                                     const struct clg_block *src, const struct clg_block *dst,
                                     size_t count, clg_dtype dtype, clg_reduce_op op,
                                     const char *what, const char *shape);
/* A task that cannot bring its value to a reduction (staging it failed with code, the
 * message in clg_last_error) still meets the others with that error: every other task fails
 * the reduction with code, naming this task and its message, nothing moves and the cluster
 * stays usable. Returns code with the message (or the meeting's own failure, a deadline,
 * which fails the cluster). */
clg_code clg_cluster_withdraw(clg_cluster *c, clg_code code, size_t count, clg_dtype dtype,
                              const char *what, const char *shape);
/* Frees t, a buffer given to the cluster's calls, or keeps it for the life of the process
 * when MPI may still write into it (a failed call's receive whose message was under way, a
 * collective that never completed). */
void clg_cluster_release_tensor(clg_cluster *c, clg_tensor *t);

/* A plain MPI_Allreduce (sum) of host memory, blocking, with no deadline: the reference of
 * `clgraph bench allreduce`. UNIMPLEMENTED without a cluster. */
clg_code clg_cluster_reference_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype);
/* Waits until every task has called it (with the deadline). */
clg_code clg_cluster_barrier(clg_cluster *c);

#endif
