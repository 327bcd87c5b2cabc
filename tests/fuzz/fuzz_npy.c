/* libFuzzer target: numpy's .npy reader (src/core/npy.c, clg_tensor_load_npy_memory).
 *
 * Input: the bytes of a whole file, in a buffer of exactly their length (ASan sees any
 * over-read). Properties checked, beyond "no crash, no leak, no UB":
 *  - a load either succeeds, or fails with INVALID_ARGUMENT, UNIMPLEMENTED, DATA_LOSS or
 *    RESOURCE_EXHAUSTED, no tensor, and a message naming the file;
 *  - on success the tensor's bytes are what the shape needs, and saving it and loading the
 *    save back gives the same dtype, shape and bytes (the writer's output is always read);
 *  - loading is deterministic: the same input gives the same result twice.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus (seeds:
 * tests/data/npy/, files numpy wrote). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "fuzz_check.h"

#ifndef FUZZ_NPY_ENTRY
#define FUZZ_NPY_ENTRY LLVMFuzzerTestOneInput
#endif

#define FNPY_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_npy", cond, __VA_ARGS__)

int FUZZ_NPY_ENTRY(const uint8_t *data, size_t size);

static bool fnpy_same(const clg_tensor *a, const clg_tensor *b)
{
  if (clg_tensor_dtype(a) != clg_tensor_dtype(b) || clg_tensor_rank(a) != clg_tensor_rank(b) ||
      clg_tensor_bytes(a) != clg_tensor_bytes(b))
    return false;
  for (int i = 0; i < clg_tensor_rank(a); i++)
    if (clg_tensor_dim(a, i) != clg_tensor_dim(b, i))
      return false;
  return clg_tensor_bytes(a) == 0 ||
         memcmp(clg_tensor_const_data(a), clg_tensor_const_data(b), clg_tensor_bytes(a)) == 0;
}

int FUZZ_NPY_ENTRY(const uint8_t *data, size_t size)
{
  uint8_t *exact = malloc(size ? size : 1);
  if (!exact)
    return 0;
  if (size)
    memcpy(exact, data, size);
  clg_tensor *t = NULL, *again = NULL;
  clg_code code = clg_tensor_load_npy_memory(exact, size, "fuzz.npy", &t);
  clg_code code2 = clg_tensor_load_npy_memory(exact, size, "fuzz.npy", &again);
  FNPY_ASSERT(code == code2, "%s then %s", clg_code_name(code), clg_code_name(code2));
  if (code != CLG_OK) {
    FNPY_ASSERT(code == CLG_INVALID_ARGUMENT || code == CLG_UNIMPLEMENTED ||
                    code == CLG_DATA_LOSS || code == CLG_RESOURCE_EXHAUSTED,
                "code %s: %s", clg_code_name(code), clg_last_error());
    FNPY_ASSERT(t == NULL && again == NULL, "an error with a tensor");
    FNPY_ASSERT(strstr(clg_last_error(), "fuzz.npy") != NULL, "message: %s", clg_last_error());
  } else {
    FNPY_ASSERT(fnpy_same(t, again), "two loads differ");
    FNPY_ASSERT(clg_tensor_bytes(t) == clg_tensor_count(t) * clg_dtype_size(clg_tensor_dtype(t)),
                "%zu bytes for %zu elements", clg_tensor_bytes(t), clg_tensor_count(t));
    /* What the writer makes of it reads back the same (small tensors: the file system). */
    if (clg_tensor_bytes(t) <= 1 << 16) {
      char path[64];
      snprintf(path, sizeof path, "/tmp/fuzz_npy.%ld.npy", (long)getpid());
      FNPY_ASSERT(clg_tensor_save_npy(t, path) == CLG_OK, "save: %s", clg_last_error());
      clg_tensor *back = NULL;
      FNPY_ASSERT(clg_tensor_load_npy(path, &back) == CLG_OK, "load of the save: %s",
                  clg_last_error());
      FNPY_ASSERT(fnpy_same(t, back), "the save reads back otherwise");
      clg_tensor_free(back);
      unlink(path);
    }
  }
  clg_tensor_free(t);
  clg_tensor_free(again);
  free(exact);
  return 0;
}
