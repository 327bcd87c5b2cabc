/* Node names: TensorFlow's name rule, default unique names (Python's Graph.unique_name)
 * and the exact name -> node index table.
 *
 * Both tables are open-addressing hash maps from strings to ints that keep each entry's
 * hash (so probes compare strings only on a hash match and growth never rehashes text).
 * Names are only ever added, so their text lives in a string pool freed with the tables:
 * one allocation per 64 KiB of names instead of one per name. Default names ("Const_12")
 * are written digit by digit, without printf; graphs of 200,000 nodes build in linear time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct name_entry {
  const char *key; /* NULL for an empty slot; text in the pool */
  uint32_t hash;
  int value;
} name_entry;

typedef struct name_map {
  name_entry *slots;
  size_t cap, len; /* cap is a power of two */
} name_map;

/* A chunk of the string pool; text follows the header. */
typedef struct pool_chunk {
  struct pool_chunk *next;
  size_t used, size;
} pool_chunk;

#define POOL_CHUNK_SIZE ((size_t)64 * 1024)

struct clg_graph_names {
  /* TensorFlow's _names_in_use: lower-cased name -> times handed out, so that default
   * names also avoid names that differ only in case (as TF does for file systems). */
  name_map in_use;
  name_map by_name; /* exact node name -> node index */
  pool_chunk *pool; /* newest first */
};

/* --- the string pool ------------------------------------------------------------------- */

static char *pool_copy(clg_graph_names *names, const char *s, size_t n)
{
  pool_chunk *c = names->pool;
  if (!c || c->size - c->used < n + 1) {
    size_t size = n + 1 > POOL_CHUNK_SIZE ? n + 1 : POOL_CHUNK_SIZE;
    c = malloc(sizeof *c + size);
    if (!c)
      return NULL;
    c->used = 0;
    c->size = size;
    c->next = names->pool;
    names->pool = c;
  }
  char *out = (char *)(c + 1) + c->used;
  memcpy(out, s, n);
  out[n] = '\0';
  c->used += n + 1;
  return out;
}

/* --- the hash maps --------------------------------------------------------------------- */

static uint32_t hash_bytes(const char *s, size_t n)
{
  /* FNV-1a, then a finalizer (murmur3's fmix64): FNV's low bits, which pick the slot, are
   * poorly mixed for names that differ only in their last digits. */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return (uint32_t)h;
}

/* The slot holding key (n characters, hash h), or the empty slot where it would go. */
static name_entry *map_slot(const name_map *m, const char *key, size_t n, uint32_t h)
{
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    name_entry *e = &m->slots[i];
    if (!e->key || (e->hash == h && strncmp(e->key, key, n) == 0 && e->key[n] == '\0'))
      return e;
  }
}

static bool map_grow(name_map *m)
{
  size_t cap = m->cap ? m->cap * 2 : 256;
  name_entry *slots = calloc(cap, sizeof *slots);
  if (!slots)
    return false;
  for (size_t i = 0; i < m->cap; i++) {
    const name_entry *e = &m->slots[i];
    if (e->key) {
      size_t j = e->hash & (cap - 1);
      while (slots[j].key)
        j = (j + 1) & (cap - 1);
      slots[j] = *e;
    }
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return true;
}

static int *map_get(const name_map *m, const char *key, size_t n)
{
  if (m->cap == 0)
    return NULL;
  name_entry *e = map_slot(m, key, n, hash_bytes(key, n));
  return e->key ? &e->value : NULL;
}

/* The value of key, inserted as 0 (key copied into the pool) when absent; NULL (with the
 * error recorded) when out of memory. */
static int *map_upsert(clg_graph_names *names, name_map *m, const char *key, size_t n)
{
  /* Keep the load under 1/2 so probes stay short. */
  if ((m->len + 1) * 2 > m->cap && !map_grow(m)) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory growing the node-name table");
    return NULL;
  }
  uint32_t h = hash_bytes(key, n);
  name_entry *e = map_slot(m, key, n, h);
  if (!e->key) {
    const char *copy = pool_copy(names, key, n);
    if (!copy) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory storing the node name '%.*s'", (int)n, key);
      return NULL;
    }
    e->key = copy;
    e->hash = h;
    e->value = 0;
    m->len++;
  }
  return &e->value;
}

clg_graph_names *clg_graph_names_new(void) { return calloc(1, sizeof(clg_graph_names)); }

void clg_graph_names_free(clg_graph_names *names)
{
  if (!names)
    return;
  free(names->in_use.slots);
  free(names->by_name.slots);
  for (pool_chunk *c = names->pool, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(names);
}

/* --- names ----------------------------------------------------------------------------- */

static bool is_alnum(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool clg_graph_name_valid(const char *name)
{
  if (!name || !(is_alnum(name[0]) || name[0] == '.'))
    return false;
  for (const char *p = name + 1; *p; p++) {
    if (!(is_alnum(*p) || *p == '_' || *p == '.' || *p == '-' || *p == '/'))
      return false;
  }
  return true;
}

int clg_graph_names_find(const clg_graph_names *names, const char *name)
{
  const int *v = names && name ? map_get(&names->by_name, name, strlen(name)) : NULL;
  return v ? *v : -1;
}

clg_code clg_graph_names_bind(clg_graph_names *names, const char *name, int index)
{
  int *v = map_upsert(names, &names->by_name, name, strlen(name));
  if (!v)
    return CLG_RESOURCE_EXHAUSTED;
  *v = index;
  return CLG_OK;
}

/* A name being built: short ones on the stack, long ones on the heap. */
typedef struct name_buf {
  char *p;
  size_t len;
  char small[128];
} name_buf;

/* Room for n characters, a '_', an int and the terminator. */
static bool name_buf_init(name_buf *b, size_t n)
{
  size_t need = n + 16;
  b->len = 0;
  b->p = need <= sizeof b->small ? b->small : malloc(need);
  if (!b->p)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory making a node name");
  return b->p != NULL;
}

static void name_buf_free(name_buf *b)
{
  if (b->p != b->small)
    free(b->p);
}

/* The lower-cased copy of s (n characters) that TensorFlow keys _names_in_use with. */
static void put_lower(name_buf *b, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    b->p[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
  b->len = n;
  b->p[n] = '\0';
}

/* Sets the text after the first n characters to "_<i>" (Python's "%s_%d"). */
static void put_suffix(name_buf *b, size_t n, int i)
{
  char digits[12];
  int d = 0;
  unsigned u = (unsigned)i;
  do {
    digits[d++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  b->len = n;
  b->p[b->len++] = '_';
  while (d > 0)
    b->p[b->len++] = digits[--d];
  b->p[b->len] = '\0';
}

clg_code clg_graph_names_use(clg_graph_names *names, const char *name)
{
  size_t n = strlen(name);
  name_buf key;
  if (!name_buf_init(&key, n))
    return CLG_RESOURCE_EXHAUSTED;
  put_lower(&key, name, n);
  int *count = map_upsert(names, &names->in_use, key.p, n);
  if (count)
    (*count)++;
  name_buf_free(&key);
  return count ? CLG_OK : CLG_RESOURCE_EXHAUSTED;
}

char *clg_graph_names_unique(clg_graph_names *names, const char *base)
{
  size_t n = strlen(base);
  name_buf key;
  if (!name_buf_init(&key, n))
    return NULL;
  put_lower(&key, base, n);
  char *out = NULL;
  int *count = map_upsert(names, &names->in_use, key.p, n);
  if (!count)
    goto done;
  int i = (*count)++;
  if (i == 0) {
    out = malloc(n + 1);
    if (out)
      memcpy(out, base, n + 1);
    goto done;
  }
  /* base_i may itself be taken (a user named a node "Const_1"): take the next free i. */
  do
    put_suffix(&key, n, i++);
  while (map_get(&names->in_use, key.p, key.len));
  int *fresh = map_upsert(names, &names->in_use, key.p, key.len);
  if (!fresh)
    goto done;
  *fresh = 1;
  /* The name itself: base with the same suffix (key holds it lower-cased). */
  out = malloc(key.len + 1);
  if (out) {
    memcpy(out, base, n);
    memcpy(out + n, key.p + n, key.len - n + 1);
  }
done:
  if (!out && count)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory making a node name");
  name_buf_free(&key);
  return out;
}
