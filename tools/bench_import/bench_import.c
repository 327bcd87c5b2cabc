/* The import-cost figures of one model through the public API alone (issue 23's goal: import
 * plus session creation under 10% of the first run), built and run by tools/bench_import.sh:
 *
 *   bench_import [--allow-growth] MODEL [REPEATS]
 *
 * prints one line of key=value: import_ms (clg_graph_import, unknown input dims bound to 1),
 * session_ms (the process's first clg_session_new: the device state, which is OpenCL's own
 * start-up (platform and device discovery), plus placement), session2_ms (a second session
 * on the same graph while the first holds the device state: clgraph's own per-session cost),
 * first_run_ms (the first run: plan, Const uploads, OpenCL program builds, the computation),
 * median_ms and min_ms over REPEATS (default 10) later runs. --allow-growth: the session's
 * gpu_options.allow_growth (else each device's memory is reserved and touched at first use). Inputs
 * are
 * ((i * 7919) % 256) / 255 for float inputs, zeros otherwise. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clgraph/import.h"
#include "clgraph/session.h"

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define MAX_IO 64

int main(int argc, char **argv)
{
  bool growth = argc > 1 && strcmp(argv[1], "--allow-growth") == 0;
  argc -= growth, argv += growth;
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bench_import [--allow-growth] MODEL [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 2 ? atoi(argv[2]) : 10;
  if (repeats < 1)
    repeats = 1;
  /* Unknown input dims from the model's declaration, bound to 1. */
  clg_import_result *decl = NULL;
  char err[1024];
  if (clg_import_inspect(argv[1], NULL, &decl, err, sizeof err) != CLG_OK) {
    fprintf(stderr, "bench_import: %s\n", err);
    return 1;
  }
  int nin = clg_import_num_inputs(decl);
  if (nin > MAX_IO) {
    fprintf(stderr, "bench_import: %d inputs (at most %d)\n", nin, MAX_IO);
    return 1;
  }
  clg_import_shape shapes[MAX_IO];
  int nshapes = 0;
  for (int i = 0; i < nin; i++) {
    const clg_import_tensor *t = clg_import_input(decl, i);
    if (t->rank < 0)
      continue; /* unknown rank: the import names it */
    clg_import_shape *s = &shapes[nshapes++];
    s->name = t->name;
    s->rank = t->rank;
    for (int d = 0; d < t->rank; d++)
      s->dims[d] = t->dims[d] < 0 ? 1 : t->dims[d];
  }
  clg_import_options o;
  clg_import_options_init(&o);
  o.input_shapes = shapes;
  o.num_input_shapes = nshapes;
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  double t0 = now_ms();
  if (clg_graph_import(g, argv[1], &o, &r) != CLG_OK) {
    fprintf(stderr, "bench_import: %s\n", clg_graph_error(g));
    return 1;
  }
  double t_import = now_ms() - t0;
  clg_session_options so;
  clg_session_options_init(&so);
  so.gpu_options.allow_growth = growth;
  clg_session *s = NULL, *s2 = NULL;
  t0 = now_ms();
  if (clg_session_new(g, &so, &s) != CLG_OK) {
    fprintf(stderr, "bench_import: session: %s\n", clg_last_error());
    return 1;
  }
  double t_session = now_ms() - t0;
  t0 = now_ms();
  if (clg_session_new(g, &so, &s2) != CLG_OK) {
    fprintf(stderr, "bench_import: second session: %s\n", clg_last_error());
    return 1;
  }
  double t_session2 = now_ms() - t0;
  clg_session_free(s2);

  int nfeed = clg_import_num_inputs(r), nout = clg_import_num_outputs(r);
  if (nout > MAX_IO)
    nout = MAX_IO;
  clg_output feed_at[MAX_IO], fetch[MAX_IO];
  clg_tensor *feeds[MAX_IO], *outs[MAX_IO];
  for (int i = 0; i < nfeed; i++) {
    const clg_import_tensor *t = clg_import_input(r, i);
    feed_at[i] = t->value;
    feeds[i] = clg_tensor_new(t->dtype, t->rank, t->dims, NULL);
    if (!feeds[i]) {
      fprintf(stderr, "bench_import: input %s: %s\n", t->name, clg_last_error());
      return 1;
    }
    if (t->dtype == CLG_FLOAT32) {
      float *v = clg_tensor_data(feeds[i]);
      for (size_t k = 0; k < clg_tensor_count(feeds[i]); k++)
        v[k] = (float)((k * 7919) % 256) / 255.0f;
    } else
      memset(clg_tensor_data(feeds[i]), 0, clg_tensor_bytes(feeds[i]));
  }
  for (int i = 0; i < nout; i++)
    fetch[i] = clg_import_output(r, i)->value;
  double *runs = malloc(sizeof *runs * (size_t)(repeats + 1));
  if (!runs)
    return 1;
  for (int k = 0; k <= repeats; k++) {
    t0 = now_ms();
    if (clg_session_run_outputs(s, nfeed, feed_at, feeds, nout, fetch, outs, 0, NULL) != CLG_OK) {
      fprintf(stderr, "bench_import: run: %s\n", clg_last_error());
      return 1;
    }
    runs[k] = now_ms() - t0;
    for (int i = 0; i < nout; i++)
      clg_tensor_free(outs[i]);
  }
  double first = runs[0];
  qsort(runs + 1, (size_t)repeats, sizeof *runs, cmp_double);
  double median =
      repeats % 2 ? runs[1 + repeats / 2] : (runs[repeats / 2] + runs[1 + repeats / 2]) / 2;
  printf("import_ms=%.2f session_ms=%.2f session2_ms=%.3f first_run_ms=%.2f median_ms=%.2f "
         "min_ms=%.2f share=%.3f\n",
         t_import, t_session, t_session2, first, median, runs[1], (t_import + t_session) / first);
  free(runs);
  for (int i = 0; i < nfeed; i++)
    clg_tensor_free(feeds[i]);
  clg_session_free(s);
  clg_import_result_free(r);
  clg_import_result_free(decl);
  clg_graph_free(g);
  return 0;
}
