/* clgraph bench alloc: nanoseconds per allocate+free pair of the device allocator against
 * glibc malloc+free and clCreateBuffer+clReleaseMemObject, all replaying one recorded
 * trace; and the memory overhead of allow_growth (peak reserved / peak in use) on a
 * random trace. With --reserve, also the time the default mode takes to reserve (and
 * touch) the device's whole memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "pictures.h"
#include "tool.h"

#define MiB (1024.0 * 1024.0)

typedef struct op {
  uint32_t slot; /* which live block */
  uint32_t size; /* 0: free the block in slot */
} op;

typedef struct trace {
  op *ops;
  size_t n, pairs;
  uint32_t slots;
} trace;

static unsigned long long rng_state;

static unsigned long long rng(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static double uniform(void) { return (double)(rng() >> 11) / 9007199254740992.0; }

static uint32_t log_uniform(double lo, double hi)
{
  return (uint32_t)exp(log(lo) + uniform() * (log(hi) - log(lo)));
}

/* A tensor-like workload: mostly small and medium tensors, a tenth large ones, up to
 * `max_live` alive, freed mostly oldest-first (short lifetimes) with some stragglers. */
static trace make_realistic(size_t allocations, uint32_t max_live, unsigned long long seed,
                            bool small_only)
{
  rng_state = seed;
  trace t = {calloc(2 * allocations, sizeof(op)), 0, allocations, max_live};
  uint32_t *live = calloc(max_live, sizeof *live), nlive = 0;
  uint32_t *free_slots = calloc(max_live, sizeof *free_slots), nfree = max_live;
  for (uint32_t i = 0; i < max_live; i++)
    free_slots[i] = max_live - 1 - i;
  size_t made = 0;
  while (made < allocations || nlive) {
    bool alloc = made < allocations && nlive < max_live && (nlive < 8 || uniform() < 0.5);
    if (alloc) {
      double r = small_only ? 0 : uniform();
      uint32_t size = r < 0.6   ? log_uniform(256, 16384)
                      : r < 0.9 ? log_uniform(16384, 1 << 20)
                                : log_uniform(1 << 20, 32 << 20);
      uint32_t slot = free_slots[--nfree];
      t.ops[t.n++] = (op){slot, size};
      live[nlive++] = slot;
      made++;
    } else {
      uint32_t i = uniform() < 0.8 ? 0 : (uint32_t)(rng() % nlive); /* oldest first */
      uint32_t slot = live[i];
      memmove(live + i, live + i + 1, (nlive - i - 1) * sizeof *live);
      nlive--;
      t.ops[t.n++] = (op){slot, 0};
      free_slots[nfree++] = slot;
    }
  }
  free(live);
  free(free_slots);
  return t;
}

/* Random sizes (log-uniform 256 B .. 32 MiB), random frees, a live set that wanders. */
static trace make_random(size_t allocations, uint32_t max_live, unsigned long long seed)
{
  rng_state = seed;
  trace t = {calloc(2 * allocations, sizeof(op)), 0, allocations, max_live};
  uint32_t *live = calloc(max_live, sizeof *live), nlive = 0;
  uint32_t *free_slots = calloc(max_live, sizeof *free_slots), nfree = max_live;
  for (uint32_t i = 0; i < max_live; i++)
    free_slots[i] = max_live - 1 - i;
  size_t made = 0;
  double target = max_live / 2.0;
  while (made < allocations || nlive) {
    target += (uniform() - 0.5) * 4;
    if (target < 1)
      target = 1;
    if (target > max_live)
      target = max_live;
    bool alloc = made < allocations && nlive < max_live && (nlive == 0 || nlive < target);
    if (alloc) {
      uint32_t slot = free_slots[--nfree];
      t.ops[t.n++] = (op){slot, log_uniform(256, 32 << 20)};
      live[nlive++] = slot;
      made++;
    } else {
      uint32_t i = (uint32_t)(rng() % nlive);
      uint32_t slot = live[i];
      live[i] = live[--nlive];
      t.ops[t.n++] = (op){slot, 0};
      free_slots[nfree++] = slot;
    }
  }
  free(live);
  free(free_slots);
  return t;
}

/* A reference for the growth ratio: the trace replayed in one region as large as it likes
 * (offsets only, no memory), with the same best fit and alignment. Its high-water mark over
 * the peak in use is what this fit's fragmentation costs with no region boundary and no
 * growth step, which regions grown on demand only add to (over 24 seeds growth policies
 * stayed at least 0.1 above it). 0 on failure. */
static double one_region_reference(const trace *t, uint64_t align)
{
  clg_suballoc *sa = clg_suballoc_new(align);
  uint64_t *offsets = calloc(t->slots, sizeof *offsets), *sizes = calloc(t->slots, sizeof *sizes);
  double ratio = 0;
  if (sa && offsets && sizes && clg_suballoc_add_region(sa, 0, 1ull << 40) == CLG_OK) {
    uint64_t in_use = 0, peak = 0, high = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < t->n; i++) {
      const op *o = &t->ops[i];
      uint32_t region;
      if (o->size) {
        ok = clg_suballoc_alloc(sa, o->size, &region, &offsets[o->slot], &sizes[o->slot]);
        in_use += sizes[o->slot];
        peak = in_use > peak ? in_use : peak;
        high = offsets[o->slot] + sizes[o->slot] > high ? offsets[o->slot] + sizes[o->slot] : high;
      } else {
        ok = clg_suballoc_release(sa, 0, offsets[o->slot]);
        in_use -= sizes[o->slot];
      }
    }
    ratio = ok && peak ? (double)high / (double)peak : 0;
  }
  free(offsets);
  free(sizes);
  clg_suballoc_free_all(sa);
  return ratio;
}

/* Replays: ns per pair, or a negative value on failure. */
static double run_clg(clg_allocator *a, const trace *t, clg_bench_blocks *blocks)
{
  uint64_t t0 = clg_now_ns();
  for (size_t i = 0; i < t->n; i++) {
    const op *o = &t->ops[i];
    if (o->size) {
      if (clg_bench_blocks_alloc(a, blocks, o->slot, o->size) != CLG_OK)
        return -1;
    } else {
      clg_bench_blocks_release(a, blocks, o->slot);
    }
  }
  return (double)(clg_now_ns() - t0) / (double)t->pairs;
}

static double run_malloc(const trace *t, void **ptrs)
{
  uint64_t t0 = clg_now_ns();
  for (size_t i = 0; i < t->n; i++) {
    const op *o = &t->ops[i];
    if (o->size) {
      ptrs[o->slot] = malloc(o->size);
      if (!ptrs[o->slot])
        return -1;
      /* Keep the compiler from pairing malloc with free away. */
      __asm__ __volatile__("" : : "r"(ptrs[o->slot]) : "memory");
    } else {
      free(ptrs[o->slot]);
    }
  }
  return (double)(clg_now_ns() - t0) / (double)t->pairs;
}

static double run_clcreate(clg_device *dev, const trace *t, cl_mem *mems)
{
  uint64_t t0 = clg_now_ns();
  for (size_t i = 0; i < t->n; i++) {
    const op *o = &t->ops[i];
    if (o->size) {
      cl_int err;
      mems[o->slot] =
          clCreateBuffer(clg_bench_device_context(dev), CL_MEM_READ_WRITE, o->size, NULL, &err);
      if (err != CL_SUCCESS)
        return -1;
    } else {
      clReleaseMemObject(mems[o->slot]);
    }
  }
  return (double)(clg_now_ns() - t0) / (double)t->pairs;
}

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench alloc [--json] [--repeats N] [--reserve]\n\n"
             "Replays one trace of allocations (256 B .. 32 MiB, frees interleaved, fixed seed)\n"
             "through the device allocator of the first GPU (allow_growth; the host if there is\n"
             "no GPU), glibc malloc+free and clCreateBuffer+clReleaseMemObject, and prints the\n"
             "median ns per allocate+free pair; then peak reserved / peak in use on a random\n"
             "trace. --reserve also times reserving the whole device memory (default mode).\n");
}

int clg_bench_alloc(int argc, char **argv)
{
  bool json = false, reserve = false;
  int repeats = 15;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--reserve", CLG_TOOL_FLAG, .flag = &reserve},
                         {"--repeats", CLG_TOOL_INT, .min = 1, .max = 1000, .integer = &repeats},
                         clg_tool_trace_opt(&clg_tool_bench_pictures),
                         {NULL}};
  clg_tool_cmd cmd = {.name = "bench alloc", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (clg_tool_bench_pictures.trace) {
    fprintf(stderr, "clgraph bench alloc: --trace: this benchmark calls the allocator directly and "
                    "runs no graph: there is nothing to trace\n");
    return 2;
  }

  clg_devices *devs;
  if (clg_devices_new(NULL, &devs) != CLG_OK) {
    fprintf(stderr, "clgraph bench alloc: %s\n", clg_last_error());
    return 1;
  }
  bool gpu = clg_devices_count(devs) > 1;
  clg_device *dev = clg_devices_at(devs, gpu ? 1 : 0);
  clg_memory_options opt = {.allow_growth = 1};
  clg_allocator *a;
  if (clg_allocator_new(dev, &opt, &a) != CLG_OK) {
    fprintf(stderr, "clgraph bench alloc: %s\n", clg_last_error());
    clg_devices_free(devs);
    return 1;
  }

  const size_t allocations = 20000;
  trace t = make_realistic(allocations, 64, 0x5eedull, false);
  /* The same shape with small sizes only (256 B .. 16 KiB): glibc's best case. */
  trace ts = make_realistic(allocations, 64, 0x5eedull, true);
  clg_bench_blocks *blocks = clg_bench_blocks_new(t.slots);
  void **ptrs = calloc(t.slots, sizeof *ptrs);
  cl_mem *mems = calloc(t.slots, sizeof *mems);
  double *v_clg = calloc((size_t)repeats, sizeof(double));
  double *v_mal = calloc((size_t)repeats, sizeof(double));
  double *v_cl = calloc((size_t)repeats, sizeof(double));
  double *v_sclg = calloc((size_t)repeats, sizeof(double));
  double *v_smal = calloc((size_t)repeats, sizeof(double));
  int status = 0;
  /* One untimed run each first: regions made, malloc's arena and thresholds settled. */
  bool ok = run_clg(a, &t, blocks) >= 0 && run_malloc(&t, ptrs) >= 0 &&
            run_clg(a, &ts, blocks) >= 0 && run_malloc(&ts, ptrs) >= 0;
  if (gpu)
    ok = ok && run_clcreate(dev, &t, mems) >= 0;
  for (int i = 0; ok && i < repeats; i++) {
    v_clg[i] = run_clg(a, &t, blocks);
    v_mal[i] = run_malloc(&t, ptrs);
    v_cl[i] = gpu ? run_clcreate(dev, &t, mems) : 0;
    v_sclg[i] = run_clg(a, &ts, blocks);
    v_smal[i] = run_malloc(&ts, ptrs);
    ok = v_clg[i] >= 0 && v_mal[i] >= 0 && v_cl[i] >= 0 && v_sclg[i] >= 0 && v_smal[i] >= 0;
  }
  if (!ok) {
    fprintf(stderr, "clgraph bench alloc: the trace failed: %s\n", clg_last_error());
    status = 1;
  }
  char alloc_name[32];
  snprintf(alloc_name, sizeof alloc_name, "%s", clg_allocator_name(a));
  /* The reference replays with the allocator's own alignment (the sub-allocator's floor is
   * 256; the host allocator's 64 does not apply to it). */
  uint64_t align = clg_allocator_alignment(a) > 256 ? clg_allocator_alignment(a) : 256;
  clg_memory_stats st_trace;
  clg_allocator_stats(a, &st_trace);
  clg_allocator_destroy(a);
  double trace_overhead = st_trace.peak_bytes_in_use ? (double)st_trace.peak_bytes_reserved /
                                                           (double)st_trace.peak_bytes_in_use
                                                     : 0;
  double ns_clg = clg_tool_median(v_clg, repeats);
  double ns_mal = clg_tool_median(v_mal, repeats);
  double ns_sclg = clg_tool_median(v_sclg, repeats);
  double ns_smal = clg_tool_median(v_smal, repeats);
  double ns_cl = clg_tool_median(v_cl, repeats);

  /* Memory overhead of allow_growth on a random trace, with a fresh allocator. */
  trace rt = make_random(50000, 96, 0xfeedull);
  clg_bench_blocks *rblocks = clg_bench_blocks_new(rt.slots);
  clg_memory_stats st;
  memset(&st, 0, sizeof st);
  if (ok && clg_allocator_new(dev, &opt, &a) == CLG_OK) {
    if (run_clg(a, &rt, rblocks) < 0) {
      fprintf(stderr, "clgraph bench alloc: the random trace failed: %s\n", clg_last_error());
      status = 1;
    }
    clg_allocator_stats(a, &st);
    clg_allocator_destroy(a);
  }
  double overhead =
      st.peak_bytes_in_use ? (double)st.peak_bytes_reserved / (double)st.peak_bytes_in_use : 0;
  double ref_trace = one_region_reference(&t, align), ref_random = one_region_reference(&rt, align);

  /* Optional: the default mode's reservation of the whole memory, timed. */
  double reserve_s = -1;
  clg_memory_stats st_res;
  memset(&st_res, 0, sizeof st_res);
  if (ok && reserve && gpu) {
    clg_memory_options def = {0};
    if (clg_allocator_new(dev, &def, &a) == CLG_OK) {
      clg_bench_blocks *b = clg_bench_blocks_new(1);
      uint64_t t0 = clg_now_ns();
      if (b && clg_bench_blocks_alloc(a, b, 0, 1) == CLG_OK) {
        reserve_s = (double)(clg_now_ns() - t0) / 1e9;
        clg_bench_blocks_release(a, b, 0);
      } else {
        fprintf(stderr, "clgraph bench alloc: reserving failed: %s\n", clg_last_error());
      }
      clg_bench_blocks_free(b);
      clg_allocator_stats(a, &st_res);
      clg_allocator_destroy(a);
    }
  }

  const char *name = clg_bench_device_info(dev)->full_name;
  const char *cl_name = gpu ? clg_bench_device_info(dev)->cl_name : "host";
  bool goal_ns = ns_clg < 100, goal_malloc = ns_clg <= 2 * ns_mal, goal_overhead = overhead < 1.15;
  if (json) {
    char clbuf[32] = "null", resbuf[32] = "null";
    if (gpu)
      snprintf(clbuf, sizeof clbuf, "%.1f", ns_cl);
    if (reserve_s >= 0)
      snprintf(resbuf, sizeof resbuf, "%.3f", reserve_s);
    printf("{\"benchmark\":\"alloc\",\"device\":\"%s\",\"device_name\":", name);
    clg_tool_json_string(stdout, cl_name); /* the driver's text */
    printf(",\"allocator\":\"%s\",\"repeats\":%d,", alloc_name, repeats);
    printf("\"trace\":{\"allocations\":%zu,\"max_live\":%u,\"sizes\":\"256B..32MiB\","
           "\"ns_per_pair\":{\"clg_allocator\":%.1f,\"malloc\":%.1f,\"clCreateBuffer\":%s},"
           "\"clg_over_malloc\":%.3f,\"peak_bytes_reserved\":%llu,\"peak_bytes_in_use\":%llu,"
           "\"reserved_over_in_use\":%.3f,\"one_region_reference\":%.3f},",
           allocations, t.slots, ns_clg, ns_mal, clbuf, ns_mal > 0 ? ns_clg / ns_mal : 0,
           (unsigned long long)st_trace.peak_bytes_reserved,
           (unsigned long long)st_trace.peak_bytes_in_use, trace_overhead, ref_trace);
    printf("\"small_trace\":{\"sizes\":\"256B..16KiB\",\"ns_per_pair\":{\"clg_allocator\":%.1f,"
           "\"malloc\":%.1f},\"clg_over_malloc\":%.3f},",
           ns_sclg, ns_smal, ns_smal > 0 ? ns_sclg / ns_smal : 0);
    printf("\"random_trace\":{\"allocations\":%zu,\"max_live\":%u,\"peak_bytes_in_use\":%llu,"
           "\"peak_bytes_reserved\":%llu,\"reserved_over_in_use\":%.3f,\"regions\":%llu,"
           "\"one_region_reference\":%.3f},",
           rt.pairs, rt.slots, (unsigned long long)st.peak_bytes_in_use,
           (unsigned long long)st.peak_bytes_reserved, overhead, (unsigned long long)st.num_regions,
           ref_random);
    printf("\"reserve\":{\"seconds\":%s,\"bytes\":%llu,\"regions\":%llu},", resbuf,
           (unsigned long long)st_res.bytes_reserved, (unsigned long long)st_res.num_regions);
    printf("\"goals\":{\"under_100ns\":%s,\"within_2x_malloc\":%s,"
           "\"reserved_over_in_use_under_1_15\":%s}}\n",
           goal_ns ? "true" : "false", goal_malloc ? "true" : "false",
           goal_overhead ? "true" : "false");
  } else {
    printf("clgraph bench alloc: %zu allocations (256 B .. 32 MiB, up to %u live, fixed seed), "
           "median of %d runs\n",
           allocations, t.slots, repeats);
    printf("device: %s (%s), allocator %s%s\n\n", name, cl_name, alloc_name,
           gpu ? " in allow_growth mode" : " (one aligned malloc per block)");
    printf("  %-36s %12s %16s\n", "ns per allocate+free pair", "trace", "small sizes only");
    printf("  %-36s %12.1f %16.1f\n", "clg_allocator_alloc + free", ns_clg, ns_sclg);
    printf("  %-36s %12.1f %16.1f\n", "glibc malloc + free", ns_mal, ns_smal);
    if (gpu)
      printf("  %-36s %12.1f %16s\n", "clCreateBuffer + clReleaseMemObject", ns_cl, "-");
    printf("  %-36s %12.2f %16.2f\n", "clg_allocator / malloc", ns_mal > 0 ? ns_clg / ns_mal : 0,
           ns_smal > 0 ? ns_sclg / ns_smal : 0);
    if (gpu)
      printf("  %-36s %12.2f %16s\n", "clCreateBuffer / clg_allocator",
             ns_clg > 0 ? ns_cl / ns_clg : 0, "-");
    printf("\npeak reserved / peak in use (allow_growth):\n");
    printf("  the trace:    %8.1f MiB / %8.1f MiB = %.3f\n",
           (double)st_trace.peak_bytes_reserved / MiB, (double)st_trace.peak_bytes_in_use / MiB,
           trace_overhead);
    printf("  random trace: %8.1f MiB / %8.1f MiB = %.3f (%zu allocations, log-uniform 256 B .. "
           "32 MiB, up to %u live, %llu regions)\n",
           (double)st.peak_bytes_reserved / MiB, (double)st.peak_bytes_in_use / MiB, overhead,
           rt.pairs, rt.slots, (unsigned long long)st.num_regions);
    printf("  reference: the same best fit in one unbounded region (no region boundary, no "
           "growth step): %.4f (the trace), %.4f (random)\n",
           ref_trace, ref_random);
    if (reserve_s >= 0)
      printf("\ndefault mode: reserving and touching %.1f MiB (%llu regions) took %.2f s (%.2f "
             "GB/s)\n",
             (double)st_res.bytes_reserved / MiB, (unsigned long long)st_res.num_regions, reserve_s,
             (double)st_res.bytes_reserved / reserve_s / 1e9);
    printf("\ngoals: < 100 ns per pair: %s (%.1f); within 2x of glibc: %s (%.2fx); peak "
           "reserved / in use < 1.15: %s (%.3f)\n",
           goal_ns ? "met" : "MISSED", ns_clg, goal_malloc ? "met" : "MISSED",
           ns_mal > 0 ? ns_clg / ns_mal : 0, goal_overhead ? "met" : "MISSED", overhead);
  }
  free(t.ops);
  free(ts.ops);
  free(v_sclg);
  free(v_smal);
  free(rt.ops);
  clg_bench_blocks_free(blocks);
  clg_bench_blocks_free(rblocks);
  free(ptrs);
  free(mems);
  free(v_clg);
  free(v_mal);
  free(v_cl);
  clg_devices_free(devs);
  return status;
}
