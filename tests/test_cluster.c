/* Clusters without mpirun (issue 17): a bad cluster option or CLGRAPH_CLUSTER is
 * INVALID_ARGUMENT naming it; a build without MPI answers UNIMPLEMENTED with a clear message;
 * AllReduce outside a cluster is its input (the sum and the mean over one task), on CPU:0
 * and a GPU, and its gradient is the same reduction. The cluster itself is tested under
 * mpirun (tests/mpi_cluster.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static clg_code try_cluster(const char *kind, double timeout)
{
  clg_graph *g = clg_graph_new();
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = kind;
  opt.cluster_timeout_s = timeout;
  clg_session *s = NULL;
  clg_code code = clg_session_new(g, &opt, &s);
  CHECK(code == CLG_OK || s == NULL);
  clg_session_free(s);
  clg_graph_free(g);
  return code;
}

int main(void)
{
  CHECK_CODE(try_cluster("tcp", 0), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "the session option cluster is \"tcp\"; expected \"mpi\"");
  CHECK_CODE(try_cluster("mpi", -1), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "cluster_timeout_s must be > 0");
  setenv("CLGRAPH_CLUSTER", "mpi2", 1);
  CHECK_CODE(try_cluster(NULL, 0), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "CLGRAPH_CLUSTER is \"mpi2\"");
  setenv("CLGRAPH_CLUSTER", "none", 1);
  setenv("CLGRAPH_CLUSTER_TIMEOUT", "soon", 1);
  CHECK_CODE(try_cluster(NULL, 0), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "CLGRAPH_CLUSTER_TIMEOUT is \"soon\"");
  /* Deadlines whose nanoseconds overflow a uint64_t are refused, not wrapped to none. */
  const char *too_long[] = {"1e12", "2e10", "inf", "1e400"};
  for (int i = 0; i < 4; i++) {
    setenv("CLGRAPH_CLUSTER_TIMEOUT", too_long[i], 1);
    CHECK_CODE(try_cluster(NULL, 0), CLG_INVALID_ARGUMENT);
    char want[96];
    snprintf(want, sizeof want, "CLGRAPH_CLUSTER_TIMEOUT is \"%s\"; expected", too_long[i]);
    CHECK_CONTAINS(clg_last_error(), want);
    CHECK_CONTAINS(clg_last_error(), "at most 1e+09");
  }
  setenv("CLGRAPH_CLUSTER_TIMEOUT", "1e9", 1); /* the longest accepted */
  CHECK_OK(try_cluster(NULL, 0));
  unsetenv("CLGRAPH_CLUSTER_TIMEOUT");
  CHECK_CODE(try_cluster("none", 1e12), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "cluster_timeout_s is 1e+12; expected at most 1e+09 seconds");
  CHECK_CODE(try_cluster("none", INFINITY), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "cluster_timeout_s is inf");
  CHECK_OK(try_cluster("none", 1e9));
  CHECK_OK(try_cluster(NULL, 0)); /* "none": no cluster */
  unsetenv("CLGRAPH_CLUSTER");
#ifndef CLG_HAVE_MPI
  CHECK_CODE(try_cluster("mpi", 0), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "built without MPI");
  setenv("CLGRAPH_CLUSTER", "mpi", 1);
  CHECK_CODE(try_cluster(NULL, 0), CLG_UNIMPLEMENTED);
  unsetenv("CLGRAPH_CLUSTER");
#endif

  /* AllReduce over one task. */
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {5};
  const float v[5] = {1, -2, 3.5f, 0, 7};
  clg_node *x = clg_const_f32(g, "x", 1, dims, v);
  clg_node *outs[4];
  clg_graph_push_device(g, "/cpu:0");
  outs[0] = clg_all_reduce(g, "host_sum", x, "sum");
  clg_graph_pop_device(g);
  clg_graph_push_device(g, "/device:GPU:0");
  outs[1] = clg_all_reduce(g, "gpu_mean", x, "mean");
  outs[2] = clg_all_reduce(g, "gpu_default", x, NULL);
  clg_graph_pop_device(g);
  clg_output grad;
  clg_output y = clg_out(clg_square(g, "sq", outs[1]), 0), xs = clg_out(x, 0);
  CHECK_OK(clg_gradients(g, 1, &y, NULL, 1, &xs, NULL, &grad));
  outs[3] = grad.node;
  CHECK_OK(clg_graph_status(g));
  clg_graph *bad = clg_graph_new();
  CHECK(clg_all_reduce(bad, "bad", clg_const_f32(bad, "x", 1, dims, v), "max") == NULL);
  CHECK_CONTAINS(clg_last_error(), "reduction is \"max\"; expected \"sum\" or \"mean\"");
  CHECK(clg_all_reduce(bad, "b", NULL, "sum") == NULL);
  clg_graph_free(bad);
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  int task = -1, tasks = -1;
  clg_session_task(s, &task, &tasks);
  CHECK(task == 0 && tasks == 1 && clg_session_is_chief(s));
  CHECK_STR(clg_session_node_device(s, outs[1]), "/job:localhost/replica:0/task:0/device:GPU:0");
  clg_tensor *got[4] = {NULL, NULL, NULL, NULL};
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 4, outs, got));
  for (int k = 0; k < 4; k++) {
    const float *p = got[k] ? clg_tensor_const_data(got[k]) : NULL;
    for (int i = 0; p && i < 5; i++) {
      float want = k == 3 ? 2 * v[i] : v[i]; /* d(AllReduce(x)^2)/dx = 2x over one task */
      CHECK_MSG(p[i] == want, "output %d element %d: %g, want %g", k, i, p[i], want);
    }
    CHECK(p != NULL);
    clg_tensor_free(got[k]);
  }
  clg_session_free(s);
  clg_graph_free(g);
  return clg_test_summary("test_cluster");
}
