/* clgraph bench allreduce: clgraph's AllReduce against a plain MPI_Allreduce, under mpirun.
 *
 *   mpirun -np 2 clgraph bench allreduce [--json] [--repeats N] [--max-mib M] [--trace F]
 *
 * For float32 buffers of 1, 4, 16, 64 and 256 MiB (up to M), each repeat times, in
 * alternating order:
 *   session  a run of a session whose graph is Placeholder -> AllReduce(sum) on /cpu:0,
 *            fed and fetched (what a training step pays);
 *   op       clgraph's reduction of a host buffer in place (a meeting of the tasks, then
 *            MPI_Allreduce under the watchdog, or the ring from 32 MiB on), the same buffer
 *            as the reference;
 *   mpi      a plain MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM) of that buffer.
 * Bandwidth is the buffer's bytes over the time (algorithm bandwidth); ratios are medians of
 * the per-repeat ratios. Task 0 prints. Outside mpirun it runs on one task (no traffic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: mpirun -np P clgraph bench allreduce [--json] [--repeats N] [--max-mib M]\n"
             "                                          [--trace FILE]\n\n"
             "clgraph's AllReduce (sum of float32 on /cpu:0) against a plain MPI_Allreduce of\n"
             "the same host buffer, 1-256 MiB (up to M, default 256), N repeats (default 5)\n"
             "alternating the sides: a session run (fed, fetched), the op's reduction alone,\n"
             "and MPI_Allreduce. GB/s of the buffer's bytes; ratios are medians of pairs.\n"
             "--trace FILE: task 0's last 5 session runs of the last size.\n");
}

static double since(uint64_t t0) { return (double)(clg_now_ns() - t0) * 1e-9; }

int clg_bench_allreduce(int argc, char **argv)
{
  int repeats = 5, max_mib = 256;
  bool json = false;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         {"--max-mib", CLG_TOOL_INT, .min = 1, .max = 4096, .integer = &max_mib},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench allreduce", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = getenv("OMPI_COMM_WORLD_SIZE") ? "mpi" : NULL;
  opt.gpu_options.allow_growth = 1;
  const int sizes[] = {1, 4, 16, 64, 256};
  int task = 0, tasks = 1, status = 0;
  char *text = NULL; /* the JSON, printed at the end by task 0 */
  size_t text_len = 0;
  FILE *out = open_memstream(&text, &text_len);
  if (!out) {
    fprintf(stderr, "clgraph bench allreduce: out of host memory\n");
    return 1;
  }
  if (json)
    fprintf(out, "{\"bench\": \"allreduce\", \"dtype\": \"float32\", \"sizes\": [");
  int printed = 0;
  for (int si = 0; si < 5 && sizes[si] <= max_mib && status == 0; si++) {
    size_t bytes = (size_t)sizes[si] << 20, count = bytes / 4;
    clg_graph *g = clg_graph_new();
    int64_t dims[1] = {(int64_t)count};
    clg_graph_push_device(g, "/cpu:0");
    clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 1, dims);
    clg_node *y = clg_all_reduce(g, "y", x, "sum");
    clg_graph_pop_device(g);
    clg_session *s = NULL;
    clg_tensor *feed = clg_tensor_new(CLG_FLOAT32, 1, dims, NULL);
    float *buf = malloc(bytes);
    if (clg_session_new(g, &opt, &s) != CLG_OK || !feed || !buf) {
      fprintf(stderr, "clgraph bench allreduce: %s\n", clg_last_error());
      status = 1;
    }
    if (s)
      clg_session_task(s, &task, &tasks);
    /* --trace: task 0's session runs (every task would write the same file). */
    if (task == 0)
      clg_tool_bench_session_setup(s);
    clg_cluster *c = clg_session_cluster(s);
    double *t_sess = calloc((size_t)repeats, sizeof(double));
    double *t_op = calloc((size_t)repeats, sizeof(double));
    double *t_mpi = calloc((size_t)repeats, sizeof(double));
    double *r_sess = calloc((size_t)repeats, sizeof(double));
    double *r_op = calloc((size_t)repeats, sizeof(double));
    for (size_t i = 0; feed && buf && i < count; i++)
      ((float *)clg_tensor_data(feed))[i] = buf[i] = (float)(i % 7);
    /* One untimed round of each side: first-touch of pages, plans, connections. */
    for (int r = -1; r < repeats && status == 0; r++) {
      for (int k = 0; k < 3 && status == 0; k++) {
        int side = (k + (r < 0 ? 0 : r)) % 3; /* alternate which side goes first */
        clg_cluster_barrier(c);
        uint64_t t0 = clg_now_ns();
        clg_code code = CLG_OK;
        if (side == 0) {
          clg_tensor *o = NULL;
          code = clg_session_run(s, 1, &x, &feed, 1, &y, &o);
          clg_tensor_free(o);
        } else if (side == 1) {
          code = clg_bench_cluster_allreduce_sum(c, buf, count, "bench");
        } else if (c) {
          code = clg_cluster_reference_allreduce(c, buf, count, CLG_FLOAT32);
        }
        double t = since(t0);
        if (code != CLG_OK) {
          fprintf(stderr, "clgraph bench allreduce: %s\n", clg_last_error());
          status = 1;
        }
        if (r >= 0)
          (side == 0 ? t_sess : side == 1 ? t_op : t_mpi)[r] = t;
      }
      if (r >= 0 && status == 0) {
        r_sess[r] = t_mpi[r] / t_sess[r];
        r_op[r] = t_mpi[r] / t_op[r];
      }
    }
    if (status == 0 && task == 0) {
      double ms = clg_tool_median(t_sess, repeats), mo = clg_tool_median(t_op, repeats),
             mm = clg_tool_median(t_mpi, repeats);
      double rs = clg_tool_median(r_sess, repeats), ro = clg_tool_median(r_op, repeats);
      double gb = (double)bytes / 1e9;
      if (json)
        fprintf(out,
                "%s\n  {\"mib\": %d, \"session_gbps\": %.3f, \"op_gbps\": %.3f, "
                "\"mpi_gbps\": %.3f, \"session_vs_mpi\": %.3f, \"op_vs_mpi\": %.3f}",
                printed++ ? "," : "", sizes[si], gb / ms, gb / mo, gb / mm, rs, ro);
      else
        printf("%4d MiB on %d tasks: session %7.3f GB/s (%.2fx), op %7.3f GB/s (%.2fx), "
               "MPI_Allreduce %7.3f GB/s\n",
               sizes[si], tasks, gb / ms, rs, gb / mo, ro, gb / mm);
    }
    free(t_sess);
    free(t_op);
    free(t_mpi);
    free(r_sess);
    free(r_op);
    free(buf);
    clg_tensor_free(feed);
    clg_tool_bench_session_free(s);
    clg_graph_free(g);
  }
  if (task != 0) /* task 0 writes the pictures; here none was asked for */
    clg_tool_pictures_init(&clg_tool_bench_pictures, clg_tool_bench_pictures.command, 1);
  bool print = json && task == 0 && status == 0;
  if (print)
    fprintf(out, "\n], \"tasks\": %d, \"repeats\": %d}\n", tasks, repeats);
  fclose(out);
  if (print)
    fputs(text ? text : "", stdout);
  free(text);
  return status;
}
