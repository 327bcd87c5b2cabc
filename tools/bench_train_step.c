/* clgraph bench train-step: one training step of the CIFAR-10 model (forward, gradients,
 * gradient descent) at batch 128 on one device (CPU:0 by default): milliseconds per step,
 * images per second, and the share of the step spent in GEMM work (Conv2D and its two
 * backprops, MatMul) against everything else, from the session's node times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cifar10_model.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench train-step [--json] [--ops] [--repeats N] [--batch B] "
             "[--device DEV]\n\n"
             "One training step of the CIFAR-10 model (24x24x3 images, forward, gradients,\n"
             "gradient descent) on DEV (default /cpu:0), batch B (default 128), timed N times\n"
             "(default 5) after two warm-up steps: ms per step (median), images/s, and the\n"
             "share of 5 traced steps spent in Conv2D, its backprops and MatMul. --ops also\n"
             "prints their mean time per op type and the last one's per node (text only).\n");
}

static bool is_gemm(const char *op)
{
  return strcmp(op, "Conv2D") == 0 || strcmp(op, "Conv2DBackpropInput") == 0 ||
         strcmp(op, "Conv2DBackpropFilter") == 0 || strcmp(op, "MatMul") == 0;
}

enum { TRACED_STEPS = 5 };

/* Per op type, the mean time per traced step (largest first, from the session's profile of
 * the traced steps), then each node over 1% of the step in the last of them. */
static void print_ops(clg_session *s, clg_graph *g, const clg_op_profile *rows, int num_rows,
                      double traced)
{
  printf("%-36s %5s %9s %6s   (mean of %d traced steps)\n", "op", "nodes", "ms", "%step",
         TRACED_STEPS);
  for (int r = 0; r < num_rows; r++) {
    double ms = rows[r].total_ms / TRACED_STEPS;
    printf("%-36s %5lld %9.2f %5.1f%%\n", rows[r].op, (long long)(rows[r].count / TRACED_STEPS), ms,
           100 * ms * 1e-3 / traced);
  }
  printf("\n%-52s %-24s %9s\n", "node (> 1% of the step, last traced step)", "op", "ms");
  for (int i = 0; i < clg_graph_num_nodes(g); i++) {
    clg_node *n = clg_graph_node(g, i);
    uint64_t a, b;
    double d;
    if (clg_session_node_times(s, n, &a, &b) == CLG_OK &&
        (d = (double)(b - a) * 1e-9) > 0.01 * traced)
      printf("%-52s %-24s %9.2f\n", clg_node_name(n), clg_node_op(n), d * 1e3);
  }
}

int clg_bench_train_step(int argc, char **argv)
{
  int repeats = 5, batch = 128;
  const char *device = "/cpu:0";
  bool json = false, ops = false;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--ops", CLG_TOOL_FLAG, .flag = &ops},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         {"--batch", CLG_TOOL_INT, .min = 1, .max = 4096, .integer = &batch},
                         {"--device", CLG_TOOL_STRING, .meta = "DEV", .text = &device},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench train-step", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;

  clg_graph *g = clg_graph_new();
  clg_graph_set_random_seed(g, 1);
  int64_t idims[4] = {batch, 24, 24, 3}, ldims[1] = {batch};
  clg_graph_push_device(g, device);
  clg_node *images = clg_placeholder(g, "images", CLG_FLOAT32, 4, idims);
  clg_node *labels = clg_placeholder(g, "labels", CLG_INT32, 1, ldims);
  cifar10_model m;
  cifar10_build(g, images, labels, batch, 24, 3, NULL, &m);
  clg_grad_var gv[CIFAR10_NUM_VARS];
  if (clg_graph_status(g) == CLG_OK)
    clg_compute_gradients(g, clg_out(m.loss, 0), CIFAR10_NUM_VARS, m.vars, NULL, gv);
  clg_node *step = clg_global_step(g);
  float lr = 0.1f;
  clg_optimizer opt = {CLG_OPTIMIZER_GRADIENT_DESCENT, clg_const_f32(g, "lr", 0, NULL, &lr), 0, 0};
  clg_node *train = clg_graph_status(g) == CLG_OK
                        ? clg_apply_gradients(g, &opt, CIFAR10_NUM_VARS, gv, step, "train")
                        : NULL;
  clg_graph_pop_device(g);
  clg_node *init = clg_global_variables_initializer(g, "init");
  clg_session *s = NULL;
  clg_tensor *img = clg_tensor_new(CLG_FLOAT32, 4, idims, NULL);
  clg_tensor *lab = clg_tensor_new(CLG_INT32, 1, ldims, NULL);
  int rc = 1;
  if (clg_graph_status(g) != CLG_OK || !train || !img || !lab ||
      clg_tool_bench_session_new(g, NULL, &s) != CLG_OK ||
      clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init) != CLG_OK) {
    fprintf(stderr, "clgraph bench train-step: %s\n",
            clg_graph_status(g) != CLG_OK ? clg_graph_error(g) : clg_last_error());
    goto done;
  }
  srand(1);
  float *px = clg_tensor_data(img);
  for (size_t i = 0; i < clg_tensor_count(img); i++)
    px[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  int32_t *pl = clg_tensor_data(lab);
  for (int i = 0; i < batch; i++)
    pl[i] = rand() % 10;
  clg_output fa[2] = {clg_out(images, 0), clg_out(labels, 0)};
  clg_tensor *fv[2] = {img, lab};
  double *t = malloc(sizeof *t * (size_t)repeats);
  for (int i = 0; i < repeats + 2; i++) {
    double t0 = now_s();
    if (clg_session_run_outputs(s, 2, fa, fv, 0, NULL, NULL, 1, &train) != CLG_OK) {
      fprintf(stderr, "clgraph bench train-step: step %d: %s\n", i, clg_last_error());
      free(t);
      goto done;
    }
    if (i >= 2)
      t[i - 2] = now_s() - t0;
  }
  double sec = clg_tool_median(t, repeats);
  free(t);
  /* Traced steps: their median wall time, and the session's profile of them (one step alone
   * is at the mercy of one pre-empted op on a shared machine). The shares divide the
   * profile's mean per step by the same steps' mean, so that a pre-empted step counts on both
   * sides (against the median, one slow step pushed GEMM's share past 1 on a loaded machine). */
  clg_session_set_trace(s, TRACED_STEPS);
  double tt[TRACED_STEPS];
  for (int i = 0; i < TRACED_STEPS; i++) {
    double t0 = now_s();
    clg_session_run_outputs(s, 2, fa, fv, 0, NULL, NULL, 1, &train);
    tt[i] = now_s() - t0;
  }
  double traced = clg_tool_median(tt, TRACED_STEPS), traced_mean = 0;
  for (int i = 0; i < TRACED_STEPS; i++)
    traced_mean += tt[i] / TRACED_STEPS;
  clg_op_profile *rows = NULL;
  int num_rows = 0;
  double gemm = 0, other = 0;
  if (clg_session_profile(s, &rows, &num_rows) == CLG_OK)
    for (int r = 0; r < num_rows; r++)
      *(is_gemm(rows[r].op) ? &gemm : &other) += rows[r].total_ms * 1e-3 / TRACED_STEPS;
  double flops = 3.0 * 2.0 * cifar10_forward_macs(24, 3) * batch;
  if (json)
    printf("{\"device\": \"%s\", \"batch\": %d, \"ms_per_step\": %.3f, \"images_per_sec\": "
           "%.1f, \"gflops\": %.2f, \"gemm_fraction\": %.4f, \"other_fraction\": %.4f, "
           "\"traced_step_ms\": %.3f}\n",
           device, batch, sec * 1e3, batch / sec, flops / sec * 1e-9, gemm / traced_mean,
           other / traced_mean, traced * 1e3);
  else
    printf("CIFAR-10 training step on %s, batch %d: %.1f ms per step (median of %d), %.0f "
           "images/s, %.1f GFLOP/s\n"
           "traced step %.1f ms (median of 5): GEMM (Conv2D, its backprops, MatMul) %.1f%%, "
           "everything else "
           "%.1f%%\n",
           device, batch, sec * 1e3, repeats, batch / sec, flops / sec * 1e-9, traced * 1e3,
           100 * gemm / traced_mean, 100 * other / traced_mean);
  if (!json && ops)
    print_ops(s, g, rows, num_rows, traced);
  free(rows);
  rc = 0;
done:
  clg_tensor_free(img);
  clg_tensor_free(lab);
  clg_tool_bench_session_free(s);
  clg_graph_free(g);
  return rc;
}
