/* libFuzzer target: device-name specifications (src/device/devname.c).
 *
 * Input: byte 0 picks the parser for each of two specs; the rest is split at the first
 * '\n' into spec A and spec B (each copied into a buffer of exactly its length + 1, so
 * ASan sees any over-read). Properties checked, beyond "no crash, no leak, no UB":
 *  - a parse either succeeds or fails with INVALID_ARGUMENT and a message;
 *  - format is a fixed point: parse(format(x)) == x, except an id without a type, which
 *    format drops as TensorFlow's ParsedNameToString does;
 *  - merge succeeds exactly when the names are compatible, leaves the target untouched on
 *    failure, and yields a name both inputs are specifications of;
 *  - soft merge fails only on job/replica/task conflicts and equals merge when compatible;
 *  - merge_override and merge_unset keep the winning side as a specification.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "fuzz_check.h"

#ifndef FUZZ_DEVNAME_ENTRY
#define FUZZ_DEVNAME_ENTRY LLVMFuzzerTestOneInput
#endif

/* A property violation: print and abort so that libFuzzer records the input. */
#define FD_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_devname", cond, __VA_ARGS__)

static bool fd_equal(const clg_devname *a, const clg_devname *b)
{
  if (a->has_job != b->has_job || a->has_replica != b->has_replica || a->has_task != b->has_task ||
      a->has_type != b->has_type || a->has_id != b->has_id)
    return false;
  if (a->has_job && strcmp(a->job, b->job) != 0)
    return false;
  if (a->has_replica && a->replica != b->replica)
    return false;
  if (a->has_task && a->task != b->task)
    return false;
  if (a->has_type && strcmp(a->type, b->type) != 0)
    return false;
  return !a->has_id || a->id == b->id;
}

static clg_code fd_parse(unsigned how, const char *text, clg_devname *out)
{
  switch (how % 3) {
  case 0:
    return clg_devname_parse(text, out);
  case 1:
    return clg_devname_parse_full_or_local(text, out);
  default:
    return clg_devname_parse_scope(text, out);
  }
}

static void fd_check_round_trip(const clg_devname *n, const char *spec)
{
  char text[512], again[512];
  clg_devname_format(n, text, sizeof text);
  clg_devname back;
  clg_code code = clg_devname_parse(text, &back);
  FD_ASSERT(code == CLG_OK, "'%s' formats as '%s', which does not parse: %s", spec, text,
            clg_last_error());
  clg_devname want = *n;
  if (!want.has_type)
    want.has_id = false;
  FD_ASSERT(fd_equal(&back, &want), "'%s' -> '%s' parses to something else", spec, text);
  clg_devname_format(&back, again, sizeof again);
  FD_ASSERT(strcmp(text, again) == 0, "format not stable: '%s' then '%s'", text, again);
  /* A short buffer must still be NUL-terminated and a prefix of the full text. */
  char small[9];
  clg_devname_format(n, small, sizeof small);
  FD_ASSERT(strlen(small) < sizeof small && strncmp(small, text, strlen(small)) == 0,
            "truncated format '%s' of '%s'", small, text);
}

static void fd_check_merges(const clg_devname *a, const clg_devname *b)
{
  bool compatible = clg_devname_compatible(a, b);
  FD_ASSERT(compatible == clg_devname_compatible(b, a), "compatible is not symmetric");

  clg_devname m = *a;
  clg_code code = clg_devname_merge(&m, b, false);
  FD_ASSERT((code == CLG_OK) == compatible, "merge returned %s but compatible is %d",
            clg_code_name(code), compatible);
  if (code == CLG_OK) {
    FD_ASSERT(clg_devname_is_specification(a, &m), "target is not a spec of the merge");
    FD_ASSERT(clg_devname_is_specification(b, &m), "other is not a spec of the merge");
    FD_ASSERT(clg_devname_matches(a, &m), "matches differs from is_specification");
  } else {
    FD_ASSERT(code == CLG_INVALID_ARGUMENT && strstr(clg_last_error(), "Cannot merge devices"),
              "merge failed with %s: %s", clg_code_name(code), clg_last_error());
    FD_ASSERT(memcmp(&m, a, sizeof m) == 0, "a failed merge changed the target");
  }

  clg_devname s = *a;
  clg_code soft = clg_devname_merge(&s, b, true);
  bool hard_conflict = (a->has_job && b->has_job && strcmp(a->job, b->job) != 0) ||
                       (a->has_replica && b->has_replica && a->replica != b->replica) ||
                       (a->has_task && b->has_task && a->task != b->task);
  FD_ASSERT((soft != CLG_OK) == hard_conflict, "soft merge returned %s", clg_code_name(soft));
  if (compatible)
    FD_ASSERT(fd_equal(&s, &m), "soft merge of compatible names differs from merge");

  clg_devname o = *a;
  clg_devname_merge_override(&o, b);
  FD_ASSERT(clg_devname_is_specification(b, &o), "override lost a field of other");
  clg_devname u = *a;
  clg_devname_merge_unset(&u, b);
  FD_ASSERT(clg_devname_is_specification(a, &u), "merge_unset lost a field of target");
  if (compatible)
    FD_ASSERT(fd_equal(&o, &u), "override and unset differ on compatible names");
}

int FUZZ_DEVNAME_ENTRY(const uint8_t *data, size_t size);

int FUZZ_DEVNAME_ENTRY(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  unsigned how = data[0];
  data++;
  size--;
  const uint8_t *nl = memchr(data, '\n', size);
  size_t len_a = nl ? (size_t)(nl - data) : size;
  size_t len_b = nl ? size - len_a - 1 : 0;
  char *spec[2] = {malloc(len_a + 1), malloc(len_b + 1)};
  if (!spec[0] || !spec[1]) {
    free(spec[0]);
    free(spec[1]);
    return 0;
  }
  memcpy(spec[0], data, len_a);
  spec[0][len_a] = '\0';
  if (nl)
    memcpy(spec[1], nl + 1, len_b);
  spec[1][len_b] = '\0';

  clg_devname n[2];
  bool ok[2];
  for (int i = 0; i < 2; i++) {
    clg_code code = fd_parse(how >> (2 * i), spec[i], &n[i]);
    ok[i] = code == CLG_OK;
    if (ok[i]) {
      fd_check_round_trip(&n[i], spec[i]);
    } else {
      FD_ASSERT(code == CLG_INVALID_ARGUMENT, "parse returned %s", clg_code_name(code));
      FD_ASSERT(strstr(clg_last_error(), "Malformed device specification"),
                "unexpected message: %s", clg_last_error());
      FD_ASSERT(clg_devname_is_empty(&n[i]), "a failed parse left fields set");
    }
  }
  if (ok[0] && ok[1]) {
    fd_check_merges(&n[0], &n[1]);
    fd_check_merges(&n[1], &n[0]);
  }
  free(spec[0]);
  free(spec[1]);
  return 0;
}
