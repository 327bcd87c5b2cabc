/* The checkpoint module's door: safetensors files (clgraph/checkpoint.h is its public face).
 * The header parser here sees bytes only (no files, no devices), so the fuzz target and the
 * malformed-file tests drive exactly what a restore runs. */
#ifndef CLG_CHECKPOINT_H
#define CLG_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "clgraph/checkpoint.h"
#include "core/core.h"

/* The reference implementation's cap on the header size. */
#define CLG_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct clg_st_entry {
  char *name;
  const char *dtype; /* static: "F32" */
  size_t elem;       /* bytes per element */
  clg_dtype type;    /* 0: none in clgraph */
  int rank;
  int64_t dims[CLG_MAX_RANK];
  uint64_t begin, end; /* in the data buffer */
} clg_st_entry;

/* A parsed, checked header. Entries are sorted by begin (the order of the data). */
typedef struct clg_st {
  char *file; /* for messages */
  uint64_t data_start, data_size;
  int n;
  clg_st_entry *e;
  int nmeta;
  char **meta; /* key, value, key, value, ... */
} clg_st;

/* Parses the 8-byte size and the JSON header at the start of a file of file_size bytes, of
 * which `head` holds the first head_len (at least 8 + the header size when the file has
 * that many). Checks everything the format promises: the header fits the file and the cap,
 * is a JSON object with unique names, known dtypes, sizes that match shapes, offsets
 * inside the data that neither overlap nor leave holes. Errors name `file` and the tensor:
 * DATA_LOSS when the file is shorter than the header says, INVALID_ARGUMENT otherwise. */
clg_code clg_st_parse(const char *file, const uint8_t *head, size_t head_len, uint64_t file_size,
                      clg_st **out);
void clg_st_free(clg_st *st);

/* What a file may hold, judged alike when a save writes a tensor and when a restore reads
 * one, so that every file save writes restore reads back. The bytes of a tensor of elem-byte
 * elements and shape dims into *bytes; false when they pass 2^64 (a 0 anywhere makes 0,
 * whatever the other dimensions multiply to). */
bool clg_st_tensor_bytes(size_t elem, int rank, const int64_t *dims, uint64_t *bytes);
/* An entry's rank, dims and data_offsets: offsets in order, within data_size and int64, and
 * as many bytes as the shape and dtype need. Errors name file and the tensor: DATA_LOSS for
 * offsets beyond data_size, INVALID_ARGUMENT otherwise. */
clg_code clg_st_check_entry(const char *file, const clg_st_entry *e, uint64_t data_size);
/* A header of n bytes is within the format's cap (INVALID_ARGUMENT naming file otherwise). */
clg_code clg_st_check_header_size(const char *file, uint64_t n);
/* The entry named name, or NULL. */
const clg_st_entry *clg_st_find(const clg_st *st, const char *name);
/* The format's name of a clgraph dtype ("F32"), or NULL. */
const char *clg_st_dtype_name(clg_dtype t);

/* Opens a file and parses its header (the file descriptor stays open in *fd). */
clg_code clg_st_open(const char *path, int *fd, clg_st **out);

#endif
