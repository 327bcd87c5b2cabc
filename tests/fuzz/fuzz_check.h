/* What the fuzz targets share: the property check that aborts (so libFuzzer keeps the input)
 * with the target's name, and the import targets' check of a tensor read from a model. Each
 * target includes this header itself: ci/fuzz.sh compiles them one by one, and
 * tests/test_fuzz_replay.c compiles them all into one file (hence the guard). */
#ifndef CLG_FUZZ_CHECK_H
#define CLG_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "import/import_internal.h"

/* Aborts with "TARGET: FILE:LINE: COND: message" unless cond holds. */
#define FUZZ_ASSERT(target, cond, ...)                                                             \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s: %s:%d: %s: ", target, __FILE__, __LINE__, #cond);                       \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

/* A tensor a reader made holds the elements its shape gives, each of its dtype's size (inline:
 * the targets that read no model leave it unused). */
static inline void fuzz_check_tensor(const char *target, const clg_imp_tensor *t)
{
  if (!t->value)
    return;
  size_t count = 1;
  for (int i = 0; i < t->shape.rank; i++)
    count *= (size_t)t->shape.dims[i];
  FUZZ_ASSERT(target, clg_tensor_count(t->value) == count, "%zu elements, shape says %zu",
              clg_tensor_count(t->value), count);
  FUZZ_ASSERT(target, clg_tensor_bytes(t->value) == count * clg_imp_tf_dtype_size(t->tf_dtype),
              "bytes %zu", clg_tensor_bytes(t->value));
}

#endif
