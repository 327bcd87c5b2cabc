/* The protobuf wire-format reader (why a reader rather than protobuf-c: import_internal.h).
 * Only the four wire types TensorFlow's and ONNX's files use; groups (3, 4) are refused. */
#include <string.h>

#include "import/import_internal.h"

void clg_pb_init(clg_pb *r, const uint8_t *base, const uint8_t *data, size_t len, const char *what,
                 const char *file)
{
  r->base = base;
  r->p = data;
  r->end = data + len;
  r->what = what;
  r->file = file;
}

void clg_pb_sub(clg_pb *sub, const clg_pb *parent, const clg_pb_field *f, const char *what)
{
  clg_pb_init(sub, parent->base, f->data, f->len, what, parent->file);
}

const char *clg_pb_file(const clg_pb *r) { return r->file && r->file[0] ? r->file : "(memory)"; }

static size_t offset_of(const clg_pb *r, const uint8_t *p) { return (size_t)(p - r->base); }

/* A varint of at most 10 bytes whose value fits in 64 bits. */
static bool read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
  const uint8_t *p = *pp;
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end)
      return false;
    uint8_t b = *p++;
    if (shift == 63 && (b & 0x7e))
      return false; /* more than 64 bits */
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *pp = p;
      *v = x;
      return true;
    }
  }
  return false;
}

int clg_pb_next(clg_pb *r, clg_pb_field *f)
{
  if (r->p >= r->end)
    return 0;
  memset(f, 0, sizeof *f);
  f->offset = offset_of(r, r->p);
  uint64_t tag;
  if (!read_varint(&r->p, r->end, &tag)) {
    clg_error(CLG_INVALID_ARGUMENT, "%s: %s: truncated or overlong field tag at byte %zu",
              clg_pb_file(r), r->what, f->offset);
    return -1;
  }
  f->number = (uint32_t)(tag >> 3);
  f->wire = (int)(tag & 7);
  if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) {
    clg_error(CLG_INVALID_ARGUMENT, "%s: %s: field number %llu at byte %zu is out of range",
              clg_pb_file(r), r->what, (unsigned long long)(tag >> 3), f->offset);
    return -1;
  }
  size_t left;
  switch (f->wire) {
  case CLG_PB_VARINT:
    if (!read_varint(&r->p, r->end, &f->v)) {
      clg_error(CLG_INVALID_ARGUMENT, "%s: %s field %u at byte %zu: truncated or overlong varint",
                clg_pb_file(r), r->what, f->number, f->offset);
      return -1;
    }
    return 1;
  case CLG_PB_FIXED64:
  case CLG_PB_FIXED32: {
    size_t n = f->wire == CLG_PB_FIXED64 ? 8 : 4;
    if ((size_t)(r->end - r->p) < n) {
      clg_error(CLG_INVALID_ARGUMENT,
                "%s: %s field %u at byte %zu: truncated %zu-byte value (%zu bytes left)",
                clg_pb_file(r), r->what, f->number, f->offset, n, (size_t)(r->end - r->p));
      return -1;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
      x |= (uint64_t)r->p[i] << (8 * i);
    f->v = x;
    r->p += n;
    return 1;
  }
  case CLG_PB_BYTES: {
    uint64_t len;
    if (!read_varint(&r->p, r->end, &len)) {
      clg_error(CLG_INVALID_ARGUMENT, "%s: %s field %u at byte %zu: truncated length",
                clg_pb_file(r), r->what, f->number, f->offset);
      return -1;
    }
    left = (size_t)(r->end - r->p);
    if (len > left) {
      clg_error(CLG_INVALID_ARGUMENT,
                "%s: %s field %u at byte %zu: length %llu runs past the end of its message "
                "(%zu bytes left): truncated or oversized field",
                clg_pb_file(r), r->what, f->number, f->offset, (unsigned long long)len, left);
      return -1;
    }
    f->data = r->p;
    f->len = (size_t)len;
    r->p += len;
    return 1;
  }
  default:
    clg_error(CLG_INVALID_ARGUMENT,
              "%s: %s field %u at byte %zu: wire type %d is not one this reader knows (0, 1, 2, "
              "5)",
              clg_pb_file(r), r->what, f->number, f->offset, f->wire);
    return -1;
  }
}

static const char *wire_name(int w)
{
  switch (w) {
  case CLG_PB_VARINT:
    return "varint";
  case CLG_PB_FIXED64:
    return "64-bit";
  case CLG_PB_BYTES:
    return "length-delimited";
  case CLG_PB_FIXED32:
    return "32-bit";
  default:
    return "unknown";
  }
}

clg_code clg_pb_want(const clg_pb *r, const clg_pb_field *f, int wire, const char *name)
{
  if (f->wire == wire)
    return CLG_OK;
  return clg_error(CLG_INVALID_ARGUMENT,
                   "%s: %s.%s (field %u) at byte %zu has wire type %d (%s), expected %d (%s)",
                   clg_pb_file(r), r->what, name, f->number, f->offset, f->wire, wire_name(f->wire),
                   wire, wire_name(wire));
}

clg_code clg_pb_repeated(const clg_pb *r, const clg_pb_field *f, int elem_wire, const char *name,
                         clg_code (*each)(void *ctx, uint64_t v), void *ctx)
{
  if (f->wire == elem_wire)
    return each(ctx, f->v);
  clg_code code = clg_pb_want(r, f, CLG_PB_BYTES, name);
  if (code != CLG_OK)
    return code;
  const uint8_t *p = f->data, *end = f->data + f->len;
  while (p < end) {
    uint64_t v = 0;
    if (elem_wire == CLG_PB_VARINT) {
      if (!read_varint(&p, end, &v))
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s: %s.%s (field %u) at byte %zu: truncated varint in packed values",
                         clg_pb_file(r), r->what, name, f->number, f->offset);
    } else {
      size_t n = elem_wire == CLG_PB_FIXED64 ? 8 : 4;
      if ((size_t)(end - p) < n)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s: %s.%s (field %u) at byte %zu: packed length %zu is not a multiple "
                         "of %zu",
                         clg_pb_file(r), r->what, name, f->number, f->offset, f->len, n);
      for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
      p += n;
    }
    code = each(ctx, v);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}
