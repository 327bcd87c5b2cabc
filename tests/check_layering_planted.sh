#!/usr/bin/env bash
# check_layering.sh fails on a planted violation: on a copy of the sources, each line below
# planted in turn into an op file whose kernels have moved (rule 6) must fail the check with
# that rule's message, and the clean copy must pass.
# Usage: tests/check_layering_planted.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_layering_planted.sh SOURCE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/src" "$src/include" "$tmp/"
if ! out=$(bash "$here/check_layering.sh" "$tmp" 2>&1); then
  echo "check_layering_planted: the clean copy fails:" >&2
  printf '%s\n' "$out" >&2
  exit 1
fi
target="$tmp/src/ops/add_n.c"
cp "$target" "$tmp/clean.c"
fail=0
for plant in '#include "backends/opencl/opencl.h"' '#include "backends/host/host.h"' \
  'static cl_mem planted;' 'static int planted = CLG_KIND_OPENCL;' \
  'static void *planted = (void *)clg_cl_unary;'; do
  { cat "$tmp/clean.c"; printf '%s\n' "$plant"; } >"$target"
  if out=$(bash "$here/check_layering.sh" "$tmp" 2>&1); then
    echo "check_layering_planted: passed with '$plant' in src/ops/add_n.c" >&2
    fail=1
  elif ! printf '%s\n' "$out" | grep -q 'op files name device code' ||
    ! printf '%s\n' "$out" | grep -qF "$plant"; then
    echo "check_layering_planted: '$plant' failed without naming rule 6 and the line:" >&2
    printf '%s\n' "$out" >&2
    fail=1
  fi
done
cp "$tmp/clean.c" "$target"
rm "$tmp/src/ops/relu.c"
if bash "$here/check_layering.sh" "$tmp" >/dev/null 2>&1; then
  echo "check_layering_planted: passed with a listed op file missing" >&2
  fail=1
fi
[ "$fail" -eq 0 ] && echo "check_layering_planted: every planted violation fails the check"
exit "$fail"
