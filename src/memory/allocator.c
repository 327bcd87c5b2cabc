/* The per-device allocator (TensorFlow's GPU_<id>_bfc), its creation: TensorFlow's memory
 * options (reserve-all, allow_growth, fraction, virtual-device limit, the environment
 * overrides) turned into a limit, an alignment and a mode; destruction; the accessors.
 *
 * Devices with regions: each region is one buffer of the device kind's buffer table
 * (clg_buffer_ops) of at most the device's largest allocation, carved into blocks by clg_suballoc
 * (regions.c holds the policy, blocks.c the calls). The host CPU:0: each block is its own aligned
 * malloc (hostblocks.c). One mutex per allocator covers everything; it is dropped only
 * while waiting for events of blocks that were freed with a command still using them
 * (pending.c). memory_internal.h lists the files.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory_internal.h"

/* "true" -> 1, "false" -> 0, unset -> -1, anything else -> -2. */
static int env_bool(const char *name, const char **raw)
{
  const char *v = getenv(name);
  *raw = v;
  if (!v)
    return -1;
  if (strcmp(v, "true") == 0)
    return 1;
  if (strcmp(v, "false") == 0)
    return 0;
  return -2;
}

/* --- creation ----------------------------------------------------------------------- */

/* What the default limit leaves to the driver and other programs: TensorFlow's
 * MinSystemMemory (225 MiB below 2 GiB; else by compute capability, 500 MiB up to 6.x,
 * 1050 MiB for 7.x, 1536 MiB for 8.x, 1800 MiB from 9.0; other vendors get the 500 MiB of
 * the oldest class), or CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB (TF_DEVICE_MIN_SYS_MEMORY_IN_MB).
 * On the H200 a limit of the whole memory failed: its fourth 35 GiB region was refused.
 * OpenCL devices of CPU type (PoCL) take host memory, which has no such driver share. This is
 * the share of the whole card; system_memory gives a part of it its own. */
static uint64_t card_system_memory(const clg_device *dev, clg_logq *q)
{
  const uint64_t MiB = 1ull << 20;
  const uint64_t total = dev->physical_mem ? dev->physical_mem : dev->info.global_mem;
  uint64_t want = 0;
  const char *raw;
  int got = clg_env_mib("CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB", &want, &raw);
  if (got == 0)
    clg_logq_add(
        q, CLG_LOG_WARNING,
        clg_logq_format("The environment variable CLGRAPH_DEVICE_MIN_SYS_MEMORY_IN_MB=%s is "
                        "invalid. The request will be ignored.",
                        raw));
  else if (got == 1 && want > total)
    clg_logq_add(q, CLG_LOG_WARNING,
                 clg_logq_format("The requested reserved device memory %.2fGiB is larger than the "
                                 "available memory of %.2fGiB. The request is ignored.",
                                 (double)want / (double)(1ull << 30),
                                 (double)total / (double)(1ull << 30)));
  else if (got == 1)
    return want;
  if (clg_device_ops_of(dev)->buffers->cpu_type(dev))
    return 0;
  uint64_t sys = 500 * MiB;
  int cc = dev->info.nv_cc_major;
  if (total < 2048 * MiB)
    sys = 225 * MiB;
  else if (cc >= 9)
    sys = 1800 * MiB;
  else if (cc == 8)
    sys = 1536 * MiB;
  else if (cc == 7)
    sys = 1050 * MiB;
  return sys < total ? sys : 0;
}

/* A part of a card (CLGRAPH_VIRTUAL_DEVICES) leaves its fraction of the card's share: the
 * whole share on each 2 GiB part of an H200 would leave 248 MiB of it. */
static uint64_t system_memory(const clg_device *dev, clg_logq *q)
{
  uint64_t sys = card_system_memory(dev, q);
  if (!dev->physical_mem || dev->physical_mem <= dev->info.global_mem)
    return sys;
  return (uint64_t)((double)sys * (double)dev->info.global_mem / (double)dev->physical_mem);
}

clg_code clg_allocator_new(clg_device *dev, const clg_memory_options *opt, clg_allocator **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: out is NULL");
  *out = NULL;
  if (!dev)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: dev is NULL");
  clg_memory_options o = {0};
  if (opt)
    o = *opt;
  double f = o.per_process_gpu_memory_fraction;
  char text[CLG_DOUBLE_TEXT];
  if (isnan(f) || f < 0 || f > 1)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "per_process_gpu_memory_fraction = %s is out of range: it must be in [0, 1] "
                     "(0 means the whole memory)",
                     clg_double_text(f, text));
  const clg_buffer_ops *buf = dev->is_host ? NULL : clg_device_ops_of(dev)->buffers;
  if (!dev->is_host && (!buf || !buf->device_ready(dev)))
    return clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_new: %s has no OpenCL context",
                     dev->info.name ? dev->info.name : "the device");

  clg_allocator *a = calloc(1, sizeof *a);
  if (!a)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an allocator");
  a->dev = dev;
  a->buf = buf;
  a->is_host = dev->is_host;
  clg_logq q = {0};
  if (a->is_host) {
    snprintf(a->name, sizeof a->name, "cpu");
    a->align = CLG_ALLOC_HOST_ALIGN;
    a->limit = o.host_limit;
  } else {
    snprintf(a->name, sizeof a->name, "GPU_%d_bfc", dev->info.id);
    const char *raw;
    int forced = env_bool("CLGRAPH_FORCE_GPU_ALLOW_GROWTH", &raw);
    int orig = o.allow_growth != 0;
    if (forced == -2)
      clg_logq_add(
          &q, CLG_LOG_ERROR,
          clg_logq_format("The CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set but "
                          "could not be parsed: \"%s\". Valid values are \"true\" or \"false\". "
                          "Using original config value of %d.",
                          raw, orig));
    else if (forced >= 0 && forced != orig)
      clg_logq_add(
          &q, CLG_LOG_WARNING,
          clg_logq_format("Overriding allow_growth setting because the "
                          "CLGRAPH_FORCE_GPU_ALLOW_GROWTH environment variable is set. Original "
                          "config value was %d.",
                          orig));
    o.allow_growth = forced >= 0 ? forced : orig;
    int gc = env_bool("CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION", &raw);
    if (gc == -2)
      clg_logq_add(
          &q, CLG_LOG_ERROR,
          clg_logq_format("The CLGRAPH_ENABLE_GPU_GARBAGE_COLLECTION environment variable is "
                          "set but could not be parsed: \"%s\". Valid values are \"true\" or "
                          "\"false\". Using the default value \"true\".",
                          raw));
    a->gc = gc != 0;
    a->growth = o.allow_growth;

    /* Offsets must suit the device (its base address alignment) and TensorFlow's 256. */
    uint64_t align = 256;
    while (align < dev->info.base_addr_align)
      align *= 2;
    a->align = align;
    uint64_t limit = dev->info.global_mem;
    if (dev->info.memory_limit)
      limit = dev->info.memory_limit;
    else if (f > 0)
      limit = (uint64_t)((double)dev->info.global_mem * f);
    else
      limit -= system_memory(dev, &q);
    a->limit = clg_alloc_round_down(limit, align);
    a->max_region =
        clg_alloc_round_down(dev->info.max_alloc ? dev->info.max_alloc : a->limit, align);
    a->next_region_size =
        CLG_ALLOC_GROWTH_FIRST_REGION < a->limit ? CLG_ALLOC_GROWTH_FIRST_REGION : a->limit;
    if (a->next_region_size < align)
      a->next_region_size = align;
    a->host_memory = buf->host_memory(dev);
    a->sa = clg_suballoc_new(align);
    if (!a->sa) {
      free(a);
      clg_logq_flush(&q);
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an allocator");
    }
  }
  a->opt = o;
  pthread_mutex_init(&a->mu, NULL);

  clg_logq_flush(&q);
  if (clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s on %s: limit %llu bytes%s, alignment %llu, regions up to %llu bytes",
            a->name, dev->info.full_name ? dev->info.full_name : "?", (unsigned long long)a->limit,
            a->is_host ? (a->limit ? "" : " (none)") : (a->growth ? ", allow_growth" : ""),
            (unsigned long long)a->align, (unsigned long long)a->max_region);
  *out = a;
  return CLG_OK;
}

void clg_allocator_destroy(clg_allocator *a)
{
  if (!a)
    return;
  if (a->host_share_listed)
    clg_hostshare_remove(a->dev);
  clg_pending_free_all(a);
  clg_labels_free_all(a);
  if (a->live && clg_log_enabled(CLG_LOG_DEBUG))
    clg_log(CLG_LOG_DEBUG, "%s: destroyed with %llu blocks (%llu bytes) in use", a->name,
            (unsigned long long)a->live, (unsigned long long)a->in_use);
  clg_regions_free_all(a);
  clg_hostblocks_free_all(a);
  clg_suballoc_free_all(a->sa);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

const char *clg_allocator_name(const clg_allocator *a) { return a ? a->name : ""; }

uint64_t clg_allocator_alignment(const clg_allocator *a) { return a ? a->align : 0; }

void clg_allocator_options(const clg_allocator *a, clg_memory_options *out)
{
  if (!out)
    return;
  if (!a) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = a->opt;
}

const clg_device *clg_allocator_device(const clg_allocator *a) { return a ? a->dev : NULL; }
