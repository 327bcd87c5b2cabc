/* clgraph bench conv: GFLOP/s of the CIFAR-10 model's two convolutions (batch 128, 5x5 SAME:
 * 24x24x3 -> 64 and 12x12x64 -> 64), forward, on each device: a clgraph session (input and
 * filter resident as Consts, the Conv2D run as a target, timed to the device's finish)
 * against the same im2col + GEMM written by hand in the same run (on the host the same chunks
 * of patch rows, each im2col then cblas_sgemm; on an OpenCL device the im2col kernel into a
 * plain cl_mem for the whole batch and one CLBlastSgemm on resident buffers, timed to
 * clFinish). The two
 * sides alternate within each repeat; the ratio is the median of the per-repeat ratios. On
 * CPU:0 the session is also given as a fraction of cblas_sgemm on a square matrix of the
 * same work (n = cbrt(M N K)). FLOPs are 2 M N K of the GEMM (padding taps included). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

#ifdef CLG_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>
#endif

typedef struct conv_shape {
  const char *name;
  int64_t h, w, c, k, cout;
} conv_shape;

static const conv_shape shapes[2] = {{"conv1", 24, 24, 3, 5, 64}, {"conv2", 12, 12, 64, 5, 64}};

typedef struct conv_result {
  char device[64];
  const char *conv;
  double session, hand, ratio, square, diff; /* GFLOP/s, ratio of medians of pairs */
  char note[200];
} conv_result;

static void fill(float *p, size_t n, unsigned *seed)
{
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    p[i] = (float)((double)(*seed >> 8) / 16777216.0 - 0.5);
  }
}

static void window_of(const conv_shape *s, int64_t batch, clg_bench_window *g)
{
  memset(g, 0, sizeof *g);
  g->n = batch, g->h = s->h, g->w = s->w, g->c = s->c;
  g->kh = g->kw = s->k;
  g->sh = g->sw = g->dh = g->dw = 1;
  g->oh = s->h, g->ow = s->w; /* SAME, stride 1 */
  g->pt = g->pl = (s->k - 1) / 2;
  g->cout = s->cout;
  g->kdim = s->k * s->k * s->c;
}

static double since(uint64_t t0) { return (double)(clg_now_ns() - t0) * 1e-9; }

/* --- the session side ---------------------------------------------------------------------- */

typedef struct sess_side {
  clg_graph *g;
  clg_session *s;
  clg_node *conv;
  clg_device *dev; /* the session's device, to wait for */
} sess_side;

static bool sess_open(sess_side *ss, const char *device, int dev_index, const conv_shape *cs,
                      int64_t batch, const float *x, const float *f, char *note, size_t size)
{
  memset(ss, 0, sizeof *ss);
  ss->g = clg_graph_new();
  int64_t xd[4] = {batch, cs->h, cs->w, cs->c}, fd[4] = {cs->k, cs->k, cs->c, cs->cout};
  int64_t s1[4] = {1, 1, 1, 1};
  clg_graph_push_device(ss->g, device);
  clg_node *xn = clg_const_f32(ss->g, "x", 4, xd, x);
  clg_node *fn = clg_const_f32(ss->g, "f", 4, fd, f);
  ss->conv = clg_conv2d(ss->g, NULL, xn, fn, s1, "SAME", NULL);
  clg_graph_pop_device(ss->g);
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  if (clg_graph_status(ss->g) != CLG_OK ||
      clg_tool_bench_session_new(ss->g, &opt, &ss->s) != CLG_OK) {
    snprintf(note, size, "session: %s", clg_last_error());
    return false;
  }
  ss->dev = clg_devices_at((clg_devices *)clg_session_devices(ss->s), dev_index);
  return true;
}

/* One run as a target (the output stays on the device), timed to the device's finish. */
static double sess_run(sess_side *ss, char *note, size_t size)
{
  uint64_t t0 = clg_now_ns();
  clg_code code = clg_session_run_outputs(ss->s, 0, NULL, NULL, 0, NULL, NULL, 1, &ss->conv);
  if (code == CLG_OK && !clg_bench_device_is_host(ss->dev))
    code = clg_device_finish(ss->dev);
  if (code != CLG_OK) {
    snprintf(note, size, "session run: %s", clg_last_error());
    return NAN;
  }
  return since(t0);
}

static clg_tensor *sess_fetch(sess_side *ss)
{
  clg_tensor *out = NULL;
  if (clg_session_run(ss->s, 0, NULL, NULL, 1, &ss->conv, &out) != CLG_OK)
    return NULL;
  return out;
}

static void sess_close(sess_side *ss)
{
  clg_tool_bench_session_free(ss->s);
  clg_graph_free(ss->g);
}

/* --- the hand-written side ------------------------------------------------------------------- */

typedef struct hand_side {
  clg_device *dev;
  clg_bench_window g;
  size_t m, n, k;
  const float *x, *f;
  float *p, *y; /* host */
  cl_mem mx, mf, mp, my;
} hand_side;

static bool hand_open(hand_side *h, clg_device *dev, const clg_bench_window *g, const float *x,
                      const float *f, char *note, size_t size)
{
  memset(h, 0, sizeof *h);
  h->dev = dev;
  h->g = *g;
  h->m = (size_t)(g->n * g->oh * g->ow), h->n = (size_t)g->cout, h->k = (size_t)g->kdim;
  h->x = x, h->f = f;
  size_t xb = (size_t)(g->n * g->h * g->w * g->c) * 4, fb = h->k * h->n * 4;
  if (clg_bench_device_is_host(dev)) {
    h->p = malloc(h->m * h->k * 4);
    h->y = malloc(h->m * h->n * 4);
    if (!h->p || !h->y) {
      snprintf(note, size, "hand: out of host memory");
      return false;
    }
    return true;
  }
  cl_int err = CL_SUCCESS;
  cl_mem *bufs[4] = {&h->mx, &h->mf, &h->mp, &h->my};
  size_t bytes[4] = {xb, fb, h->m * h->k * 4, h->m * h->n * 4};
  for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
    *bufs[i] =
        clCreateBuffer(clg_bench_device_context(dev), CL_MEM_READ_WRITE, bytes[i], NULL, &err);
  if (err == CL_SUCCESS)
    err =
        clEnqueueWriteBuffer(clg_bench_device_queue(dev), h->mx, CL_TRUE, 0, xb, x, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    err =
        clEnqueueWriteBuffer(clg_bench_device_queue(dev), h->mf, CL_TRUE, 0, fb, f, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    snprintf(note, size, "hand: %s (%d)", clg_cl_error_name(err), err);
    return false;
  }
  return true;
}

static double hand_run(hand_side *h, char *note, size_t size)
{
  uint64_t t0 = clg_now_ns();
  if (clg_bench_device_is_host(
          h->dev)) { /* the same chunks of patch rows as the library's kernel */
    size_t chunk = clg_conv_chunk_rows(false, h->k, 4, h->m);
    for (size_t r0 = 0; r0 < h->m; r0 += chunk) {
      size_t nr = h->m - r0 < chunk ? h->m - r0 : chunk;
      clg_bench_host_im2col(CLG_FLOAT32, h->x, h->p, r0, nr, &h->g);
#ifdef CLG_HAVE_CBLAS
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)h->n, (int)h->k, 1.0f,
                  h->p, (int)h->k, h->f, (int)h->n, 0.0f, h->y + r0 * h->n, (int)h->n);
#else
      clg_host_matmul_portable(CLG_FLOAT32, false, false, nr, h->n, h->k, h->p, h->f,
                               h->y + r0 * h->n);
#endif
    }
    return since(t0);
  }
#ifdef CLG_HAVE_CLBLAST
  clg_code code = clg_bench_cl_im2col(h->dev, CLG_FLOAT32, h->mx,
                                      (size_t)(h->g.n * h->g.h * h->g.w * h->g.c) * 4, h->mp,
                                      h->m * h->k * 4, 0, h->m, &h->g);
  if (code != CLG_OK) {
    snprintf(note, size, "hand im2col: %s", clg_last_error());
    return NAN;
  }
  cl_command_queue q = clg_bench_device_queue(h->dev);
  clg_clblast_tune(h->dev); /* the parameters the session's GEMMs use (once per device) */
  CLBlastStatusCode st =
      CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, h->m, h->n, h->k,
                   1.0f, h->mp, 0, h->k, h->mf, 0, h->n, 0.0f, h->my, 0, h->n, &q, NULL);
  cl_int err = st == CLBlastSuccess ? clFinish(q) : CL_SUCCESS;
  if (st != CLBlastSuccess || err != CL_SUCCESS) {
    snprintf(note, size, "hand: %s",
             st != CLBlastSuccess ? clg_clblast_status_name(st) : "clFinish");
    return NAN;
  }
  return since(t0);
#else
  snprintf(note, size, "no CLBlast in this build");
  return NAN;
#endif
}

/* The hand side's result, for the comparison. */
static bool hand_result(hand_side *h, float *out)
{
  if (clg_bench_device_is_host(h->dev)) {
    memcpy(out, h->y, h->m * h->n * 4);
    return true;
  }
  return clEnqueueReadBuffer(clg_bench_device_queue(h->dev), h->my, CL_TRUE, 0, h->m * h->n * 4,
                             out, 0, NULL, NULL) == CL_SUCCESS;
}

static void hand_close(hand_side *h)
{
  free(h->p);
  free(h->y);
  cl_mem m[4] = {h->mx, h->mf, h->mp, h->my};
  for (int i = 0; i < 4; i++)
    if (m[i])
      clReleaseMemObject(m[i]);
}

/* cblas_sgemm on n x n (the same work as the convolution's GEMM), median GFLOP/s. */
static double square_sgemm(size_t n, int repeats)
{
#ifdef CLG_HAVE_CBLAS
  float *a = malloc(n * n * 4), *b = malloc(n * n * 4), *c = malloc(n * n * 4);
  double *t = calloc((size_t)repeats, sizeof *t), r = NAN;
  if (a && b && c && t) {
    unsigned seed = 7;
    fill(a, n * n, &seed);
    fill(b, n * n, &seed);
    for (int i = -1; i < repeats; i++) {
      uint64_t t0 = clg_now_ns();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                  (int)n, b, (int)n, 0.0f, c, (int)n);
      if (i >= 0)
        t[i] = since(t0);
    }
    r = 2.0 * (double)n * (double)n * (double)n / clg_tool_median(t, repeats) * 1e-9;
  }
  free(a), free(b), free(c), free(t);
  return r;
#else
  (void)n, (void)repeats;
  return NAN;
#endif
}

static void measure(clg_device *dev, int dev_index, const conv_shape *cs, int64_t batch,
                    int repeats, conv_result *r)
{
  clg_bench_window g;
  window_of(cs, batch, &g);
  size_t xn = (size_t)(batch * cs->h * cs->w * cs->c), fn = (size_t)g.kdim * (size_t)g.cout;
  size_t m = (size_t)(g.n * g.oh * g.ow), yn = m * (size_t)g.cout;
  double flops = 2.0 * (double)m * (double)g.cout * (double)g.kdim;
  float *x = malloc(xn * 4), *f = malloc(fn * 4), *hy = malloc(yn * 4);
  double *ts = calloc((size_t)repeats, sizeof *ts), *th = calloc((size_t)repeats, sizeof *th),
         *ratio = calloc((size_t)repeats, sizeof *ratio);
  snprintf(r->device, sizeof r->device, "%s", clg_bench_device_info(dev)->name);
  r->conv = cs->name;
  r->session = r->hand = r->ratio = r->square = r->diff = NAN;
  if (!x || !f || !hy || !ts || !th || !ratio) {
    snprintf(r->note, sizeof r->note, "out of host memory");
    goto done;
  }
  unsigned seed = 99;
  fill(x, xn, &seed);
  fill(f, fn, &seed);
  sess_side ss;
  hand_side hs;
  bool ok_s = sess_open(&ss, clg_bench_device_info(dev)->name, dev_index, cs, batch, x, f, r->note,
                        sizeof r->note);
  bool ok_h = ok_s && hand_open(&hs, dev, &g, x, f, r->note, sizeof r->note);
  /* Warm-up: programs compiled, arenas planned, caches filled. */
  if (ok_h)
    ok_h = !isnan(sess_run(&ss, r->note, sizeof r->note)) &&
           !isnan(hand_run(&hs, r->note, sizeof r->note));
  for (int i = 0; ok_h && i < repeats; i++) {
    if (i % 2 == 0) {
      ts[i] = sess_run(&ss, r->note, sizeof r->note);
      th[i] = hand_run(&hs, r->note, sizeof r->note);
    } else {
      th[i] = hand_run(&hs, r->note, sizeof r->note);
      ts[i] = sess_run(&ss, r->note, sizeof r->note);
    }
    ok_h = !isnan(ts[i]) && !isnan(th[i]);
    ratio[i] = th[i] / ts[i];
  }
  if (ok_h) {
    r->ratio = clg_tool_median(ratio, repeats);
    r->session = flops / clg_tool_median(ts, repeats) * 1e-9;
    r->hand = flops / clg_tool_median(th, repeats) * 1e-9;
    clg_tensor *out = sess_fetch(&ss);
    if (out && hand_result(&hs, hy)) {
      const float *sy = clg_tensor_const_data(out);
      double num = 0, den = 0;
      for (size_t i = 0; i < yn; i++) {
        num += ((double)sy[i] - hy[i]) * ((double)sy[i] - hy[i]);
        den += (double)hy[i] * hy[i];
      }
      r->diff = sqrt(num / (den > 0 ? den : 1));
    }
    clg_tensor_free(out);
    if (clg_bench_device_is_host(dev))
      r->square =
          square_sgemm((size_t)llround(cbrt((double)m * (double)g.cout * (double)g.kdim)), repeats);
  }
  if (ok_s)
    hand_close(&hs);
  sess_close(&ss);
done:
  free(x), free(f), free(hy), free(ts), free(th), free(ratio);
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: clgraph bench conv [--json] [--repeats N] [--batch N] [--device NAME]\n\n"
          "The CIFAR-10 model's convolutions (5x5 SAME: 24x24x3 -> 64, 12x12x64 -> 64), forward,\n"
          "through a session against the same im2col + GEMM by hand (OpenBLAS on CPU:0, CLBlast\n"
          "on OpenCL devices, data resident), alternating within each repeat (default 5), batch\n"
          "128. --device limits the run to one device (e.g. /device:GPU:0).\n");
}

/* Whether name is one of devs' devices (its short or full name); if not, says so on stderr,
 * naming the devices there are (a --device that matched none measured nothing). */
static bool known_device(const clg_devices *devs, const char *name)
{
  int n = clg_devices_count(devs);
  for (int d = 0; d < n; d++) {
    const clg_device_info *info = clg_devices_get(devs, d);
    if (strcmp(name, info->name) == 0 || strcmp(name, info->full_name) == 0)
      return true;
  }
  fprintf(stderr, "clgraph bench conv: --device '%s': no such device; want one of", name);
  for (int d = 0; d < n; d++)
    fprintf(stderr, "%s %s", d ? "," : "", clg_devices_get(devs, d)->name);
  fprintf(stderr, "\n");
  return false;
}

static void json_num(double v)
{
  if (isnan(v))
    printf("null");
  else
    printf("%.4g", v);
}

int clg_bench_conv(int argc, char **argv)
{
  int repeats = 5, batch = 128;
  const char *only = NULL;
  bool json = false;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         {"--batch", CLG_TOOL_INT, .min = 1, .max = 4096, .integer = &batch},
                         {"--device", CLG_TOOL_STRING, .meta = "NAME", .text = &only},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench conv", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  if (clg_devices_new(&cfg, &devs) != CLG_OK) {
    fprintf(stderr, "clgraph bench conv: %s\n", clg_last_error());
    return 1;
  }
  int ndev = clg_devices_count(devs);
  if (only && !known_device(devs, only)) {
    clg_devices_free(devs);
    return 2;
  }
  conv_result *res = calloc((size_t)ndev * 2, sizeof *res);
  int nres = 0;
  /* A session held open keeps the process-wide device state alive between measurements. */
  clg_graph *keep_g = clg_graph_new();
  clg_session *keep_s = NULL;
  clg_session_options kopt;
  clg_session_options_init(&kopt);
  kopt.gpu_options.allow_growth = 1;
  clg_const_f32(keep_g, "keep", 0, NULL, (float[]){1});
  if (clg_tool_bench_session_new(keep_g, &kopt, &keep_s) != CLG_OK)
    fprintf(stderr, "clgraph bench conv: warning: %s\n", clg_last_error());
  if (!json)
    printf("clgraph bench conv: batch %d, GFLOP/s = 2MNK / median of %d runs; ratio = median of "
           "per-repeat session/hand\n%-16s %-6s %9s %9s %6s %9s %7s %9s\n",
           batch, repeats, "device", "conv", "session", "hand", "ratio", "sq.sgemm", "%sq",
           "rel.diff");
  for (int d = 0; d < ndev && res; d++) {
    clg_device *dev = clg_devices_at(devs, d);
    if (only && strcmp(only, clg_bench_device_info(dev)->name) != 0 &&
        strcmp(only, clg_bench_device_info(dev)->full_name) != 0)
      continue;
    for (int c = 0; c < 2; c++) {
      conv_result *r = &res[nres++];
      measure(dev, d, &shapes[c], batch, repeats, r);
      if (!json) {
        printf("%-16s %-6s %9.2f %9.2f %6.3f", r->device, r->conv, r->session, r->hand, r->ratio);
        if (clg_bench_device_is_host(dev))
          printf(" %9.2f %6.1f%%", r->square, 100 * r->session / r->square);
        else
          printf(" %9s %7s", "-", "-");
        printf(" %9.2g%s%s\n", r->diff, r->note[0] ? "  " : "", r->note);
        fflush(stdout);
      }
    }
  }
  if (json && res) {
    printf("{\"benchmark\": \"conv\", \"batch\": %d, \"repeats\": %d, \"host_matmul\": \"%s\", "
           "\"results\": [",
           batch, repeats, clg_host_matmul_backend());
    for (int i = 0; i < nres; i++) {
      conv_result *r = &res[i];
      printf("%s\n  {\"device\": \"%s\", \"conv\": \"%s\", \"session_gflops\": ", i ? "," : "",
             r->device, r->conv);
      json_num(r->session);
      printf(", \"hand_gflops\": ");
      json_num(r->hand);
      printf(", \"ratio\": ");
      json_num(r->ratio);
      printf(", \"square_sgemm_gflops\": ");
      json_num(r->square);
      printf(", \"square_fraction\": ");
      json_num(r->session / r->square);
      printf(", \"rel_diff\": ");
      json_num(r->diff);
      printf(", \"note\": ");
      clg_tool_json_string(stdout, r->note); /* an error's text: any bytes */
      printf("}");
    }
    printf("\n ]}\n");
  }
  int status = 0;
  for (int i = 0; i < nres; i++)
    if (isnan(res[i].session) || isnan(res[i].hand))
      status = 1;
  free(res);
  clg_tool_bench_session_free(keep_s);
  clg_graph_free(keep_g);
  clg_devices_free(devs);
  return status;
}
