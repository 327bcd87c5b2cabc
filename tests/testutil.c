#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

int clg_test_passed, clg_test_failed;

void clg_test_fail(const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  clg_test_failed++;
  fprintf(stderr, "FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int clg_test_summary(const char *name)
{
  printf("%s: %d passed, %d failed\n", name, clg_test_passed, clg_test_failed);
  fflush(stdout);
  return clg_test_failed == 0 && clg_test_passed > 0 ? 0 : 1;
}

bool clg_test_require_gpus(int min_gpus)
{
  clg_device_config cfg;
  clg_devices *devs = NULL;
  clg_device_config_init(&cfg);
  clg_code code = clg_devices_new(&cfg, &devs);
  int gpus = code == CLG_OK ? clg_devices_count(devs) - 1 : 0;
  clg_devices_free(devs);
  CHECK_MSG(gpus >= min_gpus,
            "this test needs %d OpenCL devices standing in as GPUs and found %d (%s); install "
            "pocl-opencl-icd and set CLGRAPH_DEVICE_TYPES=all POCL_DEVICES=\"pthread pthread "
            "pthread pthread\"",
            min_gpus, gpus, code == CLG_OK ? "no error" : clg_last_error());
  return gpus >= min_gpus;
}

int clg_test_parts(void)
{
  const char *v = getenv("CLGRAPH_VIRTUAL_DEVICES");
  if (!v || !*v || strchr(v, ','))
    return 0;
  return atoi(v);
}

static char *cap_buf;
static size_t cap_len, cap_cap;

static void cap_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  size_t n = strlen(message);
  if (cap_len + n + 2 > cap_cap) {
    size_t c = cap_cap ? cap_cap : 4096;
    while (cap_len + n + 2 > c)
      c *= 2;
    char *p = realloc(cap_buf, c);
    if (!p)
      return;
    cap_buf = p;
    cap_cap = c;
  }
  memcpy(cap_buf + cap_len, message, n);
  cap_len += n;
  cap_buf[cap_len++] = '\n';
  cap_buf[cap_len] = '\0';
}

static clg_log_level saved_level;

void clg_test_log_capture_start(clg_log_level min_level)
{
  cap_len = 0;
  if (cap_buf)
    cap_buf[0] = '\0';
  saved_level = clg_log_get_level();
  clg_log_set_level(min_level);
  clg_log_set_sink(cap_sink, NULL);
}

const char *clg_test_log_capture_stop(void)
{
  clg_log_set_sink(NULL, NULL);
  clg_log_set_level(saved_level);
  return cap_buf ? cap_buf : "";
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;

void clg_test_seed(unsigned long long seed) { rng_state = seed ? seed : 0x9E3779B97F4A7C15ull; }

unsigned long long clg_test_rand(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

double clg_test_uniform(double lo, double hi)
{
  return lo + (hi - lo) * (double)(clg_test_rand() >> 11) / 9007199254740992.0;
}

void clg_test_fill_random(clg_dtype dtype, void *p, size_t count)
{
  for (size_t i = 0; i < count; i++) {
    double v = clg_test_uniform(-1, 1);
    if (dtype == CLG_FLOAT32)
      ((float *)p)[i] = (float)v;
    else
      ((double *)p)[i] = v;
  }
}

void clg_test_fill_nan(clg_dtype dtype, void *p, size_t count)
{
  for (size_t i = 0; i < count; i++) {
    if (dtype == CLG_FLOAT32)
      ((float *)p)[i] = NAN;
    else
      ((double *)p)[i] = NAN;
  }
}

double clg_test_elem(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT32:
    return ((const float *)p)[i];
  case CLG_FLOAT64:
    return ((const double *)p)[i];
  case CLG_INT32:
    return ((const int32_t *)p)[i];
  case CLG_INT64:
    return (double)((const int64_t *)p)[i];
  case CLG_BOOL:
    return ((const uint8_t *)p)[i];
  default:
    return NAN;
  }
}

size_t clg_test_count(int rank, const int64_t *dims)
{
  size_t c = 1;
  for (int k = 0; k < rank; k++)
    c *= (size_t)dims[k];
  return c;
}

void clg_test_set_elem(clg_tensor *t, size_t i, double v)
{
  void *p = clg_tensor_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT32:
    ((float *)p)[i] = (float)v;
    break;
  case CLG_FLOAT64:
    ((double *)p)[i] = v;
    break;
  case CLG_INT32:
    ((int32_t *)p)[i] = (int32_t)v;
    break;
  case CLG_INT64:
    ((int64_t *)p)[i] = (int64_t)v;
    break;
  case CLG_BOOL:
    ((uint8_t *)p)[i] = v != 0;
    break;
  default:
    break;
  }
}

clg_tensor *clg_test_tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  for (size_t i = 0; i < clg_tensor_count(t); i++)
    clg_test_set_elem(t, i, v[i]);
  return t;
}

double *clg_test_values(const clg_tensor *t)
{
  size_t n = clg_tensor_count(t);
  double *v = malloc(sizeof *v * (n ? n : 1));
  for (size_t i = 0; i < n; i++)
    v[i] = clg_test_elem(t, i);
  return v;
}

static bool close_enough(double got, double w, double abs, double rel, bool signed_zero)
{
  if (isnan(w))
    return isnan(got);
  if (isinf(w) || isinf(got))
    return got == w;
  if (signed_zero && w == 0 && (got != 0 || signbit(got) != signbit(w)))
    return false;
  return fabs(got - w) <= abs + rel * fabs(w);
}

void clg_test_check_values(const clg_tensor *t, clg_dtype dtype, int rank, const int64_t *dims,
                           const double *want, double abs, double rel, bool signed_zero,
                           const char *what, const char *dev)
{
  if (!t) {
    CHECK_MSG(false, "%s on %s: no output", what, dev);
    return;
  }
  bool shape = clg_tensor_dtype(t) == dtype && clg_tensor_rank(t) == rank;
  for (int k = 0; shape && k < rank; k++)
    shape = clg_tensor_dim(t, k) == dims[k];
  char s[128];
  CHECK_MSG(shape, "%s on %s: %s %s, want %s of rank %d", what, dev,
            clg_dtype_name(clg_tensor_dtype(t)), clg_tensor_shape_string(t, s, sizeof s),
            clg_dtype_name(dtype), rank);
  if (!shape)
    return;
  for (size_t i = 0; i < clg_tensor_count(t); i++) {
    double v = clg_test_elem(t, i);
    if (!close_enough(v, want[i], abs, rel, signed_zero)) {
      CHECK_MSG(false, "%s on %s: element %zu is %.17g, want %.17g", what, dev, i, v, want[i]);
      return;
    }
  }
  clg_test_passed++;
}

static int gpu_turn;

clg_code clg_test_run_both(const clg_session_options *opt, int nin, clg_tensor *const *in,
                           clg_test_build_fn fn, const void *ctx, int index, clg_tensor **out,
                           char *err, size_t err_size)
{
  static const char *const gpus[4] = {"/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                      "/device:GPU:3"};
  out[0] = out[1] = NULL;
  clg_graph *g = clg_graph_new();
  clg_node *ph[8] = {NULL};
  for (int i = 0; i < nin; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(in[i]); k++)
      dims[k] = clg_tensor_dim(in[i], k);
    ph[i] = clg_placeholder(g, NULL, clg_tensor_dtype(in[i]), clg_tensor_rank(in[i]), dims);
  }
  clg_node *node[2];
  clg_graph_push_device(g, "/cpu:0");
  node[0] = fn(g, ph, ctx);
  clg_graph_pop_device(g);
  clg_graph_push_device(g, gpus[gpu_turn++ % 4]);
  node[1] = fn(g, ph, ctx);
  clg_graph_pop_device(g);
  clg_code code = clg_graph_status(g);
  const char *step = "build";
  clg_session *s = NULL;
  if (code == CLG_OK) {
    step = "session";
    code = clg_session_new(g, opt, &s);
  }
  if (code == CLG_OK) {
    step = "run";
    clg_output feeds[8], fetch[2] = {{node[0], index}, {node[1], index}};
    for (int i = 0; i < nin; i++)
      feeds[i] = clg_out(ph[i], 0);
    code = clg_session_run_outputs(s, nin, feeds, in, 2, fetch, out, 0, NULL);
  }
  if (code == CLG_OK)
    snprintf(err, err_size, "%s", "");
  else
    snprintf(err, err_size, "%s: %s", step, step[0] == 'b' ? clg_graph_error(g) : clg_last_error());
  clg_session_free(s);
  clg_graph_free(g);
  return code;
}

void clg_test_expect_error(clg_graph *g, const char *node, const char *text, int line)
{
  const char *e = clg_graph_error(g);
  CHECK_MSG(clg_graph_status(g) == CLG_INVALID_ARGUMENT, "line %d: status %s (%s)", line,
            clg_code_name(clg_graph_status(g)), e);
  CHECK_MSG(e && strstr(e, node) != NULL && strstr(e, text) != NULL,
            "line %d: error \"%s\" lacks \"%s\" or \"%s\"", line, e, node, text);
  clg_graph_free(g);
}

clg_code clg_test_run_one(clg_graph *g, const clg_session_options *opt, clg_node *node,
                          clg_tensor **out)
{
  clg_session *s = NULL;
  *out = NULL;
  clg_code code = clg_graph_status(g);
  if (code == CLG_OK)
    code = clg_session_new(g, opt, &s);
  if (code == CLG_OK) {
    clg_output fetch = {node, 0};
    code = clg_session_run_outputs(s, 0, NULL, NULL, 1, &fetch, out, 0, NULL);
  }
  clg_session_free(s);
  return code;
}

void clg_test_out_dim(int64_t in, int64_t k, int64_t d, int64_t s, bool same, int64_t *out,
                      int64_t *pad)
{
  int64_t eff = (k - 1) * d + 1;
  if (same) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + eff - in;
    *pad = total > 0 ? total / 2 : 0;
  } else {
    *out = in >= eff ? (in - eff) / s + 1 : 0;
    *pad = 0;
  }
}
