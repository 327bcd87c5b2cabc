/* CLBlast tuned per card: the parameters CLBlast's tuners (clblast_tuner_xgemm,
 * clblast_tuner_xgemm_direct, ... of Debian's clblast-utils) found best on a device, applied
 * with CLBlastOverrideParameters before CLBlast's first use of that device.
 *
 * CLBlast ships tuned parameters for the cards its authors measured; on others (an H200,
 * PoCL) it falls back to defaults that can be several times slower. Its tuners measure a
 * card in minutes and write one JSON file per kernel family and precision
 * (clblast_xgemm_1_32.json: "kernel_family", "precision", "device", "results": [{"kernel",
 * "time", "parameters": {...}}]). clgraph reads those files as they are:
 *
 *  - CLGRAPH_CLBLAST_TUNING=FILE: a tuner's JSON object, or a JSON array of them (the files
 *    of several tuners concatenated between brackets). An object applies to the devices
 *    whose CL_DEVICE_NAME is its "device", and, if it has a "driver_version" (the tuners
 *    write none; add one to keep tunings of two drivers in one file), whose CL_DRIVER_VERSION
 *    is that too. CLGRAPH_CLBLAST_TUNING=off applies nothing.
 *  - otherwise the device's file in the cache folder, if there is one:
 *    $XDG_CACHE_HOME/clgraph/clblast/<device name>--<driver version>.json (~/.cache when
 *    XDG_CACHE_HOME is unset; characters other than letters, digits, '.', '_' and '-'
 *    become '_'), so a new driver starts from CLBlast's defaults until it is tuned again.
 *
 * For each kernel and precision the result with the lowest time across the matching objects
 * wins. A file that cannot be read or does not have that shape, and an override CLBlast
 * refuses, are warnings naming the file: CLBlast then keeps its defaults, which compute the
 * same products. A device is tuned once per process state (clg_clblast_clear forgets it);
 * an applied override lasts as long as the process, since CLBlast keeps overrides in a
 * cache that CLBlastClearCache does not clear. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/opencl/opencl.h"

#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>
#include <jansson.h>
#endif

clg_code clg_clblast_tuning_path(const char *cl_name, const char *driver_version, char *buf,
                                 size_t size)
{
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/')
    n = snprintf(buf, size, "%s/clgraph/clblast/", xdg);
  else if (home && *home)
    n = snprintf(buf, size, "%s/.cache/clgraph/clblast/", home);
  else
    return clg_error(CLG_NOT_FOUND, "no cache folder for CLBlast tunings: neither "
                                    "XDG_CACHE_HOME nor HOME is set");
  size_t len = n > 0 ? (size_t)n : 0;
  const char *parts[] = {cl_name ? cl_name : "", "--", driver_version ? driver_version : "",
                         ".json"};
  for (int p = 0; p < 4; p++)
    for (const char *c = parts[p]; *c && len + 1 < size; c++, len++)
      buf[len] =
          (p == 1 || p == 3 || isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-')
              ? *c
              : '_';
  if (n < 0 || len + 1 >= size)
    return clg_error(CLG_INVALID_ARGUMENT, "the CLBlast tuning path for '%s' is too long",
                     cl_name ? cl_name : "");
  buf[len] = '\0';
  return CLG_OK;
}

#ifdef CLG_HAVE_CLBLAST

/* The kernels of CLBlast's database that a tuner's kernel_family sets ("xgemm_1" and
 * "xgemm_11" both tune Xgemm, with GEMMK 0 and 1). */
static const struct {
  const char *family, *kernel;
} families[] = {{"xgemm", "Xgemm"},
                {"xgemm_direct", "XgemmDirect"},
                {"copy", "Copy"},
                {"pad", "Pad"},
                {"transpose", "Transpose"},
                {"padtranspose", "Padtranspose"},
                {"gemm_routine", "GemmRoutine"},
                {"xaxpy", "Xaxpy"},
                {"xdot", "Xdot"},
                {"xgemv", "Xgemv"},
                {"xger", "Xger"},
                {"invert", "Invert"},
                {"xconvgemm", "Xconvgemm"}};

/* The database kernel of a family: the family itself or followed by "_<digits>". */
static const char *family_kernel(const char *family)
{
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    size_t n = strlen(families[i].family);
    if (strncmp(family, families[i].family, n) != 0)
      continue;
    const char *rest = family + n;
    if (*rest == '\0')
      return families[i].kernel;
    if (*rest == '_' && rest[1]) {
      const char *d = rest + 1;
      while (isdigit((unsigned char)*d))
        d++;
      if (*d == '\0')
        return families[i].kernel;
    }
  }
  return NULL;
}

static const char *precision_word(int p)
{
  switch (p) {
  case 16:
    return "half";
  case 32:
    return "single";
  case 64:
    return "double";
  case 3232:
    return "complex single";
  case 6464:
    return "complex double";
  default:
    return NULL;
  }
}

#define MAX_PARAMS 32
#define MAX_CHOICES 32

/* The best result found so far for one kernel and precision. */
typedef struct choice {
  const char *kernel;
  int precision;
  double time;
  int nparams;
  char *names[MAX_PARAMS];
  size_t values[MAX_PARAMS];
} choice;

typedef struct tuning {
  const char *file;
  const clg_device *dev;
  int nchoices;
  choice choices[MAX_CHOICES];
  int matched;       /* objects for this device */
  clg_strbuf others; /* devices the other objects are for */
  clg_strbuf log;    /* lines to log once the lock is released: "W..." or "I..." */
} tuning;

static void note(tuning *t, char level, const char *fmt, ...) CLG_PRINTF(3, 4);

static void note(tuning *t, char level, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  clg_strbuf_printf(&t->log, "%c%s\n", level, line);
}

static void choice_clear(choice *c)
{
  for (int i = 0; i < c->nparams; i++)
    free(c->names[i]);
  c->nparams = 0;
}

/* A number as the tuners write it; jansson reads "1" as an integer and "1.5" as a real. */
static bool json_number(const json_t *v, double *out)
{
  if (json_is_integer(v))
    *out = (double)json_integer_value(v);
  else if (json_is_real(v))
    *out = json_real_value(v);
  else
    return false;
  return true;
}

/* The precision of an object: a string ("32", as the tuners write it) or a number. */
static int object_precision(const json_t *obj)
{
  const json_t *p = json_object_get(obj, "precision");
  double v;
  if (json_is_string(p)) {
    char *end;
    long l = strtol(json_string_value(p), &end, 10);
    return *end == '\0' && precision_word((int)l) ? (int)l : 0;
  }
  if (json_number(p, &v) && v == floor(v) && precision_word((int)v))
    return (int)v;
  return 0;
}

/* Takes result r of object i as the choice for (kernel, precision) if it is the fastest. */
static void consider(tuning *t, const char *kernel, int precision, const json_t *params,
                     double time, int i, size_t r)
{
  choice *c = NULL;
  for (int k = 0; k < t->nchoices && !c; k++)
    if (strcmp(t->choices[k].kernel, kernel) == 0 && t->choices[k].precision == precision)
      c = &t->choices[k];
  if (!c) {
    if (t->nchoices == MAX_CHOICES) {
      note(t, 'W',
           "CLBlast tuning file %s: more than %d kernels and precisions; entry %d "
           "ignored",
           t->file, MAX_CHOICES, i);
      return;
    }
    c = &t->choices[t->nchoices++];
    memset(c, 0, sizeof *c);
    c->kernel = kernel;
    c->precision = precision;
    c->time = INFINITY;
  }
  if (!(time < c->time))
    return;
  choice next = *c;
  next.nparams = 0;
  const char *name;
  json_t *value;
  json_object_foreach((json_t *)params, name, value)
  {
    double v;
    if (strcmp(name, "PRECISION") == 0) /* the routine tuner's; not a kernel parameter */
      continue;
    const char *bad =
        !json_number(value, &v) || v < 0 || v != floor(v) || v > 1e15 ? "is not a whole number"
        : next.nparams == MAX_PARAMS ? "is one too many" /* CLBlast's have 16 */
        : (next.names[next.nparams] = clg_strdup(name)) == NULL ? "is out of host memory"
                                                                : NULL;
    if (bad) {
      note(t, 'W', "CLBlast tuning file %s: entry %d, result %zu: parameter %s %s; result ignored",
           t->file, i, r, name, bad);
      choice_clear(&next);
      return;
    }
    next.values[next.nparams++] = (size_t)v;
  }
  choice_clear(c);
  *c = next;
  c->time = time;
}

/* One object of the file: a tuner's output. */
static void read_object(tuning *t, const json_t *obj, int i)
{
  const clg_device_info *info = &t->dev->info;
  if (!json_is_object(obj)) {
    note(t, 'W', "CLBlast tuning file %s: entry %d is not a JSON object (a tuner's output)",
         t->file, i);
    return;
  }
  const json_t *device = json_object_get(obj, "device");
  const json_t *driver = json_object_get(obj, "driver_version");
  const json_t *family = json_object_get(obj, "kernel_family");
  const json_t *results = json_object_get(obj, "results");
  const char *missing = !json_is_string(device)             ? "\"device\" (a string)"
                        : !json_is_string(family)           ? "\"kernel_family\" (a string)"
                        : !json_is_array(results)           ? "\"results\" (an array)"
                        : driver && !json_is_string(driver) ? "\"driver_version\" as a string"
                                                            : NULL;
  if (missing) {
    note(t, 'W', "CLBlast tuning file %s: entry %d has no %s", t->file, i, missing);
    return;
  }
  /* Names as clgraph reads them: without the padding some drivers leave around them. */
  char *want = clg_strdup(json_string_value(device));
  if (!want)
    return;
  size_t n = strlen(want);
  while (n > 0 && isspace((unsigned char)want[n - 1]))
    want[--n] = '\0';
  const char *w = want;
  while (isspace((unsigned char)*w))
    w++;
  bool same_name = strcmp(w, info->cl_name) == 0;
  bool same_driver = !driver || strcmp(json_string_value(driver), info->driver_version) == 0;
  if (!same_name || !same_driver) {
    clg_strbuf_printf(&t->others, "%s'%s'%s%s%s", t->others.len ? ", " : "", w,
                      driver ? " (driver " : "", driver ? json_string_value(driver) : "",
                      driver ? ")" : "");
    free(want);
    return;
  }
  free(want);
  t->matched++;
  const char *kernel = family_kernel(json_string_value(family));
  int precision = object_precision(obj);
  if (!kernel || !precision) {
    note(t, 'W',
         "CLBlast tuning file %s: entry %d: %s '%s' is not one clgraph knows; entry "
         "ignored",
         t->file, i, !kernel ? "kernel_family" : "precision",
         !kernel ? json_string_value(family) : "(see the file)");
    return;
  }
  size_t r;
  const json_t *res;
  json_array_foreach(results, r, res)
  {
    const json_t *params = json_object_get(res, "parameters");
    double time;
    if (!json_is_object(res) || !json_is_object(params) ||
        !json_number(json_object_get(res, "time"), &time) || !(time >= 0)) {
      note(t, 'W',
           "CLBlast tuning file %s: entry %d, result %zu has no \"parameters\" object "
           "and \"time\" number; result ignored",
           t->file, i, r);
      continue;
    }
    consider(t, kernel, precision, params, time, i, r);
  }
}

/* Reads the file and applies its choices to t->dev (under the CLBlast lock). */
static void apply_file(tuning *t, bool explicit_file)
{
  const clg_device_info *info = &t->dev->info;
  struct stat st;
  if (stat(t->file, &st) != 0) {
    if (explicit_file)
      note(t, 'W', "CLGRAPH_CLBLAST_TUNING=%s: %s; CLBlast keeps its defaults on %s", t->file,
           strerror(errno), info->name);
    else
      note(t, 'D', "no CLBlast tuning for %s (%s, driver %s) in %s", info->name, info->cl_name,
           info->driver_version, t->file);
    return;
  }
  json_error_t err;
  json_t *root = json_load_file(t->file, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    note(t, 'W',
         "CLBlast tuning file %s: not JSON: %s (line %d, column %d); CLBlast keeps its "
         "defaults on %s",
         t->file, err.text, err.line, err.column, info->name);
    return;
  }
  if (json_is_array(root)) {
    size_t i;
    json_t *obj;
    json_array_foreach(root, i, obj) read_object(t, obj, (int)i);
  } else {
    read_object(t, root, 0);
  }
  json_decref(root);
  if (t->matched == 0) {
    note(t, 'W',
         "CLBlast tuning file %s has nothing for %s ('%s', driver %s)%s%s; CLBlast "
         "keeps its defaults there",
         t->file, info->name, info->cl_name, info->driver_version,
         t->others.len ? "; it tunes " : "", t->others.len ? t->others.buf : "");
    return;
  }
  for (int k = 0; k < t->nchoices; k++) {
    choice *c = &t->choices[k];
    if (c->nparams == 0)
      continue;
    CLBlastStatusCode s = CLBlastOverrideParameters(
        clg_cl_device_id(t->dev), c->kernel, (CLBlastPrecision)c->precision, (size_t)c->nparams,
        (const char **)c->names, c->values);
    clg_strbuf params;
    clg_strbuf_init(&params);
    for (int p = 0; p < c->nparams; p++)
      clg_strbuf_printf(&params, "%s%s=%zu", p ? " " : "", c->names[p], c->values[p]);
    if (s != CLBlastSuccess)
      note(t, 'W',
           "CLBlast tuning file %s: CLBlastOverrideParameters(%s, %s) on %s failed: %s "
           "(%d); CLBlast keeps its defaults for it (parameters %s)",
           t->file, c->kernel, precision_word(c->precision), info->name, clg_clblast_status_name(s),
           (int)s, params.buf ? params.buf : "");
    else
      note(t, 'I', "CLBlast %s (%s) on %s tuned from %s: %s (%.3f ms in the tuner)", c->kernel,
           precision_word(c->precision), info->name, t->file, params.buf ? params.buf : "",
           c->time);
    clg_strbuf_free(&params);
  }
}

/* The physical devices already looked at (parts of one share a cl_device_id). */
#define MAX_TUNED 64
static cl_device_id tuned[MAX_TUNED];
static int ntuned;

void clg_clblast_tune(const clg_device *dev)
{
  if (!dev || dev->is_host || !clg_cl_device_id(dev))
    return;
  clg_clblast_lock();
  for (int i = 0; i < ntuned; i++)
    if (tuned[i] == clg_cl_device_id(dev)) {
      clg_clblast_unlock();
      return;
    }
  if (ntuned == MAX_TUNED) { /* more devices than any machine has: the rest untuned */
    clg_clblast_unlock();
    return;
  }
  tuned[ntuned++] = clg_cl_device_id(dev);
  tuning t;
  memset(&t, 0, sizeof t);
  t.dev = dev;
  clg_strbuf_init(&t.others);
  clg_strbuf_init(&t.log);
  const char *env = getenv("CLGRAPH_CLBLAST_TUNING");
  char path[4096];
  if (env && (strcmp(env, "off") == 0 || strcmp(env, "none") == 0)) {
    note(&t, 'D', "CLGRAPH_CLBLAST_TUNING=%s: CLBlast's own parameters on %s", env, dev->info.name);
  } else if (env && *env) {
    t.file = env;
    apply_file(&t, true);
  } else if (clg_clblast_tuning_path(dev->info.cl_name, dev->info.driver_version, path,
                                     sizeof path) == CLG_OK) {
    t.file = path;
    apply_file(&t, false);
  }
  for (int k = 0; k < t.nchoices; k++)
    choice_clear(&t.choices[k]);
  clg_clblast_unlock();
  /* Logged outside the lock: a log sink may do anything, MatMuls included. */
  for (char *line = t.log.buf; line && *line;) {
    char *end = strchr(line, '\n');
    *end = '\0';
    clg_log_level level = line[0] == 'W'   ? CLG_LOG_WARNING
                          : line[0] == 'I' ? CLG_LOG_INFO
                                           : CLG_LOG_DEBUG;
    clg_log(level, "%s", line + 1);
    line = end + 1;
  }
  clg_strbuf_free(&t.others);
  clg_strbuf_free(&t.log);
}

void clg_clblast_clear(void)
{
  clg_clblast_lock();
  CLBlastClearCache();
  ntuned = 0;
  clg_clblast_unlock();
}

#else

void clg_clblast_tune(const clg_device *dev) { (void)dev; }

void clg_clblast_clear(void) {}

#endif
