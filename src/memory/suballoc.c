/* The allocation algorithm on plain offsets: TLSF (two-level segregated fit).
 *
 * Why TLSF rather than TensorFlow's 21 bins of std::set: it gives O(1) allocate and free
 * with two bitmap lookups and no tree, which is what keeps an allocate+free pair under
 * 100 ns. Free blocks sit in size classes: sizes are counted in units of the alignment;
 * units below 64 get one exact class each (rows 0 and 1), above that each power of two
 * [2^f, 2^(f+1)) is split into 32 equal classes, so a class spans at most 1/32 (3%) of
 * its sizes. A bitmap of rows and one of classes per row find the smallest non-empty
 * class at or above a given one in two count-trailing-zeros.
 *
 * Best fit, within that granularity: the request's own class is searched first (its first
 * 8 blocks, taking the smallest that fits, so exact and near-exact fits win); failing
 * that, the head of the smallest non-empty class above it, where every block fits; only
 * when nothing larger is free anywhere is the rest of the own class scanned, so an
 * allocation fails only when no free block can hold it. Every step is bounded except
 * that last resort, which runs only when the allocator is nearly full.
 *
 * Blocks of a region are linked in address order (physical neighbours), so freeing
 * coalesces with free neighbours in O(1); the invariant is that no two free blocks are
 * adjacent. Blocks in use are found by (region, offset) in an open-addressing hash table.
 * Nodes live in one array addressed by 32-bit indices, recycled through a free stack.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

#define NIL UINT32_MAX
#define SL_BITS 5
#define SL_COUNT (1u << SL_BITS)
#define ROWS 64
#define OWN_CLASS_PROBES 8

enum { NODE_FREE = 1u, NODE_LIVE = 2u };

typedef struct sa_node {
  uint64_t offset, size; /* bytes */
  uint32_t prev_phys, next_phys;
  uint32_t prev_free, next_free; /* also the node-recycling stack (next_free) */
  uint32_t slot;                 /* index in regions[] */
  uint32_t region;               /* the caller's id */
  uint16_t flags;
  uint16_t cls; /* free blocks: row * SL_COUNT + col of the list they are in */
} sa_node;

typedef struct sa_region {
  bool live;
  uint32_t id;
  uint64_t size;
  uint32_t first; /* node at offset 0 */
  uint64_t used_bytes;
  uint64_t used_blocks;
} sa_region;

struct clg_suballoc {
  uint64_t align;
  unsigned align_shift;

  sa_node *nodes;
  uint32_t num_nodes, cap_nodes, recycled; /* recycled: stack of dead nodes */

  sa_region *regions;
  uint32_t num_slots, cap_slots, live_regions;

  uint32_t heads[ROWS][SL_COUNT];
  uint32_t sl_bitmap[ROWS];
  uint64_t fl_bitmap;

  uint32_t *table; /* node indices of blocks in use; NIL = empty */
  uint32_t table_mask;
  uint32_t table_count;

  uint64_t bytes_total, bytes_used;
  uint64_t used_blocks, free_blocks;
};

/* --- size classes ------------------------------------------------------------------- */

static inline unsigned log2_floor(uint64_t v) { return 63u - (unsigned)__builtin_clzll(v); }

/* The class of a size in units (>= 1): row and column. */
static inline void class_of(uint64_t units, unsigned *row, unsigned *col)
{
  if (units < 2 * SL_COUNT) {
    *row = (unsigned)(units >> SL_BITS);
    *col = (unsigned)(units & (SL_COUNT - 1));
    return;
  }
  unsigned fl = log2_floor(units);
  *row = fl - SL_BITS + 1;
  *col = (unsigned)((units >> (fl - SL_BITS)) & (SL_COUNT - 1));
}

/* The smallest class at or after (row, col) with a free block; false if none. */
static inline bool find_nonempty(const clg_suballoc *a, unsigned row, unsigned col, unsigned *r_out,
                                 unsigned *c_out)
{
  if (row >= ROWS)
    return false;
  uint32_t m = col < SL_COUNT ? a->sl_bitmap[row] & (~0u << col) : 0;
  if (!m) {
    uint64_t rows = row + 1 < ROWS ? a->fl_bitmap & (~0ull << (row + 1)) : 0;
    if (!rows)
      return false;
    row = (unsigned)__builtin_ctzll(rows);
    m = a->sl_bitmap[row];
  }
  *r_out = row;
  *c_out = (unsigned)__builtin_ctz(m);
  return true;
}

static inline void list_insert(clg_suballoc *a, uint32_t n)
{
  sa_node *node = &a->nodes[n];
  unsigned row, col;
  class_of(node->size >> a->align_shift, &row, &col);
  node->cls = (uint16_t)(row * SL_COUNT + col);
  uint32_t head = a->heads[row][col];
  node->prev_free = NIL;
  node->next_free = head;
  if (head != NIL)
    a->nodes[head].prev_free = n;
  a->heads[row][col] = n;
  a->sl_bitmap[row] |= 1u << col;
  a->fl_bitmap |= 1ull << row;
  a->free_blocks++;
}

static inline void list_remove(clg_suballoc *a, uint32_t n)
{
  sa_node *node = &a->nodes[n];
  if (node->prev_free != NIL) {
    a->nodes[node->prev_free].next_free = node->next_free;
  } else {
    unsigned row = node->cls / SL_COUNT, col = node->cls % SL_COUNT;
    a->heads[row][col] = node->next_free;
    if (node->next_free == NIL) {
      a->sl_bitmap[row] &= ~(1u << col);
      if (!a->sl_bitmap[row])
        a->fl_bitmap &= ~(1ull << row);
    }
  }
  if (node->next_free != NIL)
    a->nodes[node->next_free].prev_free = node->prev_free;
  a->free_blocks--;
}

/* --- node pool ----------------------------------------------------------------------- */

/* Makes sure `count` nodes can be taken without growing (so that an operation can check
 * for host memory before it changes anything). */
static inline bool nodes_reserve(clg_suballoc *a, uint32_t count)
{
  if (count == 1 && (a->recycled != NIL || a->num_nodes < a->cap_nodes))
    return true;
  uint32_t spare = a->cap_nodes - a->num_nodes;
  for (uint32_t n = a->recycled; n != NIL && spare < count; n = a->nodes[n].next_free)
    spare++;
  if (spare >= count)
    return true;
  uint32_t cap = a->cap_nodes ? a->cap_nodes : 64;
  while (cap - a->num_nodes < count) {
    if (cap > UINT32_MAX / 2)
      return false;
    cap *= 2;
  }
  sa_node *p = realloc(a->nodes, (size_t)cap * sizeof *p);
  if (!p)
    return false;
  a->nodes = p;
  a->cap_nodes = cap;
  return true;
}

static uint32_t node_take(clg_suballoc *a)
{
  uint32_t n = a->recycled;
  if (n != NIL)
    a->recycled = a->nodes[n].next_free;
  else
    n = a->num_nodes++;
  return n;
}

static void node_recycle(clg_suballoc *a, uint32_t n)
{
  a->nodes[n].flags = 0;
  a->nodes[n].next_free = a->recycled;
  a->recycled = n;
}

/* --- blocks in use, by (region, offset) ------------------------------------------- */

static inline uint32_t hash_key(const clg_suballoc *a, uint32_t region, uint64_t offset)
{
  uint64_t h = ((offset >> a->align_shift) ^ ((uint64_t)region << 40)) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32);
}

static bool table_grow(clg_suballoc *a)
{
  uint32_t cap = a->table ? (a->table_mask + 1) * 2 : 256;
  if (cap == 0)
    return false;
  uint32_t *t = malloc((size_t)cap * sizeof *t);
  if (!t)
    return false;
  memset(t, 0xff, (size_t)cap * sizeof *t);
  uint32_t mask = cap - 1;
  if (a->table) {
    for (uint32_t i = 0; i <= a->table_mask; i++) {
      uint32_t n = a->table[i];
      if (n == NIL)
        continue;
      uint32_t j = hash_key(a, a->nodes[n].region, a->nodes[n].offset) & mask;
      while (t[j] != NIL)
        j = (j + 1) & mask;
      t[j] = n;
    }
  }
  free(a->table);
  a->table = t;
  a->table_mask = mask;
  return true;
}

static void table_insert(clg_suballoc *a, uint32_t n)
{
  uint32_t j = hash_key(a, a->nodes[n].region, a->nodes[n].offset) & a->table_mask;
  while (a->table[j] != NIL)
    j = (j + 1) & a->table_mask;
  a->table[j] = n;
  a->table_count++;
}

/* The table position holding the block in use at (region, offset), or NIL. */
static uint32_t table_find(const clg_suballoc *a, uint32_t region, uint64_t offset)
{
  if (!a->table)
    return NIL;
  uint32_t j = hash_key(a, region, offset) & a->table_mask;
  for (;;) {
    uint32_t n = a->table[j];
    if (n == NIL)
      return NIL;
    if (a->nodes[n].offset == offset && a->nodes[n].region == region)
      return j;
    j = (j + 1) & a->table_mask;
  }
}

/* Linear-probing deletion by backward shift: no tombstones, so lookups stay short. */
static void table_erase_at(clg_suballoc *a, uint32_t j)
{
  uint32_t mask = a->table_mask;
  uint32_t hole = j;
  for (uint32_t k = (j + 1) & mask;; k = (k + 1) & mask) {
    uint32_t n = a->table[k];
    if (n == NIL)
      break;
    uint32_t home = hash_key(a, a->nodes[n].region, a->nodes[n].offset) & mask;
    /* Move n into the hole unless its home lies cyclically in (hole, k]. */
    bool stays = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
    if (!stays) {
      a->table[hole] = n;
      hole = k;
    }
  }
  a->table[hole] = NIL;
  a->table_count--;
}

/* --- public ------------------------------------------------------------------------ */

clg_suballoc *clg_suballoc_new(uint64_t alignment)
{
  if (alignment < 256 || (alignment & (alignment - 1)) != 0) {
    clg_error(CLG_INVALID_ARGUMENT,
              "clg_suballoc_new: alignment must be a power of two >= 256, got %llu",
              (unsigned long long)alignment);
    return NULL;
  }
  clg_suballoc *a = calloc(1, sizeof *a);
  if (!a) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating a sub-allocator");
    return NULL;
  }
  a->align = alignment;
  a->align_shift = log2_floor(alignment);
  a->recycled = NIL;
  memset(a->heads, 0xff, sizeof a->heads);
  return a;
}

void clg_suballoc_free_all(clg_suballoc *a)
{
  if (!a)
    return;
  free(a->nodes);
  free(a->regions);
  free(a->table);
  free(a);
}

uint64_t clg_suballoc_alignment(const clg_suballoc *a) { return a->align; }

static sa_region *region_find(const clg_suballoc *a, uint32_t id)
{
  for (uint32_t s = 0; s < a->num_slots; s++)
    if (a->regions[s].live && a->regions[s].id == id)
      return &a->regions[s];
  return NULL;
}

clg_code clg_suballoc_add_region(clg_suballoc *a, uint32_t region, uint64_t size)
{
  if (size == 0 || size % a->align != 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_suballoc_add_region: size must be a positive multiple of %llu, got %llu",
                     (unsigned long long)a->align, (unsigned long long)size);
  if (region_find(a, region))
    return clg_error(CLG_ALREADY_EXISTS, "clg_suballoc_add_region: region %u already exists",
                     region);
  uint32_t slot = 0;
  while (slot < a->num_slots && a->regions[slot].live)
    slot++;
  if (slot == a->cap_slots) {
    uint32_t cap = a->cap_slots ? a->cap_slots * 2 : 8;
    sa_region *p = realloc(a->regions, (size_t)cap * sizeof *p);
    if (!p)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory adding region %u", region);
    a->regions = p;
    a->cap_slots = cap;
  }
  if (!nodes_reserve(a, 1))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory adding region %u", region);
  if (slot == a->num_slots)
    a->num_slots++;
  uint32_t n = node_take(a);
  a->nodes[n] = (sa_node){.offset = 0,
                          .size = size,
                          .prev_phys = NIL,
                          .next_phys = NIL,
                          .slot = slot,
                          .region = region,
                          .flags = NODE_LIVE | NODE_FREE};
  a->regions[slot] = (sa_region){.live = true, .id = region, .size = size, .first = n};
  a->live_regions++;
  a->bytes_total += size;
  list_insert(a, n);
  return CLG_OK;
}

clg_code clg_suballoc_remove_region(clg_suballoc *a, uint32_t region)
{
  sa_region *r = region_find(a, region);
  if (!r)
    return clg_error(CLG_NOT_FOUND, "clg_suballoc_remove_region: no region %u", region);
  if (r->used_blocks)
    return clg_error(CLG_FAILED_PRECONDITION,
                     "clg_suballoc_remove_region: region %u has %llu blocks in use", region,
                     (unsigned long long)r->used_blocks);
  /* With nothing in use the region is one coalesced free block. */
  list_remove(a, r->first);
  node_recycle(a, r->first);
  a->bytes_total -= r->size;
  a->live_regions--;
  r->live = false;
  while (a->num_slots > 0 && !a->regions[a->num_slots - 1].live)
    a->num_slots--;
  return CLG_OK;
}

/* The free block to allocate `size` bytes from, or NIL. */
static uint32_t find_fit(const clg_suballoc *a, uint64_t size)
{
  unsigned row, col;
  class_of(size >> a->align_shift, &row, &col);
  uint32_t best = NIL;
  uint64_t best_size = UINT64_MAX;
  uint32_t n = a->heads[row][col];
  for (int probes = 0; n != NIL && probes < OWN_CLASS_PROBES; probes++) {
    uint64_t s = a->nodes[n].size;
    if (s >= size && s < best_size) {
      best = n;
      best_size = s;
      if (s == size)
        return n;
    }
    n = a->nodes[n].next_free;
  }
  if (best != NIL)
    return best;
  unsigned r, c;
  if (find_nonempty(a, row, col + 1, &r, &c))
    return a->heads[r][c];
  for (; n != NIL; n = a->nodes[n].next_free) {
    uint64_t s = a->nodes[n].size;
    if (s >= size && s < best_size) {
      best = n;
      best_size = s;
    }
  }
  return best;
}

bool clg_suballoc_alloc(clg_suballoc *a, uint64_t size, uint32_t *region, uint64_t *offset,
                        uint64_t *block_size)
{
  if (size == 0 || size > UINT64_MAX - a->align)
    return false;
  size = (size + a->align - 1) & ~(a->align - 1);
  if (!a->fl_bitmap)
    return false;
  /* Host memory for a split node and the table first, so a failure changes nothing. */
  if (!nodes_reserve(a, 1))
    return false;
  if ((uint64_t)(a->table_count + 1) * 2 > (uint64_t)(a->table ? a->table_mask + 1 : 0) &&
      !table_grow(a))
    return false;
  uint32_t n = find_fit(a, size);
  if (n == NIL)
    return false;
  list_remove(a, n);
  sa_node *node = &a->nodes[n];
  if (node->size > size) {
    uint32_t t = node_take(a);
    node = &a->nodes[n]; /* stable: nodes_reserve made room, no realloc */
    sa_node *tail = &a->nodes[t];
    *tail = (sa_node){.offset = node->offset + size,
                      .size = node->size - size,
                      .prev_phys = n,
                      .next_phys = node->next_phys,
                      .slot = node->slot,
                      .region = node->region,
                      .flags = NODE_LIVE | NODE_FREE};
    if (node->next_phys != NIL)
      a->nodes[node->next_phys].prev_phys = t;
    node->next_phys = t;
    node->size = size;
    list_insert(a, t);
  }
  node->flags = NODE_LIVE;
  table_insert(a, n);
  sa_region *r = &a->regions[node->slot];
  r->used_bytes += size;
  r->used_blocks++;
  a->bytes_used += size;
  a->used_blocks++;
  *region = node->region;
  *offset = node->offset;
  *block_size = size;
  return true;
}

bool clg_suballoc_release(clg_suballoc *a, uint32_t region, uint64_t offset)
{
  return clg_suballoc_release_sized(a, region, offset, 0);
}

bool clg_suballoc_release_sized(clg_suballoc *a, uint32_t region, uint64_t offset, uint64_t size)
{
  uint32_t j = table_find(a, region, offset);
  if (j == NIL || (size && a->nodes[a->table[j]].size != size))
    return false;
  uint32_t n = a->table[j];
  table_erase_at(a, j);
  sa_node *node = &a->nodes[n];
  sa_region *r = &a->regions[node->slot];
  r->used_bytes -= node->size;
  r->used_blocks--;
  a->bytes_used -= node->size;
  a->used_blocks--;
  node->flags = NODE_LIVE | NODE_FREE;

  uint32_t next = node->next_phys;
  if (next != NIL && (a->nodes[next].flags & NODE_FREE)) {
    list_remove(a, next);
    node->size += a->nodes[next].size;
    node->next_phys = a->nodes[next].next_phys;
    if (node->next_phys != NIL)
      a->nodes[node->next_phys].prev_phys = n;
    node_recycle(a, next);
  }
  uint32_t prev = node->prev_phys;
  if (prev != NIL && (a->nodes[prev].flags & NODE_FREE)) {
    list_remove(a, prev);
    sa_node *p = &a->nodes[prev];
    p->size += node->size;
    p->next_phys = node->next_phys;
    if (p->next_phys != NIL)
      a->nodes[p->next_phys].prev_phys = prev;
    node_recycle(a, n);
    n = prev;
  }
  list_insert(a, n);
  return true;
}

uint64_t clg_suballoc_block_size(const clg_suballoc *a, uint32_t region, uint64_t offset)
{
  uint32_t j = table_find(a, region, offset);
  return j == NIL ? 0 : a->nodes[a->table[j]].size;
}

uint64_t clg_suballoc_largest_free(const clg_suballoc *a)
{
  if (!a->fl_bitmap)
    return 0;
  unsigned row = log2_floor(a->fl_bitmap);
  unsigned col = log2_floor(a->sl_bitmap[row]);
  uint64_t best = 0;
  for (uint32_t n = a->heads[row][col]; n != NIL; n = a->nodes[n].next_free)
    if (a->nodes[n].size > best)
      best = a->nodes[n].size;
  return best;
}

void clg_suballoc_info_get(const clg_suballoc *a, clg_suballoc_info *out)
{
  out->bytes_total = a->bytes_total;
  out->bytes_used = a->bytes_used;
  out->bytes_free = a->bytes_total - a->bytes_used;
  out->largest_free = clg_suballoc_largest_free(a);
  out->used_blocks = a->used_blocks;
  out->free_blocks = a->free_blocks;
  out->regions = a->live_regions;
}

uint64_t clg_suballoc_region_used(const clg_suballoc *a, uint32_t region)
{
  const sa_region *r = region_find(a, region);
  return r ? r->used_bytes : UINT64_MAX;
}

void clg_suballoc_walk(const clg_suballoc *a, clg_suballoc_visit visit, void *user)
{
  for (uint32_t s = 0; s < a->num_slots; s++) {
    const sa_region *r = &a->regions[s];
    if (!r->live)
      continue;
    for (uint32_t n = r->first; n != NIL; n = a->nodes[n].next_phys) {
      const sa_node *node = &a->nodes[n];
      visit(user, r->id, r->size, node->offset, node->size, !(node->flags & NODE_FREE));
    }
  }
}

/* --- validation ------------------------------------------------------------------- */

#define BAD(...) return clg_error(CLG_INTERNAL, "clg_suballoc_validate: " __VA_ARGS__)

/* What the walk of the regions counts, to check against the recorded totals. */
typedef struct sa_tally {
  uint64_t total, used, used_blocks, free_blocks, live_nodes;
} sa_tally;

/* Region slot s's chain: linked both ways, contiguous from 0 to its size, aligned, free
 * neighbours coalesced, blocks in use in the table, its counts right. */
static clg_code validate_region(const clg_suballoc *a, uint32_t s, sa_tally *t)
{
  const sa_region *r = &a->regions[s];
  for (uint32_t u = s + 1; u < a->num_slots; u++)
    if (a->regions[u].live && a->regions[u].id == r->id)
      BAD("region id %u appears twice", r->id);
  uint64_t at = 0, r_used = 0, r_blocks = 0;
  uint32_t prev = NIL;
  bool prev_free = false;
  for (uint32_t n = r->first; n != NIL; n = a->nodes[n].next_phys) {
    if (n >= a->num_nodes)
      BAD("region %u links to node %u beyond %u", r->id, n, a->num_nodes);
    const sa_node *node = &a->nodes[n];
    if (!(node->flags & NODE_LIVE))
      BAD("region %u links to a recycled node %u", r->id, n);
    if (node->slot != s || node->region != r->id)
      BAD("node at %llu says region %u slot %u, is in region %u slot %u",
          (unsigned long long)node->offset, node->region, node->slot, r->id, s);
    if (node->prev_phys != prev)
      BAD("region %u: block at %llu has a wrong previous neighbour", r->id,
          (unsigned long long)node->offset);
    if (node->offset != at)
      BAD("region %u: block at %llu, expected %llu (gap or overlap)", r->id,
          (unsigned long long)node->offset, (unsigned long long)at);
    if (node->size == 0 || node->size % a->align || node->offset % a->align)
      BAD("region %u: block at %llu of size %llu is not aligned to %llu", r->id,
          (unsigned long long)node->offset, (unsigned long long)node->size,
          (unsigned long long)a->align);
    bool is_free = node->flags & NODE_FREE;
    if (is_free && prev_free)
      BAD("region %u: free blocks at %llu and before it are not coalesced", r->id,
          (unsigned long long)node->offset);
    if (is_free) {
      t->free_blocks++;
    } else {
      r_used += node->size;
      r_blocks++;
      uint32_t j = table_find(a, r->id, node->offset);
      if (j == NIL || a->table[j] != n)
        BAD("region %u: block in use at %llu is missing from the table", r->id,
            (unsigned long long)node->offset);
    }
    t->live_nodes++;
    at += node->size;
    if (at > r->size)
      BAD("region %u: blocks run past its size %llu", r->id, (unsigned long long)r->size);
    prev = n;
    prev_free = is_free;
  }
  if (at != r->size)
    BAD("region %u: blocks cover %llu of %llu bytes", r->id, (unsigned long long)at,
        (unsigned long long)r->size);
  if (r_used != r->used_bytes || r_blocks != r->used_blocks)
    BAD("region %u: counts %llu bytes in %llu blocks in use, blocks say %llu in %llu", r->id,
        (unsigned long long)r->used_bytes, (unsigned long long)r->used_blocks,
        (unsigned long long)r_used, (unsigned long long)r_blocks);
  t->total += r->size;
  t->used += r_used;
  t->used_blocks += r_blocks;
  return CLG_OK;
}

/* Free lists: every member free, in its class, linked both ways; bitmaps match. */
static clg_code validate_free_lists(const clg_suballoc *a, const sa_tally *t)
{
  uint64_t listed = 0;
  for (unsigned row = 0; row < ROWS; row++) {
    bool row_bit = (a->fl_bitmap >> row) & 1;
    if (row_bit != (a->sl_bitmap[row] != 0))
      BAD("row %u: row bitmap %d but class bitmap %#x", row, row_bit, a->sl_bitmap[row]);
    for (unsigned col = 0; col < SL_COUNT; col++) {
      uint32_t head = a->heads[row][col];
      bool bit = (a->sl_bitmap[row] >> col) & 1;
      if (bit != (head != NIL))
        BAD("class %u/%u: bitmap %d but list %s", row, col, bit, head == NIL ? "empty" : "not");
      uint32_t prev = NIL;
      for (uint32_t n = head; n != NIL; n = a->nodes[n].next_free) {
        if (n >= a->num_nodes || listed > t->live_nodes)
          BAD("class %u/%u: list is broken or cyclic", row, col);
        const sa_node *node = &a->nodes[n];
        if (node->flags != (NODE_LIVE | NODE_FREE))
          BAD("class %u/%u: block at %llu in region %u is listed but not free", row, col,
              (unsigned long long)node->offset, node->region);
        unsigned r2, c2;
        class_of(node->size >> a->align_shift, &r2, &c2);
        if (r2 != row || c2 != col || node->cls != row * SL_COUNT + col)
          BAD("block of size %llu is in class %u/%u, belongs in %u/%u",
              (unsigned long long)node->size, row, col, r2, c2);
        if (node->prev_free != prev)
          BAD("class %u/%u: back link broken", row, col);
        prev = n;
        listed++;
      }
    }
  }
  if (listed != t->free_blocks)
    BAD("%llu blocks in free lists, %llu free blocks in regions", (unsigned long long)listed,
        (unsigned long long)t->free_blocks);
  return CLG_OK;
}

/* The table of blocks in use: only blocks in use, as many as the regions hold. */
static clg_code validate_table(const clg_suballoc *a, const sa_tally *t)
{
  uint32_t in_table = 0;
  if (a->table)
    for (uint32_t j = 0; j <= a->table_mask; j++) {
      uint32_t n = a->table[j];
      if (n == NIL)
        continue;
      in_table++;
      if (n >= a->num_nodes || a->nodes[n].flags != NODE_LIVE)
        BAD("the table holds node %u, which is not a block in use", n);
    }
  if (in_table != a->table_count || in_table != t->used_blocks)
    BAD("the table holds %u blocks (count %u), %llu are in use", in_table, a->table_count,
        (unsigned long long)t->used_blocks);
  return CLG_OK;
}

clg_code clg_suballoc_validate(const clg_suballoc *a)
{
  if (!a)
    BAD("NULL allocator");
  sa_tally t = {0, 0, 0, 0, 0};
  uint32_t live_regions = 0;
  for (uint32_t s = 0; s < a->num_slots; s++) {
    if (!a->regions[s].live)
      continue;
    live_regions++;
    clg_code code = validate_region(a, s, &t);
    if (code != CLG_OK)
      return code;
  }
  if (live_regions != a->live_regions)
    BAD("%u live regions counted, %u recorded", live_regions, a->live_regions);
  if (t.total != a->bytes_total || t.used != a->bytes_used || t.used_blocks != a->used_blocks)
    BAD("totals %llu/%llu bytes/%llu blocks, recorded %llu/%llu/%llu", (unsigned long long)t.total,
        (unsigned long long)t.used, (unsigned long long)t.used_blocks,
        (unsigned long long)a->bytes_total, (unsigned long long)a->bytes_used,
        (unsigned long long)a->used_blocks);
  if (t.free_blocks != a->free_blocks)
    BAD("%llu free blocks in regions, %llu recorded", (unsigned long long)t.free_blocks,
        (unsigned long long)a->free_blocks);
  clg_code code = validate_free_lists(a, &t);
  if (code != CLG_OK)
    return code;
  return validate_table(a, &t);
}
