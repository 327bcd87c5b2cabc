/* safetensors headers: parsing (with jansson) and every check the format promises, on bytes
 * alone; opening a file for it; and clgraph/checkpoint.h's listing API. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"

static const struct {
  const char *name;
  size_t size;
  clg_dtype type;
} dtypes[] = {
    {"F64", 8, CLG_FLOAT64}, {"F32", 4, CLG_FLOAT32}, {"F16", 2, CLG_FLOAT16}, {"BF16", 2, 0},
    {"I64", 8, CLG_INT64},   {"I32", 4, CLG_INT32},   {"I16", 2, CLG_INT16},   {"I8", 1, CLG_INT8},
    {"U64", 8, CLG_UINT64},  {"U32", 4, CLG_UINT32},  {"U16", 2, CLG_UINT16},  {"U8", 1, CLG_UINT8},
    {"BOOL", 1, CLG_BOOL},   {"F8_E4M3", 1, 0},       {"F8_E5M2", 1, 0},
};
#define NUM_DTYPES (sizeof dtypes / sizeof dtypes[0])

const char *clg_st_dtype_name(clg_dtype t)
{
  for (size_t i = 0; i < NUM_DTYPES; i++)
    if (dtypes[i].type && dtypes[i].type == t)
      return dtypes[i].name;
  return NULL;
}

void clg_st_free(clg_st *st)
{
  if (!st)
    return;
  for (int i = 0; i < st->n; i++)
    free(st->e[i].name);
  for (int i = 0; i < 2 * st->nmeta; i++)
    free(st->meta[i]);
  free(st->meta);
  free(st->e);
  free(st->file);
  free(st);
}

const clg_st_entry *clg_st_find(const clg_st *st, const char *name)
{
  for (int i = 0; st && name && i < st->n; i++)
    if (strcmp(st->e[i].name, name) == 0)
      return &st->e[i];
  return NULL;
}

static int by_offset(const void *a, const void *b)
{
  const clg_st_entry *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) /* an empty tensor before the one starting where it sits */
    return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

bool clg_st_tensor_bytes(size_t elem, int rank, const int64_t *dims, uint64_t *bytes)
{
  *bytes = 0;
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0)
      return true; /* empty, whatever the other dimensions multiply to */
  uint64_t n = elem;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || n > UINT64_MAX / (uint64_t)dims[i])
      return false;
    n *= (uint64_t)dims[i];
  }
  *bytes = n;
  return true;
}

clg_code clg_st_check_entry(const char *f, const clg_st_entry *e, uint64_t data_size)
{
  const char *name = e->name;
  if (e->rank < 0 || e->rank > CLG_MAX_RANK)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%.200s': rank %d exceeds clgraph's %d", f,
                     name, e->rank, CLG_MAX_RANK);
  for (int i = 0; i < e->rank; i++)
    if (e->dims[i] < 0)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: tensor '%.200s': shape[%d] is not a non-negative integer", f, name, i);
  if (e->end < e->begin)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': data_offsets [%llu, %llu] end before they begin", f,
                     name, (unsigned long long)e->begin, (unsigned long long)e->end);
  if (e->end > data_size)
    return clg_error(CLG_DATA_LOSS,
                     "%s: tensor '%.200s': data_offsets [%llu, %llu] lie beyond the %llu bytes of "
                     "data the file holds (truncated?)",
                     f, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                     (unsigned long long)data_size);
  if (e->end > (uint64_t)INT64_MAX) /* a JSON integer the reader takes */
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': data_offsets [%llu, %llu] exceed the largest offset, "
                     "%lld",
                     f, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                     (long long)INT64_MAX);
  uint64_t bytes;
  bool fits = clg_st_tensor_bytes(e->elem, e->rank, e->dims, &bytes);
  if (!fits || bytes != e->end - e->begin)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': %llu bytes at data_offsets [%llu, %llu], but its shape "
                     "and dtype %s need %s%llu",
                     f, name, (unsigned long long)(e->end - e->begin), (unsigned long long)e->begin,
                     (unsigned long long)e->end, e->dtype, fits ? "" : "more than ",
                     fits ? (unsigned long long)bytes : (unsigned long long)UINT64_MAX);
  return CLG_OK;
}

clg_code clg_st_check_header_size(const char *f, uint64_t n)
{
  if (n > CLG_ST_MAX_HEADER)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: header size %llu exceeds the format's limit of %llu bytes", f,
                     (unsigned long long)n, (unsigned long long)CLG_ST_MAX_HEADER);
  return CLG_OK;
}

/* One tensor's description: dtype, shape, data_offsets, checked as a save checks its own. */
static clg_code parse_entry(const clg_st *st, const char *name, json_t *v, uint64_t data_size,
                            clg_st_entry *e)
{
  const char *f = st->file;
  if (!json_is_object(v))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%.200s': its header entry is not an object",
                     f, name);
  json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"),
         *off = json_object_get(v, "data_offsets");
  if (!json_is_string(dt))
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': \"dtype\" is missing or not a string", f, name);
  size_t k = 0;
  while (k < NUM_DTYPES && strcmp(dtypes[k].name, json_string_value(dt)) != 0)
    k++;
  if (k == NUM_DTYPES)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%.200s': unknown dtype \"%.40s\"", f, name,
                     json_string_value(dt));
  e->dtype = dtypes[k].name;
  e->elem = dtypes[k].size;
  e->type = dtypes[k].type;
  if (!json_is_array(shape))
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': \"shape\" is missing or not a list", f, name);
  if (json_array_size(shape) > CLG_MAX_RANK)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%.200s': rank %zu exceeds clgraph's %d", f,
                     name, json_array_size(shape), CLG_MAX_RANK);
  e->rank = (int)json_array_size(shape);
  for (int i = 0; i < e->rank; i++) {
    json_t *d = json_array_get(shape, (size_t)i);
    if (!json_is_integer(d) || json_integer_value(d) < 0)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: tensor '%.200s': shape[%d] is not a non-negative integer", f, name, i);
    e->dims[i] = (int64_t)json_integer_value(d);
  }
  if (!json_is_array(off) || json_array_size(off) != 2 ||
      !json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1)) ||
      json_integer_value(json_array_get(off, 0)) < 0 ||
      json_integer_value(json_array_get(off, 1)) < 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: tensor '%.200s': \"data_offsets\" is not a pair of non-negative "
                     "integers",
                     f, name);
  e->begin = (uint64_t)json_integer_value(json_array_get(off, 0));
  e->end = (uint64_t)json_integer_value(json_array_get(off, 1));
  return clg_st_check_entry(f, e, data_size);
}

static clg_code parse_metadata(clg_st *st, json_t *m)
{
  if (!json_is_object(m))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: \"__metadata__\" is not an object", st->file);
  size_t n = json_object_size(m);
  st->meta = calloc(2 * n + 1, sizeof *st->meta);
  if (!st->meta)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for the metadata", st->file);
  const char *key;
  json_t *v;
  json_object_foreach(m, key, v)
  {
    if (!json_is_string(v))
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: \"__metadata__\" value of \"%.200s\" is not a string", st->file, key);
    st->meta[2 * st->nmeta] = clg_strdup(key);
    st->meta[2 * st->nmeta + 1] = clg_strdup(json_string_value(v));
    st->nmeta++;
    if (!st->meta[2 * st->nmeta - 2] || !st->meta[2 * st->nmeta - 1])
      return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for the metadata", st->file);
  }
  return CLG_OK;
}

/* Sorted by offset, the tensors must tile [0, data_size) exactly. */
static clg_code check_layout(clg_st *st)
{
  qsort(st->e, (size_t)st->n, sizeof *st->e, by_offset);
  uint64_t at = 0;
  const char *prev = NULL;
  for (int i = 0; i < st->n; i++) {
    const clg_st_entry *e = &st->e[i];
    if (e->begin < at)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: tensor '%.200s': data_offsets [%llu, %llu] overlap tensor '%.200s', "
                       "which ends at %llu",
                       st->file, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                       prev ? prev : "", (unsigned long long)at);
    if (e->begin > at)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: tensor '%.200s': a hole of %llu bytes before its data_offsets [%llu, "
                       "%llu]",
                       st->file, e->name, (unsigned long long)(e->begin - at),
                       (unsigned long long)e->begin, (unsigned long long)e->end);
    at = e->end;
    prev = e->name;
  }
  if (at != st->data_size)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %llu bytes of data after the last tensor%s%.200s%s belong to no tensor",
                     st->file, (unsigned long long)(st->data_size - at), prev ? " ('" : "",
                     prev ? prev : "", prev ? "')" : "");
  return CLG_OK;
}

clg_code clg_st_parse(const char *file, const uint8_t *head, size_t head_len, uint64_t file_size,
                      clg_st **out)
{
  *out = NULL;
  if (!file)
    file = "(checkpoint)";
  if (file_size < 8 || head_len < 8)
    return clg_error(CLG_DATA_LOSS,
                     "%s: %llu bytes: too short for a safetensors file (8 bytes of header size "
                     "first)",
                     file, (unsigned long long)file_size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | head[i];
  clg_code code = clg_st_check_header_size(file, n);
  if (code != CLG_OK)
    return code;
  if (n > file_size - 8 || n > head_len - 8)
    return clg_error(CLG_DATA_LOSS, "%s: header of %llu bytes is larger than the file (%llu bytes)",
                     file, (unsigned long long)n, (unsigned long long)file_size);
  clg_st *st = calloc(1, sizeof *st);
  if (!st || !(st->file = clg_strdup(file))) {
    free(st);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory reading the header", file);
  }
  st->data_start = 8 + n;
  st->data_size = file_size - 8 - n;
  json_error_t err;
  json_t *root = json_loadb((const char *)head + 8, (size_t)n, JSON_REJECT_DUPLICATES, &err);
  if (!root)
    code = clg_error(CLG_INVALID_ARGUMENT, "%s: the header is not valid JSON: %s (at byte %d)",
                     file, err.text, err.position);
  else if (!json_is_object(root))
    code = clg_error(CLG_INVALID_ARGUMENT, "%s: the header is JSON but not an object", file);
  if (code == CLG_OK) {
    size_t count = json_object_size(root);
    st->e = calloc(count ? count : 1, sizeof *st->e);
    if (!st->e)
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory reading the header", file);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
      if (code != CLG_OK)
        break;
      if (strcmp(key, "__metadata__") == 0) {
        code = parse_metadata(st, v);
        continue;
      }
      clg_st_entry *e = &st->e[st->n];
      if (!(e->name = clg_strdup(key))) {
        code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory reading the header", file);
        break;
      }
      st->n++;
      code = parse_entry(st, key, v, st->data_size, e);
    }
  }
  if (code == CLG_OK)
    code = check_layout(st);
  json_decref(root);
  if (code != CLG_OK) {
    clg_st_free(st);
    return code;
  }
  *out = st;
  return CLG_OK;
}

clg_code clg_st_open(const char *path, int *fd_out, clg_st **out)
{
  *out = NULL;
  *fd_out = -1;
  if (!path)
    return clg_error(CLG_INVALID_ARGUMENT, "checkpoint path is NULL");
  int fd;
  clg_code code = clg_file_open_read(path, &fd);
  if (code != CLG_OK)
    return code;
  struct stat sb;
  uint8_t size8[8];
  uint8_t *head = NULL;
  if (fstat(fd, &sb) != 0) {
    code = clg_error(CLG_INTERNAL, "%s: fstat: %s", path, strerror(errno));
  } else if (sb.st_size < 8 || pread(fd, size8, 8, 0) != 8) {
    code = clg_st_parse(path, size8, 0, (uint64_t)sb.st_size, out);
  } else {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
      n = n << 8 | size8[i];
    /* Read no more than the file has, and no more than the cap: the parser reports why. */
    uint64_t want = n > CLG_ST_MAX_HEADER || n > (uint64_t)sb.st_size - 8 ? 0 : n;
    head = malloc((size_t)want + 8);
    if (!head) {
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for a %llu-byte header", path,
                       (unsigned long long)n);
    } else {
      memcpy(head, size8, 8);
      ssize_t got = want ? pread(fd, head + 8, (size_t)want, 8) : 0;
      if (got < 0 || (uint64_t)got != want)
        code = clg_error(CLG_DATA_LOSS, "%s: reading the header: %s", path,
                         got < 0 ? strerror(errno) : "short read");
      else
        code = clg_st_parse(path, head, (size_t)want + 8, (uint64_t)sb.st_size, out);
    }
  }
  free(head);
  if (code != CLG_OK) {
    close(fd);
    return code;
  }
  *fd_out = fd;
  return CLG_OK;
}

/* --- the public listing API --------------------------------------------------------------- */

struct clg_checkpoint {
  int fd;
  clg_st *st;
};

clg_code clg_checkpoint_open(const char *path, clg_checkpoint **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_checkpoint_open: out is NULL");
  *out = NULL;
  clg_checkpoint *c = calloc(1, sizeof *c);
  if (!c)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory opening a checkpoint");
  clg_code code = clg_st_open(path, &c->fd, &c->st);
  if (code != CLG_OK) {
    free(c);
    return code;
  }
  *out = c;
  return CLG_OK;
}

void clg_checkpoint_close(clg_checkpoint *c)
{
  if (!c)
    return;
  close(c->fd);
  clg_st_free(c->st);
  free(c);
}

int clg_checkpoint_num_tensors(const clg_checkpoint *c) { return c ? c->st->n : 0; }

clg_code clg_checkpoint_tensor_info(const clg_checkpoint *c, int i, clg_checkpoint_tensor *out)
{
  if (!c || !out || i < 0 || i >= c->st->n)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_checkpoint_tensor_info: tensor %d of %d", i,
                     c ? c->st->n : 0);
  const clg_st_entry *e = &c->st->e[i];
  memset(out, 0, sizeof *out);
  out->name = e->name;
  out->dtype = e->dtype;
  out->type = e->type;
  out->rank = e->rank;
  memcpy(out->dims, e->dims, sizeof out->dims);
  out->offset = c->st->data_start + e->begin;
  out->bytes = e->end - e->begin;
  return CLG_OK;
}

clg_code clg_checkpoint_read(const clg_checkpoint *c, int i, clg_tensor **out)
{
  clg_checkpoint_tensor t;
  clg_code code = clg_checkpoint_tensor_info(c, i, &t);
  if (code != CLG_OK || !out)
    return code != CLG_OK ? code
                          : clg_error(CLG_INVALID_ARGUMENT, "clg_checkpoint_read: out is NULL");
  if (!t.type)
    return clg_error(CLG_UNIMPLEMENTED, "%s: tensor '%.200s' is %s, which clgraph has no dtype for",
                     c->st->file, t.name, t.dtype);
  clg_tensor *x = clg_tensor_new(t.type, t.rank, t.dims, NULL);
  if (!x)
    return clg_error_prefix("%s: tensor '%.200s': ", c->st->file, t.name);
  uint64_t done = 0;
  char *dst = clg_tensor_data(x);
  while (done < t.bytes) {
    ssize_t got = pread(c->fd, dst + done, (size_t)(t.bytes - done), (off_t)(t.offset + done));
    if (got <= 0) {
      clg_tensor_free(x);
      return clg_error(CLG_DATA_LOSS, "%s: tensor '%.200s': %s", c->st->file, t.name,
                       got < 0 ? strerror(errno) : "the file ends inside its data");
    }
    done += (uint64_t)got;
  }
  *out = x;
  return CLG_OK;
}

const char *clg_checkpoint_metadata(const clg_checkpoint *c, const char *key)
{
  for (int i = 0; c && key && i < c->st->nmeta; i++)
    if (strcmp(c->st->meta[2 * i], key) == 0)
      return c->st->meta[2 * i + 1];
  return NULL;
}
