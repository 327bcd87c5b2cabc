/* Clusters over MPI (issue 17), run by CTest under `mpirun -np P` (tests/CMakeLists.txt):
 *   mpi_cluster s7          the guide's S7 with its two towers on tasks 0 and 1
 *   mpi_cluster random      random graphs whose nodes name tasks 0..P-1, against a reference
 *                           computed here on the host
 *   mpi_cluster allreduce [MiB]  AllReduce sum and mean, 1 element to 64 MiB, every dtype, on
 *                           CPU:0 and a GPU, against sums computed here
 *   mpi_cluster fault-stop  task 1 stops (SIGSTOP) before a run; task 0 must fail with
 *                           DEADLINE_EXCEEDED naming task 1 within the 2 s timeout
 *   mpi_cluster fault-kill  task 1 is killed (SIGKILL) before a run; the same for task 0
 *                           (under mpirun --enable-recovery; plain mpirun kills task 0)
 *   mpi_cluster fault-collective  the last task stops before an AllReduce; every other task
 *                           must fail with DEADLINE_EXCEEDED naming it (and only it)
 *   mpi_cluster gpu-transfer  a >4 MiB tensor from task 0's CPU to task 1's GPU and back
 *   mpi_cluster mismatch    AllReduce of other sizes or dtypes on each task: INVALID_ARGUMENT
 *                           on every task, naming the op and both values, and the cluster
 *                           still reduces afterwards
 *   mpi_cluster mixed       AllReduce on CPU:0 on some tasks and a GPU on others, in place on
 *                           some and not on others: every task gets the sum
 *   mpi_cluster stage-fault task 1 cannot download its GPU value for an AllReduce: every task
 *                           fails at once, naming it, and the cluster still reduces
 *   mpi_cluster late FILE   task 0's receive from task 1 passes its deadline (task 1 stopped);
 *                           task 1 then sends while task 0 keeps calling MPI: the receive was
 *                           cancelled, so nothing lands in task 0's freed memory and task 1's
 *                           send is never taken (FILE: where task 1 leaves its pid)
 *   mpi_cluster silent-join the last task joins MPI but never opens a session: the others fail
 *                           at the deadline (CLGRAPH_CLUSTER_TIMEOUT) naming it
 *   mpi_cluster thread-level funneled|serialized  MPI initialised by the program at that level:
 *                           refused with FAILED_PRECONDITION, or reductions without the
 *                           watchdog
 * Every task builds the same graphs and makes the same runs; each checks its own results. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "faultinject.h"
#include "testutil.h"

static clg_session *open_session(clg_graph *g, double timeout_s, bool log)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = "mpi";
  opt.cluster_timeout_s = timeout_s;
  opt.log_device_placement = log;
  /* Several tasks share this machine's memory: no up-front reservations. */
  opt.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  return s;
}

/* --- S7 ------------------------------------------------------------------------------------ */

static void s7(void)
{
  clg_graph *g = clg_graph_new();
  const char *towers[2] = {"/job:worker/task:0/device:GPU:2", "/job:worker/task:1/device:GPU:3"};
  const float av[6] = {1, 2, 3, 4, 5, 6};
  int64_t ad[2] = {2, 3}, bd[2] = {3, 2};
  clg_node *c[2];
  for (int i = 0; i < 2; i++) {
    clg_graph_push_device(g, towers[i]);
    clg_node *a = clg_const_f32(g, NULL, 2, ad, av);
    clg_node *b = clg_const_f32(g, NULL, 2, bd, av);
    c[i] = clg_matmul(g, NULL, a, b, false, false);
    clg_graph_pop_device(g);
  }
  clg_graph_push_device(g, "/cpu:0");
  clg_node *sum = clg_add_n(g, NULL, 2, c);
  clg_graph_pop_device(g);
  clg_test_log_capture_start(CLG_LOG_INFO);
  clg_session *s = open_session(g, 20, true);
  const char *log = clg_test_log_capture_stop();
  int task = -1, tasks = 0;
  clg_session_task(s, &task, &tasks);
  CHECK(tasks == 2 && (task == 0 || task == 1));
  CHECK(clg_session_is_chief(s) == (task == 0));
  /* The mapping lists both tasks' GPUs; every task places the towers alike. */
  CHECK_CONTAINS(log, "Device mapping:\n/job:worker/replica:0/task:");
  CHECK_CONTAINS(log, "/job:worker/replica:0/task:0/device:GPU:3 -> device: 3");
  CHECK_CONTAINS(log, "/job:worker/replica:0/task:1/device:GPU:3 -> device: 3");
  CHECK_CONTAINS(log, "MatMul: /job:worker/replica:0/task:0/device:GPU:2");
  CHECK_CONTAINS(log, "MatMul_1: /job:worker/replica:0/task:1/device:GPU:3");
  char want[96];
  snprintf(want, sizeof want, "AddN: /job:worker/replica:0/task:%d/device:CPU:0", task);
  CHECK_CONTAINS(log, want);
  CHECK_STR(clg_session_node_device(s, c[1]), "/job:worker/replica:0/task:1/device:GPU:3");
  const clg_devices *devs = clg_session_devices(s);
  CHECK(clg_devices_find(devs, "/job:worker/task:1/device:GPU:3") != NULL);
  CHECK(clg_devices_find(devs, "/device:GPU:0")->task == task);
  for (int rep = 0; rep < 3; rep++) {
    clg_tensor *out = NULL;
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &sum, &out));
    const float *v = out ? clg_tensor_const_data(out) : NULL;
    CHECK_MSG(v && v[0] == 44 && v[1] == 56 && v[2] == 98 && v[3] == 128,
              "S7 on task %d: got [%g %g %g %g]", task, v ? v[0] : -1, v ? v[1] : -1, v ? v[2] : -1,
              v ? v[3] : -1);
    clg_tensor_free(out);
  }
  /* A tower's value fetched by every task comes from its task. */
  clg_tensor *t1 = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &c[1], &t1));
  CHECK(t1 && ((const float *)clg_tensor_const_data(t1))[3] == 64);
  clg_tensor_free(t1);
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- random graphs ------------------------------------------------------------------------------
 */

#define RN 4 /* values are RN x RN float32 matrices */

typedef struct ref {
  double v[RN * RN];
} ref;

static void random_graphs(int rounds)
{
  int tasks = 0;
  for (int round = 0; round < rounds; round++) {
    clg_test_seed(1000 + (unsigned long long)round);
    clg_graph *g = clg_graph_new();
    int n = 12 + (int)(clg_test_rand() % 12);
    clg_node **nodes = calloc((size_t)n, sizeof *nodes);
    ref *r = calloc((size_t)n, sizeof *r);
    int64_t dims[2] = {RN, RN};
    /* mpirun tells each rank the number of tasks; the graph must be the same on all. */
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    int ntasks = size && atoi(size) > 0 ? atoi(size) : 1;
    for (int i = 0; i < n; i++) {
      char spec[96] = "";
      unsigned pick = (unsigned)(clg_test_rand() % 5);
      int t = (int)(clg_test_rand() % (unsigned)ntasks), k = (int)(clg_test_rand() % 4);
      if (pick == 1)
        snprintf(spec, sizeof spec, "/job:worker/task:%d/device:GPU:%d", t, k);
      else if (pick == 2)
        snprintf(spec, sizeof spec, "/job:worker/task:%d/device:CPU:0", t);
      else if (pick == 3)
        snprintf(spec, sizeof spec, "/device:GPU:%d", k);
      else if (pick == 4)
        snprintf(spec, sizeof spec, "/job:worker/task:%d", t);
      if (spec[0])
        clg_graph_push_device(g, spec);
      int op = i < 3 ? 0 : (int)(clg_test_rand() % 5);
      int a = i ? (int)(clg_test_rand() % (unsigned)i) : 0,
          b = i ? (int)(clg_test_rand() % (unsigned)i) : 0;
      if (op == 0) {
        float v[RN * RN];
        for (int e = 0; e < RN * RN; e++) {
          v[e] = (float)((int)(clg_test_rand() % 7) - 3) / 2.0f;
          r[i].v[e] = v[e];
        }
        nodes[i] = clg_const_f32(g, NULL, 2, dims, v);
      } else if (op == 1) {
        nodes[i] = clg_add(g, NULL, nodes[a], nodes[b]);
        for (int e = 0; e < RN * RN; e++)
          r[i].v[e] = r[a].v[e] + r[b].v[e];
      } else if (op == 2) {
        nodes[i] = clg_matmul(g, NULL, nodes[a], nodes[b], false, false);
        for (int x = 0; x < RN; x++)
          for (int y = 0; y < RN; y++) {
            double acc = 0;
            for (int z = 0; z < RN; z++)
              acc += r[a].v[x * RN + z] * r[b].v[z * RN + y];
            r[i].v[x * RN + y] = acc;
          }
      } else if (op == 3) {
        nodes[i] = clg_relu(g, NULL, nodes[a]);
        for (int e = 0; e < RN * RN; e++)
          r[i].v[e] = r[a].v[e] > 0 ? r[a].v[e] : 0;
      } else {
        clg_node *in[3] = {nodes[a], nodes[b], nodes[a]};
        nodes[i] = clg_add_n(g, NULL, 3, in);
        for (int e = 0; e < RN * RN; e++)
          r[i].v[e] = 2 * r[a].v[e] + r[b].v[e];
      }
      if (spec[0])
        clg_graph_pop_device(g);
    }
    CHECK_OK(clg_graph_status(g));
    clg_session *s = open_session(g, 20, false);
    clg_session_task(s, NULL, &tasks);
    CHECK(tasks == ntasks);
    if (s) {
      /* Fetch the last three nodes. */
      clg_node *fetch[3] = {nodes[n - 1], nodes[n - 2], nodes[n - 3]};
      clg_tensor *out[3] = {NULL, NULL, NULL};
      CHECK_OK(clg_session_run(s, 0, NULL, NULL, 3, fetch, out));
      for (int f = 0; f < 3; f++) {
        const float *v = out[f] ? clg_tensor_const_data(out[f]) : NULL;
        int idx = n - 1 - f;
        bool same = v != NULL;
        for (int e = 0; same && e < RN * RN; e++)
          same = fabs(v[e] - r[idx].v[e]) <= 1e-3 * (1 + fabs(r[idx].v[e]));
        CHECK_MSG(same, "round %d: node %d ('%s') differs from the host reference", round, idx,
                  clg_node_name(nodes[idx]));
        clg_tensor_free(out[f]);
      }
    }
    clg_session_free(s);
    free(nodes);
    free(r);
    clg_graph_free(g);
  }
}

/* --- AllReduce ------------------------------------------------------------------------------- */

static double value_of(int task, size_t i)
{
  return (double)((int)((i * 7 + (size_t)task * 13) % 11) - 5);
}

static void allreduce(size_t max_bytes)
{
  const clg_dtype dtypes[4] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT32, CLG_INT64};
  /* Elements: 1, odd sizes around a 4 MiB chunk, and 64 MiB of float32 (16 Mi elements). */
  const size_t sizes[] = {1, 3, 1000, (size_t)1 << 20, ((size_t)1 << 20) + 17, (size_t)16 << 20};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < nsizes; si++) {
      size_t count = sizes[si];
      size_t esize = clg_dtype_size(dtypes[di]);
      if (count * esize > max_bytes)
        count = max_bytes / esize; /* up to 64 MiB whatever the dtype */
      /* Large sizes on CPU:0 only (PoCL's stand-in GPUs have little memory). */
      for (int on_gpu = 0; on_gpu < 2; on_gpu++) {
        if (on_gpu && count * esize > ((size_t)8 << 20))
          continue;
        clg_graph *g = clg_graph_new();
        clg_graph_push_device(g, on_gpu ? "/device:GPU:1" : "/cpu:0");
        int64_t dims[1] = {(int64_t)count};
        clg_node *x = clg_placeholder(g, "x", dtypes[di], 1, dims);
        clg_node *sum = clg_all_reduce(g, "sum", x, "sum");
        clg_node *mean = clg_all_reduce(g, "mean", x, "mean");
        /* A computed input whose last use is the AllReduce: reduced in place in its buffer. */
        clg_node *back =
            clg_identity(g, "back", clg_all_reduce(g, "in_place", clg_identity(g, NULL, x), "sum"));
        clg_graph_pop_device(g);
        clg_session *s = open_session(g, 20, false);
        int task = 0, tasks = 1;
        clg_session_task(s, &task, &tasks);
        clg_tensor *in = clg_tensor_new(dtypes[di], 1, dims, NULL);
        void *p = clg_tensor_data(in);
        for (size_t i = 0; i < count; i++) {
          double v = value_of(task, i);
          if (dtypes[di] == CLG_FLOAT32)
            ((float *)p)[i] = (float)v;
          else if (dtypes[di] == CLG_FLOAT64)
            ((double *)p)[i] = v;
          else if (dtypes[di] == CLG_INT32)
            ((int32_t *)p)[i] = (int32_t)v;
          else
            ((int64_t *)p)[i] = (int64_t)v;
        }
        clg_node *fetch[3] = {sum, mean, back};
        clg_tensor *out[3] = {NULL, NULL, NULL};
        CHECK_OK(clg_session_run(s, 1, &x, &in, 3, fetch, out));
        size_t bad = 0;
        bool integer = dtypes[di] == CLG_INT32 || dtypes[di] == CLG_INT64;
        for (size_t i = 0; out[0] && out[1] && out[2] && i < count && bad == 0; i++) {
          double want = 0;
          for (int t = 0; t < tasks; t++)
            want += value_of(t, i);
          double want_mean = integer ? (double)((int64_t)want / tasks) : want / tasks;
          double got = clg_test_elem(out[0], i), got_mean = clg_test_elem(out[1], i),
                 got_back = clg_test_elem(out[2], i);
          if (got != want || got_back != want ||
              fabs(got_mean - want_mean) > 1e-6 * (1 + fabs(want_mean)))
            bad = i + 1;
        }
        CHECK_MSG(out[0] && out[1] && out[2] && bad == 0,
                  "AllReduce of %zu %s on %s over %d tasks: element %zu differs", count,
                  clg_dtype_name(dtypes[di]), on_gpu ? "GPU:1" : "CPU:0", tasks, bad ? bad - 1 : 0);
        clg_tensor_free(out[0]);
        clg_tensor_free(out[1]);
        clg_tensor_free(out[2]);
        clg_tensor_free(in);
        clg_session_free(s);
        clg_graph_free(g);
      }
    }
}

/* --- a large value to a GPU of another task and back ----------------------------------------- */

/* x (task 0's CPU) -> Neg on task 0's CPU -> Square on task 1's GPU:1 -> Neg on task 0's CPU:
 * task 1 receives more than 4 MiB for its GPU (in chunks, each uploaded while the next
 * arrives), task 0 receives the GPU's result. Every task fetches -(x^2). */
static void gpu_transfer(void)
{
  const size_t count = ((size_t)9 << 20) / 4 + 3; /* three chunks, the last a short one */
  int64_t dims[1] = {(int64_t)count};
  float *xv = malloc(count * sizeof *xv);
  CHECK(xv != NULL);
  if (!xv)
    return;
  for (size_t i = 0; i < count; i++)
    xv[i] = (float)((int)(i % 2003) - 1001) / 64.0f;
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  clg_node *x = clg_const_f32(g, "x", 1, dims, xv);
  clg_node *y = clg_neg(g, "y", x);
  clg_graph_pop_device(g);
  clg_graph_push_device(g, "/job:worker/task:1/device:GPU:1");
  clg_node *sq = clg_square(g, "sq", y);
  clg_graph_pop_device(g);
  clg_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  clg_node *z = clg_neg(g, "z", sq);
  clg_graph_pop_device(g);
  clg_session *s = open_session(g, 20, false);
  for (int round = 0; round < 2; round++) { /* a second run reuses the plan */
    clg_tensor *out = NULL;
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &z, &out));
    size_t bad = 0;
    const float *zv = out ? clg_tensor_const_data(out) : NULL;
    for (size_t i = 0; zv && i < count && !bad; i++) {
      float want = -(xv[i] * xv[i]); /* exact: x has 11 significant bits at most */
      if (zv[i] != want)
        bad = i + 1;
    }
    CHECK_MSG(zv && clg_tensor_count(out) == count && bad == 0,
              "round %d: element %zu of -(x^2) differs after task 1's GPU", round,
              bad ? bad - 1 : 0);
    clg_tensor_free(out);
  }
  clg_session_free(s);
  clg_graph_free(g);
  free(xv);
}

/* --- faults -------------------------------------------------------------------------------- */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Task 1 computes what task 0 fetches; before the second run task 1 stops or dies. */
static int fault(bool kill_it)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {4};
  const float v[4] = {1, 2, 3, 4};
  clg_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  clg_node *c = clg_const_f32(g, "c", 1, dims, v);
  clg_node *y = clg_neg(g, "y", c);
  clg_graph_pop_device(g);
  clg_node *z = clg_square(g, "z", y);
  clg_session *s = open_session(g, 2.0, false);
  int task = 0;
  clg_session_task(s, &task, NULL);
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &z, &out));
  CHECK(out && ((const float *)clg_tensor_const_data(out))[3] == 16);
  clg_tensor_free(out);
  out = NULL;
  if (task == 1) {
    fflush(stdout);
    raise(kill_it ? SIGKILL : SIGSTOP);
  }
  double t0 = now_s();
  clg_code code = clg_session_run(s, 0, NULL, NULL, 1, &z, &out);
  double took = now_s() - t0;
  if (task == 0) {
    CHECK_CODE(code, CLG_DEADLINE_EXCEEDED);
    CHECK_CONTAINS(clg_last_error(), "task 1 of /job:worker did not answer within 2 s");
    CHECK_MSG(took >= 1.9 && took < 10, "the failure took %.2f s; the timeout is 2 s", took);
    /* The cluster stays failed: the next run fails at once with the same error. */
    t0 = now_s();
    CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &z, &out), CLG_DEADLINE_EXCEEDED);
    CHECK(now_s() - t0 < 1);
    printf("task 0: %s after %.2f s: %s\n", clg_code_name(code), took, clg_last_error());
  }
  clg_session_free(s);
  clg_graph_free(g);
  int rc = clg_test_summary(kill_it ? "mpi_cluster fault-kill" : "mpi_cluster fault-stop");
  if (rc == 0)
    printf("FAULT-OK\n");
  fflush(stdout);
  return rc;
}

/* The last task stops before the second run of an AllReduce: the others' runs fail at the
 * collective's meeting, naming the silent task and no other. */
static int fault_collective(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {4};
  const float v[4] = {1, 2, 3, 4};
  clg_node *x = clg_const_f32(g, "x", 1, dims, v);
  clg_node *y = clg_all_reduce(g, "y", x, "sum");
  clg_session *s = open_session(g, 2.0, false);
  int task = 0, tasks = 1;
  clg_session_task(s, &task, &tasks);
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &y, &out));
  CHECK(out && ((const float *)clg_tensor_const_data(out))[3] == 4.0f * (float)tasks);
  clg_tensor_free(out);
  out = NULL;
  if (task == tasks - 1) {
    fflush(stdout);
    raise(SIGSTOP);
  }
  double t0 = now_s();
  clg_code code = clg_session_run(s, 0, NULL, NULL, 1, &y, &out);
  double took = now_s() - t0;
  char want[96];
  snprintf(want, sizeof want, "task %d of /job:worker did not answer within 2 s (AllReduce 'y'",
           tasks - 1);
  CHECK_CODE(code, CLG_DEADLINE_EXCEEDED);
  CHECK_CONTAINS(clg_last_error(), want);
  /* One task is named (not "tasks 1, 2"), the silent one. */
  CHECK_MSG(!strstr(clg_last_error(), "tasks "), "more than one task is named: %s",
            clg_last_error());
  CHECK_MSG(took >= 1.9 && took < 10, "the failure took %.2f s; the timeout is 2 s", took);
  printf("task %d: %s after %.2f s: %s\n", task, clg_code_name(code), took, clg_last_error());
  clg_session_free(s);
  clg_graph_free(g);
  int rc = clg_test_summary("mpi_cluster fault-collective");
  if (rc == 0 && task == 0)
    printf("FAULT-OK\n");
  fflush(stdout);
  return rc;
}

/* --- tasks that disagree ----------------------------------------------------------------- */

static int rank_of_world(void)
{
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  return r ? atoi(r) : 0;
}

/* One AllReduce named `name` whose input is a placeholder of `count` elements of dtype
 * (element i is i + 1 on every task), reduced from the fed input (in_place false) or in place
 * (an Identity's buffer), on `device`. */
static clg_code reduce_named(const char *name, const char *device, clg_dtype dtype, int64_t count,
                             bool in_place, clg_tensor **out)
{
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, device);
  int64_t dims[1] = {count};
  clg_node *x = clg_placeholder(g, "x", dtype, 1, dims);
  clg_node *y = clg_all_reduce(g, name, in_place ? clg_identity(g, NULL, x) : x, "sum");
  clg_graph_pop_device(g);
  clg_session *s = open_session(g, 20, false);
  clg_tensor *in = clg_tensor_new(dtype, 1, dims, NULL);
  for (int64_t i = 0; i < count; i++) {
    if (dtype == CLG_FLOAT32)
      ((float *)clg_tensor_data(in))[i] = (float)(i + 1);
    else
      ((double *)clg_tensor_data(in))[i] = (double)(i + 1);
  }
  *out = NULL;
  clg_code code = clg_session_run(s, 1, &x, &in, 1, &y, out);
  clg_tensor_free(in);
  clg_session_free(s);
  clg_graph_free(g);
  return code;
}

static clg_code reduce_once(const char *device, clg_dtype dtype, int64_t count, bool in_place,
                            clg_tensor **out)
{
  return reduce_named("y", device, dtype, count, in_place, out);
}

static int world_size(void)
{
  const char *size = getenv("OMPI_COMM_WORLD_SIZE");
  return size ? atoi(size) : 1;
}

/* Task t reduces 4 + 2t elements (or task 1 float64): every task must fail, before any data
 * moves (a reduction of other sizes writes past the smaller buffers), with the same message
 * naming the op and the values of task 0 and the first task that differs. */
static void mismatch(void)
{
  int task = rank_of_world();
  const char *devices[2] = {"/cpu:0", "/device:GPU:1"};
  for (int d = 0; d < 2; d++)
    for (int in_place = 0; in_place < 2; in_place++) {
      clg_tensor *out = NULL;
      clg_code code = reduce_once(devices[d], CLG_FLOAT32, 4 + 2 * task, in_place, &out);
      CHECK_CODE(code, CLG_INVALID_ARGUMENT);
      char own[96];
      snprintf(own, sizeof own,
               "AllReduce 'y' of float [%d]: the tasks of /job:worker do not agree", 4 + 2 * task);
      CHECK_CONTAINS(clg_last_error(), own);
      CHECK_CONTAINS(clg_last_error(), "task 0 has AllReduce 'y' of float [4] (4 elements), "
                                       "task 1 has AllReduce 'y' of float [6] (6 elements)");
      clg_tensor_free(out);
    }
  /* 32 MiB on task 0 (round the ring) against 4 elements elsewhere; none on task 0 against
   * 4 elsewhere (an empty reduction still meets the others). */
  int64_t big = (int64_t)8 << 20;
  clg_tensor *out = NULL;
  CHECK_CODE(reduce_once("/cpu:0", CLG_FLOAT32, task == 0 ? big : 4, false, &out),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "task 0 has AllReduce 'y' of float [8388608] (8388608 "
                                   "elements), task 1 has AllReduce 'y' of float [4]");
  clg_tensor_free(out);
  CHECK_CODE(reduce_once("/cpu:0", CLG_FLOAT32, task == 0 ? 0 : 4, true, &out),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "task 0 has AllReduce 'y' of float [0] (0 elements), task 1 "
                                   "has AllReduce 'y' of float [4] (4 elements)");
  clg_tensor_free(out);
  /* The same count, another dtype. */
  CHECK_CODE(reduce_once("/cpu:0", task == 1 ? CLG_FLOAT64 : CLG_FLOAT32, 4, false, &out),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "task 0 has AllReduce 'y' of float [4] (4 elements), task 1 "
                                   "has AllReduce 'y' of double [4] (4 elements)");
  clg_tensor_free(out);
  /* The same dtype and count under another name (two AllReduces run in another order on
   * task 0): refused, naming both, never paired. */
  for (int d = 0; d < 2; d++) {
    CHECK_CODE(reduce_named(task == 0 ? "a" : "b", devices[d], CLG_FLOAT32, 4, d == 1, &out),
               CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "task 0 has AllReduce 'a' of float [4] (4 elements), task 1 "
                                     "has AllReduce 'b' of float [4] (4 elements)");
    clg_tensor_free(out);
  }
  /* Nothing was left half done: the cluster reduces as before. */
  int tasks = world_size();
  for (int d = 0; d < 2; d++)
    for (int in_place = 0; in_place < 2; in_place++) {
      CHECK_OK(reduce_once(devices[d], CLG_FLOAT32, 5, in_place, &out));
      const float *v = out ? clg_tensor_const_data(out) : NULL;
      CHECK_MSG(v && v[0] == (float)tasks && v[4] == 5.0f * (float)tasks,
                "AllReduce after the mismatches on %s: [%g .. %g], want [%d .. %d]", devices[d],
                v ? v[0] : -1, v ? v[4] : -1, tasks, 5 * tasks);
      clg_tensor_free(out);
    }
}

/* --- placements and in-place decisions that differ between tasks -------------------------- */

/* Where a task keeps its value and whether it reduces in place are its own: every mix of
 * host memory (CPU:0) and a device (GPU:1), in place (an Identity's buffer) or from the fed
 * input, gives every task the sum, below one 4 MiB chunk, above it, and round the ring
 * (32 MiB, CPU:0 only: PoCL's stand-in GPUs have little memory). */
static void mixed(void)
{
  int task = rank_of_world(), tasks = world_size();
  const int64_t counts[3] = {5, ((int64_t)1 << 20) + 17, (int64_t)8 << 20};
  /* pattern p for task t: bit 0 of p ^ (t & 1) on the GPU, bit 1 of p ^ (t & 1) in place;
   * 4 and 5: all on one device, in place on odd tasks only. */
  for (int ci = 0; ci < 3; ci++)
    for (int p = 0; p < 6; p++) {
      int odd = task & 1;
      bool gpu = p < 4 ? ((p & 1) ^ odd) != 0 : p == 5;
      bool in_place = p < 4 ? (((p >> 1) & 1) ^ odd) != 0 : odd != 0;
      if (ci == 2 && p != 4)
        continue;
      clg_tensor *out = NULL;
      clg_code code =
          reduce_once(gpu ? "/device:GPU:1" : "/cpu:0", CLG_FLOAT32, counts[ci], in_place, &out);
      CHECK_MSG(code == CLG_OK, "AllReduce of %lld floats, pattern %d (task %d on %s, %s): %s",
                (long long)counts[ci], p, task, gpu ? "GPU:1" : "CPU:0",
                in_place ? "in place" : "from the fed input", clg_last_error());
      const float *v = out ? clg_tensor_const_data(out) : NULL;
      int64_t bad = -1;
      for (int64_t i = 0; v && i < counts[ci] && bad < 0; i++)
        if (v[i] != (float)(tasks * (i + 1)))
          bad = i;
      CHECK_MSG(v && bad < 0,
                "AllReduce of %lld floats, pattern %d (task %d on %s, %s): element %lld is %g, "
                "want %lld",
                (long long)counts[ci], p, task, gpu ? "GPU:1" : "CPU:0",
                in_place ? "in place" : "from the fed input", (long long)bad,
                v && bad >= 0 ? v[bad] : -1, (long long)(tasks * (bad + 1)));
      clg_tensor_free(out);
    }
}

/* --- a task whose device value cannot be staged ------------------------------------------- */

/* Task 1's download of its GPU value for an AllReduce fails (tests/faultinject.c): task 1
 * fails with its OpenCL error, every other task at once (not at the deadline) naming task 1
 * and that error, and the cluster still reduces afterwards (no task was left out of step). */
static void stage_fault(void)
{
  int task = rank_of_world(), tasks = world_size();
  clg_tensor *out = NULL;
  CHECK_OK(reduce_once("/device:GPU:1", CLG_FLOAT32, 5, true, &out)); /* kernels built */
  clg_tensor_free(out);
  if (task == 1)
    clg_fault_arm("clEnqueueReadBuffer", 1, CL_OUT_OF_RESOURCES);
  double t0 = now_s();
  clg_code code = reduce_once("/device:GPU:1", CLG_FLOAT32, 5, true, &out);
  double took = now_s() - t0;
  bool fired = task == 1 && clg_fault_fired();
  clg_fault_disarm();
  CHECK_MSG(code != CLG_OK && code != CLG_DEADLINE_EXCEEDED && took < 10,
            "task %d: a failed staging on task 1 gave %s after %.1f s: %s", task,
            clg_code_name(code), took, clg_last_error());
  CHECK_CONTAINS(clg_last_error(), "clEnqueueReadBuffer");
  if (task == 1)
    CHECK_MSG(fired, "the armed clEnqueueReadBuffer failure did not fire");
  else
    CHECK_CONTAINS(clg_last_error(), "task 1 of /job:worker could not take part");
  clg_tensor_free(out);
  for (int in_place = 0; in_place < 2; in_place++) {
    out = NULL;
    CHECK_OK(reduce_once("/device:GPU:1", CLG_FLOAT32, 5, in_place, &out));
    const float *v = out ? clg_tensor_const_data(out) : NULL;
    CHECK_MSG(v && v[0] == (float)tasks && v[4] == 5.0f * (float)tasks,
              "AllReduce after the failed staging: [%g .. %g], want [%d .. %d]", v ? v[0] : -1,
              v ? v[4] : -1, tasks, 5 * tasks);
    clg_tensor_free(out);
  }
}

/* --- a receive past its deadline ------------------------------------------------------------ */

static double now_s(void);

/* Task 1 computes y (1 MiB: a message MPI sends only once the receiver takes it), which task 0
 * reads. Task 1 stops before the second run; task 0's receive fails at the deadline and task
 * 0 frees the session (the receive's block with it). Then task 0 wakes task 1 and keeps
 * calling MPI for 4 s: task 1's run sends y, and only a receive still posted would take it,
 * into freed memory (ASan: heap-use-after-free in task 0). Cancelled, it never completes:
 * task 1's run fails sending y, at its own deadline. */
static int late(const char *pid_file)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {(int64_t)1 << 18};
  float *three = malloc(sizeof *three * (size_t)dims[0]);
  for (int64_t i = 0; three && i < dims[0]; i++)
    three[i] = 3;
  clg_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  clg_node *c = clg_const_f32(g, "c", 1, dims, three);
  free(three);
  clg_node *y = clg_neg(g, "y", c);
  clg_graph_pop_device(g);
  clg_node *z = clg_square(g, "z", y);
  clg_session *s = open_session(g, 2.0, false);
  int task = 0;
  clg_session_task(s, &task, NULL);
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &z, &out));
  CHECK(out && ((const float *)clg_tensor_const_data(out))[7] == 9);
  clg_tensor_free(out);
  out = NULL;
  if (task == 1) {
    FILE *f = fopen(pid_file, "w");
    CHECK(f != NULL);
    if (f) {
      fprintf(f, "%ld\n", (long)getpid());
      fclose(f);
    }
    fflush(stdout);
    raise(SIGSTOP);
  }
  clg_code code = clg_session_run(s, 0, NULL, NULL, 1, &z, &out);
  clg_tensor_free(out);
  if (task == 0) {
    CHECK_CODE(code, CLG_DEADLINE_EXCEEDED);
    CHECK_CONTAINS(clg_last_error(),
                   "task 1 of /job:worker did not answer within 2 s (receiving 'y'");
    clg_session_free(s); /* the blocks the receive was given go back */
    clg_graph_free(g);
    long pid = 0;
    FILE *f = fopen(pid_file, "r");
    CHECK(f && fscanf(f, "%ld", &pid) == 1 && pid > 0);
    if (f)
      fclose(f);
    if (pid > 0)
      kill((pid_t)pid, SIGCONT);
    for (double t0 = now_s(); now_s() - t0 < 4;) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  } else {
    CHECK_CODE(code, CLG_DEADLINE_EXCEEDED);
    CHECK_CONTAINS(clg_last_error(),
                   "task 0 of /job:worker did not answer within 2 s (sending 'y'");
    printf("task 1: %s: %s\n", clg_code_name(code), clg_last_error());
    clg_session_free(s);
    clg_graph_free(g);
  }
  int rc = clg_test_summary("mpi_cluster late");
  if (rc == 0)
    printf("task %d: LATE-OK\n", task);
  fflush(stdout);
  if (task != 0)
    sleep(20); /* until task 0 ends the job: its exit without MPI_Finalize makes mpirun stop it */
  return rc;
}

/* --- joining ------------------------------------------------------------------------------ */

/* Every task joins MPI itself; the last one never opens a session. The others must fail at
 * the deadline (CLGRAPH_CLUSTER_TIMEOUT=3 from the test) naming it, and only it. */
static int silent_join(void)
{
  int provided = 0, task = 0, tasks = 1;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &task);
  MPI_Comm_size(MPI_COMM_WORLD, &tasks);
  if (task == tasks - 1) {
    fflush(stdout);
    sleep(60); /* joined MPI, never a session: mpirun ends it when the others are done */
    return 1;
  }
  clg_graph *g = clg_graph_new();
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = "mpi";
  opt.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  double t0 = now_s();
  clg_code code = clg_session_new(g, &opt, &s);
  double took = now_s() - t0;
  CHECK_CODE(code, CLG_DEADLINE_EXCEEDED);
  char want[160];
  snprintf(
      want, sizeof want,
      "task %d of /job:worker did not answer within 3 s (waiting for every task to open a session",
      tasks - 1);
  CHECK_CONTAINS(clg_last_error(), want);
  CHECK_MSG(!strstr(clg_last_error(), "tasks "), "more than one task is named: %s",
            clg_last_error());
  CHECK_MSG(took >= 2.9 && took < 15, "the failure took %.2f s; the timeout is 3 s", took);
  printf("task %d: %s after %.2f s: %s\n", task, clg_code_name(code), took, clg_last_error());
  clg_session_free(s);
  clg_graph_free(g);
  int rc = clg_test_summary("mpi_cluster silent-join");
  if (rc == 0)
    printf("task %d: SILENT-OK\n", task);
  fflush(stdout);
  if (task == 0)
    sleep(2); /* the others print before this exit ends the job */
  return rc;
}

/* MPI initialised by the program at a thread level below MULTIPLE: FUNNELED is refused (a
 * session may run on any thread), SERIALIZED reduces without the watchdog thread (which
 * would call MPI_Abort while another thread is inside MPI), polling MPI_Iallreduce. */
static int thread_level(const char *level)
{
  bool funneled = strcmp(level, "funneled") == 0;
  int want = funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED, provided = -1;
  MPI_Init_thread(NULL, NULL, want, &provided);
  CHECK_MSG(provided == want, "MPI granted thread level %d, not the %d asked for", provided, want);
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {6};
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 1, dims);
  clg_node *y[2] = {clg_all_reduce(g, "from_fed", x, "sum"),
                    clg_all_reduce(g, "in_place", clg_identity(g, NULL, x), "sum")};
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = "mpi";
  opt.cluster_timeout_s = 20;
  opt.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  clg_test_log_capture_start(CLG_LOG_INFO);
  clg_code code = clg_session_new(g, &opt, &s);
  const char *log = clg_test_log_capture_stop();
  if (funneled) {
    CHECK_CODE(code, CLG_FAILED_PRECONDITION);
    CHECK_CONTAINS(clg_last_error(), "MPI grants MPI_THREAD_FUNNELED, but clgraph calls MPI from "
                                     "whichever thread runs a session");
    CHECK_CONTAINS(clg_last_error(), "needs MPI_THREAD_SERIALIZED at least");
  } else {
    CHECK_OK(code);
    CHECK_CONTAINS(log, "cluster: MPI grants MPI_THREAD_SERIALIZED, not MPI_THREAD_MULTIPLE: "
                        "AllReduce below 32 MiB polls MPI_Iallreduce");
    int task = 0, tasks = 1;
    clg_session_task(s, &task, &tasks);
    clg_tensor *in = clg_tensor_new(CLG_FLOAT32, 1, dims, NULL);
    for (int i = 0; i < 6; i++)
      ((float *)clg_tensor_data(in))[i] = (float)(i + task);
    for (int rep = 0; rep < 3; rep++) {
      clg_tensor *out[2] = {NULL, NULL};
      CHECK_OK(clg_session_run(s, 1, &x, &in, 2, y, out));
      for (int k = 0; k < 2; k++) {
        const float *v = out[k] ? clg_tensor_const_data(out[k]) : NULL;
        /* sum over t of (i + t) = tasks * i + tasks (tasks - 1) / 2 */
        float want5 = (float)(tasks * 5 + tasks * (tasks - 1) / 2);
        CHECK_MSG(v && v[5] == want5, "%s: element 5 is %g, want %g", clg_node_name(y[k]),
                  v ? v[5] : -1, want5);
        clg_tensor_free(out[k]);
      }
    }
    clg_tensor_free(in);
  }
  clg_session_free(s);
  clg_graph_free(g);
  MPI_Finalize();
  return clg_test_summary(funneled ? "mpi_cluster thread-level funneled"
                                   : "mpi_cluster thread-level serialized");
}

int main(int argc, char **argv)
{
  const char *what = argc > 1 ? argv[1] : "";
  char name[64];
  snprintf(name, sizeof name, "mpi_cluster %s", what);
  /* A session held throughout keeps the process's devices and cluster between the tests'
   * sessions (the last session's end releases them). */
  clg_graph *keep_g = clg_graph_new();
  /* Modes that fail a cluster or join MPI themselves open none. */
  static const char *const alone[] = {"fault", "late", "silent-join", "thread-level", NULL};
  bool own = false;
  for (int i = 0; alone[i]; i++)
    own = own || strstr(what, alone[i]) == what; /* a prefix (GCC -O3 misjudged strncmp) */
  clg_session *keep = !own ? open_session(keep_g, 20, false) : NULL;
  if (strcmp(what, "s7") == 0)
    s7();
  else if (strcmp(what, "random") == 0)
    random_graphs(argc > 2 ? atoi(argv[2]) : 8);
  else if (strcmp(what, "gpu-transfer") == 0)
    gpu_transfer();
  else if (strcmp(what, "allreduce") == 0)
    allreduce(argc > 2 ? (size_t)atoi(argv[2]) << 20 : (size_t)64 << 20);
  else if (strcmp(what, "mismatch") == 0)
    mismatch();
  else if (strcmp(what, "mixed") == 0)
    mixed();
  else if (strcmp(what, "stage-fault") == 0)
    stage_fault();
  else if (own) {
    clg_graph_free(keep_g);
    if (strcmp(what, "late") == 0 && argc > 2)
      return late(argv[2]);
    if (strcmp(what, "silent-join") == 0)
      return silent_join();
    if (strcmp(what, "thread-level") == 0 && argc > 2)
      return thread_level(argv[2]);
    if (strcmp(what, "fault-collective") == 0)
      return fault_collective();
    if (strncmp(what, "fault-", 6) == 0)
      return fault(strcmp(what, "fault-kill") == 0);
    fprintf(stderr, "mpi_cluster %s: unknown mode or missing argument\n", what);
    return 2;
  } else {
    fprintf(
        stderr,
        "usage: mpi_cluster s7|random [rounds]|allreduce [MiB]|gpu-transfer|fault-stop|fault-kill|"
        "fault-collective|mismatch|mixed|stage-fault|late FILE|silent-join|thread-level "
        "funneled|serialized\n");
    return 2;
  }
  clg_session_free(keep);
  clg_graph_free(keep_g);
  return clg_test_summary(name);
}
