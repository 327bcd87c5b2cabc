/* The allocation algorithm on plain offsets, checked against a simple model: one byte per
 * 256-byte unit of every region (0 free, 1 in use). A million random operations, each
 * checked against the model; clg_suballoc_validate after every step for the first 100,000
 * steps, then every 8th step and at the end (every step takes 3 s); regions added and
 * removed on the way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "memory/memory.h"
#include "testutil.h"

#define A 256u
#define MAX_REGIONS 16

typedef struct {
  uint32_t id;
  uint64_t size;
  unsigned char *units;
} model_region;

typedef struct {
  uint32_t region;
  uint64_t offset, size;
} live_block;

static model_region regions[MAX_REGIONS];
static int num_regions;
static live_block *live;
static size_t num_live, cap_live;
static uint64_t model_used;

static model_region *model_find(uint32_t id)
{
  for (int i = 0; i < num_regions; i++)
    if (regions[i].id == id)
      return &regions[i];
  return NULL;
}

static void model_add(clg_suballoc *sa, uint32_t id, uint64_t size)
{
  CHECK_OK(clg_suballoc_add_region(sa, id, size));
  regions[num_regions].id = id;
  regions[num_regions].size = size;
  regions[num_regions].units = calloc(size / A, 1);
  num_regions++;
}

/* The longest run of free units in the model, in bytes. */
static uint64_t model_longest_free(void)
{
  uint64_t best = 0;
  for (int i = 0; i < num_regions; i++) {
    const unsigned char *u = regions[i].units, *end = u + regions[i].size / A;
    while (u < end) {
      const unsigned char *f = memchr(u, 0, (size_t)(end - u));
      if (!f)
        break;
      const unsigned char *g = memchr(f, 1, (size_t)(end - f));
      if (!g)
        g = end;
      if ((uint64_t)(g - f) * A > best)
        best = (uint64_t)(g - f) * A;
      u = g;
    }
  }
  return best;
}

static uint64_t round_up(uint64_t n) { return (n + A - 1) / A * A; }

static bool step_alloc(clg_suballoc *sa, uint64_t size)
{
  uint32_t r;
  uint64_t off, bs;
  bool ok = clg_suballoc_alloc(sa, size, &r, &off, &bs);
  if (!ok) {
    uint64_t longest = model_longest_free();
    CHECK_MSG(longest < round_up(size),
              "alloc of %llu failed although a free run of %llu bytes exists",
              (unsigned long long)size, (unsigned long long)longest);
    return false;
  }
  model_region *m = model_find(r);
  bool good = m && bs == round_up(size) && off % A == 0 && off + bs <= m->size &&
              !memchr(m->units + off / A, 1, bs / A);
  CHECK_MSG(good, "alloc of %llu gave region %u offset %llu size %llu: out of range or overlaps",
            (unsigned long long)size, r, (unsigned long long)off, (unsigned long long)bs);
  if (!good)
    return false;
  memset(m->units + off / A, 1, bs / A);
  if (num_live == cap_live) {
    cap_live = cap_live ? cap_live * 2 : 1024;
    live = realloc(live, cap_live * sizeof *live);
  }
  live[num_live++] = (live_block){r, off, bs};
  model_used += bs;
  return true;
}

static void step_free(clg_suballoc *sa, size_t i)
{
  live_block b = live[i];
  CHECK_MSG(clg_suballoc_block_size(sa, b.region, b.offset) == b.size,
            "block at %u/%llu has the wrong size", b.region, (unsigned long long)b.offset);
  CHECK(clg_suballoc_release(sa, b.region, b.offset));
  memset(model_find(b.region)->units + b.offset / A, 0, b.size / A);
  model_used -= b.size;
  live[i] = live[--num_live];
}

/* Sizes from 1 byte to 6 MiB, log-uniform, with a share of exact multiples and repeats. */
static uint64_t random_size(uint64_t last_freed)
{
  double roll = clg_test_uniform(0, 1);
  if (roll < 0.1 && last_freed)
    return last_freed;
  uint64_t s = (uint64_t)exp(clg_test_uniform(0, log(6.0 * 1024 * 1024)));
  if (s == 0)
    s = 1;
  if (roll < 0.3)
    s = round_up(s);
  return s;
}

static void test_random(void)
{
  clg_suballoc *sa = clg_suballoc_new(A);
  CHECK(sa != NULL);
  model_add(sa, 10, 4u << 20);
  model_add(sa, 20, 8u << 20);
  model_add(sa, 30, 16u << 20);
  model_add(sa, 40, (12u << 20) + 3 * A);
  uint32_t next_id = 100;
  clg_test_seed(12345);
  uint64_t t0 = clg_now_ns();
  long failures = 0, validations = 0;
  uint64_t last_freed = 0;
  const long steps = 1000000;
  for (long step = 0; step < steps; step++) {
    double p_alloc = num_live < 32 ? 0.9 : num_live > 256 ? 0.2 : 0.55;
    if (num_live == 0 || clg_test_uniform(0, 1) < p_alloc) {
      if (!step_alloc(sa, random_size(last_freed)))
        failures++;
    } else {
      size_t i = (size_t)(clg_test_rand() % num_live);
      last_freed = live[i].size - (clg_test_rand() % A);
      step_free(sa, i);
    }
    /* Releasing where no block in use starts changes nothing. */
    if (step % 4096 == 0 && num_live) {
      live_block b = live[clg_test_rand() % num_live];
      if (b.size > A) /* inside a block, not at its start */
        CHECK(!clg_suballoc_release(sa, b.region, b.offset + A));
      CHECK(!clg_suballoc_release(sa, b.region + 1000, b.offset));
    }
    clg_suballoc_info info;
    clg_suballoc_info_get(sa, &info);
    if (info.bytes_used != model_used || info.used_blocks != num_live) {
      CHECK_MSG(false, "step %ld: %llu bytes in %llu blocks, model %llu in %zu", step,
                (unsigned long long)info.bytes_used, (unsigned long long)info.used_blocks,
                (unsigned long long)model_used, num_live);
      break;
    }
    if (step < 100000 || step % 8 == 0) {
      validations++;
      clg_code c = clg_suballoc_validate(sa);
      if (c != CLG_OK) {
        CHECK_MSG(false, "step %ld: %s", step, clg_last_error());
        break;
      }
    }
    /* Every 100,000 steps: empty one region and remove it, add a new one. */
    if (step % 100000 == 99999) {
      int k = (int)(clg_test_rand() % (unsigned)num_regions);
      uint32_t id = regions[k].id;
      for (size_t i = 0; i < num_live;) {
        if (live[i].region == id)
          step_free(sa, i);
        else
          i++;
      }
      if (num_live) { /* a region with blocks in use cannot go */
        CHECK_CODE(clg_suballoc_remove_region(sa, live[0].region), CLG_FAILED_PRECONDITION);
      }
      CHECK_OK(clg_suballoc_remove_region(sa, id));
      CHECK_CODE(clg_suballoc_remove_region(sa, id), CLG_NOT_FOUND);
      free(regions[k].units);
      regions[k] = regions[--num_regions];
      CHECK_OK(clg_suballoc_validate(sa));
      model_add(sa, next_id++, (2u << 20) + (clg_test_rand() % 64) * (256u << 10) + A);
      CHECK_OK(clg_suballoc_validate(sa));
    }
  }
  CHECK_OK(clg_suballoc_validate(sa));
  while (num_live)
    step_free(sa, num_live - 1);
  CHECK_OK(clg_suballoc_validate(sa));
  clg_suballoc_info info;
  clg_suballoc_info_get(sa, &info);
  /* Everything free again: each region is one coalesced block. */
  CHECK(info.bytes_used == 0);
  CHECK(info.free_blocks == (uint64_t)num_regions);
  CHECK(info.regions == (uint32_t)num_regions);
  double secs = (double)(clg_now_ns() - t0) / 1e9;
  printf("random: %ld steps, %ld failed allocations (checked against the model), %ld "
         "validations, %.2f s\n",
         steps, failures, validations, secs);
  CHECK(failures > 1000);      /* the trace does run out of room */
  CHECK(failures < steps / 4); /* but mostly fits */
  for (int i = 0; i < num_regions; i++)
    free(regions[i].units);
  num_regions = 0;
  free(live);
  live = NULL;
  num_live = cap_live = 0;
  model_used = 0;
  clg_suballoc_free_all(sa);
}

static void test_fit_and_coalesce(void)
{
  clg_suballoc *sa = clg_suballoc_new(A);
  CHECK_OK(clg_suballoc_add_region(sa, 7, 1u << 20));
  uint32_t r;
  uint64_t o[6], s;
  uint64_t sizes[6] = {4096, 1000, 8192, 1000, 3000, 1000};
  for (int i = 0; i < 6; i++) {
    CHECK(clg_suballoc_alloc(sa, sizes[i], &r, &o[i], &s));
    CHECK(r == 7);
  }
  /* Address order from 0, sizes rounded to 256. */
  CHECK(o[0] == 0 && o[1] == 4096 && o[2] == 5120 && o[3] == 13312 && o[4] == 14336);
  CHECK(clg_suballoc_block_size(sa, 7, o[4]) == 3072);
  /* Holes of 4096, 8192 and 3072 bytes, plus the big tail. */
  CHECK(clg_suballoc_release(sa, 7, o[0]));
  CHECK(clg_suballoc_release(sa, 7, o[2]));
  CHECK(clg_suballoc_release(sa, 7, o[4]));
  CHECK(!clg_suballoc_release(sa, 7, o[4])); /* double free: nothing happens */
  CHECK_OK(clg_suballoc_validate(sa));
  uint64_t x;
  CHECK(clg_suballoc_alloc(sa, 3000, &r, &x, &s) && x == o[4]); /* exact fit */
  CHECK(clg_suballoc_alloc(sa, 5000, &r, &x, &s) && x == o[2]); /* 8 KiB hole, not the tail */
  CHECK(clg_suballoc_alloc(sa, 4000, &r, &x, &s) && x == o[0]); /* 4 KiB hole */
  CHECK(clg_suballoc_alloc(sa, 3000, &r, &x, &s) && x == o[2] + 5120); /* rest of 8 KiB */
  CHECK_OK(clg_suballoc_validate(sa));
  CHECK_CODE(clg_suballoc_remove_region(sa, 7), CLG_FAILED_PRECONDITION);
  /* Free everything in a scrambled order: one block again. */
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t off = 0; off < (1u << 20); off += A)
      if ((off / A) % 2 == (uint64_t)pass)
        clg_suballoc_release(sa, 7, off);
  }
  CHECK_OK(clg_suballoc_validate(sa));
  clg_suballoc_info info;
  clg_suballoc_info_get(sa, &info);
  CHECK(info.free_blocks == 1 && info.bytes_used == 0 && info.largest_free == (1u << 20));
  CHECK_OK(clg_suballoc_remove_region(sa, 7));
  clg_suballoc_info_get(sa, &info);
  CHECK(info.regions == 0 && info.bytes_total == 0 && info.largest_free == 0);
  CHECK(!clg_suballoc_alloc(sa, 1, &r, &x, &s));
  CHECK_OK(clg_suballoc_validate(sa));
  clg_suballoc_free_all(sa);
}

static void test_edges(void)
{
  CHECK(clg_suballoc_new(128) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK(clg_suballoc_new(768) == NULL);
  clg_suballoc *sa = clg_suballoc_new(4096);
  CHECK(clg_suballoc_alignment(sa) == 4096);
  CHECK_CODE(clg_suballoc_add_region(sa, 1, 0), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_suballoc_add_region(sa, 1, 4096 + 256), CLG_INVALID_ARGUMENT);
  CHECK_OK(clg_suballoc_add_region(sa, 1, 1ull << 40)); /* offsets beyond 32 bits */
  CHECK_CODE(clg_suballoc_add_region(sa, 1, 4096), CLG_ALREADY_EXISTS);
  CHECK_OK(clg_suballoc_add_region(sa, 2, 8192));
  uint32_t r;
  uint64_t o, s, o2;
  CHECK(!clg_suballoc_alloc(sa, 0, &r, &o, &s));
  CHECK(!clg_suballoc_alloc(sa, (1ull << 40) + 1, &r, &o, &s));
  CHECK(!clg_suballoc_alloc(sa, UINT64_MAX, &r, &o, &s));
  CHECK(clg_suballoc_alloc(sa, 1, &r, &o, &s) && r == 2 && o == 0 && s == 4096); /* best fit */
  CHECK(clg_suballoc_alloc(sa, 600ull << 30, &r, &o, &s) && r == 1 && o == 0);
  CHECK(clg_suballoc_alloc(sa, 300ull << 30, &r, &o2, &s) && r == 1 && o2 == 600ull << 30);
  CHECK(clg_suballoc_largest_free(sa) == (124ull << 30));
  CHECK(clg_suballoc_region_used(sa, 1) == 900ull << 30);
  CHECK(clg_suballoc_region_used(sa, 3) == UINT64_MAX);
  CHECK(clg_suballoc_release(sa, 1, o));
  CHECK_OK(clg_suballoc_validate(sa));
  CHECK(clg_suballoc_largest_free(sa) == (600ull << 30));
  clg_suballoc_free_all(sa);
  CHECK_CODE(clg_suballoc_validate(NULL), CLG_INTERNAL);
}

int main(void)
{
  test_edges();
  test_fit_and_coalesce();
  test_random();
  return clg_test_summary("test_suballoc");
}
