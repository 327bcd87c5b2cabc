/* clgraph bench matmul: GFLOP/s of C = A x B through a clgraph session, against the same
 * product by a direct library call in the same run (cblas_sgemm/dgemm on CPU:0, CLBlast on
 * a bare cl_mem for OpenCL devices), and CPU:0's fraction of a measured reference: the
 * machine's peak cannot be known from inside (the real clock and the number of FMA units
 * are not reported; a VM reports its hypervisor's nominal clock), so cblas_sgemm on n=2048
 * is timed instead, and the nominal peak is printed only as what it is.
 *
 * The session number is end to end: one run feeds A and B (host to device), multiplies and
 * fetches C. The direct number does the same by hand: on the host the GEMM (there is nothing
 * to move), on an OpenCL device write A and B, CLBlast, read C. For OpenCL devices the GEMM
 * alone on resident buffers is shown too ("kernel", timed to clFinish: CLBlast's event covers
 * only its last kernel), so that transfer cost and engine cost can be told apart. */
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

#define MAX_SIZES 16

typedef struct peak_info {
  int cores;
  double ghz;
  int flops_per_cycle; /* fp32, per core */
  const char *basis;
  double gflops_f32, gflops_f64; /* nominal: cores x GHz x flop/cycle, not a bound */
  bool hypervisor;               /* /proc/cpuinfo's "hypervisor" flag */
  double ref_gflops_f32;         /* measured: cblas_sgemm n=REF_N; NAN without CBLAS */
} peak_info;

#define REF_N 2048

static const char peak_unknown[] =
    "the real clock and FMA width cannot be known from /proc/cpuinfo (it gives the vector ISA, "
    "not the number of FMA units or the sustained clock)";
static const char peak_unknown_vm[] =
    "the real clock and FMA width cannot be known from inside a VM (the hypervisor reports a "
    "nominal clock; the flags give the vector ISA, not the number of FMA units)";

/* Nominal peak = logical cores x GHz x fp32 flop/cycle, from /proc/cpuinfo: avx512f counts
 * 64 (2 FMA units x 16 lanes x 2 flops), avx2 with fma 32, anything else 8. An estimate:
 * this machine may exceed it, so it is reported as nominal, never as a bound. */
static void peak_read(peak_info *p)
{
  memset(p, 0, sizeof *p);
  p->flops_per_cycle = 8;
  p->basis = "no AVX2/FMA or AVX-512 flags: 8 flop/cycle";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[8192];
  bool flags_seen = false, avx512 = false, avx2 = false, fma = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "processor", 9) == 0)
      p->cores++;
    else if (strncmp(line, "cpu MHz", 7) == 0 && p->ghz == 0) {
      const char *c = strchr(line, ':');
      if (c)
        p->ghz = strtod(c + 1, NULL) / 1000.0;
    } else if (strncmp(line, "flags", 5) == 0 && !flags_seen) {
      flags_seen = true;
      avx512 = strstr(line, " avx512f") != NULL;
      avx2 = strstr(line, " avx2") != NULL;
      fma = strstr(line, " fma") != NULL;
      p->hypervisor = strstr(line, " hypervisor") != NULL;
    }
  }
  fclose(f);
  if (avx512) {
    p->flops_per_cycle = 64;
    p->basis = "avx512f: 2 FMA units x 16 fp32 lanes x 2 flops";
  } else if (avx2 && fma) {
    p->flops_per_cycle = 32;
    p->basis = "avx2+fma: 2 FMA units x 8 fp32 lanes x 2 flops";
  }
  p->gflops_f32 = p->cores * p->ghz * p->flops_per_cycle;
  p->gflops_f64 = p->gflops_f32 / 2;
}

/* The reference: median GFLOP/s of cblas_sgemm on n = REF_N after a warm-up; NAN when there
 * is no CBLAS or no memory. */
static double reference_sgemm(int repeats)
{
#ifdef CLG_HAVE_CBLAS
  size_t n = REF_N;
  float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
  float *c = malloc(n * n * sizeof *c);
  double *t = calloc((size_t)repeats, sizeof *t), gflops = NAN;
  if (a && b && c && t) {
    for (size_t i = 0; i < n * n; i++) {
      a[i] = (float)(i % 17) * 0.125f - 1.0f;
      b[i] = (float)(i % 13) * 0.25f - 1.5f;
    }
    for (int r = -1; r < repeats; r++) {
      uint64_t t0 = clg_now_ns();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                  (int)n, b, (int)n, 0.0f, c, (int)n);
      if (r >= 0)
        t[r] = (double)(clg_now_ns() - t0) * 1e-9;
    }
    gflops = 2.0 * (double)n * (double)n * (double)n / clg_tool_median(t, repeats) * 1e-9;
  }
  free(a), free(b), free(c), free(t);
  return gflops;
#else
  (void)repeats;
  return NAN;
#endif
}

static int cmp_size(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

static size_t dtype_size(clg_dtype dt) { return dt == CLG_FLOAT32 ? 4 : dt == CLG_FLOAT16 ? 2 : 8; }

static const char *dtype_word(clg_dtype dt)
{
  return dt == CLG_FLOAT32 ? "float" : dt == CLG_FLOAT16 ? "half" : "double";
}

static void fill_random(clg_dtype dt, void *p, size_t count, unsigned *seed)
{
  for (size_t i = 0; i < count; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    double v = (double)(*seed >> 8) / 16777216.0 - 0.5;
    if (dt == CLG_FLOAT32)
      ((float *)p)[i] = (float)v;
    else if (dt == CLG_FLOAT16)
      ((uint16_t *)p)[i] = clg_half_from_double(v);
    else
      ((double *)p)[i] = v;
  }
}

static double element(clg_dtype dt, const void *p, size_t i)
{
  return dt == CLG_FLOAT32   ? ((const float *)p)[i]
         : dt == CLG_FLOAT16 ? clg_half_to_double(((const uint16_t *)p)[i])
                             : ((const double *)p)[i];
}

/* ||x - y|| / ||y|| */
static double rel_diff(clg_dtype dt, const void *x, const void *y, size_t count)
{
  double num = 0, den = 0;
  for (size_t i = 0; i < count; i++) {
    double a = element(dt, x, i), b = element(dt, y, i);
    num += (a - b) * (a - b);
    den += b * b;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct result {
  const char *device;
  clg_dtype dtype;
  size_t n;
  double clgraph, direct; /* GFLOP/s; NAN when not measured */
  double kernel;          /* OpenCL devices: the GEMM alone on resident buffers */
  const char *direct_what;
  double diff; /* session result vs direct result */
  char note[200];
} result;

/* The session side: a graph of two placeholders and a MatMul on one device. */
typedef struct sess_bench {
  clg_graph *g;
  clg_session *s;
  clg_tensor *feeds[2];
  clg_node *nodes[2], *mm;
} sess_bench;

static void sess_free(sess_bench *sb)
{
  clg_tool_bench_session_free(sb->s);
  clg_graph_free(sb->g);
  clg_tensor_free(sb->feeds[0]);
  clg_tensor_free(sb->feeds[1]);
  memset(sb, 0, sizeof *sb);
}

static bool sess_setup(sess_bench *sb, const char *device, clg_dtype dt, size_t n, const void *a,
                       const void *b, char *note, size_t note_size)
{
  memset(sb, 0, sizeof *sb);
  int64_t dims[2] = {(int64_t)n, (int64_t)n};
  sb->g = clg_graph_new();
  sb->feeds[0] = clg_tensor_new(dt, 2, dims, a);
  sb->feeds[1] = clg_tensor_new(dt, 2, dims, b);
  if (!sb->g || !sb->feeds[0] || !sb->feeds[1]) {
    snprintf(note, note_size, "session: out of host memory");
    return false;
  }
  clg_graph_push_device(sb->g, device);
  sb->nodes[0] = clg_placeholder(sb->g, "a", dt, 2, dims);
  sb->nodes[1] = clg_placeholder(sb->g, "b", dt, 2, dims);
  sb->mm = clg_matmul(sb->g, NULL, sb->nodes[0], sb->nodes[1], false, false);
  clg_graph_pop_device(sb->g);
  if (clg_graph_status(sb->g) != CLG_OK) {
    snprintf(note, note_size, "graph: %s", clg_graph_error(sb->g));
    return false;
  }
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1; /* reserve-all would touch every device's whole memory */
  if (clg_tool_bench_session_new(sb->g, &opt, &sb->s) != CLG_OK) {
    snprintf(note, note_size, "session: %s", clg_last_error());
    return false;
  }
  return true;
}

/* One run; NAN on failure. c (if not NULL) receives the result. */
static double sess_run(sess_bench *sb, void *c, char *note, size_t note_size)
{
  clg_tensor *out = NULL;
  uint64_t t0 = clg_now_ns();
  clg_code code = clg_session_run(sb->s, 2, sb->nodes, sb->feeds, 1, &sb->mm, &out);
  uint64_t t1 = clg_now_ns();
  if (code != CLG_OK) {
    snprintf(note, note_size, "session run: %s", clg_last_error());
    return NAN;
  }
  if (c)
    memcpy(c, clg_tensor_const_data(out), clg_tensor_bytes(out));
  clg_tensor_free(out);
  return (double)(t1 - t0) * 1e-9;
}

/* The direct side: cblas on the host, CLBlast on three plain buffers of an OpenCL device
 * (no clgraph allocator: CLBlast allocates its own scratch), timed to clFinish. */
typedef struct direct_bench {
  clg_device *dev;
  clg_dtype dt;
  size_t n;
  const void *a, *b;
  cl_mem m[3];
  const char *what;
} direct_bench;

static void direct_free(direct_bench *db)
{
  for (int i = 0; i < 3; i++)
    if (db->m[i])
      clReleaseMemObject(db->m[i]);
  memset(db->m, 0, sizeof db->m);
}

static bool direct_setup(direct_bench *db, clg_device *dev, clg_dtype dt, size_t n, const void *a,
                         const void *b, char *note, size_t note_size)
{
  memset(db, 0, sizeof *db);
  db->dev = dev;
  db->dt = dt;
  db->n = n;
  db->a = a;
  db->b = b;
  if (clg_bench_device_is_host(dev)) {
#ifdef CLG_HAVE_CBLAS
    db->what = dt == CLG_FLOAT32 ? "cblas_sgemm (OpenBLAS)" : "cblas_dgemm (OpenBLAS)";
#else
    db->what = "portable kernel (no CBLAS in this build)";
#endif
    return true;
  }
#ifdef CLG_HAVE_CLBLAST
  db->what = dt == CLG_FLOAT32   ? "CLBlastSgemm"
             : dt == CLG_FLOAT16 ? "CLBlastHgemm"
                                 : "CLBlastDgemm";
  clg_clblast_tune(dev); /* the parameters a session would use (CLGRAPH_CLBLAST_TUNING) */
  size_t bytes = n * n * dtype_size(dt);
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
    db->m[i] = clCreateBuffer(clg_bench_device_context(dev), CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err == CL_SUCCESS)
    err = clEnqueueWriteBuffer(clg_bench_device_queue(dev), db->m[0], CL_TRUE, 0, bytes, a, 0, NULL,
                               NULL);
  if (err == CL_SUCCESS)
    err = clEnqueueWriteBuffer(clg_bench_device_queue(dev), db->m[1], CL_TRUE, 0, bytes, b, 0, NULL,
                               NULL);
  if (err != CL_SUCCESS) {
    snprintf(note, note_size, "direct: %s (%d)", clg_cl_error_name(err), err);
    return false;
  }
  return true;
#else
  (void)note, (void)note_size;
  db->what = "none (no CLBlast in this build)";
  return false;
#endif
}

/* One direct run; NAN on failure. On the host: the GEMM into c. On an OpenCL device with
 * `transfers`: what a hand-written program does for one product, and what a session run does
 * (write A and B, GEMM, read C into c, timed to the read); without:
 * the GEMM alone on the resident buffers, timed to clFinish. */
static double direct_run(direct_bench *db, void *c, bool transfers, char *note, size_t note_size)
{
  size_t n = db->n;
  uint64_t t0 = clg_now_ns();
  if (clg_bench_device_is_host(db->dev)) { /* c is required here: the product has to go somewhere */
    void *out = c;
#ifdef CLG_HAVE_CBLAS
    int in = (int)n;
    if (db->dt == CLG_FLOAT32)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0f, db->a, in, db->b, in,
                  0.0f, out, in);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0, db->a, in, db->b, in,
                  0.0, out, in);
#else
    clg_host_matmul_portable(db->dt, false, false, n, n, n, db->a, db->b, out);
#endif
    (void)transfers;
    return (double)(clg_now_ns() - t0) * 1e-9;
  }
#ifdef CLG_HAVE_CLBLAST
  cl_command_queue q = clg_bench_device_queue(db->dev);
  size_t bytes = n * n * dtype_size(db->dt);
  cl_int err = CL_SUCCESS;
  if (transfers) {
    err = clEnqueueWriteBuffer(q, db->m[0], CL_FALSE, 0, bytes, db->a, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueWriteBuffer(q, db->m[1], CL_FALSE, 0, bytes, db->b, 0, NULL, NULL);
  }
  CLBlastStatusCode st = CLBlastSuccess;
  if (err == CL_SUCCESS && db->dt == CLG_FLOAT32)
    st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f,
                      db->m[0], 0, n, db->m[1], 0, n, 0.0f, db->m[2], 0, n, &q, NULL);
  else if (err == CL_SUCCESS && db->dt == CLG_FLOAT16)
    st = CLBlastHgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
                      0x3C00 /* 1 */, db->m[0], 0, n, db->m[1], 0, n, 0, db->m[2], 0, n, &q, NULL);
  else if (err == CL_SUCCESS)
    st = CLBlastDgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0,
                      db->m[0], 0, n, db->m[1], 0, n, 0.0, db->m[2], 0, n, &q, NULL);
  if (st != CLBlastSuccess) {
    snprintf(note, note_size, "direct: %s failed: %s (%d)", db->what, clg_clblast_status_name(st),
             (int)st);
    return NAN;
  }
  if (err == CL_SUCCESS && transfers)
    err = clEnqueueReadBuffer(q, db->m[2], CL_TRUE, 0, bytes, c, 0, NULL, NULL);
  else if (err == CL_SUCCESS)
    err = clFinish(q);
  if (err != CL_SUCCESS) {
    snprintf(note, note_size, "direct: %s (%d)", clg_cl_error_name(err), err);
    return NAN;
  }
  return (double)(clg_now_ns() - t0) * 1e-9;
#else
  (void)c, (void)transfers, (void)note, (void)note_size;
  return NAN;
#endif
}

/* Runs both sides: a warm-up each (which also captures their results), then `repeats`
 * timed runs alternating session and direct, so that load from elsewhere on the machine
 * hits both alike. */
static void measure(result *r, clg_device *dev, size_t n, const void *a, const void *b, void *c1,
                    void *c2, int repeats)
{
  sess_bench sb;
  direct_bench db;
  double ts[64], td[64], tk[64];
  int okS = 0, okD = 0, okK = 0;
  bool has_s =
      sess_setup(&sb, clg_bench_device_info(dev)->name, r->dtype, n, a, b, r->note, sizeof r->note);
  bool has_d = direct_setup(&db, dev, r->dtype, n, a, b, r->note, sizeof r->note);
  bool has_k = has_d && !clg_bench_device_is_host(dev);
  r->direct_what = db.what ? db.what : "";
  if (has_s && isnan(sess_run(&sb, c1, r->note, sizeof r->note)))
    has_s = false;
  if (has_d && isnan(direct_run(&db, c2, true, r->note, sizeof r->note)))
    has_d = has_k = false;
  for (int i = 0; i < repeats; i++) {
    if (has_s && !isnan(ts[okS] = sess_run(&sb, NULL, r->note, sizeof r->note)))
      okS++;
    if (has_d && !isnan(td[okD] = direct_run(&db, c2, true, r->note, sizeof r->note)))
      okD++;
    if (has_k && !isnan(tk[okK] = direct_run(&db, c2, false, r->note, sizeof r->note)))
      okK++;
  }
  double flops = 2.0 * (double)n * (double)n * (double)n;
  if (okS == repeats)
    r->clgraph = flops / clg_tool_median(ts, okS) * 1e-9;
  if (okD == repeats)
    r->direct = flops / clg_tool_median(td, okD) * 1e-9;
  if (has_k && okK == repeats)
    r->kernel = flops / clg_tool_median(tk, okK) * 1e-9;
  if (!isnan(r->clgraph) && !isnan(r->direct))
    r->diff = rel_diff(r->dtype, c1, c2, n * n);
  sess_free(&sb);
  direct_free(&db);
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: clgraph bench matmul [--json] [--repeats N] [--sizes LIST] [--f64-sizes LIST]\n"
          "                            [--f16-sizes LIST] [--device NAME]\n"
          "\n"
          "GFLOP/s (2n^3 / median time of N runs after a warm-up) of an n x n MatMul on every\n"
          "device: through a clgraph session (feed A and B, run, fetch C) and by a direct call\n"
          "(cblas_sgemm/dgemm on CPU:0; on OpenCL devices write A and B to bare cl_mem\n"
          "buffers, CLBlast, read C), and on OpenCL devices the GEMM alone (\"kernel\").\n"
          "  --repeats N      timed runs per measurement (default 5, at most 64)\n"
          "  --sizes LIST     float32 sizes (default 256,512,1024,2048)\n"
          "  --f64-sizes LIST float64 sizes (default 1024; \"\" for none)\n"
          "  --f16-sizes LIST half sizes, on OpenCL devices only (default none)\n"
          "  --device NAME    only this device (e.g. /device:GPU:0)\n"
          "OpenCL devices of CPU type (PoCL stand-ins) skip sizes above 1024 unless --sizes\n"
          "names them. Set CLGRAPH_DEVICE_TYPES=all to include such devices.\n");
}

static void print_json_number(double v)
{
  if (isnan(v))
    printf("null");
  else
    printf("%.4g", v);
}

int clg_bench_matmul(int argc, char **argv)
{
  bool json = false;
  int repeats = 5;
  int s32[MAX_SIZES] = {256, 512, 1024, 2048}, s64[MAX_SIZES] = {1024}, s16[MAX_SIZES];
  int n32 = 4, n64 = 1, n16 = 0;
  const char *only = NULL;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 64, .integer = &repeats},
                         {"--sizes", CLG_TOOL_LIST, .min = 1, .max = 16384, .max_items = MAX_SIZES,
                          .list = s32, .count = &n32},
                         {"--f64-sizes", CLG_TOOL_LIST, .min = 1, .max = 16384,
                          .max_items = MAX_SIZES, .list = s64, .count = &n64},
                         {"--f16-sizes", CLG_TOOL_LIST, .min = 1, .max = 16384,
                          .max_items = MAX_SIZES, .list = s16, .count = &n16},
                         {"--device", CLG_TOOL_STRING, .meta = "NAME", .text = &only},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench matmul", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  bool sizes_given = clg_tool_given(opts, "--sizes");
  size_t f32[MAX_SIZES], f64[MAX_SIZES], f16[MAX_SIZES];
  for (int i = 0; i < n32; i++)
    f32[i] = (size_t)s32[i];
  for (int i = 0; i < n64; i++)
    f64[i] = (size_t)s64[i];
  for (int i = 0; i < n16; i++)
    f16[i] = (size_t)s16[i];
  qsort(f32, (size_t)n32, sizeof f32[0], cmp_size);
  qsort(f64, (size_t)n64, sizeof f64[0], cmp_size);
  qsort(f16, (size_t)n16, sizeof f16[0], cmp_size);

  peak_info peak;
  peak_read(&peak);
  peak.ref_gflops_f32 = reference_sgemm(repeats < 3 ? 3 : repeats);

  /* The device set: the one a session sees (same configuration, from the environment). */
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  if (clg_devices_new(&cfg, &devs) != CLG_OK) {
    fprintf(stderr, "clgraph bench matmul: %s\n", clg_last_error());
    return 1;
  }
  int ndev = clg_devices_count(devs);
  if (only && !clg_devices_find(devs, only)) {
    fprintf(stderr, "clgraph bench matmul: --device %s: no such device\n", only);
    clg_devices_free(devs);
    return 2;
  }
  result *res = calloc((size_t)ndev * (size_t)(n32 + n64 + n16), sizeof *res);
  if (!res) {
    clg_devices_free(devs);
    return 1;
  }
  int nres = 0;
  bool skipped_big = false;

  /* A session held open for the whole run keeps the process-wide device state (contexts,
   * allocators, compiled programs) alive between the per-measurement sessions. */
  clg_graph *keep_g = clg_graph_new();
  clg_session *keep_s = NULL;
  if (keep_g) {
    float one = 1;
    clg_graph_push_device(keep_g, "/cpu:0");
    clg_const_f32(keep_g, "keep", 0, NULL, &one);
    clg_session_options kopt;
    clg_session_options_init(&kopt);
    kopt.gpu_options.allow_growth = 1;
    if (clg_graph_status(keep_g) != CLG_OK ||
        clg_tool_bench_session_new(keep_g, &kopt, &keep_s) != CLG_OK)
      fprintf(stderr, "clgraph bench matmul: warning: %s\n", clg_last_error());
  }
  unsigned seed = 12345;

  if (!json) {
    printf("clgraph bench matmul: C = A x B, n x n, GFLOP/s = 2n^3 / median of %d runs after a "
           "warm-up\n",
           repeats);
    printf(
        "  clgraph: a session run (feed A, B; MatMul; fetch C); direct: the same by hand (on an\n"
        "  OpenCL device: write A, B; GEMM; read C); kernel: the GEMM alone on resident data\n\n");
    printf("%-16s %-6s %5s %9s %9s %6s %9s %7s %7s  %s\n", "device", "dtype", "n", "clgraph",
           "direct", "ratio", "kernel", "%ref", "%ref", "direct call");
    printf("%-16s %-6s %5s %9s %9s %6s %9s %7s %7s\n", "", "", "", "GFLOP/s", "GFLOP/s", "",
           "GFLOP/s", "clgraph", "direct");
    fflush(stdout);
  }

  for (int d = 0; d < ndev; d++) {
    clg_device *dev = clg_devices_at(devs, d);
    if (only && clg_devices_find(devs, only) != clg_bench_device_info(dev))
      continue;
    bool stand_in = !clg_bench_device_is_host(dev) && clg_bench_device_info(dev)->cl_type &&
                    strcmp(clg_bench_device_info(dev)->cl_type, "CPU") == 0;
    for (int pass = 0; pass < 3; pass++) {
      clg_dtype dt = pass == 0 ? CLG_FLOAT32 : pass == 1 ? CLG_FLOAT64 : CLG_FLOAT16;
      int count = pass == 0 ? n32 : pass == 1 ? n64 : n16;
      if (dt == CLG_FLOAT16 &&
          clg_bench_device_is_host(dev)) /* the host converts half to float: no GEMM */
        continue;
      for (int i = 0; i < count; i++) {
        size_t n = pass == 0 ? f32[i] : pass == 1 ? f64[i] : f16[i];
        if (stand_in && n > 1024 && !sizes_given) {
          skipped_big = true;
          continue;
        }
        result *r = &res[nres++];
        r->device = clg_bench_device_info(dev)->name;
        r->dtype = dt;
        r->n = n;
        r->clgraph = r->direct = r->kernel = r->diff = NAN;
        r->direct_what = "";
        if (!clg_bench_device_is_host(dev) && dt == CLG_FLOAT64 &&
            !clg_bench_device_info(dev)->has_fp64) {
          snprintf(r->note, sizeof r->note, "no fp64 on this device");
          goto print;
        }
        if (dt == CLG_FLOAT16 && !clg_bench_device_info(dev)->has_fp16) {
          snprintf(r->note, sizeof r->note, "no fp16 on this device");
          goto print;
        }
        size_t es = dtype_size(dt);
        void *a = malloc(n * n * es), *b = malloc(n * n * es);
        void *c1 = malloc(n * n * es), *c2 = malloc(n * n * es);
        if (!a || !b || !c1 || !c2) {
          snprintf(r->note, sizeof r->note, "out of host memory");
        } else {
          fill_random(dt, a, n * n, &seed);
          fill_random(dt, b, n * n, &seed);
          measure(r, dev, n, a, b, c1, c2, repeats);
        }
        free(a), free(b), free(c1), free(c2);
      print:
        if (!json) {
          /* CPU:0 float against the measured reference, not a nominal peak. */
          double pk = dt == CLG_FLOAT32 ? peak.ref_gflops_f32 : NAN;
          bool show_peak = clg_bench_device_is_host(dev) && pk > 0;
          printf("%-16s %-6s %5zu %9.1f %9.1f %6.2f", r->device, dtype_word(dt), n, r->clgraph,
                 r->direct, r->clgraph / r->direct);
          if (isnan(r->kernel))
            printf(" %9s", "-");
          else
            printf(" %9.1f", r->kernel);
          if (show_peak)
            printf(" %6.1f%% %6.1f%%", 100 * r->clgraph / pk, 100 * r->direct / pk);
          else
            printf(" %7s %7s", "-", "-");
          printf("  %s%s%s\n", r->direct_what, r->note[0] ? "; " : "", r->note);
          if (!isnan(r->diff) && r->diff > (dt == CLG_FLOAT32   ? 1e-5
                                            : dt == CLG_FLOAT16 ? 1e-2
                                                                : 1e-12))
            printf("  WARNING: clgraph and direct results differ: relative %.3g\n", r->diff);
          fflush(stdout);
        }
      }
    }
  }

  if (json) {
    printf("{\"benchmark\": \"matmul\", \"repeats\": %d, \"host_matmul\": \"%s\", "
           "\"portable_isa\": \"%s\",\n",
           repeats, clg_host_matmul_backend(), clg_host_matmul_portable_isa());
    printf(" \"peak\": {\"cores\": %d, \"ghz\": %.3f, \"fp32_flops_per_cycle\": %d, \"basis\": "
           "\"%s\", \"gflops_float\": %.1f, \"gflops_double\": %.1f, \"nominal\": true, "
           "\"known\": false, \"hypervisor\": %s, \"why_unknown\": \"%s\"},\n",
           peak.cores, peak.ghz, peak.flops_per_cycle, peak.basis, peak.gflops_f32, peak.gflops_f64,
           peak.hypervisor ? "true" : "false", peak.hypervisor ? peak_unknown_vm : peak_unknown);
    printf(" \"reference\": {\"what\": \"cblas_sgemm, n=%d, median after a warm-up\", "
           "\"gflops_float\": ",
           REF_N);
    print_json_number(peak.ref_gflops_f32);
    printf("},\n");
    printf(" \"skipped_above_1024_on_cpu_type_opencl_devices\": %s,\n",
           skipped_big ? "true" : "false");
    printf(" \"results\": [");
    for (int i = 0; i < nres; i++) {
      result *r = &res[i];
      double ref = r->dtype == CLG_FLOAT32 ? peak.ref_gflops_f32 : NAN;
      bool host = strcmp(r->device, "/device:CPU:0") == 0;
      printf("%s\n  {\"device\": \"%s\", \"dtype\": \"%s\", \"n\": %zu, \"clgraph_gflops\": ",
             i ? "," : "", r->device, dtype_word(r->dtype), r->n);
      print_json_number(r->clgraph);
      printf(", \"direct_gflops\": ");
      print_json_number(r->direct);
      printf(", \"kernel_gflops\": ");
      print_json_number(r->kernel);
      printf(", \"ratio\": ");
      print_json_number(r->clgraph / r->direct);
      /* The peak is unknown: its fractions are null; the reference's are new fields. */
      printf(", \"peak_fraction_clgraph\": null, \"peak_fraction_direct\": null");
      printf(", \"reference_fraction_clgraph\": ");
      print_json_number(host && ref > 0 ? r->clgraph / ref : NAN);
      printf(", \"reference_fraction_direct\": ");
      print_json_number(host && ref > 0 ? r->direct / ref : NAN);
      printf(", \"rel_diff\": ");
      print_json_number(r->diff);
      printf(", \"direct\": \"%s\", \"note\": ", r->direct_what);
      clg_tool_json_string(stdout, r->note); /* free text: an error's message */
      printf("}");
    }
    printf("\n ]}\n");
  } else {
    if (isnan(peak.ref_gflops_f32))
      printf("\nCPU:0 reference: none (built without CBLAS), so no %%ref\n");
    else
      printf("\nCPU:0 reference (%%ref, float): cblas_sgemm n=%d measured %.1f GFLOP/s\n", REF_N,
             peak.ref_gflops_f32);
    printf("No peak is shown: %s. Nominal: %d logical cores x %.3f GHz x %d fp32 flop/cycle "
           "(%s) = %.1f GFLOP/s, an estimate this machine may exceed.\n",
           peak.hypervisor ? peak_unknown_vm : peak_unknown, peak.cores, peak.ghz,
           peak.flops_per_cycle, peak.basis, peak.gflops_f32);
    printf("host MatMul backend: %s (the portable kernel's variant here: %s)\n",
           clg_host_matmul_backend(), clg_host_matmul_portable_isa());
    if (skipped_big)
      printf("note: sizes above 1024 skipped on OpenCL devices of CPU type (PoCL runs CLBlast "
             "about 10x slower than OpenBLAS); ask for them with --sizes\n");
    if (ndev == 1)
      printf("note: no OpenCL device is used as a GPU; CLGRAPH_DEVICE_TYPES=all includes CPU-type "
             "devices such as PoCL's\n");
  }
  free(res);
  clg_tool_bench_session_free(keep_s);
  clg_graph_free(keep_g);
  clg_devices_free(devs);
  return 0;
}
