/* TensorFlow-style reports of an allocator: the readable and JSON maps of
 * clg_allocator_dump, and the OOM error with its warning-level summary (TensorFlow's
 * DumpMemoryLog, condensed). The lock is held while they are written. */
#include <stdlib.h>
#include <string.h>

#include "memory/memory_internal.h"

/* Per-region totals for the OOM summary. */
typedef struct region_sum {
  uint32_t region;
  uint64_t size, used, used_blocks, free_bytes, free_blocks, largest_free;
  uint64_t *sizes; /* sizes of blocks in use, for the by-size summary */
  size_t num_sizes, cap_sizes;
  bool open, failed;
  clg_strbuf *out;
} region_sum;

static void region_sum_flush(region_sum *rs)
{
  if (!rs->open)
    return;
  clg_strbuf_printf(rs->out,
                    "Region %u of size %llu: %llu in use in %llu blocks, %llu free in %llu blocks, "
                    "largest free block %llu\n",
                    rs->region, (unsigned long long)rs->size, (unsigned long long)rs->used,
                    (unsigned long long)rs->used_blocks, (unsigned long long)rs->free_bytes,
                    (unsigned long long)rs->free_blocks, (unsigned long long)rs->largest_free);
  rs->open = false;
}

static void summary_visit(void *user, uint32_t region, uint64_t region_size, uint64_t offset,
                          uint64_t size, bool in_use)
{
  (void)offset;
  region_sum *rs = user;
  if (!rs->open || rs->region != region) {
    region_sum_flush(rs);
    rs->open = true;
    rs->region = region;
    rs->size = region_size;
    rs->used = rs->used_blocks = rs->free_bytes = rs->free_blocks = rs->largest_free = 0;
  }
  if (in_use) {
    rs->used += size;
    rs->used_blocks++;
    if (rs->num_sizes == rs->cap_sizes && !rs->failed) {
      size_t cap = rs->cap_sizes ? rs->cap_sizes * 2 : 256;
      uint64_t *p = realloc(rs->sizes, sizeof *p * cap);
      if (p) {
        rs->sizes = p;
        rs->cap_sizes = cap;
      } else {
        rs->failed = true;
      }
    }
    if (rs->num_sizes < rs->cap_sizes)
      rs->sizes[rs->num_sizes++] = size;
  } else {
    rs->free_bytes += size;
    rs->free_blocks++;
    if (size > rs->largest_free)
      rs->largest_free = size;
  }
}

static int cmp_u64(const void *x, const void *y)
{
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

/* The OOM summary (TensorFlow's DumpMemoryLog, condensed): one line per region, the blocks
 * in use by size, the pool totals. */
static void dump_summary(clg_allocator *a, clg_strbuf *s)
{
  char h[32];
  if (a->is_host) {
    clg_strbuf_printf(s, "Host blocks in use: %llu, %llu bytes; pending: %llu bytes\n",
                      (unsigned long long)a->live, (unsigned long long)a->in_use,
                      (unsigned long long)a->bytes_pending);
    return;
  }
  region_sum rs = {.out = s};
  clg_suballoc_walk(a->sa, summary_visit, &rs);
  region_sum_flush(&rs);
  if (a->num_slots == 0)
    clg_strbuf_append(s, "<allocator contains no memory>\n");
  clg_strbuf_append(s, "     Summary of in-use Chunks by size: \n");
  if (rs.num_sizes)
    qsort(rs.sizes, rs.num_sizes, sizeof *rs.sizes, cmp_u64);
  uint64_t total = 0;
  int lines = 0;
  for (size_t i = 0; i < rs.num_sizes;) {
    size_t j = i;
    while (j < rs.num_sizes && rs.sizes[j] == rs.sizes[i])
      j++;
    if (lines++ < 64)
      clg_strbuf_printf(s, "%zu Chunks of size %llu totalling %s\n", j - i,
                        (unsigned long long)rs.sizes[i],
                        clg_logq_bytes(rs.sizes[i] * (j - i), h, sizeof h));
    total += rs.sizes[i] * (j - i);
    i = j;
  }
  if (lines > 64)
    clg_strbuf_printf(s, "... and %d more sizes\n", lines - 64);
  free(rs.sizes);
  clg_strbuf_printf(s, "Sum Total of in-use chunks: %s\n", clg_logq_bytes(total, h, sizeof h));
  clg_strbuf_printf(s,
                    "Total bytes in pool: %llu memory_limit_: %llu available bytes: %llu "
                    "curr_region_allocation_bytes_: %llu\n",
                    (unsigned long long)a->reserved, (unsigned long long)a->limit,
                    (unsigned long long)(a->limit - a->reserved),
                    (unsigned long long)(a->growth ? a->next_region_size : a->max_region));
}

/* Records the OOM error and queues the warning-level summary. */
clg_code clg_dump_oom(clg_allocator *a, size_t bytes, uint64_t rounded, clg_logq *q)
{
  clg_memory_stats st;
  clg_stats_locked(a, &st);
  clg_strbuf extra;
  clg_strbuf_init(&extra);
  if (!a->is_host && rounded > a->max_region)
    clg_strbuf_printf(&extra, "; no block can exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu bytes",
                      (unsigned long long)a->max_region);
  if (a->region_error[0])
    clg_strbuf_printf(&extra, "; %s", a->region_error);
  clg_error(CLG_RESOURCE_EXHAUSTED,
            "OOM when allocating %zu bytes on %s by allocator %s: in use %llu bytes, limit %llu "
            "bytes, largest free block %llu bytes%s",
            bytes, a->dev->info.full_name, a->name, (unsigned long long)st.bytes_in_use,
            (unsigned long long)st.bytes_limit, (unsigned long long)st.largest_free_block,
            extra.buf ? extra.buf : "");
  clg_strbuf_free(&extra);
  if (clg_log_enabled(CLG_LOG_WARNING)) {
    char h[32];
    clg_strbuf s;
    clg_strbuf_init(&s);
    clg_strbuf_printf(&s,
                      "Allocator (%s) ran out of memory trying to allocate %s (rounded to %llu).  "
                      "Current allocation summary follows.\n",
                      a->name, clg_logq_bytes(bytes, h, sizeof h), (unsigned long long)rounded);
    dump_summary(a, &s);
    clg_strbuf_append(&s, "Stats: \n");
    clg_stats_debug_string(&s, &st);
    if (s.len && s.buf[s.len - 1] == '\n')
      s.buf[--s.len] = '\0';
    clg_logq_add(q, CLG_LOG_WARNING, clg_strbuf_take(&s));
  }
  return CLG_RESOURCE_EXHAUSTED;
}

typedef struct dump_ctx {
  clg_allocator *a;
  clg_strbuf *s;
  bool json;
  bool open;
  uint32_t region;
  int blocks;
} dump_ctx;

static void dump_visit(void *user, uint32_t region, uint64_t region_size, uint64_t offset,
                       uint64_t size, bool in_use)
{
  dump_ctx *d = user;
  const char *state = !in_use                                 ? "free"
                      : clg_pending_has(d->a, region, offset) ? "pending"
                                                              : "in_use";
  if (!d->open || d->region != region) {
    if (d->json) {
      clg_strbuf_printf(d->s, "%s{\"id\":%u,\"size\":%llu,\"blocks\":[", d->open ? "]}," : "",
                        region, (unsigned long long)region_size);
    } else {
      clg_strbuf_printf(d->s, "Region %u of size %llu (cl_mem %p):\n", region,
                        (unsigned long long)region_size, (void *)d->a->regions[region].mem);
    }
    d->open = true;
    d->region = region;
    d->blocks = 0;
  }
  if (d->json) {
    clg_strbuf_printf(d->s, "%s{\"offset\":%llu,\"size\":%llu,\"state\":\"%s\"}",
                      d->blocks ? "," : "", (unsigned long long)offset, (unsigned long long)size,
                      state);
  } else {
    const char *label = !in_use ? "Free   " : strcmp(state, "pending") == 0 ? "Pending" : "InUse  ";
    clg_strbuf_printf(d->s, "  %s at 0x%llx of size %llu\n", label, (unsigned long long)offset,
                      (unsigned long long)size);
  }
  d->blocks++;
}

char *clg_allocator_dump(clg_allocator *a, bool json)
{
  if (!a) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_allocator_dump: allocator is NULL");
    return NULL;
  }
  clg_strbuf s;
  clg_strbuf_init(&s);
  pthread_mutex_lock(&a->mu);
  clg_memory_stats st;
  clg_stats_locked(a, &st);
  if (json) {
    clg_strbuf_append(&s, "{\"allocator\":");
    clg_strbuf_json_string(&s, a->name);
    clg_strbuf_append(&s, ",\"device\":");
    clg_strbuf_json_string(&s, a->dev->info.full_name);
    clg_strbuf_printf(
        &s,
        ",\"allow_growth\":%s,\"alignment\":%llu,\"max_region\":%llu,"
        "\"stats\":{\"bytes_limit\":%llu,\"bytes_in_use\":%llu,\"peak_bytes_in_use\":%llu,"
        "\"bytes_reserved\":%llu,\"peak_bytes_reserved\":%llu,\"bytes_pending\":%llu,"
        "\"num_regions\":%llu,\"num_allocs\":%llu,\"live_allocs\":%llu,"
        "\"largest_alloc_size\":%llu,\"largest_free_block\":%llu,\"fragmentation\":%.6f},"
        "\"regions\":[",
        a->growth ? "true" : "false", (unsigned long long)a->align,
        (unsigned long long)a->max_region, (unsigned long long)st.bytes_limit,
        (unsigned long long)st.bytes_in_use, (unsigned long long)st.peak_bytes_in_use,
        (unsigned long long)st.bytes_reserved, (unsigned long long)st.peak_bytes_reserved,
        (unsigned long long)st.bytes_pending, (unsigned long long)st.num_regions,
        (unsigned long long)st.num_allocs, (unsigned long long)st.live_allocs,
        (unsigned long long)st.largest_alloc_size, (unsigned long long)st.largest_free_block,
        st.fragmentation);
  } else {
    clg_strbuf_printf(&s,
                      "Allocator %s for %s: limit %llu bytes, reserved %llu bytes in %llu "
                      "regions, in use %llu bytes in %llu blocks, pending %llu bytes%s\n",
                      a->name, a->dev->info.full_name, (unsigned long long)st.bytes_limit,
                      (unsigned long long)st.bytes_reserved, (unsigned long long)st.num_regions,
                      (unsigned long long)st.bytes_in_use, (unsigned long long)st.live_allocs,
                      (unsigned long long)st.bytes_pending,
                      a->is_host  ? ""
                      : a->growth ? ", allow_growth"
                                  : ", reserve all");
  }
  if (a->is_host) {
    if (json)
      clg_strbuf_append(&s, "],\"blocks\":[");
    int n = 0;
    for (clg_host_hdr *h = a->host_blocks; h; h = h->next, n++) {
      void *p = (char *)h + CLG_ALLOC_HOST_ALIGN;
      bool pend = clg_pending_has_host(a, p);
      if (json)
        clg_strbuf_printf(&s, "%s{\"address\":\"%p\",\"size\":%zu,\"state\":\"%s\"}", n ? "," : "",
                          p, h->size, pend ? "pending" : "in_use");
      else
        clg_strbuf_printf(&s, "  %s at %p of size %zu\n", pend ? "Pending" : "InUse  ", p, h->size);
    }
    if (json)
      clg_strbuf_append(&s, "]}");
  } else {
    dump_ctx d = {.a = a, .s = &s, .json = json};
    clg_suballoc_walk(a->sa, dump_visit, &d);
    if (json)
      clg_strbuf_append(&s, d.open ? "]}]}" : "]}");
    else if (!d.open)
      clg_strbuf_append(&s, "<allocator contains no memory>\n");
  }
  if (!json) {
    clg_strbuf_append(&s, "Stats:\n");
    clg_stats_debug_string(&s, &st);
  }
  pthread_mutex_unlock(&a->mu);
  char *out = clg_strbuf_take(&s);
  if (!out)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory dumping allocator %s", a->name);
  return out;
}
