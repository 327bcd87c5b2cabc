/* What the cluster module does with or without MPI: resolving the session's request, and
 * the stand-ins of a build without MPI (UNIMPLEMENTED, or the one-task answer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "device/device.h"

clg_code clg_cluster_resolve(const char *kind, double timeout_option, bool *want, double *timeout_s)
{
  const char *from = "the session option cluster";
  if (!kind || !*kind) {
    kind = getenv("CLGRAPH_CLUSTER");
    from = "CLGRAPH_CLUSTER";
  }
  *want = false;
  if (kind && *kind && strcmp(kind, "none") != 0) {
    if (strcmp(kind, "mpi") != 0)
      return clg_error(CLG_INVALID_ARGUMENT, "%s is \"%s\"; expected \"mpi\" or \"none\"", from,
                       kind);
    *want = true;
  }
  if (isnan(timeout_option) || timeout_option < 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "cluster_timeout_s must be > 0 seconds (0: CLGRAPH_CLUSTER_TIMEOUT or %g)",
                     CLG_CLUSTER_DEFAULT_TIMEOUT_S);
  /* Waits count nanoseconds in a uint64_t: a longer deadline would wrap (to none at all). */
  if (timeout_option > CLG_CLUSTER_MAX_TIMEOUT_S)
    return clg_error(CLG_INVALID_ARGUMENT, "cluster_timeout_s is %g; expected at most %g seconds",
                     timeout_option, CLG_CLUSTER_MAX_TIMEOUT_S);
  *timeout_s = timeout_option;
  if (*timeout_s == 0) {
    const char *env = getenv("CLGRAPH_CLUSTER_TIMEOUT");
    *timeout_s = CLG_CLUSTER_DEFAULT_TIMEOUT_S;
    if (env && *env) {
      char *end;
      double v = strtod(env, &end);
      if (*end || !(v > 0) || v > CLG_CLUSTER_MAX_TIMEOUT_S)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "CLGRAPH_CLUSTER_TIMEOUT is \"%s\"; expected a number of seconds > 0 "
                         "and at most %g",
                         env, CLG_CLUSTER_MAX_TIMEOUT_S);
      *timeout_s = v;
    }
  }
  return CLG_OK;
}

bool clg_cluster_reduce_dtype_ok(clg_dtype dtype)
{
  return dtype == CLG_FLOAT32 || dtype == CLG_FLOAT64 || dtype == CLG_INT32 || dtype == CLG_INT64;
}

clg_code clg_cluster_allreduce_block(clg_cluster *c, struct clg_device *dev,
                                     const struct clg_block *src, const struct clg_block *dst,
                                     size_t count, clg_dtype dtype, clg_reduce_op op,
                                     const char *what, const char *shape)
{
  const clg_device_ops *ops = clg_device_ops_of(dev);
  size_t bytes = count * clg_dtype_size(dtype);
  if (!clg_cluster_reduce_dtype_ok(dtype))
    return clg_cluster_allreduce(c, NULL, count, dtype, op, what);
  if (ops->host_memory) /* a fed input may not be written: reduced into dst, not copied */
    return clg_cluster_allreduce_to(c, src->host, dst->host, count, dtype, op, what, shape);
  /* The whole value through host memory (pinned from 1 MiB on: the process's pool serves
   * host tensors), reduced there in place as host memory is: the same messages as a task
   * whose value is in host memory, or that reduces from another buffer. A task that cannot
   * stage its value still meets the others (clg_cluster_withdraw): every task fails, nothing
   * moves. */
  int64_t dims[1] = {(int64_t)(bytes / 4 + 1)};
  clg_tensor *stage = clg_tensor_new_uninit(CLG_FLOAT32, 1, dims);
  clg_code code = CLG_OK;
  if (!stage)
    code =
        clg_error(CLG_RESOURCE_EXHAUSTED, "%s: no host memory for staging %zu bytes", what, bytes);
  void *buf = stage ? clg_tensor_data(stage) : NULL;
  if (code == CLG_OK && bytes)
    code = ops->download(dev, src, buf, bytes);
  if (code != CLG_OK) {
    clg_tensor_free(stage);
    return clg_cluster_withdraw(c, code, count, dtype, what, shape);
  }
  code = clg_cluster_allreduce_to(c, buf, buf, count, dtype, op, what, shape);
  /* An upload that fails leaves the tasks in step (every one finished the reduction): this
   * task's run fails, the cluster does not. */
  if (code == CLG_OK && bytes)
    code = ops->upload(dev, dst, buf, bytes);
  clg_cluster_release_tensor(c, stage);
  return code;
}

#ifndef CLG_HAVE_MPI

clg_code clg_cluster_open(struct clg_devices *devs, double timeout_s, clg_cluster **out)
{
  (void)devs, (void)timeout_s;
  *out = NULL;
  return clg_error(CLG_UNIMPLEMENTED,
                   "cluster \"mpi\" asked for, but this clgraph was built without MPI (configure "
                   "with -DCLGRAPH_WITH_MPI=ON and Open MPI's libopenmpi-dev installed)");
}

void clg_cluster_close(clg_cluster *c) { (void)c; }

int clg_cluster_task(const clg_cluster *c)
{
  (void)c;
  return 0;
}

int clg_cluster_num_tasks(const clg_cluster *c)
{
  (void)c;
  return 1;
}

double clg_cluster_timeout(const clg_cluster *c)
{
  (void)c;
  return CLG_CLUSTER_DEFAULT_TIMEOUT_S;
}

static clg_code no_cluster(const char *what)
{
  return clg_error(CLG_UNIMPLEMENTED, "%s: no cluster (clgraph built without MPI)", what);
}

clg_code clg_cluster_send(clg_cluster *c, int to, int tag, struct clg_device *dev,
                          const struct clg_block *blk, size_t bytes, const char *what)
{
  (void)c, (void)to, (void)tag, (void)dev, (void)blk, (void)bytes;
  return no_cluster(what);
}

clg_code clg_cluster_recv(clg_cluster *c, int from, int tag, struct clg_device *dev,
                          const struct clg_block *blk, size_t bytes, const char *what)
{
  (void)c, (void)from, (void)tag, (void)dev, (void)blk, (void)bytes;
  return no_cluster(what);
}

clg_code clg_cluster_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype,
                               clg_reduce_op op, const char *what)
{
  (void)c, (void)buf, (void)count, (void)op, (void)what;
  /* One task: the sum and the mean of one value are the value. */
  return clg_cluster_reduce_dtype_ok(dtype)
             ? CLG_OK
             : clg_error(CLG_INVALID_ARGUMENT, "%s: AllReduce does not reduce %s", what,
                         clg_dtype_name(dtype));
}

clg_code clg_cluster_allreduce_to(clg_cluster *c, const void *src, void *dst, size_t count,
                                  clg_dtype dtype, clg_reduce_op op, const char *what,
                                  const char *shape)
{
  (void)shape;
  if (src != dst && count && clg_cluster_reduce_dtype_ok(dtype))
    memcpy(dst, src, count * clg_dtype_size(dtype));
  return clg_cluster_allreduce(c, dst, count, dtype, op, what);
}

clg_code clg_cluster_withdraw(clg_cluster *c, clg_code code, size_t count, clg_dtype dtype,
                              const char *what, const char *shape)
{
  (void)c, (void)count, (void)dtype, (void)what, (void)shape;
  return code;
}

void clg_cluster_release_tensor(clg_cluster *c, clg_tensor *t)
{
  (void)c;
  clg_tensor_free(t);
}

clg_code clg_cluster_reference_allreduce(clg_cluster *c, void *buf, size_t count, clg_dtype dtype)
{
  (void)c, (void)buf, (void)count, (void)dtype;
  return no_cluster("MPI_Allreduce");
}

clg_code clg_cluster_barrier(clg_cluster *c)
{
  (void)c;
  return CLG_OK;
}

#endif
