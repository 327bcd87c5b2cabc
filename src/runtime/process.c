/* Process-wide device state. As in TensorFlow, devices and their allocators belong to the
 * process, not to a session: the first session configures them, and a later session
 * asking for a different configuration gets a warning. Unlike TensorFlow, the state is
 * released when the last session is freed, so an embedding program leaks nothing. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "device/device.h"
#include "backends/opencl/opencl.h"
#include "runtime/runtime.h"

struct clg_process {
  int refs;
  clg_devices *devs;
  clg_session_options first; /* the options of the session that created the state */
  char *visible;             /* owned copy of first.visible_device_list */
  clg_virtual_devices *virt; /* owned copy of first.virtual_devices */
  clg_allocator **allocs;    /* one per device, created on first use */
  pthread_mutex_t lock;      /* guards allocs and warned */
  char **warned;             /* "<device>|<reason>" keys already warned about */
  int num_warned;
  clg_pinned *pinned;   /* host memory for large tensors, from GPU:0's context */
  clg_cluster *cluster; /* cluster (issue 17): the tasks' devices are in devs */
  bool host_only;       /* the helpers' state: the host alone (see host_process) */
};

static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static clg_process *process;
/* The library's own host work (an import's constant folding) when no session holds the
 * process's state: a state of the host alone, so that folding starts no OpenCL driver (the
 * first enumeration costs tens of milliseconds). It configures nothing process-wide: a
 * session's state created beside it is the one later sessions get. */
static clg_process *host_process;
/* Set around the session a helper creates, so that clg_process_acquire gives it host_process. */
static _Thread_local bool helper_host_only;

static bool same_string(const char *a, const char *b)
{
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Field by field over the used slots only: memcmp would also compare the padding after
 * count and the unused tail of memory_limit_mb, which callers need not clear. */
static bool same_virtual(const clg_virtual_devices *a, const clg_virtual_devices *b)
{
  if (a->count != b->count)
    return false;
  int n = a->count < 0                         ? 0
          : a->count > CLG_MAX_VIRTUAL_PER_GPU ? CLG_MAX_VIRTUAL_PER_GPU
                                               : a->count;
  for (int i = 0; i < n; i++)
    if (a->memory_limit_mb[i] != b->memory_limit_mb[i])
      return false;
  return true;
}

static bool same_devices(const clg_session_options *a, const clg_session_options *b)
{
  if (a->device_types != b->device_types || a->num_virtual != b->num_virtual ||
      !same_string(a->visible_device_list, b->visible_device_list))
    return false;
  for (int i = 0; i < a->num_virtual; i++)
    if (!same_virtual(&a->virtual_devices[i], &b->virtual_devices[i]))
      return false;
  return true;
}

static bool same_memory(const clg_memory_options *a, const clg_memory_options *b)
{
  return !a->allow_growth == !b->allow_growth &&
         a->per_process_gpu_memory_fraction == b->per_process_gpu_memory_fraction &&
         a->host_limit == b->host_limit;
}

static void process_destroy(clg_process *p)
{
  if (!p)
    return;
  if (!p->host_only) /* the host provider and OpenCL's caches are the session state's */
    clg_tensor_set_host_provider(NULL);
  clg_pinned_close(p->pinned);
  if (p->allocs && p->devs)
    for (int i = 0; i < p->devs->count; i++)
      if (p->allocs[i]) {
        clg_device *dev = clg_devices_at(p->devs, i);
        clg_device_ops_of(dev)->finish(dev);
        clg_allocator_destroy(p->allocs[i]);
      }
  if (!p->host_only)
    clg_cl_release_all();
  clg_cluster_close(p->cluster); /* --- cluster hook */
  clg_devices_free(p->devs);
  for (int i = 0; i < p->num_warned; i++)
    free(p->warned[i]);
  free(p->warned);
  free(p->allocs);
  free(p->visible);
  free(p->virt);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* Pinned host memory for tensors of 1 MiB and more, from GPU:0's context, up to
 * CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB (TensorFlow's TF_GPU_HOST_MEM_LIMIT_IN_MB; 0 turns it off)
 * or a quarter of the host's memory. */
static void pinned_start(clg_process *p)
{
  if (p->devs->count < 2)
    return;
  uint64_t limit = clg_devices_at(p->devs, 0)->info.global_mem / 4;
  const char *raw;
  if (clg_env_mib("CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB", &limit, &raw) == 0)
    clg_log(CLG_LOG_WARNING,
            "CLGRAPH_GPU_HOST_MEM_LIMIT_IN_MB=\"%s\" is not a number of MiB; using %llu MiB", raw,
            (unsigned long long)(limit >> 20));
  p->pinned = clg_pinned_new(clg_devices_at(p->devs, 1), limit > SIZE_MAX ? SIZE_MAX : limit);
  if (p->pinned) {
    clg_host_provider hp = {1u << 20, clg_pinned_alloc, clg_pinned_release, p->pinned};
    clg_tensor_set_host_provider(&hp);
  }
}

static clg_code validate_options(const clg_session_options *opt)
{
  double f = opt->gpu_options.per_process_gpu_memory_fraction;
  char text[CLG_DOUBLE_TEXT];
  if (isnan(f) || f < 0.0 || f > 1.0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "per_process_gpu_memory_fraction must be in [0, 1] (0: the default, the "
                     "whole memory); got %s",
                     clg_double_text(f, text));
  if (f > 0.0 && opt->num_virtual > 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "It's invalid to set per_process_gpu_memory_fraction when virtual_devices "
                     "is set.");
  if (opt->num_virtual < 0 || (opt->num_virtual > 0 && !opt->virtual_devices))
    return clg_error(CLG_INVALID_ARGUMENT, "num_virtual is %d but virtual_devices is %s",
                     opt->num_virtual, opt->virtual_devices ? "set" : "NULL");
  return CLG_OK;
}

static clg_code process_create(const clg_session_options *opt, clg_process **out)
{
  clg_process *p = calloc(1, sizeof *p);
  if (!p)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating the device state");
  pthread_mutex_init(&p->lock, NULL);
  p->first = *opt;
  if (opt->visible_device_list && !(p->visible = clg_strdup(opt->visible_device_list)))
    goto oom;
  p->first.visible_device_list = p->visible;
  if (opt->num_virtual > 0) {
    p->virt = malloc(sizeof *p->virt * (size_t)opt->num_virtual);
    if (!p->virt)
      goto oom;
    memcpy(p->virt, opt->virtual_devices, sizeof *p->virt * (size_t)opt->num_virtual);
  }
  p->first.virtual_devices = p->virt;

  clg_device_config cfg;
  clg_device_config_init(&cfg);
  cfg.types = opt->device_types;
  cfg.visible_device_list = opt->visible_device_list;
  cfg.num_virtual = opt->num_virtual;
  cfg.virtual_devices = opt->virtual_devices;
  p->host_only = helper_host_only;
  clg_code code = p->host_only ? clg_devices_new_host(&p->devs) : clg_devices_new(&cfg, &p->devs);
  /* --- cluster hook: join the tasks, whose devices join the set */
  bool cluster = false;
  double timeout_s = 0;
  if (code == CLG_OK && !p->host_only)
    code = clg_cluster_resolve(opt->cluster, opt->cluster_timeout_s, &cluster, &timeout_s);
  if (code == CLG_OK && cluster)
    code = clg_cluster_open(p->devs, timeout_s, &p->cluster);
  if (code != CLG_OK) {
    process_destroy(p);
    return code;
  }
  p->allocs = calloc((size_t)p->devs->count, sizeof *p->allocs);
  if (!p->allocs)
    goto oom;
  pinned_start(p);
  *out = p;
  return CLG_OK;
oom:
  process_destroy(p);
  return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating the device state");
}

clg_code clg_process_acquire(const clg_session_options *opt, clg_process **out)
{
  clg_code code = validate_options(opt);
  if (code != CLG_OK)
    return code;
  pthread_mutex_lock(&process_lock);
  if (helper_host_only && !process) {
    if (!host_process)
      code = process_create(opt, &host_process);
    if (code == CLG_OK) {
      host_process->refs++;
      *out = host_process;
    }
    pthread_mutex_unlock(&process_lock);
    return code;
  }
  if (!process) {
    code = process_create(opt, &process);
    if (code == CLG_OK)
      clg_tensor_recycle_set(true);
  } else if (!helper_host_only) { /* a helper asks for nothing of its own */
    if (!same_devices(&process->first, opt))
      clg_log(CLG_LOG_WARNING,
              "This session asks for a device configuration (device types, "
              "visible_device_list, virtual devices) different from the one the devices of "
              "this process were created with; the existing devices are used.");
    if (!same_memory(&process->first.gpu_options, &opt->gpu_options)) {
      char asked[CLG_DOUBLE_TEXT], first[CLG_DOUBLE_TEXT];
      clg_log(CLG_LOG_WARNING,
              "This session asks for GPU memory options (allow_growth=%d, "
              "per_process_gpu_memory_fraction=%s) different from those the device allocators "
              "were created with (allow_growth=%d, per_process_gpu_memory_fraction=%s); the "
              "existing allocators are used.",
              opt->gpu_options.allow_growth,
              clg_double_text(opt->gpu_options.per_process_gpu_memory_fraction, asked),
              process->first.gpu_options.allow_growth,
              clg_double_text(process->first.gpu_options.per_process_gpu_memory_fraction, first));
    }
  }
  if (code == CLG_OK) {
    process->refs++;
    *out = process;
  }
  pthread_mutex_unlock(&process_lock);
  return code;
}

void clg_process_release(clg_process *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&process_lock);
  if (--p->refs == 0) {
    bool host_only = p->host_only;
    process_destroy(p);
    if (host_only)
      host_process = NULL;
    else {
      process = NULL;
      clg_tensor_recycle_set(false);
    }
  }
  pthread_mutex_unlock(&process_lock);
}

clg_code clg_process_helper_session(clg_graph *g, clg_session **out)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  pthread_mutex_lock(&process_lock);
  clg_process *held = process;
  if (held) {
    held->refs++; /* keeps first's strings alive while the session is created */
    opt = held->first;
    opt.log_device_placement = 0;
    opt.trace_runs = 0;
    opt.warm_matmul = 0;
    opt.oom_memory_map = "";
  } else {
    /* The state lives only as long as this session: reserve no device's whole memory. */
    opt.gpu_options.allow_growth = 1;
  }
  /* Host work joins no cluster (first.cluster is the creator's pointer, not kept). */
  opt.cluster = "none";
  pthread_mutex_unlock(&process_lock);
  helper_host_only = !held;
  clg_code code = clg_session_new(g, &opt, out);
  helper_host_only = false;
  clg_process_release(held);
  return code;
}

clg_devices *clg_process_devices(clg_process *p) { return p->devs; }

clg_cluster *clg_process_cluster(clg_process *p) { return p ? p->cluster : NULL; }

clg_code clg_process_allocator(clg_process *p, int device, clg_allocator **out)
{
  clg_code code = CLG_OK;
  /* --- cluster hook: a remote device's blocks are host memory (what its task sends) */
  if (clg_devices_at(p->devs, device)->remote)
    device = 0;
  pthread_mutex_lock(&p->lock);
  if (!p->allocs[device])
    code = clg_allocator_new(clg_devices_at(p->devs, device), &p->first.gpu_options,
                             &p->allocs[device]);
  *out = p->allocs[device];
  pthread_mutex_unlock(&p->lock);
  return code;
}

void clg_process_warn_once(clg_process *p, int device, const char *reason, const char *message)
{
  clg_strbuf key;
  clg_strbuf_init(&key);
  clg_strbuf_printf(&key, "%d|%s", device, reason);
  char *k = clg_strbuf_take(&key);
  if (!k)
    return;
  pthread_mutex_lock(&p->lock);
  bool seen = false;
  for (int i = 0; i < p->num_warned && !seen; i++)
    seen = strcmp(p->warned[i], k) == 0;
  if (!seen) {
    char **w = realloc(p->warned, sizeof *w * (size_t)(p->num_warned + 1));
    if (w) {
      p->warned = w;
      p->warned[p->num_warned++] = k;
      k = NULL;
    }
  }
  pthread_mutex_unlock(&p->lock);
  free(k);
  if (!seen)
    clg_log(CLG_LOG_WARNING, "%s", message);
}
