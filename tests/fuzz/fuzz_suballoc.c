/* libFuzzer target: the sub-allocator algorithm (src/memory/suballoc.c) driven by random
 * operations, with clg_suballoc_validate after each one and a shadow model of the blocks
 * in use.
 *
 * Input: byte 0 picks the alignment (256 << (b % 5)); then each operation is one opcode
 * byte followed by its operands. Properties checked, beyond "no crash, no leak, no UB":
 *  - validate is OK after every operation;
 *  - a block is aligned, at least the size asked for, inside its region, and overlaps no
 *    other block in use; block_size and region_used agree with the model;
 *  - an allocation fails only when the largest free block is too small;
 *  - release of a block not in use returns false and changes nothing;
 *  - region add/remove give ALREADY_EXISTS / NOT_FOUND / FAILED_PRECONDITION as documented.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "memory/memory.h"

#ifndef FUZZ_SUBALLOC_ENTRY
#define FUZZ_SUBALLOC_ENTRY LLVMFuzzerTestOneInput
#endif

#define FS_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_suballoc", cond, __VA_ARGS__)

#define FS_MAX_BLOCKS 512
#define FS_MAX_REGIONS 8

typedef struct fs_block {
  uint32_t region;
  uint64_t offset, size;
} fs_block;

typedef struct fs_region {
  uint32_t id;
  uint64_t size, used;
} fs_region;

typedef struct fs_state {
  const uint8_t *p, *end;
  clg_suballoc *a;
  uint64_t align;
  fs_block blocks[FS_MAX_BLOCKS];
  int num_blocks;
  fs_region regions[FS_MAX_REGIONS];
  int num_regions;
} fs_state;

static uint64_t fs_take(fs_state *s, int bytes)
{
  uint64_t v = 0;
  for (int i = 0; i < bytes && s->p < s->end; i++)
    v = v << 8 | *s->p++;
  return v;
}

static fs_region *fs_region_find(fs_state *s, uint32_t id)
{
  for (int i = 0; i < s->num_regions; i++)
    if (s->regions[i].id == id)
      return &s->regions[i];
  return NULL;
}

/* A size in units of the alignment, spread over small, medium and odd values. */
static uint64_t fs_size(fs_state *s, bool multiple)
{
  uint64_t kind = fs_take(s, 1), v = fs_take(s, 2);
  uint64_t units = kind % 4 == 0 ? v % 4 + 1 : kind % 4 == 1 ? v % 64 + 1 : v + 1;
  uint64_t bytes = units * s->align;
  if (!multiple && kind & 0x80)
    bytes -= fs_take(s, 1) % s->align; /* not a multiple: rounded up */
  return bytes;
}

static void fs_check_block(fs_state *s, const fs_block *b)
{
  fs_region *r = fs_region_find(s, b->region);
  FS_ASSERT(r, "block in unknown region %u", b->region);
  FS_ASSERT(b->offset % s->align == 0 && b->size % s->align == 0,
            "block %llu+%llu not aligned to %llu", (unsigned long long)b->offset,
            (unsigned long long)b->size, (unsigned long long)s->align);
  FS_ASSERT(b->offset + b->size <= r->size, "block %llu+%llu outside region of %llu",
            (unsigned long long)b->offset, (unsigned long long)b->size,
            (unsigned long long)r->size);
  for (int i = 0; i < s->num_blocks; i++) {
    const fs_block *o = &s->blocks[i];
    if (o == b || o->region != b->region)
      continue;
    FS_ASSERT(o->offset + o->size <= b->offset || b->offset + b->size <= o->offset,
              "blocks overlap in region %u: %llu+%llu and %llu+%llu", b->region,
              (unsigned long long)o->offset, (unsigned long long)o->size,
              (unsigned long long)b->offset, (unsigned long long)b->size);
  }
}

static void fs_op_alloc(fs_state *s)
{
  uint64_t want = fs_size(s, false);
  if (fs_take(s, 1) == 0xff)
    want = fs_take(s, 8); /* anything, including 0 and near UINT64_MAX */
  uint64_t largest = clg_suballoc_largest_free(s->a);
  fs_block b;
  bool ok = clg_suballoc_alloc(s->a, want, &b.region, &b.offset, &b.size);
  uint64_t rounded = want > UINT64_MAX - s->align ? 0 : (want + s->align - 1) / s->align * s->align;
  if (!ok) {
    FS_ASSERT(want == 0 || rounded == 0 || largest < rounded,
              "alloc of %llu failed with a free block of %llu", (unsigned long long)want,
              (unsigned long long)largest);
    return;
  }
  FS_ASSERT(want > 0 && b.size >= want && b.size == rounded, "alloc of %llu gave %llu bytes",
            (unsigned long long)want, (unsigned long long)b.size);
  fs_check_block(s, &b);
  FS_ASSERT(clg_suballoc_block_size(s->a, b.region, b.offset) == b.size, "block_size differs");
  fs_region_find(s, b.region)->used += b.size;
  if (s->num_blocks < FS_MAX_BLOCKS) {
    s->blocks[s->num_blocks++] = b;
  } else { /* the model is full: give it straight back */
    FS_ASSERT(clg_suballoc_release(s->a, b.region, b.offset), "release of a fresh block failed");
    fs_region_find(s, b.region)->used -= b.size;
  }
}

static void fs_op_release(fs_state *s)
{
  uint64_t pick = fs_take(s, 2);
  if (s->num_blocks == 0 || pick & 0x8000) {
    /* A block that is not in use: a bogus offset, or inside a live block. */
    uint32_t region = (uint32_t)fs_take(s, 1) % 10;
    uint64_t offset = fs_take(s, 3) * 64;
    bool live = false;
    for (int i = 0; i < s->num_blocks; i++)
      live |= s->blocks[i].region == region && s->blocks[i].offset == offset;
    if (!live)
      FS_ASSERT(!clg_suballoc_release(s->a, region, offset), "released a block not in use");
    return;
  }
  int i = (int)(pick % (uint64_t)s->num_blocks);
  fs_block b = s->blocks[i];
  FS_ASSERT(clg_suballoc_release(s->a, b.region, b.offset), "release of a live block failed");
  FS_ASSERT(!clg_suballoc_release(s->a, b.region, b.offset), "double release succeeded");
  FS_ASSERT(clg_suballoc_block_size(s->a, b.region, b.offset) == 0, "freed block still sized");
  fs_region_find(s, b.region)->used -= b.size;
  s->blocks[i] = s->blocks[--s->num_blocks];
}

static void fs_op_add_region(fs_state *s)
{
  uint32_t id = (uint32_t)fs_take(s, 1) % 10;
  if (fs_take(s, 1) == 0xff)
    id = (uint32_t)fs_take(s, 4);
  bool multiple = fs_take(s, 1) % 8 != 0;
  uint64_t size = fs_size(s, multiple);
  if (fs_take(s, 1) == 0xfe)
    size = 0;
  clg_code code = clg_suballoc_add_region(s->a, id, size);
  fs_region *r = fs_region_find(s, id);
  if (size == 0 || size % s->align != 0) {
    FS_ASSERT(code == CLG_INVALID_ARGUMENT, "add_region of size %llu: %s", (unsigned long long)size,
              clg_code_name(code));
  } else if (r) {
    FS_ASSERT(code == CLG_ALREADY_EXISTS, "add_region twice: %s", clg_code_name(code));
  } else if (s->num_regions == FS_MAX_REGIONS) {
    /* The model is full: take it out again. */
    FS_ASSERT(code == CLG_OK, "add_region: %s", clg_last_error());
    FS_ASSERT(clg_suballoc_remove_region(s->a, id) == CLG_OK, "remove: %s", clg_last_error());
  } else {
    FS_ASSERT(code == CLG_OK, "add_region: %s", clg_last_error());
    s->regions[s->num_regions++] = (fs_region){id, size, 0};
  }
}

static void fs_op_remove_region(fs_state *s)
{
  uint32_t id = (uint32_t)fs_take(s, 1) % 10;
  fs_region *r = fs_region_find(s, id);
  clg_code code = clg_suballoc_remove_region(s->a, id);
  if (!r) {
    FS_ASSERT(code == CLG_NOT_FOUND, "remove of unknown region: %s", clg_code_name(code));
  } else if (r->used) {
    FS_ASSERT(code == CLG_FAILED_PRECONDITION, "remove of a used region: %s", clg_code_name(code));
  } else {
    FS_ASSERT(code == CLG_OK, "remove: %s", clg_last_error());
    *r = s->regions[--s->num_regions];
  }
}

static void fs_check_totals(fs_state *s)
{
  clg_code code = clg_suballoc_validate(s->a);
  FS_ASSERT(code == CLG_OK, "%s", clg_last_error());
  clg_suballoc_info info;
  clg_suballoc_info_get(s->a, &info);
  uint64_t total = 0, used = 0;
  for (int i = 0; i < s->num_regions; i++) {
    total += s->regions[i].size;
    used += s->regions[i].used;
    FS_ASSERT(clg_suballoc_region_used(s->a, s->regions[i].id) == s->regions[i].used,
              "region %u: used %llu, model %llu", s->regions[i].id,
              (unsigned long long)clg_suballoc_region_used(s->a, s->regions[i].id),
              (unsigned long long)s->regions[i].used);
  }
  FS_ASSERT(info.bytes_total == total && info.bytes_used == used &&
                info.used_blocks == (uint64_t)s->num_blocks &&
                info.regions == (uint32_t)s->num_regions,
            "info: total %llu used %llu blocks %llu regions %u; model %llu %llu %d %d",
            (unsigned long long)info.bytes_total, (unsigned long long)info.bytes_used,
            (unsigned long long)info.used_blocks, info.regions, (unsigned long long)total,
            (unsigned long long)used, s->num_blocks, s->num_regions);
  FS_ASSERT(info.largest_free <= info.bytes_free, "largest free %llu > free %llu",
            (unsigned long long)info.largest_free, (unsigned long long)info.bytes_free);
}

int FUZZ_SUBALLOC_ENTRY(const uint8_t *data, size_t size);

int FUZZ_SUBALLOC_ENTRY(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  static fs_state s; /* large: not on the stack */
  memset(&s, 0, sizeof s);
  s.p = data + 1;
  s.end = data + size;
  s.align = 256ull << (data[0] % 5);
  s.a = clg_suballoc_new(s.align);
  FS_ASSERT(s.a, "clg_suballoc_new(%llu): %s", (unsigned long long)s.align, clg_last_error());
  FS_ASSERT(clg_suballoc_alignment(s.a) == s.align, "alignment");
  FS_ASSERT(!clg_suballoc_new(s.align + 1) && clg_last_code() == CLG_INVALID_ARGUMENT,
            "a bad alignment was accepted");
  while (s.p < s.end) {
    switch (*s.p++ % 8) {
    case 0:
    case 1:
    case 2:
      fs_op_alloc(&s);
      break;
    case 3:
    case 4:
      fs_op_release(&s);
      break;
    case 5:
      fs_op_add_region(&s);
      break;
    case 6:
      fs_op_remove_region(&s);
      break;
    default:
      for (int i = 0; i < s.num_blocks; i++)
        fs_check_block(&s, &s.blocks[i]);
      break;
    }
    fs_check_totals(&s);
  }
  clg_suballoc_free_all(s.a);
  return 0;
}
