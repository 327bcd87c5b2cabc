/* The OpenCL backend's one program cache, and the launches that use it.
 *
 * A kernel file names its OpenCL C as a clg_cl_text (embedded cl/<name>.cl, or text); the
 * first launch on a context builds it, for float and, on devices with fp64, for double (T
 * is the element type), for every device of the context that supports the dtype (four
 * devices sharing a context cost one build), and keeps it for every later launch. Kernel
 * objects are made per (program, device, kernel name) and used behind that device slot's
 * lock, held only for the argument setting and the enqueue, because clSetKernelArg on a
 * shared kernel object is not thread-safe (creating kernels per call instead would cost a
 * clCreateKernel and its release on every launch). Cached programs hold a reference to
 * their context: clg_cl_release_all drops them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"

#define WG_MAX 256
#define MAX_KERNELS 32

typedef struct slot {
  cl_device_id device;
  pthread_mutex_t lock;
  int num_kernels;
  char *names[MAX_KERNELS]; /* copies: callers may build names in stack buffers */
  cl_kernel kernels[MAX_KERNELS];
  size_t wg[MAX_KERNELS];
} slot;

typedef struct program {
  cl_context context;
  clg_dtype dtype;
  const clg_cl_text *source;
  clg_cl_style style;
  pthread_mutex_t lock; /* guards building */
  bool built;
  cl_program handle;
  int num_slots;
  slot *slots;
  struct program *next;
} program;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static program *cache_head;

static void program_release(program *p)
{
  for (int i = 0; i < p->num_slots; i++) {
    for (int k = 0; k < p->slots[i].num_kernels; k++) {
      clReleaseKernel(p->slots[i].kernels[k]);
      free(p->slots[i].names[k]);
    }
    pthread_mutex_destroy(&p->slots[i].lock);
  }
  free(p->slots);
  p->slots = NULL;
  p->num_slots = 0;
  if (p->handle)
    clReleaseProgram(p->handle);
  p->handle = NULL;
}

static bool is_ident_start(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

static bool is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Checks the syntax of CLGRAPH_CL_BUILD_OPTIONS before clBuildProgram sees it: PoCL 3.1
 * dereferences a missing argument of -D or -I (SIGSEGV), so each option that takes one must
 * have it, -D's macro name must be an identifier, quotes must pair, and every word must be
 * an option or an option's argument. */
static clg_code check_build_options(const char *opts)
{
  const char *var = "CLGRAPH_CL_BUILD_OPTIONS";
  const char *need_arg = NULL; /* the option whose argument is the next word */
  const char *p = opts;
  for (;;) {
    while (is_space(*p))
      p++;
    if (!*p)
      break;
    const char *w = p;
    char quote = 0;
    for (; *p && (quote || !is_space(*p)); p++) {
      unsigned char c = (unsigned char)*p;
      if (c < 0x20 || c == 0x7f)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s='%s': control character 0x%02x at offset %zu is not allowed", var,
                         opts, c, (size_t)(p - opts));
      if (quote && c == (unsigned char)quote)
        quote = 0;
      else if (!quote && (c == '"' || c == '\''))
        quote = (char)c;
    }
    if (quote)
      return clg_error(CLG_INVALID_ARGUMENT, "%s='%s': unbalanced %s quote in option '%.*s'", var,
                       opts, quote == '"' ? "double" : "single", (int)(p - w), w);
    int len = (int)(p - w);
    const char *arg = NULL; /* -D's macro definition, attached or not */
    if (need_arg) {
      if (*w == '-')
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s='%s': option '%s' needs an argument, but is followed by '%.*s'", var,
                         opts, need_arg, len, w);
      if (need_arg[1] == 'D')
        arg = w;
      need_arg = NULL;
    } else if (*w != '-') {
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s='%s': '%.*s' is not an option (options start with '-')", var, opts, len,
                       w);
    } else if (len == 2 && (w[1] == 'D' || w[1] == 'I' || w[1] == 'x')) {
      need_arg = w[1] == 'D' ? "-D" : w[1] == 'I' ? "-I" : "-x";
    } else if (w[1] == 'D') {
      arg = w + 2;
    } else if (w[len - 1] == '=') {
      return clg_error(CLG_INVALID_ARGUMENT, "%s='%s': option '%.*s' needs a value after '='", var,
                       opts, len, w);
    }
    if (arg) {
      const char *q = arg;
      if (is_ident_start(*q))
        for (q++; is_ident_char(*q); q++)
          ;
      if (q == arg || !(*q == '=' || *q == '\0' || is_space(*q)))
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s='%s': -D needs a macro name (an identifier) in '%.*s'", var, opts,
                         (int)(p - arg), arg);
    }
  }
  if (need_arg)
    return clg_error(CLG_INVALID_ARGUMENT, "%s='%s': option '%s' needs an argument", var, opts,
                     need_arg);
  return CLG_OK;
}

clg_code clg_cl_build_options(char *buf, size_t size)
{
  const char *extra = getenv("CLGRAPH_CL_BUILD_OPTIONS");
  clg_code code = extra ? check_build_options(extra) : CLG_OK;
  if (code != CLG_OK)
    return code;
  int len = snprintf(buf, size, "%s", extra ? extra : "");
  if (len < 0 || (size_t)len >= size)
    return clg_error(CLG_INVALID_ARGUMENT, "CLGRAPH_CL_BUILD_OPTIONS is too long (%zu bytes)",
                     extra ? strlen(extra) : 0);
  return CLG_OK;
}

/* Appends each failing device's build log to s. */
static void append_build_logs(clg_strbuf *s, cl_program prog, const cl_device_id *devs, int n)
{
  for (int i = 0; i < n; i++) {
    cl_build_status st = CL_BUILD_NONE;
    clGetProgramBuildInfo(prog, devs[i], CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL);
    if (st == CL_BUILD_SUCCESS)
      continue;
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, devs[i], CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
      continue;
    char *log = malloc(len + 1);
    if (!log)
      continue;
    if (clGetProgramBuildInfo(prog, devs[i], CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) {
      log[len] = '\0';
      char name[256] = "";
      clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
      clg_strbuf_printf(s, "\nbuild log for OpenCL device %d of the context ('%s'):\n%s", i, name,
                        log);
    }
    free(log);
  }
}

/* Generated from the cl folder by cl/embed_cl.cmake. */
const char *clg_cl_source(const char *name);

/* The build options: CLGRAPH_CL_BUILD_OPTIONS (checked), after -DCLG_DOUBLE for a double
 * build of a source that defines T itself. */
static clg_code program_options(const program *p, char *options, size_t size)
{
  char extra[512];
  clg_code code = clg_cl_build_options(extra, sizeof extra);
  if (code != CLG_OK)
    return code;
  const char *dopt = p->style == CLG_CL_OWN_T && p->dtype == CLG_FLOAT64 ? "-DCLG_DOUBLE" : "";
  int len = snprintf(options, size, "%s%s%s", dopt, *dopt && *extra ? " " : "", extra);
  if (len < 0 || (size_t)len >= size)
    return clg_error(CLG_INVALID_ARGUMENT, "CLGRAPH_CL_BUILD_OPTIONS is too long (%zu bytes)",
                     strlen(extra));
  return CLG_OK;
}

/* Records a failed clBuildProgram: a source that defines T itself (an embedded file) is
 * named with its options and each failing device's log, the others with the asking
 * device's log. */
static clg_code build_failed(program *p, const clg_device *dev, cl_int err, const char *options,
                             const cl_device_id *use, int nuse)
{
  if (p->style == CLG_CL_OWN_T) {
    clg_strbuf s;
    clg_strbuf_init(&s);
    clg_strbuf_printf(&s, "building cl/%s.cl (%s, options '%s') for %s (%s) failed: %s (%d)",
                      p->source->name, p->dtype == CLG_FLOAT64 ? "double" : "float", options,
                      dev->info.name, dev->info.cl_name ? dev->info.cl_name : "",
                      clg_cl_error_name(err), err);
    append_build_logs(&s, p->handle, use, nuse);
    clg_code code = clg_error(CLG_INTERNAL, "%s", s.buf ? s.buf : "kernel build failed");
    clg_strbuf_free(&s);
    return code;
  }
  size_t len = 0;
  char log[2048] = "";
  clGetProgramBuildInfo(p->handle, clg_cl_device_id(dev), CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                        &len);
  return clg_error(CLG_INTERNAL, "building the %s kernels (%s) for %s failed: %s (%d)\n%s",
                   p->source->name, clg_dtype_name(p->dtype), dev->info.name,
                   clg_cl_error_name(err), err, log);
}

/* --- built programs' binaries, kept for the process ----------------------------------
 * Each process state has contexts of its own, so every new session built its programs
 * again, and PoCL 3.1 runs its preprocessor on every clBuildProgram from source even when
 * its disk cache holds the result (about 0.5 s a program for the four stand-ins). A built
 * program's binaries (CL_PROGRAM_BINARIES) are kept per device, with the exact text and
 * options that made them, until exit; a later build whose devices all have one makes its
 * program from them. Any failure on that path builds from the source instead.
 * CLGRAPH_CL_PROGRAM_BINARIES=0 turns it off (read on every build). */
typedef struct kept {
  char *key; /* options, '\0', the texts: what clCreateProgramWithSource was given */
  size_t key_len;
  int num_devices;
  cl_device_id *devices;
  size_t *sizes;
  unsigned char **binaries;
  struct kept *next;
} kept;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept *kept_head;

static void kept_free(kept *k)
{
  for (int i = 0; i < k->num_devices; i++)
    free(k->binaries[i]);
  free(k->binaries);
  free(k->sizes);
  free(k->devices);
  free(k->key);
  free(k);
}

static void kept_release_all(void)
{
  pthread_mutex_lock(&kept_lock);
  kept *k = kept_head;
  kept_head = NULL;
  pthread_mutex_unlock(&kept_lock);
  while (k) {
    kept *next = k->next;
    kept_free(k);
    k = next;
  }
}

static void kept_register_exit(void) { atexit(kept_release_all); }

static bool kept_enabled(void)
{
  const char *env = getenv("CLGRAPH_CL_PROGRAM_BINARIES");
  return !(env && strcmp(env, "0") == 0);
}

/* The key of a build: its options and its texts, in one buffer. */
static char *kept_key(const char *options, const char *const *texts, int ntexts, size_t *len)
{
  size_t n = strlen(options) + 1;
  for (int i = 0; i < ntexts; i++)
    n += strlen(texts[i]);
  char *key = malloc(n);
  if (!key)
    return NULL;
  size_t at = strlen(options) + 1;
  memcpy(key, options, at);
  for (int i = 0; i < ntexts; i++) {
    size_t l = strlen(texts[i]);
    memcpy(key + at, texts[i], l);
    at += l;
  }
  *len = n;
  return key;
}

static int kept_index(const kept *k, cl_device_id d)
{
  for (int i = 0; i < k->num_devices; i++)
    if (k->devices[i] == d)
      return i;
  return -1;
}

/* A program of the kept binaries of the key for all n devices, built; NULL when some
 * device has none or the driver refuses them. */
static cl_program kept_program(cl_context context, const cl_device_id *devs, int n, const char *key,
                               size_t key_len, const char *options)
{
  size_t *sizes = calloc((size_t)n, sizeof *sizes);
  const unsigned char **bins = calloc((size_t)n, sizeof *bins);
  cl_program prog = NULL;
  bool found = false;
  /* Held until the driver has copied the binaries: kept_add may replace the entry. */
  pthread_mutex_lock(&kept_lock);
  for (kept *k = kept_head; k && sizes && bins && !found; k = k->next) {
    if (k->key_len != key_len || memcmp(k->key, key, key_len) != 0)
      continue;
    found = true;
    for (int i = 0; i < n && found; i++) {
      int at = kept_index(k, devs[i]);
      found = at >= 0;
      if (found) {
        sizes[i] = k->sizes[at];
        bins[i] = k->binaries[at];
      }
    }
  }
  if (found) {
    cl_int err = CL_SUCCESS;
    prog = clCreateProgramWithBinary(context, (cl_uint)n, devs, sizes, bins, NULL, &err);
    if (err != CL_SUCCESS)
      prog = NULL;
  }
  pthread_mutex_unlock(&kept_lock);
  if (prog && clBuildProgram(prog, (cl_uint)n, devs, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(prog);
    prog = NULL;
  }
  free(sizes);
  free(bins);
  return prog;
}

/* Keeps the binaries of built program prog for its n devices under key (taken over; freed
 * when they cannot be kept). */
static void kept_add(cl_program prog, const cl_device_id *devs, int n, char *key, size_t key_len)
{
  kept *k = calloc(1, sizeof *k);
  cl_uint ndev = 0;
  bool ok =
      k && (k->devices = calloc((size_t)n, sizeof *k->devices)) &&
      (k->sizes = calloc((size_t)n, sizeof *k->sizes)) &&
      (k->binaries = calloc((size_t)n, sizeof *k->binaries)) &&
      clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) == CL_SUCCESS &&
      ndev == (cl_uint)n &&
      clGetProgramInfo(prog, CL_PROGRAM_DEVICES, (size_t)n * sizeof *k->devices, k->devices,
                       NULL) == CL_SUCCESS &&
      clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, (size_t)n * sizeof *k->sizes, k->sizes,
                       NULL) == CL_SUCCESS;
  if (k && k->binaries)
    k->num_devices = n;
  for (int i = 0; ok && i < n; i++)
    ok = k->sizes[i] > 0 && (k->binaries[i] = malloc(k->sizes[i]));
  /* (the devices come in the program's order, which the binaries follow) */
  ok = ok && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, (size_t)n * sizeof *k->binaries,
                              k->binaries, NULL) == CL_SUCCESS;
  for (int i = 0; ok && i < n; i++)
    ok = kept_index(k, devs[i]) >= 0;
  if (!ok) {
    free(key);
    if (k)
      kept_free(k);
    return;
  }
  k->key = key;
  k->key_len = key_len;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, kept_register_exit);
  /* The new entry replaces one of the same key whose devices it covers (whose binaries
   * then failed to build), so that the list holds one per key and device set. */
  pthread_mutex_lock(&kept_lock);
  for (kept **at = &kept_head; *at;) {
    kept *old = *at;
    bool covered = old->key_len == key_len && memcmp(old->key, key, key_len) == 0;
    for (int i = 0; covered && i < old->num_devices; i++)
      covered = kept_index(k, old->devices[i]) >= 0;
    if (covered) {
      *at = old->next;
      kept_free(old);
    } else {
      at = &old->next;
    }
  }
  k->next = kept_head;
  kept_head = k;
  pthread_mutex_unlock(&kept_lock);
}

static clg_code program_build(program *p, const clg_device *dev)
{
  static const char prelude_f[] = "typedef float T;\n";
  static const char prelude_d[] = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                                  "typedef double T;\n";
  /* Without text, the source is the embedded cl/<name>.cl. */
  const char *body = p->source->text ? p->source->text : clg_cl_source(p->source->name);
  if (!body)
    return clg_error(CLG_INTERNAL, "cl/%s.cl is not embedded in this build", p->source->name);
  const char *texts[2] = {p->dtype == CLG_FLOAT64 ? prelude_d : prelude_f, body};
  bool own_t = p->style == CLG_CL_OWN_T; /* no prelude */
  cl_uint ndev = 0;
  cl_int err = clGetContextInfo(p->context, CL_CONTEXT_NUM_DEVICES, sizeof ndev, &ndev, NULL);
  if (err != CL_SUCCESS || ndev == 0)
    return clg_cl_error(err != CL_SUCCESS ? err : CL_INVALID_CONTEXT, "clGetContextInfo",
                        " for the %s kernels on %s", p->source->name, dev->info.name);
  cl_device_id *all = calloc(ndev, sizeof *all);
  if (!all)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory building %s", p->source->name);
  err = clGetContextInfo(p->context, CL_CONTEXT_DEVICES, ndev * sizeof *all, all, NULL);
  int nuse = 0;
  for (cl_uint i = 0; err == CL_SUCCESS && i < ndev; i++) {
    cl_device_fp_config cfg = 0;
    if (p->dtype == CLG_FLOAT64 && (clGetDeviceInfo(all[i], CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg,
                                                    &cfg, NULL) != CL_SUCCESS ||
                                    cfg == 0))
      continue;
    all[nuse++] = all[i];
  }
  clg_code code = CLG_OK;
  if (err != CL_SUCCESS) {
    code = clg_cl_error(err, "clGetContextInfo", " for the %s kernels on %s", p->source->name,
                        dev->info.name);
    goto done;
  }
  char options[512];
  if ((code = program_options(p, options, sizeof options)) != CLG_OK)
    goto done;
  char *key = NULL;
  size_t key_len = 0;
  if (nuse > 0 && kept_enabled())
    key = kept_key(options, own_t ? texts + 1 : texts, own_t ? 1 : 2, &key_len);
  bool from_binaries = false;
  if (key && (p->handle = kept_program(p->context, all, nuse, key, key_len, options))) {
    from_binaries = true;
    free(key);
    key = NULL;
  } else {
    p->handle =
        clCreateProgramWithSource(p->context, own_t ? 1 : 2, own_t ? texts + 1 : texts, NULL, &err);
    if (err != CL_SUCCESS) {
      p->handle = NULL;
      free(key);
      code = clg_cl_error(err, "clCreateProgramWithSource", " for the %s kernels on %s",
                          p->source->name, dev->info.name);
      goto done;
    }
    err = clBuildProgram(p->handle, (cl_uint)nuse, all, options, NULL, NULL);
    if (err != CL_SUCCESS) {
      free(key);
      code = build_failed(p, dev, err, options, all, nuse);
      goto done;
    }
    if (key)
      kept_add(p->handle, all, nuse, key, key_len);
  }
  if (!(p->slots = calloc((size_t)nuse, sizeof *p->slots))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory building %s", p->source->name);
    goto done;
  }
  for (int i = 0; i < nuse; i++) {
    p->slots[i].device = all[i];
    pthread_mutex_init(&p->slots[i].lock, NULL);
  }
  p->num_slots = nuse;
  p->built = true;
  if (own_t)
    clg_log(CLG_LOG_DEBUG, "built cl/%s.cl (%s) for %d device(s) of the context of %s%s",
            p->source->name, p->dtype == CLG_FLOAT64 ? "double" : "float", nuse, dev->info.name,
            from_binaries ? " from the binaries kept" : "");
done:
  free(all);
  if (code != CLG_OK)
    program_release(p); /* not cached: the next launch tries again */
  return code;
}

static clg_code program_get(const clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                            clg_cl_style style, program **out)
{
  cl_context context = clg_cl_context(dev);
  pthread_mutex_lock(&cache_lock);
  program *p = cache_head;
  while (p && !(p->context == context && p->dtype == dtype && p->source == src))
    p = p->next;
  if (!p) {
    if (!(p = calloc(1, sizeof *p))) {
      pthread_mutex_unlock(&cache_lock);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    }
    p->context = context;
    p->dtype = dtype;
    p->source = src;
    p->style = style;
    pthread_mutex_init(&p->lock, NULL);
    p->next = cache_head;
    cache_head = p;
  }
  pthread_mutex_unlock(&cache_lock);
  clg_code code = CLG_OK;
  pthread_mutex_lock(&p->lock);
  if (!p->built)
    code = program_build(p, dev);
  pthread_mutex_unlock(&p->lock);
  *out = p;
  return code;
}

/* The kernel `name` of slot s, made on first use. Called with s->lock held. */
static clg_code slot_kernel(program *p, slot *s, const char *name, int *index)
{
  for (int k = 0; k < s->num_kernels; k++)
    if (strcmp(s->names[k], name) == 0) {
      *index = k;
      return CLG_OK;
    }
  if (s->num_kernels == MAX_KERNELS)
    return clg_error(CLG_INTERNAL, "%s: more than %d kernels", p->source->name, MAX_KERNELS);
  cl_int err;
  cl_kernel k = clCreateKernel(p->handle, name, &err);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, "clCreateKernel", " for %s (%s)", name, p->source->name);
  size_t wg = WG_MAX, max_items[16] = {WG_MAX};
  clGetKernelWorkGroupInfo(k, s->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  clGetDeviceInfo(s->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof max_items, max_items, NULL);
  if (wg > WG_MAX)
    wg = WG_MAX;
  if (max_items[0] && wg > max_items[0])
    wg = max_items[0];
  size_t pow2 = 1;
  while (pow2 * 2 <= wg)
    pow2 *= 2;
  if (!(s->names[s->num_kernels] = clg_strdup(name))) {
    clReleaseKernel(k);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for kernel %s", name);
  }
  s->kernels[s->num_kernels] = k;
  s->wg[s->num_kernels] = pow2;
  *index = s->num_kernels++;
  return CLG_OK;
}

/* Launches `global` work-items in groups of `local` (0: the slot's size, rounding global up
 * to it). max_local > 0 caps the group at the smallest power of two >= max_local. */
static clg_code launch(clg_device *dev, clg_dtype dtype, const clg_cl_text *src, clg_cl_style style,
                       const char *kernel, const clg_cl_arg *args, int nargs, size_t count,
                       size_t groups, size_t max_local)
{
  if (!dev || dev->is_host || !clg_cl_queue(dev))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: not an OpenCL device", kernel);
  if (dtype != CLG_FLOAT32 && !(dtype == CLG_FLOAT64 && dev->info.has_fp64))
    return clg_error(CLG_UNIMPLEMENTED, "%s: no OpenCL kernel for %s on %s", kernel,
                     clg_dtype_name(dtype), dev->info.name);
  if (count == 0 && groups == 0)
    return CLG_OK;
  program *p = NULL;
  clg_code code = program_get(dev, dtype, src, style, &p);
  if (code != CLG_OK)
    return code;
  slot *s = NULL;
  for (int i = 0; i < p->num_slots && !s; i++)
    if (p->slots[i].device == clg_cl_device_id(dev))
      s = &p->slots[i];
  if (!s)
    return clg_error(CLG_INTERNAL, "%s: not built for %s", src->name, dev->info.name);
  pthread_mutex_lock(&s->lock);
  int k = 0;
  code = slot_kernel(p, s, kernel, &k);
  cl_int err = CL_SUCCESS;
  const char *call = "clSetKernelArg";
  for (int i = 0; code == CLG_OK && i < nargs && err == CL_SUCCESS; i++)
    err = clSetKernelArg(s->kernels[k], (cl_uint)i, args[i].size, args[i].value);
  if (code == CLG_OK && err == CL_SUCCESS) {
    size_t local = s->wg[k];
    while (max_local && local / 2 >= max_local)
      local /= 2;
    size_t global = groups ? groups * local : (count + local - 1) / local * local;
    call = "clEnqueueNDRangeKernel";
    err = clEnqueueNDRangeKernel(clg_cl_queue(dev), s->kernels[k], 1, NULL, &global, &local, 0,
                                 NULL, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  if (code == CLG_OK && err != CL_SUCCESS)
    code = clg_cl_error(err, call, " for %s on %s", kernel, dev->info.name);
  return code;
}

clg_code clg_cl_launch(clg_device *dev, clg_dtype dtype, const clg_cl_text *src, const char *kernel,
                       const clg_cl_arg *args, int nargs, size_t count)
{
  return launch(dev, dtype, src, CLG_CL_PRELUDE, kernel, args, nargs, count, 0, 0);
}

clg_code clg_cl_launch_own(clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                           const char *kernel, const clg_cl_arg *args, int nargs, size_t count)
{
  return launch(dev, dtype, src, CLG_CL_OWN_T, kernel, args, nargs, count, 0, 0);
}

clg_code clg_cl_program_prepare(const clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                                clg_cl_style style)
{
  program *p = NULL;
  return program_get(dev, dtype, src, style, &p);
}

clg_code clg_cl_launch_groups(clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                              const char *kernel, const clg_cl_arg *args, int nargs, size_t groups,
                              size_t max_local)
{
  return launch(dev, dtype, src, CLG_CL_PRELUDE, kernel, args, nargs, 0, groups,
                max_local ? max_local : 1);
}

clg_code clg_cl_unary(clg_device *dev, const clg_cl_text *src, clg_dtype dtype, const clg_block *x,
                      const clg_block *y, size_t count)
{
  size_t es = clg_dtype_size(dtype);
  if (!x || !y || !x->mem || !y->mem || es == 0 || x->offset % es || y->offset % es ||
      x->size / es < count || y->size / es < count)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: bad blocks for %zu elements", src->name, count);
  cl_ulong xo = x->offset / es, yo = y->offset / es, n = count;
  clg_cl_arg args[] = {{sizeof(cl_mem), &x->mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &y->mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n}};
  return clg_cl_launch(dev, dtype, src, "clg_unary", args, 5, count);
}

static void programs_release(void)
{
  pthread_mutex_lock(&cache_lock);
  program *p = cache_head;
  cache_head = NULL;
  pthread_mutex_unlock(&cache_lock);
  while (p) {
    program *next = p->next;
    program_release(p);
    pthread_mutex_destroy(&p->lock);
    free(p);
    p = next;
  }
}

void clg_cl_release_all(void)
{
  programs_release();
#ifdef CLG_HAVE_CLBLAST
  /* CLBlast keeps compiled programs per context in process-global caches; drop them too
   * so that the contexts can really be released (PoCL's disk cache makes a rebuild cheap). */
  clg_clblast_clear(); /* under the CLBlast lock; the next process state tunes again */
#endif
}
