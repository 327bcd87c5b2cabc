/* libFuzzer target: the safetensors header parser and its checks (src/checkpoint/).
 *
 * Input: the bytes of a whole file (the data after the header included), handed to the
 * parser exactly as a restore reads them (copied into a buffer of exactly their length, so
 * ASan sees any over-read). Properties checked, beyond "no crash, no leak, no UB":
 *  - a parse either succeeds, or fails with DATA_LOSS or INVALID_ARGUMENT and a message
 *    naming the file;
 *  - on success the tensors, sorted by offset, tile the data exactly (no overlap, no hole),
 *    each one's bytes equal its element count times its dtype size, and names are unique;
 *  - parsing is deterministic: the same input gives the same result twice.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "fuzz_check.h"

#ifndef FUZZ_SAFETENSORS_ENTRY
#define FUZZ_SAFETENSORS_ENTRY LLVMFuzzerTestOneInput
#endif

#define FST_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_safetensors", cond, __VA_ARGS__)

int FUZZ_SAFETENSORS_ENTRY(const uint8_t *data, size_t size);

int FUZZ_SAFETENSORS_ENTRY(const uint8_t *data, size_t size)
{
  uint8_t *exact = malloc(size ? size : 1);
  if (!exact)
    return 0;
  if (size)
    memcpy(exact, data, size);
  clg_st *st = NULL, *again = NULL;
  clg_code code = clg_st_parse("fuzz.safetensors", exact, size, size, &st);
  clg_code code2 = clg_st_parse("fuzz.safetensors", exact, size, size, &again);
  FST_ASSERT(code == code2, "%s then %s", clg_code_name(code), clg_code_name(code2));
  if (code != CLG_OK) {
    FST_ASSERT(code == CLG_DATA_LOSS || code == CLG_INVALID_ARGUMENT ||
                   code == CLG_RESOURCE_EXHAUSTED,
               "code %s", clg_code_name(code));
    FST_ASSERT(st == NULL, "an error with a result");
    FST_ASSERT(strstr(clg_last_error(), "fuzz.safetensors") != NULL, "message: %s",
               clg_last_error());
  } else {
    FST_ASSERT(st->data_start + st->data_size == size, "%llu + %llu != %zu",
               (unsigned long long)st->data_start, (unsigned long long)st->data_size, size);
    FST_ASSERT(again->n == st->n, "%d then %d tensors", st->n, again->n);
    uint64_t at = 0;
    for (int i = 0; i < st->n; i++) {
      const clg_st_entry *e = &st->e[i];
      FST_ASSERT(e->begin == at, "tensor %d begins at %llu, want %llu", i,
                 (unsigned long long)e->begin, (unsigned long long)at);
      uint64_t count = 1;
      for (int k = 0; k < e->rank; k++)
        count *= (uint64_t)e->dims[k];
      FST_ASSERT(count * e->elem == e->end - e->begin, "tensor '%s': size", e->name);
      FST_ASSERT(clg_st_find(st, e->name) == e ||
                     strcmp(clg_st_find(st, e->name)->name, e->name) == 0,
                 "lookup");
      for (int j = 0; j < i; j++)
        FST_ASSERT(strcmp(st->e[j].name, e->name) != 0, "name '%s' twice", e->name);
      at = e->end;
    }
    FST_ASSERT(at == st->data_size, "tiles %llu of %llu bytes", (unsigned long long)at,
               (unsigned long long)st->data_size);
  }
  clg_st_free(st);
  clg_st_free(again);
  free(exact);
  return 0;
}
