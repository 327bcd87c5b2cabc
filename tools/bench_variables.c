/* clgraph bench variables: what keeping state on its device buys, and what checkpoints cost.
 *
 * 1. A 64 MiB float32 variable on GPU:0 reduced to a scalar on GPU:0 (two MatMuls with
 *    Const vectors of ones), run repeatedly: bytes moved between host and device per run
 *    and time per run, against the same graph with a Placeholder fed the 64 MiB from the
 *    host each run.
 * 2. Saving and restoring 256 MiB of variables (four of 64 MiB on GPU:0) through a
 *    safetensors file, in MB/s, against a plain write (+ fsync, which the atomic save needs
 *    too) and read of the same bytes to a file in the same folder.
 * Each repeat times both sides in alternating order; the figures are medians. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

enum { SIDE = 4096 }; /* the variable: [4096, 4096] float32 = 64 MiB */
#define MIB (1024.0 * 1024.0)

static double seconds_since(uint64_t t0) { return (double)(clg_now_ns() - t0) * 1e-9; }

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench variables [--json] [--repeats N] [--dir DIR]\n\n"
             "1. A 64 MiB float32 variable on GPU:0 reduced to a scalar on GPU:0, run N times\n"
             "   (default 9): host<->device bytes and ms per run, against the same graph fed\n"
             "   the 64 MiB from the host each run.\n"
             "2. Save and restore of 256 MiB of variables on GPU:0 (safetensors) in MB/s,\n"
             "   against a plain write+fsync and read of the same bytes, in DIR (default\n"
             "   $TMPDIR or /tmp).\n"
             "Both sides alternate within each repeat; medians. Needs one GPU (PoCL will do).\n");
}

/* Sum of a [SIDE, SIDE] input x: ones[1,SIDE] x (x x ones[SIDE,1]), all on GPU:0. */
static clg_node *reduce(clg_graph *g, clg_node *x, const float *ones)
{
  int64_t col[2] = {SIDE, 1}, row[2] = {1, SIDE};
  clg_node *c = clg_const_f32(g, "ones_col", 2, col, ones);
  clg_node *r = clg_const_f32(g, "ones_row", 2, row, ones);
  return clg_matmul(g, "sum", r, clg_matmul(g, "rows", x, c, false, false), false, false);
}

typedef struct side {
  clg_graph *g;
  clg_session *s;
  clg_node *out, *feed;
  clg_tensor *value; /* fed each run (the fed side) */
} side;

static bool side_open(side *e, bool fed, const float *ones, clg_tensor *value)
{
  memset(e, 0, sizeof *e);
  e->g = clg_graph_new();
  int64_t dims[2] = {SIDE, SIDE};
  clg_graph_push_device(e->g, "/device:GPU:0");
  clg_node *x;
  if (fed) {
    x = e->feed = clg_placeholder(e->g, "x", CLG_FLOAT32, 2, dims);
    e->value = value;
  } else {
    clg_initializer u = clg_init_random_uniform(0, 1, 1);
    x = clg_get_variable(e->g, "x", CLG_FLOAT32, 2, dims, &u);
  }
  e->out = reduce(e->g, x, ones);
  clg_graph_pop_device(e->g);
  clg_node *init = fed ? NULL : clg_global_variables_initializer(e->g, NULL);
  bool ok =
      clg_graph_status(e->g) == CLG_OK && clg_tool_bench_session_new(e->g, NULL, &e->s) == CLG_OK &&
      (!init || clg_session_run_outputs(e->s, 0, NULL, NULL, 0, NULL, NULL, 1, &init) == CLG_OK);
  if (!ok)
    fprintf(stderr, "clgraph bench variables: %s\n", clg_last_error());
  return ok;
}

/* One run: seconds, and the bytes it moved. */
static double side_run(side *e, uint64_t *h2d, uint64_t *d2h)
{
  clg_tensor *out = NULL;
  uint64_t t0 = clg_now_ns();
  clg_code code = clg_session_run(e->s, e->feed ? 1 : 0, e->feed ? &e->feed : NULL,
                                  e->feed ? &e->value : NULL, 1, &e->out, &out);
  double t = seconds_since(t0);
  clg_tensor_free(out);
  if (code != CLG_OK || clg_bench_session_transfers(e->s, h2d, d2h) != CLG_OK) {
    fprintf(stderr, "clgraph bench variables: %s\n", clg_last_error());
    return -1;
  }
  return t;
}

static void side_close(side *e)
{
  clg_tool_bench_session_free(e->s);
  clg_graph_free(e->g);
}

/* Plain I/O of `bytes` from buf to path: write + fsync, and read back. */
static double plain_write(const char *path, const void *buf, size_t bytes)
{
  uint64_t t0 = clg_now_ns();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -1;
  const char *p = buf;
  size_t left = bytes;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    p += w;
    left -= (size_t)w;
  }
  bool ok = fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  return ok ? seconds_since(t0) : -1;
}

static double plain_read(const char *path, void *buf, size_t bytes)
{
  uint64_t t0 = clg_now_ns();
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  char *p = buf;
  size_t left = bytes;
  while (left) {
    ssize_t r = read(fd, p, left);
    if (r <= 0) {
      close(fd);
      return -1;
    }
    p += r;
    left -= (size_t)r;
  }
  close(fd);
  return seconds_since(t0);
}

typedef struct io_result {
  double save_mbs, write_mbs, restore_mbs, read_mbs, save_ratio, restore_ratio;
} io_result;

static bool measure_io(const char *dir, int repeats, io_result *res)
{
  enum { NVARS = 4 };
  clg_graph *g = clg_graph_new();
  int64_t dims[2] = {SIDE, SIDE};
  clg_graph_push_device(g, "/device:GPU:0");
  for (int i = 0; i < NVARS; i++) {
    char name[32];
    snprintf(name, sizeof name, "layer%d/weights", i);
    clg_initializer u = clg_init_random_uniform(-1, 1, i + 1);
    clg_get_variable(g, name, CLG_FLOAT32, 2, dims, &u);
  }
  clg_graph_pop_device(g);
  clg_node *init = clg_global_variables_initializer(g, NULL);
  clg_session *s = NULL;
  size_t bytes = (size_t)NVARS * SIDE * SIDE * sizeof(float);
  char ck[4096], raw[4096];
  snprintf(ck, sizeof ck, "%s/clgraph-bench-%ld.safetensors", dir, (long)getpid());
  snprintf(raw, sizeof raw, "%s/clgraph-bench-%ld.raw", dir, (long)getpid());
  void *buf = malloc(bytes);
  double *t = calloc((size_t)repeats * 6, sizeof *t);
  bool ok = buf && t && clg_graph_status(g) == CLG_OK &&
            clg_tool_bench_session_new(g, NULL, &s) == CLG_OK &&
            clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init) == CLG_OK;
  if (ok)
    memset(buf, 0x5a, bytes);
  double *ts = t, *tw = t + repeats, *tr = t + 2 * repeats, *tp = t + 3 * repeats,
         *rs = t + 4 * repeats, *rr = t + 5 * repeats;
  for (int r = 0; ok && r < repeats; r++) {
    for (int k = 0; k < 2 && ok; k++) {
      if ((k == 0) == (r % 2 == 0)) {
        uint64_t t0 = clg_now_ns();
        ok = clg_session_save(s, ck, 0, NULL) == CLG_OK;
        ts[r] = seconds_since(t0);
        t0 = clg_now_ns();
        ok = ok && clg_session_restore(s, ck, 0, NULL) == CLG_OK;
        tr[r] = seconds_since(t0);
      } else {
        tw[r] = plain_write(raw, buf, bytes);
        tp[r] = plain_read(raw, buf, bytes);
        ok = tw[r] > 0 && tp[r] > 0;
      }
    }
    rs[r] = tw[r] / ts[r]; /* speed ratio: save MB/s over write MB/s */
    rr[r] = tp[r] / tr[r];
  }
  if (!ok)
    fprintf(stderr, "clgraph bench variables: save/restore: %s\n",
            errno ? strerror(errno) : clg_last_error());
  else {
    double mb = (double)bytes / MIB;
    res->save_mbs = mb / clg_tool_median(ts, repeats);
    res->write_mbs = mb / clg_tool_median(tw, repeats);
    res->restore_mbs = mb / clg_tool_median(tr, repeats);
    res->read_mbs = mb / clg_tool_median(tp, repeats);
    res->save_ratio = clg_tool_median(rs, repeats);
    res->restore_ratio = clg_tool_median(rr, repeats);
  }
  unlink(ck);
  unlink(raw);
  free(buf);
  free(t);
  clg_tool_bench_session_free(s);
  clg_graph_free(g);
  return ok;
}

int clg_bench_variables(int argc, char **argv)
{
  bool json = false;
  int repeats = 9;
  const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         {"--dir", CLG_TOOL_STRING, .meta = "DIR", .text = &dir},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench variables", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;

  float *ones = malloc(sizeof(float) * SIDE);
  int64_t dims[2] = {SIDE, SIDE};
  clg_tensor *value = clg_tensor_new(CLG_FLOAT32, 2, dims, NULL);
  if (!ones || !value) {
    fprintf(stderr, "clgraph bench variables: out of host memory\n");
    free(ones);
    clg_tensor_free(value);
    return 1;
  }
  for (int i = 0; i < SIDE; i++)
    ones[i] = 1.0f;
  float *v = clg_tensor_data(value);
  for (size_t i = 0; i < (size_t)SIDE * SIDE; i++)
    v[i] = (float)(i % 7) * 0.125f;
  side var, fed;
  bool ok = side_open(&var, false, ones, NULL);
  ok = side_open(&fed, true, ones, value) && ok;
  double *tv = calloc((size_t)repeats * 3, sizeof *tv), *tf = tv ? tv + repeats : NULL,
         *ratio = tv ? tv + 2 * repeats : NULL;
  uint64_t vh = 0, vd = 0, fh = 0, fd = 0;
  ok = ok && tv;
  /* A warm-up run each (kernel compilation, plans). */
  ok = ok && side_run(&var, &vh, &vd) >= 0 && side_run(&fed, &fh, &fd) >= 0;
  uint64_t max_vh = 0;
  for (int r = 0; ok && r < repeats; r++) {
    for (int k = 0; k < 2 && ok; k++) {
      bool var_turn = (k == 0) == (r % 2 == 0);
      double t = var_turn ? side_run(&var, &vh, &vd) : side_run(&fed, &fh, &fd);
      (var_turn ? tv : tf)[r] = t;
      ok = t >= 0;
    }
    max_vh = vh > max_vh ? vh : max_vh;
    ratio[r] = tf[r] > 0 ? tv[r] / tf[r] : 0;
  }
  double var_ms = ok ? clg_tool_median(tv, repeats) * 1e3 : -1;
  double fed_ms = ok ? clg_tool_median(tf, repeats) * 1e3 : -1;
  double run_ratio = ok ? clg_tool_median(ratio, repeats) : 0;
  side_close(&var);
  side_close(&fed);
  free(tv);
  io_result io = {0, 0, 0, 0, 0, 0};
  bool io_ok = ok && measure_io(dir, repeats, &io);
  if (json) {
    printf("{\"benchmark\": \"variables\", \"repeats\": %d, \"variable_bytes\": %llu, "
           "\"read\": {\"variable_h2d_bytes_per_run\": %llu, \"variable_d2h_bytes_per_run\": "
           "%llu, \"fed_h2d_bytes_per_run\": %llu, \"fed_d2h_bytes_per_run\": %llu, "
           "\"variable_ms\": %.3f, \"fed_ms\": %.3f, \"ratio\": %.3f}, "
           "\"checkpoint\": {\"bytes\": %llu, \"save_mb_s\": %.1f, \"write_mb_s\": %.1f, "
           "\"save_ratio\": %.3f, \"restore_mb_s\": %.1f, \"read_mb_s\": %.1f, "
           "\"restore_ratio\": %.3f}}\n",
           repeats, (unsigned long long)SIDE * SIDE * 4, (unsigned long long)max_vh,
           (unsigned long long)vd, (unsigned long long)fh, (unsigned long long)fd, var_ms, fed_ms,
           run_ratio, (unsigned long long)4 * SIDE * SIDE * 4, io.save_mbs, io.write_mbs,
           io.save_ratio, io.restore_mbs, io.read_mbs, io.restore_ratio);
  } else {
    printf("a 64 MiB float32 variable on GPU:0 reduced to a scalar on GPU:0, median of %d runs\n"
           "%-22s %16s %16s %12s\n"
           "%-22s %16llu %16llu %12.3f\n"
           "%-22s %16llu %16llu %12.3f\n"
           "time ratio variable/fed: %.3f (median of the repeats' ratios)\n\n",
           repeats, "", "host->device B", "device->host B", "ms per run", "variable",
           (unsigned long long)max_vh, (unsigned long long)vd, var_ms, "fed from the host",
           (unsigned long long)fh, (unsigned long long)fd, fed_ms, run_ratio);
    printf("256 MiB of variables on GPU:0 (safetensors, in %s)\n"
           "save    %9.1f MB/s   plain write+fsync %9.1f MB/s   ratio %.3f\n"
           "restore %9.1f MB/s   plain read        %9.1f MB/s   ratio %.3f\n",
           dir, io.save_mbs, io.write_mbs, io.save_ratio, io.restore_mbs, io.read_mbs,
           io.restore_ratio);
  }
  free(ones);
  clg_tensor_free(value);
  return ok && io_ok ? 0 : 1;
}
