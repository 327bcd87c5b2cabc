/* numpy's .npy files (numpy/lib/format.py, "NEP 1"): the magic "\x93NUMPY", a major and a
 * minor version byte, the header's length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and
 * 3.0), the header (a Python dict literal, latin-1 in 1.0/2.0, UTF-8 in 3.0, padded with
 * spaces and ended by '\n'), then the elements. The header is parsed as the little literal it
 * is, not evaluated: anything else is refused, naming the file and what was wrong. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

/* numpy reads at most 10000 header bytes by default (max_header_size); a rank-8 header is
 * under 200. Far more than either is not a header. */
#define NPY_MAX_HEADER (1u << 20)

/* A dtype an .npy file may hold and what it becomes. */
typedef struct npy_kind {
  char code;       /* descr's kind letter: 'f', 'i', 'u', 'b' */
  int size;        /* bytes per element in the file */
  clg_dtype dtype; /* clgraph's dtype */
} npy_kind;

static const npy_kind kinds[] = {
    {'f', 2, CLG_FLOAT16}, {'f', 4, CLG_FLOAT32}, {'f', 8, CLG_FLOAT64}, {'i', 1, CLG_INT8},
    {'i', 2, CLG_INT16},   {'i', 4, CLG_INT32},   {'i', 8, CLG_INT64},   {'u', 1, CLG_UINT8},
    {'u', 2, CLG_UINT16},  {'u', 4, CLG_UINT32},  {'u', 8, CLG_UINT64},  {'b', 1, CLG_BOOL},
};

typedef struct npy_header {
  const npy_kind *kind;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  size_t data_at; /* where the elements begin */
} npy_header;

typedef struct cursor {
  const char *p, *end;
  const char *name;
} cursor;

static void skip_space(cursor *c)
{
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
    c->p++;
}

static bool take(cursor *c, char ch)
{
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static clg_code bad_header(const cursor *c, const char *what)
{
  /* The header is not NUL-terminated: quote at most 20 bytes, and none past its end. */
  int n = c->end - c->p < 20 ? (int)(c->end - c->p) : 20;
  if (n <= 0)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: %s (at its end)", c->name, what);
  return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: %s (at '%.*s')", c->name, what, n,
                   c->p);
}

/* A quoted Python string without escapes (numpy writes repr() of plain ASCII names). */
static bool quoted(cursor *c, char *out, size_t size)
{
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return false;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || *c->p == '\n' || n + 1 >= size)
      return false;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end)
    return false;
  c->p++;
  out[n] = '\0';
  return true;
}

static bool word(cursor *c, const char *w)
{
  skip_space(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
    c->p += n;
    return true;
  }
  return false;
}

static clg_code parse_descr(cursor *c, const char *d, const npy_kind **kind)
{
  char order = d[0];
  if (!order || !d[1] || !strchr("<>|=", order))
    return clg_error(CLG_UNIMPLEMENTED,
                     "%s: dtype '%s' is not one clgraph reads (want '<f2', '<f4', '<f8', '|i1', "
                     "'<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8' or '|b1')",
                     c->name, d);
  /* One digit of size: every dtype read is 1, 2, 4 or 8 bytes. */
  const npy_kind *k = NULL;
  for (size_t i = 0; d[3] == '\0' && i < sizeof kinds / sizeof kinds[0]; i++)
    if (kinds[i].code == d[1] && kinds[i].size == d[2] - '0')
      k = &kinds[i];
  if (!k)
    return clg_error(CLG_UNIMPLEMENTED,
                     "%s: dtype '%s' is not one clgraph reads (want '<f2', '<f4', '<f8', '|i1', "
                     "'<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8' or '|b1')",
                     c->name, d);
  const uint16_t probe = 1;
  const bool host_little = *(const uint8_t *)&probe == 1;
  if (k->size > 1 && (order == '>' || (order == '=' && !host_little)))
    return clg_error(CLG_UNIMPLEMENTED,
                     "%s: dtype '%s' is big-endian; clgraph reads little-endian files (save "
                     "a.astype(a.dtype.newbyteorder('<')))",
                     c->name, d);
  if (k->size > 1 && order == '|')
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: dtype '%s' has no byte order ('|' is for one-byte types)", c->name, d);
  *kind = k;
  return CLG_OK;
}

/* ( int, int, ... ) with an optional trailing comma; "(5)" is not a tuple. */
static clg_code parse_shape(cursor *c, npy_header *h)
{
  if (!take(c, '('))
    return bad_header(c, "'shape' is not a tuple");
  h->rank = 0;
  bool comma = false;
  while (!take(c, ')')) {
    skip_space(c);
    if (h->rank > 0 && !comma)
      return bad_header(c, "the shape's dimensions are not separated by commas");
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
      return bad_header(c, "a dimension of the shape is not a whole number >= 0");
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (v > (INT64_MAX - 9) / 10)
        return bad_header(c, "a dimension of the shape is too large");
      v = v * 10 + (*c->p++ - '0');
    }
    if (h->rank == CLG_MAX_RANK)
      return clg_error(CLG_UNIMPLEMENTED, "%s: the shape has more than %d dimensions", c->name,
                       CLG_MAX_RANK);
    h->dims[h->rank++] = v;
    comma = take(c, ',');
  }
  if (h->rank == 1 && !comma)
    return bad_header(c, "'shape' of one dimension needs a trailing comma, as '(5,)'");
  return CLG_OK;
}

/* The header's keys, in the order np.save writes them. */
static const char *const npy_keys[3] = {"descr", "fortran_order", "shape"};

static clg_code parse_dict(cursor *c, npy_header *h)
{
  bool seen[3] = {false, false, false};
  if (!take(c, '{'))
    return bad_header(c, "it does not begin with '{'");
  for (;;) {
    if (take(c, '}'))
      break;
    char key[32];
    if (!quoted(c, key, sizeof key))
      return bad_header(c, "a key is not a quoted string");
    int which = -1;
    for (int k = 0; k < 3 && which < 0; k++)
      if (strcmp(key, npy_keys[k]) == 0)
        which = k;
    if (which < 0)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: bad .npy header: unknown key '%s' (want 'descr', 'fortran_order' and "
                       "'shape')",
                       c->name, key);
    if (seen[which])
      return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: key '%s' given twice", c->name,
                       key);
    seen[which] = true;
    if (!take(c, ':'))
      return bad_header(c, "a key is not followed by ':'");
    clg_code code = CLG_OK;
    if (which == 0) {
      char d[32];
      if (!quoted(c, d, sizeof d))
        return bad_header(c, "'descr' is not a quoted string (structured dtypes are not read)");
      code = parse_descr(c, d, &h->kind);
    } else if (which == 1) {
      if (word(c, "True"))
        return clg_error(CLG_UNIMPLEMENTED,
                         "%s: the array is in Fortran order; clgraph reads C order (save "
                         "np.ascontiguousarray(a))",
                         c->name);
      if (!word(c, "False"))
        return bad_header(c, "'fortran_order' is neither True nor False");
    } else {
      code = parse_shape(c, h);
    }
    if (code != CLG_OK)
      return code;
    if (take(c, '}'))
      break;
    if (!take(c, ','))
      return bad_header(c, "entries are not separated by ','");
  }
  for (int i = 0; i < 3; i++)
    if (!seen[i])
      return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: no '%s'", c->name,
                       i == 0   ? "descr"
                       : i == 1 ? "fortran_order"
                                : "shape");
  skip_space(c);
  if (c->p < c->end && *c->p == '\n')
    c->p++;
  if (c->p != c->end)
    return bad_header(c, "text after the dictionary's '}'");
  return CLG_OK;
}

static uint32_t le32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The preamble from the first `avail` bytes of a file of `total` bytes: version and header
 * length, then (when the header is within avail) the header. Returns OK with *need set
 * when more bytes must be read first. */
static clg_code parse_prefix(const uint8_t *p, size_t avail, uint64_t total, const char *name,
                             npy_header *h, size_t *need)
{
  static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
  *need = 0;
  if (memcmp(p, magic, total < 6 ? (size_t)total : 6) != 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: not an .npy file (it does not begin with \"\\x93NUMPY\")", name);
  if (total < 10)
    return clg_error(CLG_DATA_LOSS, "%s: .npy file cut short: %llu bytes, no header", name,
                     (unsigned long long)total);
  int major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0)
    return clg_error(CLG_UNIMPLEMENTED,
                     "%s: .npy format version %d.%d; clgraph reads 1.0, 2.0 and 3.0", name, major,
                     minor);
  size_t pre = major == 1 ? 10 : 12;
  if (total < pre)
    return clg_error(CLG_DATA_LOSS, "%s: .npy file cut short: %llu bytes, no header", name,
                     (unsigned long long)total);
  if (avail < pre) {
    *need = pre;
    return CLG_OK;
  }
  uint32_t hlen = major == 1 ? (uint32_t)(p[8] | p[9] << 8) : le32(p + 8);
  if (hlen > NPY_MAX_HEADER)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: .npy header of %lu bytes; clgraph reads headers of up to %u", name,
                     (unsigned long)hlen, NPY_MAX_HEADER);
  if (pre + hlen > total)
    return clg_error(CLG_DATA_LOSS,
                     "%s: .npy file cut short: a header of %lu bytes, but the file has %llu", name,
                     (unsigned long)hlen, (unsigned long long)total);
  if (avail < pre + hlen) {
    *need = pre + hlen;
    return CLG_OK;
  }
  const char *text = (const char *)p + pre;
  if (hlen == 0 || text[hlen - 1] != '\n')
    return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: it does not end with '\\n'", name);
  if (memchr(text, '\0', hlen))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: bad .npy header: it holds a NUL byte", name);
  cursor c = {text, text + hlen, name};
  memset(h, 0, sizeof *h);
  clg_code code = parse_dict(&c, h);
  if (code != CLG_OK)
    return code;
  h->data_at = pre + hlen;
  return CLG_OK;
}

/* "(2, 3)" as numpy prints a shape ("(5,)", "()"). */
static void shape_text(const npy_header *h, char *buf, size_t size)
{
  size_t n = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < h->rank && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)h->dims[i]);
  if (n < size)
    snprintf(buf + n, size - n, h->rank == 1 ? ",)" : ")");
}

/* Whether the data after the header is exactly what the shape needs; *bytes gets it. */
static clg_code check_length(const npy_header *h, uint64_t total, const char *name, uint64_t *bytes)
{
  uint64_t count = 1;
  bool overflow = false, empty = false;
  for (int i = 0; i < h->rank; i++)
    empty |= h->dims[i] == 0;
  for (int i = 0; i < h->rank && !empty && !overflow; i++) {
    uint64_t d = (uint64_t)h->dims[i];
    overflow = count > UINT64_MAX / d;
    count *= d;
  }
  if (empty)
    count = 0;
  uint64_t have = total - h->data_at;
  char shape[256];
  shape_text(h, shape, sizeof shape);
  if (overflow || count > UINT64_MAX / (uint64_t)h->kind->size)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: the shape %s has too many elements", name, shape);
  uint64_t want = count * (uint64_t)h->kind->size;
  if (want != have)
    return clg_error(CLG_DATA_LOSS,
                     "%s: the shape %s needs %llu bytes of data, the file has %llu after its "
                     "header (%s)",
                     name, shape, (unsigned long long)want, (unsigned long long)have,
                     have < want ? "cut short" : "bytes left over");
  *bytes = want;
  return CLG_OK;
}

/* The elements from the file's bytes into t (every kind read is the tensor's own width). */
static clg_code convert(const npy_header *h, const uint8_t *src, clg_tensor *t, const char *name)
{
  size_t count = clg_tensor_count(t);
  const npy_kind *k = h->kind;
  if (k->code == 'b') {
    for (size_t i = 0; i < count; i++)
      if (src[i] > 1)
        return clg_error(CLG_INVALID_ARGUMENT, "%s: bool element %zu is the byte %u, not 0 or 1",
                         name, i, src[i]);
  }
  if (count && src != clg_tensor_data(t)) /* the file's bytes may be read in place */
    memcpy(clg_tensor_data(t), src, count * (size_t)k->size);
  return CLG_OK;
}

static clg_tensor *new_tensor(const npy_header *h)
{
  return clg_tensor_new_uninit(h->kind->dtype, h->rank, h->dims);
}

clg_code clg_tensor_load_npy_memory(const void *bytes, size_t len, const char *name,
                                    clg_tensor **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_load_npy_memory: out is NULL");
  *out = NULL;
  if (!name)
    name = "(memory)";
  if (!bytes && len)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: bytes is NULL", name);
  static const uint8_t none[1];
  const uint8_t *p = bytes ? bytes : none;
  npy_header h;
  size_t need = 0;
  uint8_t head[12] = {0};
  memcpy(head, p, len < sizeof head ? len : sizeof head);
  /* The whole buffer is there: need is never set past len. */
  clg_code code = parse_prefix(len < sizeof head ? head : p, len, len, name, &h, &need);
  uint64_t data = 0;
  if (code == CLG_OK)
    code = check_length(&h, len, name, &data);
  if (code != CLG_OK)
    return code;
  clg_tensor *t = new_tensor(&h);
  if (!t)
    return clg_error_prefix("%s: ", name);
  if ((code = convert(&h, p + h.data_at, t, name)) != CLG_OK) {
    clg_tensor_free(t);
    return code;
  }
  *out = t;
  return CLG_OK;
}

/* pread until n bytes or the end. */
static clg_code read_at(int fd, void *buf, size_t n, uint64_t at, const char *path)
{
  size_t done = 0;
  while (done < n) {
    ssize_t got = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(at + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return clg_error(CLG_DATA_LOSS, "%s: reading: %s", path, strerror(errno));
    if (got == 0)
      return clg_error(CLG_DATA_LOSS, "%s: .npy file cut short while reading (it shrank?)", path);
    done += (size_t)got;
  }
  return CLG_OK;
}

clg_code clg_tensor_load_npy(const char *path, clg_tensor **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_load_npy: out is NULL");
  *out = NULL;
  int fd = -1;
  clg_code code = clg_file_open_read(path, &fd);
  if (code != CLG_OK)
    return code;
  struct stat sb;
  uint8_t *head = NULL, *raw = NULL;
  clg_tensor *t = NULL;
  npy_header h;
  if (fstat(fd, &sb) != 0) {
    code = clg_error(CLG_INTERNAL, "%s: fstat: %s", path, strerror(errno));
    goto done;
  }
  const uint64_t total = (uint64_t)sb.st_size;
  /* The preamble, then the header once its length is known. */
  size_t have = total < 12 ? (size_t)total : 12, need = 0;
  if (!(head = malloc(have ? have : 1))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for the header", path);
    goto done;
  }
  if ((code = read_at(fd, head, have, 0, path)) != CLG_OK)
    goto done;
  for (;;) {
    uint8_t pad[12] = {0};
    memcpy(pad, head, have < 12 ? have : 12);
    code = parse_prefix(have < 12 ? pad : head, have, total, path, &h, &need);
    if (code != CLG_OK || !need)
      break;
    uint8_t *more = realloc(head, need);
    if (!more) {
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for the header", path);
      goto done;
    }
    head = more;
    if ((code = read_at(fd, head + have, need - have, have, path)) != CLG_OK)
      goto done;
    have = need;
  }
  uint64_t data = 0;
  if (code != CLG_OK || (code = check_length(&h, total, path, &data)) != CLG_OK)
    goto done;
  if (!(t = new_tensor(&h))) {
    code = clg_error_prefix("%s: ", path);
    goto done;
  }
  const bool same = clg_dtype_size(h.kind->dtype) == (size_t)h.kind->size;
  /* The elements straight into the tensor when they keep their size. */
  if (same)
    raw = clg_tensor_data(t);
  else if (!(raw = malloc(data ? (size_t)data : 1))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for %llu bytes", path,
                     (unsigned long long)data);
    goto done;
  }
  if ((code = read_at(fd, raw, (size_t)data, h.data_at, path)) == CLG_OK)
    code = convert(&h, raw, t, path);
  if (same)
    raw = NULL;
done:
  close(fd);
  free(head);
  free(raw);
  if (code != CLG_OK)
    clg_tensor_free(t);
  else
    *out = t;
  return code;
}

static const char *descr_of(clg_dtype d)
{
  switch (d) {
  case CLG_FLOAT16:
    return "<f2";
  case CLG_FLOAT32:
    return "<f4";
  case CLG_FLOAT64:
    return "<f8";
  case CLG_INT32:
    return "<i4";
  case CLG_INT64:
    return "<i8";
  case CLG_BOOL:
    return "|b1";
  case CLG_INT8:
    return "|i1";
  case CLG_UINT8:
    return "|u1";
  case CLG_INT16:
    return "<i2";
  case CLG_UINT16:
    return "<u2";
  case CLG_UINT32:
    return "<u4";
  case CLG_UINT64:
    return "<u8";
  }
  return NULL;
}

clg_code clg_tensor_save_npy(const clg_tensor *t, const char *path)
{
  if (!t)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: the tensor to save is NULL", path ? path : "");
  const char *descr = descr_of(clg_tensor_dtype(t));
  if (!descr)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: dtype %d has no .npy descr", path ? path : "",
                     (int)clg_tensor_dtype(t));
  /* np.save's header: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", spaces
   * to make the preamble and header a multiple of 64 bytes, then '\n'. */
  npy_header h = {.rank = clg_tensor_rank(t)};
  for (int i = 0; i < h.rank; i++)
    h.dims[i] = clg_tensor_dim(t, i);
  char shape[256], dict[400];
  shape_text(&h, shape, sizeof shape);
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   descr, shape);
  size_t pre = 10, hlen = (size_t)n + 1;
  if (pre + hlen > 65535)
    pre = 12;
  hlen += (64 - (pre + hlen) % 64) % 64;
  uint8_t *head = malloc(pre + hlen);
  if (!head)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of memory for the header", path);
  memcpy(head, "\x93NUMPY", 6);
  head[6] = pre == 10 ? 1 : 2;
  head[7] = 0;
  for (int i = 0; i < (pre == 10 ? 2 : 4); i++)
    head[8 + i] = (uint8_t)(hlen >> (8 * i));
  memcpy(head + pre, dict, (size_t)n);
  memset(head + pre + n, ' ', hlen - (size_t)n - 1);
  head[pre + hlen - 1] = '\n';
  clg_atomic_file f;
  clg_code code = clg_atomic_file_open(&f, path);
  if (code == CLG_OK) {
    if ((code = clg_atomic_file_write(&f, head, pre + hlen)) == CLG_OK &&
        (code = clg_atomic_file_write(&f, clg_tensor_const_data(t), clg_tensor_bytes(t))) == CLG_OK)
      code = clg_atomic_file_commit(&f);
    else
      clg_atomic_file_abort(&f);
  }
  free(head);
  return code;
}
