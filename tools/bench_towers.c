/* clgraph bench towers: the step time of the CIFAR-10 model trained with N towers (one per
 * GPU, batch B/N each, gradients averaged on the CPU) against one tower with the whole
 * batch B on GPU:0, steps of the two alternating in one process; the goal is N towers at
 * most 1.2x one tower's time. Without a GPU, PoCL's CPU devices stand in (as clgraph demo). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cifar10_run.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench towers [--json] [--towers N] [--batch B] [--repeats R]\n"
             "                            [--trace FILE]\n\n"
             "Training steps of the CIFAR-10 model (24x24x3): N towers (default 4) of batch B/N\n"
             "on /device:GPU:0..N-1 against one tower of batch B (default 128) on GPU:0,\n"
             "alternating, R times (default 5) after two warm-up steps each: the medians and\n"
             "their ratio. Without a GPU, four PoCL CPU devices stand in (POCL_DEVICES).\n");
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int count_gpus(void)
{
  clg_devices *devs = NULL;
  if (clg_devices_new(NULL, &devs) != CLG_OK)
    return -1;
  int n = clg_devices_count(devs) - 1;
  clg_devices_free(devs);
  return n;
}

/* One side: its graph, session and fed batches. */
typedef struct side {
  cifar10_train_graph t;
  clg_session *s;
  int towers;
  clg_tensor *feeds[2 * CIFAR10_MAX_TOWERS];
  clg_output at[2 * CIFAR10_MAX_TOWERS];
} side;

static bool side_open(side *x, int towers, int batch)
{
  memset(x, 0, sizeof *x);
  x->towers = towers;
  cifar10_train_options o = {towers, batch, 24, 3, 50000, 0.1, 0, 1, 1};
  if (!cifar10_train_build(&o, &x->t)) {
    fprintf(stderr, "clgraph bench towers: %s\n", clg_graph_error(x->t.g));
    return false;
  }
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = 1;
  opt.gpu_options.allow_growth = 1; /* two sessions share the devices */
  if (clg_tool_bench_session_new(x->t.g, &opt, &x->s) != CLG_OK ||
      clg_session_run_outputs(x->s, 0, NULL, NULL, 0, NULL, NULL, 1, &x->t.init) != CLG_OK) {
    fprintf(stderr, "clgraph bench towers: %s\n", clg_last_error());
    return false;
  }
  int64_t idims[4] = {batch, 24, 24, 3}, ldims[1] = {batch};
  for (int i = 0; i < towers; i++) {
    clg_tensor *img = clg_tensor_new(CLG_FLOAT32, 4, idims, NULL);
    clg_tensor *lab = clg_tensor_new(CLG_INT32, 1, ldims, NULL);
    if (!img || !lab) {
      clg_tensor_free(img);
      clg_tensor_free(lab);
      return false;
    }
    float *p = clg_tensor_data(img);
    for (size_t k = 0; k < clg_tensor_count(img); k++)
      p[k] = (float)rand() / (float)RAND_MAX - 0.5f;
    int32_t *l = clg_tensor_data(lab);
    for (int k = 0; k < batch; k++)
      l[k] = rand() % 10;
    x->feeds[2 * i] = img;
    x->feeds[2 * i + 1] = lab;
    x->at[2 * i] = clg_out(x->t.images[i], 0);
    x->at[2 * i + 1] = clg_out(x->t.labels[i], 0);
  }
  return true;
}

static double side_step(side *x)
{
  double t0 = now_s();
  if (clg_session_run_outputs(x->s, 2 * x->towers, x->at, x->feeds, 0, NULL, NULL, 1,
                              &x->t.train_op) != CLG_OK) {
    fprintf(stderr, "clgraph bench towers: %s\n", clg_last_error());
    return -1;
  }
  return now_s() - t0;
}

static void side_close(side *x)
{
  for (int i = 0; i < 2 * x->towers; i++)
    clg_tensor_free(x->feeds[i]);
  clg_tool_bench_session_free(x->s);
  clg_graph_free(x->t.g);
}

int clg_bench_towers(int argc, char **argv)
{
  int towers = 4, batch = 128, repeats = 5;
  bool json = false;
  clg_tool_opt opts[] = {
      {"--json", CLG_TOOL_FLAG, .flag = &json},
      {"--towers", CLG_TOOL_INT, .min = 2, .max = CIFAR10_MAX_TOWERS, .integer = &towers},
      {"--batch", CLG_TOOL_INT, .min = 1, .max = 1 << 16, .integer = &batch},
      {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
      clg_tool_trace_opt(&clg_tool_bench_pictures),
      {NULL}};
  clg_tool_cmd cmd = {.name = "bench towers", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (batch % towers) {
    fprintf(stderr, "clgraph bench towers: --batch %d is not a multiple of --towers %d\n", batch,
            towers);
    return 2;
  }
  /* As clgraph demo: PoCL reads these once, before the first OpenCL call. */
  if (!getenv("POCL_DEVICES"))
    setenv("POCL_DEVICES", "pthread pthread pthread pthread", 1);
  if (!getenv("POCL_MEMORY_LIMIT"))
    setenv("POCL_MEMORY_LIMIT", "2", 1);
  int gpus = count_gpus();
  if (gpus == 0 && !getenv("CLGRAPH_DEVICE_TYPES")) {
    setenv("CLGRAPH_DEVICE_TYPES", "all", 1);
    gpus = count_gpus();
  }
  if (gpus < towers) {
    fprintf(stderr, "clgraph bench towers: %d towers need %d GPUs; found %d%s\n", towers, towers,
            gpus < 0 ? 0 : gpus, gpus < 0 ? clg_last_error() : "");
    return 1;
  }
  srand(1);
  side many, one;
  memset(&many, 0, sizeof many);
  memset(&one, 0, sizeof one);
  int rc = 1;
  double *tm = malloc(sizeof *tm * (size_t)repeats), *t1 = malloc(sizeof *t1 * (size_t)repeats);
  bool ok = tm && t1 && side_open(&many, towers, batch / towers) && side_open(&one, 1, batch);
  for (int i = 0; ok && i < 2; i++)
    ok = side_step(&many) >= 0 && side_step(&one) >= 0;
  for (int i = 0; ok && i < repeats; i++) {
    tm[i] = side_step(&many);
    t1[i] = side_step(&one);
    ok = tm[i] >= 0 && t1[i] >= 0;
  }
  if (ok) {
    double a = clg_tool_median(tm, repeats), b = clg_tool_median(t1, repeats);
    if (json)
      printf("{\"towers\": %d, \"batch\": %d, \"towers_step_ms\": %.3f, \"one_tower_step_ms\": "
             "%.3f, \"ratio\": %.4f, \"goal\": 1.2}\n",
             towers, batch, a * 1e3, b * 1e3, a / b);
    else
      printf("CIFAR-10 training step, total batch %d: %d towers of %d on GPU:0-%d %.1f ms, one "
             "tower of %d on GPU:0 %.1f ms (medians of %d alternating steps): %.2fx (goal: at "
             "most 1.2x)\n",
             batch, towers, batch / towers, towers - 1, a * 1e3, batch, b * 1e3, repeats, a / b);
    rc = 0;
  }
  free(tm);
  free(t1);
  side_close(&many);
  side_close(&one);
  return rc;
}
