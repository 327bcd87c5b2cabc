/* Node names: TensorFlow's name rule, default unique names (Python's Graph.unique_name)
 * and the exact name -> node index table. Both tables are one small open-addressing hash
 * map from strings to ints. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct name_map {
  char **keys; /* NULL for an empty slot */
  int *values;
  size_t cap, len; /* cap is a power of two */
} name_map;

struct clg_graph_names {
  /* TensorFlow's _names_in_use: lower-cased name -> times handed out, so that default
   * names also avoid names that differ only in case (as TF does for file systems). */
  name_map in_use;
  name_map by_name; /* exact node name -> node index */
};

static size_t hash_str(const char *s)
{
  /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)h;
}

static size_t map_slot(const name_map *m, const char *key)
{
  size_t mask = m->cap - 1;
  size_t i = hash_str(key) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key) != 0)
    i = (i + 1) & mask;
  return i;
}

static int *map_get(const name_map *m, const char *key)
{
  if (m->cap == 0)
    return NULL;
  size_t i = map_slot(m, key);
  return m->keys[i] ? &m->values[i] : NULL;
}

static bool map_grow(name_map *m)
{
  size_t cap = m->cap ? m->cap * 2 : 64;
  name_map big = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(int)), cap, m->len};
  if (!big.keys || !big.values) {
    free(big.keys);
    free(big.values);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (m->keys[i]) {
      size_t j = map_slot(&big, m->keys[i]);
      big.keys[j] = m->keys[i];
      big.values[j] = m->values[i];
    }
  }
  free(m->keys);
  free(m->values);
  *m = big;
  return true;
}

/* Sets key to value; key is copied. */
static clg_code map_put(name_map *m, const char *key, int value)
{
  int *v = map_get(m, key);
  if (v) {
    *v = value;
    return CLG_OK;
  }
  /* Keep the load under 3/4 so probes stay short. */
  if ((m->len + 1) * 4 > m->cap * 3 && !map_grow(m))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory growing the node-name table");
  char *copy = clg_strdup(key);
  if (!copy)
    return CLG_RESOURCE_EXHAUSTED;
  size_t i = map_slot(m, key);
  m->keys[i] = copy;
  m->values[i] = value;
  m->len++;
  return CLG_OK;
}

static void map_free(name_map *m)
{
  for (size_t i = 0; i < m->cap; i++)
    free(m->keys[i]);
  free(m->keys);
  free(m->values);
  memset(m, 0, sizeof *m);
}

clg_graph_names *clg_graph_names_new(void) { return calloc(1, sizeof(clg_graph_names)); }

void clg_graph_names_free(clg_graph_names *names)
{
  if (!names)
    return;
  map_free(&names->in_use);
  map_free(&names->by_name);
  free(names);
}

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
  const int *v = names && name ? map_get(&names->by_name, name) : NULL;
  return v ? *v : -1;
}

clg_code clg_graph_names_bind(clg_graph_names *names, const char *name, int index)
{
  return map_put(&names->by_name, name, index);
}

/* The lower-cased copy TensorFlow keys _names_in_use with. */
static char *lower_dup(const char *s)
{
  char *out = clg_strdup(s);
  for (char *p = out; p && *p; p++) {
    if (*p >= 'A' && *p <= 'Z')
      *p = (char)(*p - 'A' + 'a');
  }
  return out;
}

clg_code clg_graph_names_use(clg_graph_names *names, const char *name)
{
  char *key = lower_dup(name);
  if (!key)
    return CLG_RESOURCE_EXHAUSTED;
  int *count = map_get(&names->in_use, key);
  clg_code code = map_put(&names->in_use, key, count ? *count + 1 : 1);
  free(key);
  return code;
}

/* Python's "%s_%d" % (s, i), malloc'd. */
static char *suffixed(const char *s, int i)
{
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_printf(&b, "%s_%d", s, i);
  char *out = clg_strbuf_take(&b);
  if (!out)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory making a node name");
  return out;
}

char *clg_graph_names_unique(clg_graph_names *names, const char *base)
{
  char *base_key = lower_dup(base);
  if (!base_key)
    return NULL;
  int *count = map_get(&names->in_use, base_key);
  int i = count ? *count : 0;
  char *key = NULL, *out = NULL;
  if (map_put(&names->in_use, base_key, i + 1) != CLG_OK)
    goto done;
  if (i == 0) {
    out = clg_strdup(base);
    goto done;
  }
  /* base_i may itself be taken (a user named a node "Const_1"): take the next free i. */
  for (;;) {
    free(key);
    key = suffixed(base_key, i);
    if (!key)
      goto done;
    i++;
    if (!map_get(&names->in_use, key))
      break;
  }
  if (map_put(&names->in_use, key, 1) == CLG_OK)
    out = suffixed(base, i - 1);
done:
  free(key);
  free(base_key);
  return out;
}
