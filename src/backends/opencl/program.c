/* OpenCL programs that ops bring with them, and their cache.
 *
 * An op file can carry its OpenCL C as text (a clg_cl_text); the first launch on a
 * context builds it, for float and, on devices with fp64, for double (T is the element
 * type), and keeps it for every later launch. Kernel objects are made per (program,
 * device, kernel name) and used behind that device slot's lock, because clSetKernelArg
 * on a shared kernel object is not thread-safe. Cached programs hold a reference to their
 * context: clg_cl_release_all drops them. */
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

/* Generated from the cl folder by cl/embed_cl.cmake. */
const char *clg_cl_source(const char *name);

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
  p->handle = clCreateProgramWithSource(p->context, 2, texts, NULL, &err);
  if (err != CL_SUCCESS) {
    p->handle = NULL;
    code = clg_cl_error(err, "clCreateProgramWithSource", " for the %s kernels on %s",
                        p->source->name, dev->info.name);
    goto done;
  }
  const char *options = "";
  char extra[512];
  if ((code = clg_cl_build_options(extra, sizeof extra)) != CLG_OK)
    goto done;
  options = extra;
  err = clBuildProgram(p->handle, (cl_uint)nuse, all, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    size_t len = 0;
    char log[2048] = "";
    clGetProgramBuildInfo(p->handle, dev->cl_device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                          &len);
    code = clg_error(CLG_INTERNAL, "building the %s kernels (%s) for %s failed: %s (%d)\n%s",
                     p->source->name, clg_dtype_name(p->dtype), dev->info.name,
                     clg_cl_error_name(err), err, log);
    goto done;
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
done:
  free(all);
  if (code != CLG_OK)
    program_release(p); /* not cached: the next launch tries again */
  return code;
}

static clg_code program_get(const clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                            program **out)
{
  pthread_mutex_lock(&cache_lock);
  program *p = cache_head;
  while (p && !(p->context == dev->context && p->dtype == dtype && p->source == src))
    p = p->next;
  if (!p) {
    if (!(p = calloc(1, sizeof *p))) {
      pthread_mutex_unlock(&cache_lock);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    }
    p->context = dev->context;
    p->dtype = dtype;
    p->source = src;
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
static clg_code launch(clg_device *dev, clg_dtype dtype, const clg_cl_text *src, const char *kernel,
                       const clg_cl_arg *args, int nargs, size_t count, size_t groups,
                       size_t max_local)
{
  if (!dev || dev->is_host || !dev->queue)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: not an OpenCL device", kernel);
  if (dtype != CLG_FLOAT32 && !(dtype == CLG_FLOAT64 && dev->info.has_fp64))
    return clg_error(CLG_UNIMPLEMENTED, "%s: no OpenCL kernel for %s on %s", kernel,
                     clg_dtype_name(dtype), dev->info.name);
  if (count == 0 && groups == 0)
    return CLG_OK;
  program *p = NULL;
  clg_code code = program_get(dev, dtype, src, &p);
  if (code != CLG_OK)
    return code;
  slot *s = NULL;
  for (int i = 0; i < p->num_slots && !s; i++)
    if (p->slots[i].device == dev->cl_device)
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
    err =
        clEnqueueNDRangeKernel(dev->queue, s->kernels[k], 1, NULL, &global, &local, 0, NULL, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  if (code == CLG_OK && err != CL_SUCCESS)
    code = clg_cl_error(err, call, " for %s on %s", kernel, dev->info.name);
  return code;
}

clg_code clg_cl_launch(clg_device *dev, clg_dtype dtype, const clg_cl_text *src, const char *kernel,
                       const clg_cl_arg *args, int nargs, size_t count)
{
  return launch(dev, dtype, src, kernel, args, nargs, count, 0, 0);
}

clg_code clg_cl_launch_groups(clg_device *dev, clg_dtype dtype, const clg_cl_text *src,
                              const char *kernel, const clg_cl_arg *args, int nargs, size_t groups,
                              size_t max_local)
{
  return launch(dev, dtype, src, kernel, args, nargs, 0, groups, max_local ? max_local : 1);
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

void clg_cl_programs_release(void)
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
