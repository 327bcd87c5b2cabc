/* Protocol buffers' wire format, written (https://protobuf.dev/programming-guides/encoding/):
 * a field is a varint key (field number << 3 | wire type) then its value: a varint (type 0),
 * 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5). Nested messages are
 * written in place after a one-byte length that end() widens when the message is longer
 * (one move of the message per level: a GraphDef nests four deep). */
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

void clg_pbw_free(clg_pbw *b)
{
  free(b->buf);
  memset(b, 0, sizeof *b);
}

static bool room(clg_pbw *b, size_t n)
{
  if (b->failed)
    return false;
  if (n > SIZE_MAX / 2 - b->len) {
    b->failed = true;
    return false;
  }
  if (b->len + n <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n)
    cap *= 2;
  uint8_t *p = realloc(b->buf, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->buf = p;
  b->cap = cap;
  return true;
}

static int varint_size(uint64_t v)
{
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static void put_varint(uint8_t *p, uint64_t v)
{
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p = (uint8_t)v;
}

static void varint(clg_pbw *b, uint64_t v)
{
  int n = varint_size(v);
  if (!room(b, (size_t)n))
    return;
  put_varint(b->buf + b->len, v);
  b->len += (size_t)n;
}

static void key(clg_pbw *b, int field, int wire)
{
  varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void clg_pbw_uint(clg_pbw *b, int field, uint64_t v)
{
  key(b, field, 0);
  varint(b, v);
}

void clg_pbw_int(clg_pbw *b, int field, int64_t v) { clg_pbw_uint(b, field, (uint64_t)v); }

void clg_pbw_float(clg_pbw *b, int field, float v)
{
  key(b, field, 5);
  uint32_t u;
  memcpy(&u, &v, 4);
  if (!room(b, 4))
    return;
  for (int i = 0; i < 4; i++)
    b->buf[b->len++] = (uint8_t)(u >> (8 * i));
}

void clg_pbw_bytes(clg_pbw *b, int field, const void *data, size_t n)
{
  key(b, field, 2);
  varint(b, n);
  if (n && room(b, n)) {
    memcpy(b->buf + b->len, data, n);
    b->len += n;
  }
}

void clg_pbw_string(clg_pbw *b, int field, const char *s) { clg_pbw_bytes(b, field, s, strlen(s)); }

void clg_pbw_packed_ints(clg_pbw *b, int field, int n, const int64_t *v)
{
  size_t mark = clg_pbw_begin(b, field);
  for (int i = 0; i < n; i++)
    varint(b, (uint64_t)v[i]);
  clg_pbw_end(b, mark);
}

size_t clg_pbw_begin(clg_pbw *b, int field)
{
  key(b, field, 2);
  if (!room(b, 1))
    return 0;
  b->buf[b->len++] = 0;
  return b->len;
}

void clg_pbw_end(clg_pbw *b, size_t mark)
{
  if (b->failed)
    return;
  size_t n = b->len - mark;
  int k = varint_size(n);
  if (k > 1) {
    if (!room(b, (size_t)k - 1))
      return;
    memmove(b->buf + mark + k - 1, b->buf + mark, n);
    b->len += (size_t)k - 1;
  }
  put_varint(b->buf + mark - 1, n);
}
