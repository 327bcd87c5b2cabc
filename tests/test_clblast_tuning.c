/* CLBlast tuned per card (src/kernels/clblast_tuning.c) on a PoCL stand-in: tuner-format
 * files from CLGRAPH_CLBLAST_TUNING and the cache folder are applied before CLBlast's first
 * use of the device, the entry for this device's name and driver wins, the fastest result
 * wins, and bad files are warnings naming the file while CLBlast keeps computing the same
 * products with its defaults.
 *
 * What is applied is seen two ways: the log line naming kernel, parameters and file, and
 * CLBlast's choice between its direct and indirect GEMM (GemmRoutine's
 * XGEMM_MIN_INDIRECT_SIZE): a 100^3 product runs the direct kernel by default on PoCL (the
 * indirect one starts near 896) and needs no scratch; tuned to switch at 64 it runs Xgemm,
 * whose padding needs scratch.
 *
 * CLBlast cannot go back to its own parameters within a process (CLBlastClearCache drops
 * programs, not overrides), so the cases run in an order where each starts from what the
 * last one left: defaults first (nothing applied, files that apply nothing), then tunings. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "testutil.h"

static char dir[256], cache_file[512];

#ifdef CLG_HAVE_CLBLAST

/* Parameters the tuners accept on PoCL (two of clblast_tuner_xgemm's "results match"). */
static const char xgemm_fast[] =
    "\"GEMMK\": 0, \"MWG\": 32, \"NWG\": 32, \"KWG\": 32, \"MDIMC\": 8, "
    "\"NDIMC\": 8, \"MDIMA\": 8, \"NDIMB\": 8, \"KWI\": 2, \"VWM\": 2, "
    "\"VWN\": 2, \"STRM\": 0, \"STRN\": 0, \"SA\": 0, \"SB\": 0, "
    "\"KREG\": 1";
static const char xgemm_slow[] =
    "\"GEMMK\": 0, \"MWG\": 16, \"NWG\": 16, \"KWG\": 32, \"MDIMC\": 8, "
    "\"NDIMC\": 8, \"MDIMA\": 8, \"NDIMB\": 8, \"KWI\": 2, \"VWM\": 1, "
    "\"VWN\": 1, \"STRM\": 0, \"STRN\": 0, \"SA\": 1, \"SB\": 1, "
    "\"KREG\": 1";

/* One tuner output, as clblast_tuner_* writes it ("precision" a string), plus extra text
 * (e.g. a "driver_version" member) right after the opening brace. */
static void tuner_object(clg_strbuf *s, const char *extra, const char *device, const char *family,
                         const char *results)
{
  clg_strbuf_printf(s,
                    "{%s\n  \"kernel_family\": \"%s\",\n  \"precision\": \"32\",\n"
                    "  \"best_kernel\": \"Xgemm\",\n  \"device\": \"%s\",\n"
                    "  \"platform_version\": \"OpenCL 3.0 PoCL\",\n  \"results\": [%s]\n}",
                    extra, family, device, results);
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f)
    return;
  fputs(text, f);
  fclose(f);
}

/* C = A B (100 x 100 x 100 unless given) on dev against the host; returns the scratch
 * CLBlast asks for (0 on the direct kernel). */
static size_t gemm_checked(clg_device *dev, size_t m, size_t n, size_t k)
{
  float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *c = malloc(m * n * 4),
        *want = malloc(m * n * 4);
  cl_mem buf[3] = {NULL, NULL, NULL};
  size_t sizes[3] = {m * k * 4, k * n * 4, m * n * 4};
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
    buf[i] = clCreateBuffer(clg_cl_context(dev), CL_MEM_READ_WRITE, sizes[i], NULL, &err);
  CHECK(a && b && c && want && err == CL_SUCCESS);
  size_t scratch = 0;
  if (a && b && c && want && err == CL_SUCCESS) {
    clg_test_fill_random(CLG_FLOAT32, a, m * k);
    clg_test_fill_random(CLG_FLOAT32, b, k * n);
    clg_host_matmul(CLG_FLOAT32, false, false, m, n, k, a, b, want);
    clEnqueueWriteBuffer(clg_cl_queue(dev), buf[0], CL_TRUE, 0, sizes[0], a, 0, NULL, NULL);
    clEnqueueWriteBuffer(clg_cl_queue(dev), buf[1], CL_TRUE, 0, sizes[1], b, 0, NULL, NULL);
    clg_block ba = {.mem = buf[0], .size = sizes[0]}, bb = {.mem = buf[1], .size = sizes[1]},
              bc = {.mem = buf[2], .size = sizes[2]};
    CHECK_OK(
        clg_cl_matmul(dev, NULL, NULL, CLG_FLOAT32, false, false, m, n, k, &ba, &bb, &bc, NULL));
    CHECK(clEnqueueReadBuffer(clg_cl_queue(dev), buf[2], CL_TRUE, 0, sizes[2], c, 0, NULL, NULL) ==
          CL_SUCCESS);
    double worst = 0;
    for (size_t i = 0; i < m * n; i++)
      worst = fmax(worst, fabs((double)c[i] - (double)want[i]));
    CHECK_MSG(worst < 1e-3, "SGEMM %zux%zux%zu off by %g", m, n, k, worst);
    CHECK_OK(clg_cl_matmul_scratch(dev, CLG_FLOAT32, false, false, m, n, k, &scratch));
  }
  for (int i = 0; i < 3; i++)
    if (buf[i])
      clReleaseMemObject(buf[i]);
  free(a), free(b), free(c), free(want);
  return scratch;
}

/* Forgets earlier tunings, then runs the 100^3 product and a small one (the direct kernel
 * under any threshold tried here) with the log captured from `level`; the log in *log. */
static size_t run_tuned(clg_device *dev, clg_log_level level, const char **log)
{
  clg_clblast_clear();
  clg_test_log_capture_start(level);
  size_t scratch = gemm_checked(dev, 100, 100, 100);
  gemm_checked(dev, 31, 17, 9);
  *log = clg_test_log_capture_stop();
  return scratch;
}

/* A file of tuner objects for this device: Xgemm's faster result of two, and GemmRoutine
 * switching to Xgemm from `threshold`. */
static void write_tuning(const char *file, const clg_device_info *info, int threshold)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  char results[1024], sel[256];
  snprintf(results, sizeof results,
           "{\"kernel\": \"Xgemm\", \"time\": 9.5, \"parameters\": {%s}},\n"
           "{\"kernel\": \"Xgemm\", \"time\": 1.25, \"parameters\": {%s}}",
           xgemm_slow, xgemm_fast);
  snprintf(sel, sizeof sel,
           "{\"kernel\": \"gemm_kernel_selection\", \"time\": 2.0, \"parameters\": "
           "{\"XGEMM_MIN_INDIRECT_SIZE\": %d, \"PRECISION\": 32}}",
           threshold);
  clg_strbuf_append(&s, "[");
  tuner_object(&s, "", info->cl_name, "xgemm_1", results);
  clg_strbuf_append(&s, ",\n");
  tuner_object(&s, "", info->cl_name, "gemm_routine", sel);
  clg_strbuf_append(&s, "]\n");
  write_file(file, s.buf);
  clg_strbuf_free(&s);
}

/* Nothing applied: an empty cache, and a tuning in the cache under
 * CLGRAPH_CLBLAST_TUNING=off. CLBlast's own parameters: the direct kernel for 100^3. */
static void test_defaults(clg_device *dev)
{
  const clg_device_info *info = &dev->info;
  char want[1024];
  const char *log;
  unsetenv("CLGRAPH_CLBLAST_TUNING");
  CHECK(run_tuned(dev, CLG_LOG_DEBUG, &log) == 0);
  snprintf(want, sizeof want, "no CLBlast tuning for %s (%s, driver %s) in %s", info->name,
           info->cl_name, info->driver_version, cache_file);
  CHECK_CONTAINS(log, want);
  CHECK(!strstr(log, "tuned from"));

  char folder[600];
  snprintf(folder, sizeof folder, "%s/clgraph", dir);
  mkdir(folder, 0700);
  snprintf(folder, sizeof folder, "%s/clgraph/clblast", dir);
  mkdir(folder, 0700);
  write_tuning(cache_file, info, 64);
  setenv("CLGRAPH_CLBLAST_TUNING", "off", 1);
  CHECK(run_tuned(dev, CLG_LOG_DEBUG, &log) == 0);
  CHECK_CONTAINS(log, "CLGRAPH_CLBLAST_TUNING=off: CLBlast's own parameters on");
  CHECK(!strstr(log, "tuned from"));
  unlink(cache_file);
  unsetenv("CLGRAPH_CLBLAST_TUNING");
}

/* The key: another device's entry and this device's entry for another driver are faster,
 * but this name (padded, as some drivers pad it) with this driver is the one applied. */
static void test_key(clg_device *dev)
{
  const clg_device_info *info = &dev->info;
  char file[512];
  const char *log;
  snprintf(file, sizeof file, "%s/tuning.json", dir);
  clg_strbuf s;
  clg_strbuf_init(&s);
  const char *sel = "{\"kernel\": \"gemm_kernel_selection\", \"time\": %s, \"parameters\": "
                    "{\"XGEMM_MIN_INDIRECT_SIZE\": %s}}";
  char r64[256], r4096[256], padded[300], driver[300];
  snprintf(r64, sizeof r64, sel, "0.5", "64");
  snprintf(r4096, sizeof r4096, sel, "3.0", "4096");
  snprintf(padded, sizeof padded, " %s  ", info->cl_name);
  snprintf(driver, sizeof driver, "\n  \"driver_version\": \"%s\",", info->driver_version);
  clg_strbuf_append(&s, "[");
  tuner_object(&s, "", "Some Other GPU", "gemm_routine", r64);
  clg_strbuf_append(&s, ",");
  tuner_object(&s, "\n  \"driver_version\": \"0.0-not-this-one\",", info->cl_name, "gemm_routine",
               r64);
  clg_strbuf_append(&s, ",");
  tuner_object(&s, driver, padded, "gemm_routine", r4096);
  clg_strbuf_append(&s, "]");
  write_file(file, s.buf);
  clg_strbuf_free(&s);
  setenv("CLGRAPH_CLBLAST_TUNING", file, 1);
  CHECK(run_tuned(dev, CLG_LOG_INFO, &log) == 0); /* direct: the threshold is 4096 */
  CHECK_CONTAINS(log, "XGEMM_MIN_INDIRECT_SIZE=4096 (3.000 ms in the tuner)");
  CHECK(!strstr(log, "XGEMM_MIN_INDIRECT_SIZE=64"));
  unlink(file);
  unsetenv("CLGRAPH_CLBLAST_TUNING");
}

/* A tuner's files for this device concatenated into an array, from CLGRAPH_CLBLAST_TUNING,
 * then from the cache folder. */
static void test_applied(clg_device *dev)
{
  const clg_device_info *info = &dev->info;
  char file[512], want[1024];
  const char *log;
  snprintf(file, sizeof file, "%s/tuning.json", dir);
  write_tuning(file, info, 64);
  setenv("CLGRAPH_CLBLAST_TUNING", file, 1);
  CHECK(run_tuned(dev, CLG_LOG_INFO, &log) > 0); /* now the indirect path */
  snprintf(want, sizeof want,
           "CLBlast Xgemm (single) on %s tuned from %s: GEMMK=0 MWG=32 NWG=32 KWG=32 MDIMC=8 "
           "NDIMC=8 MDIMA=8 NDIMB=8 KWI=2 VWM=2 VWN=2 STRM=0 STRN=0 SA=0 SB=0 KREG=1 (1.250 "
           "ms in the tuner)",
           info->name, file);
  CHECK_CONTAINS(log, want);
  snprintf(want, sizeof want,
           "CLBlast GemmRoutine (single) on %s tuned from %s: XGEMM_MIN_INDIRECT_SIZE=64 (2.000 "
           "ms in the tuner)",
           info->name, file);
  CHECK_CONTAINS(log, want);
  CHECK(!strstr(log, "MWG=16")); /* the slower result is not taken */
  /* Once per device: a later change of the variable does not re-read it. */
  setenv("CLGRAPH_CLBLAST_TUNING", "/nonexistent/tuning.json", 1);
  clg_test_log_capture_start(CLG_LOG_WARNING);
  CHECK(gemm_checked(dev, 100, 100, 100) > 0);
  CHECK_STR(clg_test_log_capture_stop(), "");
  unlink(file);

  /* The same file under the device's key in the cache folder, without the variable. */
  write_tuning(cache_file, info, 64);
  unsetenv("CLGRAPH_CLBLAST_TUNING");
  CHECK(run_tuned(dev, CLG_LOG_INFO, &log) > 0);
  snprintf(want, sizeof want, "tuned from %s: XGEMM_MIN_INDIRECT_SIZE=64", cache_file);
  CHECK_CONTAINS(log, want);
  unlink(cache_file);
}

/* A bad file: a warning naming it (and `what`), CLBlast's defaults, products still right. */
static void check_bad(clg_device *dev, const char *file, const char *text, const char *what)
{
  if (text)
    write_file(file, text);
  setenv("CLGRAPH_CLBLAST_TUNING", file, 1);
  const char *log;
  CHECK(run_tuned(dev, CLG_LOG_WARNING, &log) == 0);
  CHECK_CONTAINS(log, file);
  CHECK_CONTAINS(log, what);
}

static void test_bad_files(clg_device *dev)
{
  const clg_device_info *info = &dev->info;
  char file[512], want[512];
  snprintf(file, sizeof file, "%s/bad.json", dir);
  snprintf(want, sizeof want,
           "/nonexistent/tuning.json: No such file or directory; CLBlast "
           "keeps its defaults on %s",
           info->name);
  check_bad(dev, "/nonexistent/tuning.json", NULL, want);
  check_bad(dev, file, "{\"device\": \"x\",,}", "not JSON: ");
  check_bad(dev, file, "[1, 2]", "entry 0 is not a JSON object (a tuner's output)");

  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "{\"device\": \"%s\", \"kernel_family\": \"xgemm_1\"}", info->cl_name);
  check_bad(dev, file, s.buf, "entry 0 has no \"results\" (an array)");
  clg_strbuf_free(&s);

  clg_strbuf_init(&s);
  tuner_object(&s, "", "Some Other GPU", "gemm_routine", "");
  snprintf(want, sizeof want, "has nothing for %s ('%s', driver %s); it tunes 'Some Other GPU'",
           info->name, info->cl_name, info->driver_version);
  check_bad(dev, file, s.buf, want);
  clg_strbuf_free(&s);

  clg_strbuf_init(&s);
  tuner_object(&s, "", info->cl_name, "xfoo_1",
               "{\"kernel\": \"Xfoo\", \"time\": 1, \"parameters\": {\"A\": 1}}");
  check_bad(dev, file, s.buf, "entry 0: kernel_family 'xfoo_1' is not one clgraph knows");
  clg_strbuf_free(&s);

  clg_strbuf_init(&s);
  tuner_object(&s, "", info->cl_name, "gemm_routine",
               "{\"kernel\": \"x\", \"parameters\": {\"XGEMM_MIN_INDIRECT_SIZE\": 64}}");
  check_bad(dev, file, s.buf,
            "entry 0, result 0 has no \"parameters\" object and \"time\" number; result ignored");
  clg_strbuf_free(&s);

  clg_strbuf_init(&s);
  tuner_object(&s, "", info->cl_name, "gemm_routine",
               "{\"kernel\": \"x\", \"time\": 1, \"parameters\": {\"XGEMM_MIN_INDIRECT_SIZE\": "
               "-64}}");
  check_bad(dev, file, s.buf, "parameter XGEMM_MIN_INDIRECT_SIZE is not a whole number");
  clg_strbuf_free(&s);

  /* A parameter missing: CLBlast refuses the override, by name. */
  clg_strbuf_init(&s);
  tuner_object(&s, "", info->cl_name, "xgemm_11",
               "{\"kernel\": \"Xgemm\", \"time\": 1, \"parameters\": {\"MWG\": 16}}");
  snprintf(want, sizeof want,
           "CLBlastOverrideParameters(Xgemm, single) on %s failed: "
           "CLBlastMissingOverrideParameter (-2047); CLBlast keeps its defaults for it "
           "(parameters MWG=16)",
           info->name);
  check_bad(dev, file, s.buf, want);
  clg_strbuf_free(&s);
  unlink(file);
  unsetenv("CLGRAPH_CLBLAST_TUNING");
  clg_clblast_clear();
}

#endif

static void test_paths(void)
{
  char buf[512], want[600];
  CHECK_OK(clg_clblast_tuning_path("NVIDIA H200", "580.159.04", buf, sizeof buf));
  snprintf(want, sizeof want, "%s/clgraph/clblast/NVIDIA_H200--580.159.04.json", dir);
  CHECK_STR(buf, want);
  CHECK_OK(clg_clblast_tuning_path("pthread-AMD EPYC/9B45 (x)", "3.1+debian", buf, sizeof buf));
  snprintf(want, sizeof want, "%s/clgraph/clblast/pthread-AMD_EPYC_9B45__x_--3.1_debian.json", dir);
  CHECK_STR(buf, want);
  CHECK_CODE(clg_clblast_tuning_path("a", "b", buf, 20), CLG_INVALID_ARGUMENT);
  /* A relative XDG_CACHE_HOME is invalid (the XDG rule): HOME's .cache then. */
  char *home = getenv("HOME") ? clg_strdup(getenv("HOME")) : NULL;
  setenv("XDG_CACHE_HOME", "relative", 1);
  setenv("HOME", "/home/someone", 1);
  CHECK_OK(clg_clblast_tuning_path("d", "v", buf, sizeof buf));
  CHECK_STR(buf, "/home/someone/.cache/clgraph/clblast/d--v.json");
  unsetenv("HOME");
  CHECK_CODE(clg_clblast_tuning_path("d", "v", buf, sizeof buf), CLG_NOT_FOUND);
  if (home)
    setenv("HOME", home, 1);
  free(home);
  setenv("XDG_CACHE_HOME", dir, 1);
}

int main(void)
{
  clg_test_seed(25);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/clg-tuning-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  setenv("XDG_CACHE_HOME", dir, 1);
  test_paths();
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_clblast_tuning");
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(NULL, &devs));
  clg_device *dev = devs ? clg_devices_at(devs, 1) : NULL;
  if (dev) {
    CHECK_OK(clg_clblast_tuning_path(dev->info.cl_name, dev->info.driver_version, cache_file,
                                     sizeof cache_file));
#ifdef CLG_HAVE_CLBLAST
    test_defaults(dev);
    test_bad_files(dev);
    test_key(dev);
    test_applied(dev);
#else
    clg_clblast_tune(dev); /* nothing to tune without CLBlast */
    CHECK(true);
#endif
  }
  clg_clblast_clear();
  clg_devices_free(devs);
  char folder[600];
  snprintf(folder, sizeof folder, "%s/clgraph/clblast", dir);
  rmdir(folder);
  snprintf(folder, sizeof folder, "%s/clgraph", dir);
  rmdir(folder);
  CHECK(rmdir(dir) == 0);
  return clg_test_summary("test_clblast_tuning");
}
