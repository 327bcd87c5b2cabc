/* The export module's door inside the library: a small protocol-buffers writer (wire format
 * only: varints, 32-bit floats, length-delimited fields and nested messages) that the GraphDef
 * writer uses. Public API: clgraph/export.h. */
#ifndef CLG_EXPORT_H
#define CLG_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgraph/export.h"

/* A growing message. On allocation failure failed is set and later calls do nothing. */
typedef struct clg_pbw {
  uint8_t *buf;
  size_t len, cap;
  bool failed;
} clg_pbw;

void clg_pbw_free(clg_pbw *b);
/* A varint field (int64 values as their 64-bit two's complement, as protobuf's int64). */
void clg_pbw_uint(clg_pbw *b, int field, uint64_t v);
void clg_pbw_int(clg_pbw *b, int field, int64_t v);
/* A float field (wire type 5, little-endian). */
void clg_pbw_float(clg_pbw *b, int field, float v);
/* A length-delimited field: bytes, or a NUL-terminated string. */
void clg_pbw_bytes(clg_pbw *b, int field, const void *data, size_t n);
void clg_pbw_string(clg_pbw *b, int field, const char *s);
/* A packed repeated varint field of n int64 values (proto3's default for repeated scalars). */
void clg_pbw_packed_ints(clg_pbw *b, int field, int n, const int64_t *v);
/* A nested message: begin writes its tag and returns a mark; the fields that follow are the
 * message's until end(mark), which puts its length in front. */
size_t clg_pbw_begin(clg_pbw *b, int field);
void clg_pbw_end(clg_pbw *b, size_t mark);

#endif
