/* OpenCL element-wise kernels (cl/elementwise.cl) and the cache of their programs.
 *
 * One program per (context, dtype), built for every device of the context that supports
 * the dtype, so that four devices sharing a context cost one build. Kernel objects are
 * cached per (program, device): clSetKernelArg is not thread-safe on a shared kernel
 * object, so each device's kernels sit behind that device's lock, held only for the
 * argument setting and the enqueue (arguments are captured at enqueue). Creating kernels
 * per call instead would cost a clCreateKernel (and its release) on every launch.
 *
 * Cached programs hold a reference to their context: clg_cl_release_all drops them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"

#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>

#endif

/* Generated from the cl folder by cl/embed_cl.cmake. */
const char *clg_cl_source(const char *name);

enum { K_ADD, K_SUB, K_MUL, K_ADDN8, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"clg_add", "clg_sub", "clg_mul", "clg_addn8"};

/* The largest work-group used; smaller when a device or kernel allows less. */
#define WG_MAX 256

typedef struct dev_slot {
  cl_device_id device;
  pthread_mutex_t lock; /* guards the kernels' arguments between set and enqueue */
  cl_kernel kernels[K_COUNT];
  size_t wg[K_COUNT];
} dev_slot;

typedef struct prog_entry {
  cl_context context;
  clg_dtype dtype;
  pthread_mutex_t lock; /* guards building */
  bool built;
  cl_program program;
  int num_slots;
  dev_slot *slots;
  struct prog_entry *next;
} prog_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static prog_entry *cache_head;

static bool device_has_fp64(cl_device_id d)
{
  cl_device_fp_config cfg = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) != CL_SUCCESS)
    return false;
  return cfg != 0;
}

static size_t pow2_floor(size_t x)
{
  size_t p = 1;
  while (p * 2 <= x)
    p *= 2;
  return p;
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

static void entry_release_objects(prog_entry *e)
{
  for (int i = 0; i < e->num_slots; i++) {
    for (int k = 0; k < K_COUNT; k++)
      if (e->slots[i].kernels[k])
        clReleaseKernel(e->slots[i].kernels[k]);
    pthread_mutex_destroy(&e->slots[i].lock);
  }
  free(e->slots);
  e->slots = NULL;
  e->num_slots = 0;
  if (e->program)
    clReleaseProgram(e->program);
  e->program = NULL;
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

/* Builds e's program for the devices of its context that support its dtype. Called with
 * e->lock held. dev is the device that asked (named in errors). */
static clg_code entry_build(prog_entry *e, const clg_device *dev)
{
  const char *dtname = e->dtype == CLG_FLOAT64 ? "double" : "float";
  const char *src = clg_cl_source("elementwise");
  if (!src)
    return clg_error(CLG_INTERNAL, "cl/elementwise.cl is not embedded in this build");

  cl_uint ndev = 0;
  cl_int err = clGetContextInfo(e->context, CL_CONTEXT_NUM_DEVICES, sizeof ndev, &ndev, NULL);
  if (err != CL_SUCCESS || ndev == 0)
    return clg_cl_error(err != CL_SUCCESS ? err : CL_INVALID_CONTEXT, "clGetContextInfo",
                        " for the element-wise kernels on %s", dev->info.name);
  cl_device_id *all = calloc(ndev, sizeof *all);
  cl_device_id *use = calloc(ndev, sizeof *use);
  if (!all || !use) {
    free(all);
    free(use);
    return clg_error(CLG_RESOURCE_EXHAUSTED,
                     "out of host memory building the element-wise kernels for %s", dev->info.name);
  }
  err = clGetContextInfo(e->context, CL_CONTEXT_DEVICES, ndev * sizeof *all, all, NULL);
  if (err != CL_SUCCESS) {
    free(all);
    free(use);
    return clg_cl_error(err, "clGetContextInfo", " for the element-wise kernels on %s",
                        dev->info.name);
  }
  int nuse = 0;
  for (cl_uint i = 0; i < ndev; i++)
    if (e->dtype != CLG_FLOAT64 || device_has_fp64(all[i]))
      use[nuse++] = all[i];
  free(all);

  clg_code code = CLG_OK;
  e->program = clCreateProgramWithSource(e->context, 1, &src, NULL, &err);
  if (err != CL_SUCCESS) {
    e->program = NULL;
    code = clg_cl_error(err, "clCreateProgramWithSource", " for cl/elementwise.cl on %s",
                        dev->info.name);
    goto done;
  }
  /* CLGRAPH_CL_BUILD_OPTIONS adds options (e.g. -cl-opt-disable for debugging kernels). */
  const char *extra = getenv("CLGRAPH_CL_BUILD_OPTIONS");
  if (extra && (code = check_build_options(extra)) != CLG_OK)
    goto done;
  char options[512];
  const char *dopt = e->dtype == CLG_FLOAT64 ? "-DCLG_DOUBLE" : "";
  int olen = snprintf(options, sizeof options, "%s%s%s", dopt, *dopt && extra ? " " : "",
                      extra ? extra : "");
  if (olen < 0 || (size_t)olen >= sizeof options) {
    code = clg_error(CLG_INVALID_ARGUMENT, "CLGRAPH_CL_BUILD_OPTIONS is too long (%zu bytes)",
                     extra ? strlen(extra) : 0);
    goto done;
  }
  err = clBuildProgram(e->program, (cl_uint)nuse, use, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    clg_strbuf s;
    clg_strbuf_init(&s);
    clg_strbuf_printf(&s,
                      "building cl/elementwise.cl (%s, options '%s') for %s (%s) failed: %s (%d)",
                      dtname, options, dev->info.name, dev->info.cl_name ? dev->info.cl_name : "",
                      clg_cl_error_name(err), err);
    append_build_logs(&s, e->program, use, nuse);
    code = clg_error(CLG_INTERNAL, "%s", s.buf ? s.buf : "element-wise kernel build failed");
    clg_strbuf_free(&s);
    goto done;
  }

  e->slots = calloc((size_t)nuse, sizeof *e->slots);
  if (!e->slots) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED,
                     "out of host memory creating the element-wise kernels for %s", dev->info.name);
    goto done;
  }
  for (int i = 0; i < nuse; i++) {
    dev_slot *sl = &e->slots[i];
    sl->device = use[i];
    pthread_mutex_init(&sl->lock, NULL);
    e->num_slots = i + 1;
    size_t max_items[16] = {WG_MAX}; /* one per dimension; OpenCL devices have 3 or more */
    clGetDeviceInfo(use[i], CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof max_items, max_items, NULL);
    if (max_items[0] == 0)
      max_items[0] = 1;
    for (int k = 0; k < K_COUNT; k++) {
      sl->kernels[k] = clCreateKernel(e->program, kernel_names[k], &err);
      if (err != CL_SUCCESS) {
        sl->kernels[k] = NULL;
        code =
            clg_cl_error(err, "clCreateKernel", " for %s on %s", kernel_names[k], dev->info.name);
        goto done;
      }
      size_t wg = WG_MAX;
      clGetKernelWorkGroupInfo(sl->kernels[k], use[i], CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                               NULL);
      if (wg > WG_MAX)
        wg = WG_MAX;
      if (wg > max_items[0])
        wg = max_items[0];
      sl->wg[k] = pow2_floor(wg ? wg : 1);
    }
  }
  e->built = true;
  clg_log(CLG_LOG_DEBUG, "built cl/elementwise.cl (%s) for %d device(s) of the context of %s",
          dtname, nuse, dev->info.name);

done:
  free(use);
  if (code != CLG_OK)
    entry_release_objects(e); /* not cached: the next call tries again */
  return code;
}

/* The built program entry for (dev's context, dtype), building it on first use. */
static clg_code entry_get(const clg_device *dev, clg_dtype dtype, prog_entry **out)
{
  pthread_mutex_lock(&cache_lock);
  prog_entry *e = cache_head;
  while (e && !(e->context == dev->context && e->dtype == dtype))
    e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&cache_lock);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    }
    e->context = dev->context;
    e->dtype = dtype;
    pthread_mutex_init(&e->lock, NULL);
    e->next = cache_head;
    cache_head = e;
  }
  pthread_mutex_unlock(&cache_lock);

  clg_code code = CLG_OK;
  pthread_mutex_lock(&e->lock);
  if (!e->built)
    code = entry_build(e, dev);
  pthread_mutex_unlock(&e->lock);
  *out = e;
  return code;
}

static dev_slot *entry_slot(prog_entry *e, cl_device_id d)
{
  for (int i = 0; i < e->num_slots; i++)
    if (e->slots[i].device == d)
      return &e->slots[i];
  return NULL;
}

static clg_code check_device(const clg_device *dev, clg_dtype dtype, const char *what)
{
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: dev is NULL", what);
  if (dev->is_host || !dev->context || !dev->queue || !dev->cl_device)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: device %s is not an OpenCL device", what,
                     dev->info.name ? dev->info.name : "(unnamed)");
  if (dtype != CLG_FLOAT32 && dtype != CLG_FLOAT64)
    return clg_error(CLG_UNIMPLEMENTED, "%s: no OpenCL kernel for dtype %d on %s", what, (int)dtype,
                     dev->info.name);
  if (dtype == CLG_FLOAT64 && !dev->info.has_fp64)
    return clg_error(CLG_UNIMPLEMENTED, "%s: %s has no double precision (cl_khr_fp64)", what,
                     dev->info.name);
  return CLG_OK;
}

/* Checks that block b holds elems elements of es bytes at an element-aligned offset. */
static clg_code check_block(const clg_block *b, const char *arg, size_t es, size_t elems,
                            const char *what)
{
  if (!b)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s is NULL", what, arg);
  if (!b->mem)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s has no cl_mem (a host block?)", what, arg);
  if (b->offset % es != 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s offset %zu is not a multiple of the element size %zu", what, arg,
                     b->offset, es);
  if (elems > b->size / es)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s holds %zu bytes, fewer than the %zu elements of %zu bytes needed",
                     what, arg, b->size, elems, es);
  return CLG_OK;
}

clg_code clg_cl_prepare(clg_device *dev)
{
  clg_code code = check_device(dev, CLG_FLOAT32, "clg_cl_prepare");
  if (code != CLG_OK)
    return code;
  prog_entry *e;
  if ((code = entry_get(dev, CLG_FLOAT32, &e)) != CLG_OK)
    return code;
  if (dev->info.has_fp64 && (code = entry_get(dev, CLG_FLOAT64, &e)) != CLG_OK)
    return code;
  return CLG_OK;
}

/* Sets args[0..nargs) on kernel k of dev's slot and enqueues count work-items. */
typedef struct karg {
  size_t size;
  const void *value;
} karg;

static clg_code launch(clg_device *dev, clg_dtype dtype, int k, const karg *args, int nargs,
                       size_t count)
{
  prog_entry *e;
  clg_code code = entry_get(dev, dtype, &e);
  if (code != CLG_OK)
    return code;
  dev_slot *sl = entry_slot(e, dev->cl_device);
  if (!sl)
    return clg_error(CLG_INTERNAL, "%s: the element-wise program was not built for %s",
                     kernel_names[k], dev->info.name);
  size_t local = sl->wg[k];
  size_t global = (count + local - 1) / local * local;
  cl_int err = CL_SUCCESS;
  const char *call = "clSetKernelArg";
  pthread_mutex_lock(&sl->lock);
  for (int i = 0; i < nargs && err == CL_SUCCESS; i++)
    err = clSetKernelArg(sl->kernels[k], (cl_uint)i, args[i].size, args[i].value);
  if (err == CL_SUCCESS) {
    call = "clEnqueueNDRangeKernel";
    err =
        clEnqueueNDRangeKernel(dev->queue, sl->kernels[k], 1, NULL, &global, &local, 0, NULL, NULL);
  }
  pthread_mutex_unlock(&sl->lock);
  if (err != CL_SUCCESS)
    return clg_cl_error(err, call, " for %s on %s", kernel_names[k], dev->info.name);
  return CLG_OK;
}

clg_code clg_cl_binary(clg_device *dev, clg_binop op, clg_dtype dtype, const clg_block *a,
                       size_t na, const clg_block *b, size_t nb, const clg_block *out, size_t count)
{
  static const char *what = "clg_cl_binary";
  clg_code code = check_device(dev, dtype, what);
  if (code != CLG_OK)
    return code;
  if (op != CLG_BINOP_ADD && op != CLG_BINOP_SUB && op != CLG_BINOP_MUL)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: op %d is not a clg_binop", what, (int)op);
  if (count == 0)
    return CLG_OK;
  if (na != count && na != 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: na is %zu; want 1 or count (%zu)", what, na, count);
  if (nb != count && nb != 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: nb is %zu; want 1 or count (%zu)", what, nb, count);
  size_t es = clg_dtype_size(dtype);
  if ((code = check_block(a, "a", es, na, what)) != CLG_OK ||
      (code = check_block(b, "b", es, nb, what)) != CLG_OK ||
      (code = check_block(out, "out", es, count, what)) != CLG_OK)
    return code;
  cl_ulong a_off = a->offset / es, b_off = b->offset / es, o_off = out->offset / es;
  cl_ulong a_step = na == 1 ? 0 : 1, b_step = nb == 1 ? 0 : 1, n = count;
  karg args[] = {{sizeof(cl_mem), &a->mem},   {sizeof a_off, &a_off}, {sizeof a_step, &a_step},
                 {sizeof(cl_mem), &b->mem},   {sizeof b_off, &b_off}, {sizeof b_step, &b_step},
                 {sizeof(cl_mem), &out->mem}, {sizeof o_off, &o_off}, {sizeof n, &n}};
  int k = op == CLG_BINOP_ADD ? K_ADD : op == CLG_BINOP_SUB ? K_SUB : K_MUL;
  return launch(dev, dtype, k, args, (int)(sizeof args / sizeof args[0]), count);
}

clg_code clg_cl_addn(clg_device *dev, clg_dtype dtype, const clg_block *inputs, int n,
                     const clg_block *out, size_t count)
{
  static const char *what = "clg_cl_addn";
  clg_code code = check_device(dev, dtype, what);
  if (code != CLG_OK)
    return code;
  if (n < 1)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: n is %d; want at least 1 input", what, n);
  if (!inputs)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: inputs is NULL", what);
  if (count == 0)
    return CLG_OK;
  size_t es = clg_dtype_size(dtype);
  for (int i = 0; i < n; i++) {
    char arg[32];
    snprintf(arg, sizeof arg, "inputs[%d]", i);
    if ((code = check_block(&inputs[i], arg, es, count, what)) != CLG_OK)
      return code;
  }
  if ((code = check_block(out, "out", es, count, what)) != CLG_OK)
    return code;

  /* Up to 8 inputs per launch; later launches add up to 7 more to the running sum in out,
   * so the order of additions is the host's: ((x0 + x1) + x2) + ... */
  cl_ulong o_off = out->offset / es, cnt = count;
  int done = 0;
  while (done < n) {
    const clg_block *blk[8];
    int used = 0;
    if (done > 0)
      blk[used++] = out;
    while (used < 8 && done < n)
      blk[used++] = &inputs[done++];
    cl_uint nin = (cl_uint)used;
    cl_ulong offs[8];
    karg args[4 + 16];
    args[0] = (karg){sizeof(cl_mem), &out->mem};
    args[1] = (karg){sizeof o_off, &o_off};
    args[2] = (karg){sizeof cnt, &cnt};
    args[3] = (karg){sizeof nin, &nin};
    for (int i = 0; i < 8; i++) {
      const clg_block *x = blk[i < used ? i : 0];
      offs[i] = x->offset / es;
      args[4 + 2 * i] = (karg){sizeof(cl_mem), &x->mem};
      args[5 + 2 * i] = (karg){sizeof offs[i], &offs[i]};
    }
    if ((code = launch(dev, dtype, K_ADDN8, args, 20, count)) != CLG_OK)
      return code;
  }
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

void clg_cl_release_all(void)
{
  clg_cl_programs_release();
  pthread_mutex_lock(&cache_lock);
  prog_entry *e = cache_head;
  cache_head = NULL;
  pthread_mutex_unlock(&cache_lock);
  while (e) {
    prog_entry *next = e->next;
    entry_release_objects(e);
    pthread_mutex_destroy(&e->lock);
    free(e);
    e = next;
  }
#ifdef CLG_HAVE_CLBLAST
  /* CLBlast keeps compiled programs per context in process-global caches; drop them too
   * so that the contexts can really be released (PoCL's disk cache makes a rebuild cheap). */
  clg_clblast_clear(); /* under the CLBlast lock; the next process state tunes again */
#endif
}
