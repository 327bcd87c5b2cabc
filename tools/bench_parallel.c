/* clgraph bench parallel: what the host thread team costs per parallel region. A model's
 * host ops are parallel regions of a few to a few hundred microseconds, one after another,
 * often with a serial op between them; the team's start (or wake-up) and its final
 * handoff are paid once per region. Each case runs many regions of clg_host_threads() tasks,
 * each task busy for a fixed time, back to back or with a serial gap between regions, and
 * reports the microseconds per region above the ideal (a task's time: all tasks at once).
 * Then the team idle: the process's CPU time while it sleeps after the last region (threads
 * that keep spinning between runs would show here). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "tool.h"

static void busy_ns(uint64_t ns)
{
  uint64_t t0 = clg_now_ns();
  while (clg_now_ns() - t0 < ns) {
  }
}

static void task_fn(void *ctx, int task)
{
  (void)task;
  busy_ns(*(const uint64_t *)ctx);
}

static double process_cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Microseconds per region of `threads` tasks of task_us each, `gap_us` of serial work in the
 * caller between regions (not counted); the median of `repeats` batches. */
static double region_us(int threads, double task_us, double gap_us, int regions, int repeats)
{
  uint64_t task_ns = (uint64_t)(task_us * 1e3), gap_ns = (uint64_t)(gap_us * 1e3);
  double *t = calloc((size_t)repeats, sizeof *t);
  if (!t)
    return -1;
  for (int r = 0; r < repeats; r++) {
    uint64_t in_regions = 0;
    for (int i = 0; i < regions; i++) {
      busy_ns(gap_ns);
      uint64_t t0 = clg_now_ns();
      clg_host_parallel(threads, task_fn, &task_ns);
      in_regions += clg_now_ns() - t0;
    }
    t[r] = (double)in_regions * 1e-3 / regions;
  }
  double m = clg_tool_median(t, repeats);
  free(t);
  return m;
}

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench parallel [--json] [--repeats N]\n\n"
             "The host thread team (CLGRAPH_HOST_THREADS): microseconds per parallel region\n"
             "of one task per thread, each task busy 0 to 200 us, regions back to back or 20\n"
             "to 1000 us of serial work apart, against the ideal (one task's time); medians of\n"
             "N batches (default 5). Then the process's CPU time while the team is idle for\n"
             "200 ms after a region (about 0 when its threads sleep).\n");
}

int clg_bench_parallel(int argc, char **argv)
{
  bool json = false;
  int repeats = 5;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench parallel", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  int threads = clg_host_threads();
  static const double cases[][2] = {{0, 0},   {2, 0},    {10, 0},    {50, 0},  {200, 0},
                                    {10, 20}, {10, 100}, {10, 1000}, {50, 100}};
  enum { NCASES = sizeof cases / sizeof cases[0] };
  if (json)
    printf("{\"benchmark\": \"parallel\", \"threads\": %d, \"repeats\": %d, \"cases\": [", threads,
           repeats);
  else
    printf("host team of %d threads; medians of %d batches\n%-9s %-8s %-12s %-12s\n", threads,
           repeats, "task us", "gap us", "us/region", "over ideal");
  region_us(threads, 1, 0, 200, 1); /* warm-up: the team exists */
  for (int c = 0; c < NCASES; c++) {
    double task = cases[c][0], gap = cases[c][1];
    int regions = task + gap >= 500 ? 200 : task + gap >= 50 ? 1000 : 4000;
    double us = region_us(threads, task, gap, regions, repeats);
    if (json)
      printf("%s{\"task_us\": %g, \"gap_us\": %g, \"us_per_region\": %.3f, \"over_ideal_us\": "
             "%.3f}",
             c ? ", " : "", task, gap, us, us - task);
    else
      printf("%-9g %-8g %-12.2f %-12.2f\n", task, gap, us, us - task);
  }
  /* Idle: one region, then 200 ms asleep; the CPU time every thread used meanwhile. */
  uint64_t one = 1000;
  clg_host_parallel(threads, task_fn, &one);
  double cpu0 = process_cpu_s();
  struct timespec nap = {0, 200 * 1000 * 1000};
  nanosleep(&nap, NULL);
  double idle_ms = (process_cpu_s() - cpu0) * 1e3;
  if (json)
    printf("], \"idle_cpu_ms_per_200ms\": %.3f}\n", idle_ms);
  else
    printf("idle: %.3f ms of CPU in 200 ms asleep (%.2f%%)\n", idle_ms, idle_ms / 2);
  return 0;
}
