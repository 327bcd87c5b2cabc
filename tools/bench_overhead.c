/* clgraph bench overhead: what the engine adds per op. A chain of 1,000 Adds on 64-element
 * float32 tensors runs in one session on each device, against the same work done by hand
 * in the same run: the same OpenCL kernel enqueued 1,000 times on a bare queue (OpenCL
 * devices), or a plain C loop (CPU:0), the two sides timed back to back in each round. Then
 * the time to build, place and prepare graphs of 10,000 to 200,000 nodes (growth should be
 * linear). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

enum { CHAIN = 1000, ELEMS = 64 };

static double seconds_since(uint64_t t0) { return (double)(clg_now_ns() - t0) * 1e-9; }

/* A chain Const -> Add -> Add ... (CHAIN Adds) on `device`; returns the last node. */
static clg_node *build_chain(clg_graph *g, const char *device, int length)
{
  int64_t dims[1] = {ELEMS};
  float v[ELEMS];
  for (int i = 0; i < ELEMS; i++)
    v[i] = (float)i * 0.001f;
  clg_graph_push_device(g, device);
  clg_node *c = clg_const_f32(g, "c", 1, dims, v);
  clg_node *y = c;
  for (int i = 0; i < length; i++)
    y = clg_add(g, NULL, y, c);
  clg_graph_pop_device(g);
  return y;
}

/* The chain through a session on one device, built and warmed up once. */
typedef struct engine_side {
  clg_graph *g;
  clg_session *s;
  clg_node *y;
} engine_side;

static bool engine_open(engine_side *e, const char *device)
{
  memset(e, 0, sizeof *e);
  e->g = clg_graph_new();
  e->y = build_chain(e->g, device, CHAIN);
  clg_tensor *out = NULL;
  bool ok = clg_graph_status(e->g) == CLG_OK &&
            clg_tool_bench_session_new(e->g, NULL, &e->s) == CLG_OK &&
            clg_session_run(e->s, 0, NULL, NULL, 1, &e->y, &out) == CLG_OK;
  clg_tensor_free(out);
  if (!ok)
    fprintf(stderr, "clgraph bench overhead: the chain on %s failed: %s\n", device,
            clg_last_error());
  return ok;
}

/* Seconds for one run of the chain (feed nothing, fetch the last Add); < 0 on failure. */
static double engine_run(engine_side *e)
{
  clg_tensor *out = NULL;
  uint64_t t0 = clg_now_ns();
  if (clg_session_run(e->s, 0, NULL, NULL, 1, &e->y, &out) != CLG_OK) {
    fprintf(stderr, "clgraph bench overhead: the chain failed: %s\n", clg_last_error());
    return -1;
  }
  double t = seconds_since(t0);
  clg_tensor_free(out);
  return t;
}

static void engine_close(engine_side *e)
{
  clg_tool_bench_session_free(e->s);
  clg_graph_free(e->g);
}

/* The same adds as a plain C loop: seconds for one chain. */
static double direct_host_run(void)
{
  static float c[ELEMS], buf[2][ELEMS];
  static volatile float sink;
  for (int i = 0; i < ELEMS; i++)
    c[i] = (float)i * 0.001f;
  uint64_t t0 = clg_now_ns();
  memcpy(buf[0], c, sizeof c);
  for (int k = 0; k < CHAIN; k++) {
    const float *in = buf[k & 1];
    float *o = buf[(k + 1) & 1];
    for (int i = 0; i < ELEMS; i++)
      o[i] = in[i] + c[i];
  }
  sink += buf[CHAIN & 1][ELEMS - 1];
  return seconds_since(t0);
}

/* The same kernel the session launches for Add (clg_add of cl/elementwise.cl, with the same
 * nine arguments), enqueued CHAIN times by hand on a bare queue of the device, ping-ponging
 * two buffers, then clFinish. */
typedef struct direct_side {
  const clg_device *dev;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k;
  cl_mem c, buf[2];
  cl_int err;
} direct_side;

static double direct_cl_run(direct_side *d)
{
  cl_ulong zero = 0, one = 1, count = ELEMS;
  size_t global = ELEMS;
  cl_int err = CL_SUCCESS;
  uint64_t t0 = clg_now_ns();
  for (int i = 0; i < CHAIN && err == CL_SUCCESS; i++) {
    clSetKernelArg(d->k, 0, sizeof(cl_mem), &d->buf[i & 1]);
    clSetKernelArg(d->k, 1, sizeof zero, &zero);
    clSetKernelArg(d->k, 2, sizeof one, &one);
    clSetKernelArg(d->k, 3, sizeof(cl_mem), &d->c);
    clSetKernelArg(d->k, 4, sizeof zero, &zero);
    clSetKernelArg(d->k, 5, sizeof one, &one);
    clSetKernelArg(d->k, 6, sizeof(cl_mem), &d->buf[(i + 1) & 1]);
    clSetKernelArg(d->k, 7, sizeof zero, &zero);
    clSetKernelArg(d->k, 8, sizeof count, &count);
    err = clEnqueueNDRangeKernel(d->q, d->k, 1, NULL, &global, NULL, 0, NULL, NULL);
  }
  if (err == CL_SUCCESS)
    err = clFinish(d->q);
  double t = seconds_since(t0);
  if (err != CL_SUCCESS) {
    d->err = err;
    fprintf(stderr, "clgraph bench overhead: the hand-enqueued chain on %s failed: %s (%d)\n",
            clg_bench_device_info(d->dev)->name, clg_cl_error_name(err), err);
    return -1;
  }
  return t;
}

static void direct_cl_close(direct_side *d)
{
  for (int i = 0; i < 2; i++)
    if (d->buf[i])
      clReleaseMemObject(d->buf[i]);
  if (d->c)
    clReleaseMemObject(d->c);
  if (d->k)
    clReleaseKernel(d->k);
  if (d->prog)
    clReleaseProgram(d->prog);
  if (d->q)
    clReleaseCommandQueue(d->q);
}

/* Builds the kernel and buffers and runs one warm-up chain. */
static bool direct_cl_open(direct_side *d, const clg_device *dev)
{
  memset(d, 0, sizeof *d);
  d->dev = dev;
  cl_int err;
  cl_device_id id = clg_bench_device_id(dev);
  d->q = clCreateCommandQueue(clg_bench_device_context(dev), id, 0, &err);
  const char *src = clg_cl_source("elementwise");
  if (err == CL_SUCCESS && src)
    d->prog = clCreateProgramWithSource(clg_bench_device_context(dev), 1, &src, NULL, &err);
  if (d->prog)
    err = clBuildProgram(d->prog, 1, &id, "", NULL, NULL);
  if (d->prog && err == CL_SUCCESS)
    d->k = clCreateKernel(d->prog, "clg_add", &err);
  for (int i = 0; d->k && i < 3; i++) {
    cl_mem m = clCreateBuffer(clg_bench_device_context(dev), CL_MEM_READ_WRITE,
                              ELEMS * sizeof(float), NULL, &err);
    *(i == 0 ? &d->c : &d->buf[i - 1]) = m;
  }
  if (!(d->c && d->buf[0] && d->buf[1])) {
    fprintf(stderr, "clgraph bench overhead: setting up the bare queue on %s failed: %s (%d)\n",
            clg_bench_device_info(dev)->name, clg_cl_error_name(err), err);
    return false;
  }
  return direct_cl_run(d) >= 0;
}

/* Medians over `repeats` rounds on one device. Each round times both sides back to back,
 * in alternating order, so that load drift lands on both; ratio is the median of the
 * rounds' session / direct ratios. */
typedef struct overhead_result {
  double engine_s, direct_s, ratio;
} overhead_result;

static bool measure_device(clg_device *dev, int repeats, overhead_result *res)
{
  engine_side e;
  direct_side d;
  memset(&d, 0, sizeof d);
  bool ok = engine_open(&e, clg_bench_device_info(dev)->name);
  bool dok =
      ok && (clg_bench_device_is_host(dev) ? direct_host_run() >= 0 : direct_cl_open(&d, dev));
  double *t = calloc((size_t)repeats * 3, sizeof *t);
  double *te = t, *td = t + repeats, *ratio = t + 2 * repeats;
  ok = ok && dok && t;
  for (int r = 0; ok && r < repeats; r++) {
    for (int side = 0; side < 2; side++) {
      bool engine_turn = (side == 0) == (r % 2 == 0);
      double s = engine_turn                     ? engine_run(&e)
                 : clg_bench_device_is_host(dev) ? direct_host_run()
                                                 : direct_cl_run(&d);
      (engine_turn ? te : td)[r] = s;
      ok = ok && s >= 0;
    }
    ratio[r] = td[r] > 0 ? te[r] / td[r] : 0;
  }
  if (ok) {
    res->ratio = clg_tool_median(ratio, repeats);
    res->engine_s = clg_tool_median(te, repeats);
    res->direct_s = clg_tool_median(td, repeats);
  }
  free(t);
  if (d.dev)
    direct_cl_close(&d);
  engine_close(&e);
  return ok;
}

/* Seconds to build a chain of `nodes` nodes, and to create its session (place + prepare). */
static void graph_times(int nodes, double *build_s, double *prepare_s)
{
  uint64_t t0 = clg_now_ns();
  clg_graph *g = clg_graph_new();
  build_chain(g, "", nodes - 1);
  *build_s = seconds_since(t0);
  clg_session *s = NULL;
  t0 = clg_now_ns();
  if (clg_tool_bench_session_new(g, NULL, &s) != CLG_OK)
    fprintf(stderr, "clgraph bench overhead: session failed: %s\n", clg_last_error());
  *prepare_s = seconds_since(t0);
  clg_tool_bench_session_free(s);
  clg_graph_free(g);
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: clgraph bench overhead [--json] [--repeats N]\n\n"
          "Per device: microseconds per op of a %d-Add chain on %d-element float32 tensors\n"
          "run through a session, against the same work by hand in the same run (the same\n"
          "OpenCL kernel enqueued on a bare queue, or a plain C loop on CPU:0); medians of\n"
          "N runs (default 15) after a warm-up. Then the time to build, place and prepare\n"
          "graphs of 10,000 to 200,000 nodes.\n",
          CHAIN, ELEMS);
}

int clg_bench_overhead(int argc, char **argv)
{
  bool json = false;
  int repeats = 15;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 10000, .integer = &repeats},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench overhead", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  /* A session held open keeps the device state (and compiled programs) for all runs. */
  clg_graph *hold_g = clg_graph_new();
  clg_session *hold = NULL;
  if (clg_tool_bench_session_new(hold_g, NULL, &hold) != CLG_OK) {
    fprintf(stderr, "clgraph bench overhead: %s\n", clg_last_error());
    clg_graph_free(hold_g);
    return 1;
  }
  clg_devices *devs = (clg_devices *)clg_session_devices(hold);
  int status = 0;
  if (json)
    printf("{\"benchmark\": \"overhead\", \"chain\": %d, \"elements\": %d, \"repeats\": %d, "
           "\"devices\": [",
           CHAIN, ELEMS, repeats);
  else
    printf("chain of %d Adds on %d floats, median of %d rounds (each times both sides, in\n"
           "alternating order; ratio = median of the rounds' clgraph / direct)\n"
           "%-16s %14s %14s %8s\n",
           CHAIN, ELEMS, repeats, "device", "clgraph us/op", "direct us/op", "ratio");
  for (int i = 0; i < clg_devices_count(devs); i++) {
    clg_device *dev = clg_devices_at(devs, i);
    overhead_result res = {-1, -1, 0};
    if (!measure_device(dev, repeats, &res))
      status = 1;
    double eu = res.engine_s * 1e6 / CHAIN, du = res.direct_s * 1e6 / CHAIN;
    if (json)
      printf("%s{\"device\": \"%s\", \"direct\": \"%s\", \"clgraph_us_per_op\": %.3f, "
             "\"direct_us_per_op\": %.3f, \"ratio\": %.3f}",
             i ? ", " : "", clg_bench_device_info(dev)->name,
             clg_bench_device_is_host(dev) ? "C loop" : "bare OpenCL queue", eu, du, res.ratio);
    else
      printf("%-16s %14.3f %14.3f %8.2f  (direct: %s)\n", clg_bench_device_info(dev)->name, eu, du,
             res.ratio, clg_bench_device_is_host(dev) ? "C loop" : "same kernel on a bare queue");
  }
  /* Graph sizes: build time should grow linearly with the node count. */
  static const int sizes[] = {10000, 20000, 100000, 200000};
  enum { NSIZES = sizeof sizes / sizeof sizes[0] };
  double build[NSIZES], prep[NSIZES];
  /* The median of three builds of each size: the first build of a size also pays for the
   * pages the process touches for the first time, which a steady program has already. */
  for (int k = 0; k < NSIZES; k++) {
    double b3[3], p3[3];
    for (int r = 0; r < 3; r++)
      graph_times(sizes[k], &b3[r], &p3[r]);
    build[k] = clg_tool_median(b3, 3);
    prep[k] = clg_tool_median(p3, 3);
  }
  if (json) {
    printf("]");
    for (int k = 0; k < NSIZES; k++)
      printf(", \"graph_%d\": {\"build_ms\": %.3f, \"place_prepare_ms\": %.3f}", sizes[k],
             build[k] * 1e3, prep[k] * 1e3);
    printf("}\n");
  } else {
    for (int k = 0; k < NSIZES; k++)
      printf("graph of %7d nodes: build %8.2f ms (%.3f us/node), place + prepare %8.2f ms\n",
             sizes[k], build[k] * 1e3, build[k] * 1e6 / sizes[k], prep[k] * 1e3);
  }
  clg_tool_bench_session_free(hold);
  clg_graph_free(hold_g);
  return status;
}
