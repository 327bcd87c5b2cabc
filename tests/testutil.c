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
