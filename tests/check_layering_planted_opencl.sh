#!/usr/bin/env bash
# check_layering.sh's rule 1 must fail on planted violations: an OpenCL call in src/memory/,
# an OpenCL type in src/runtime/ and an OpenCL constant in src/backends/host/ (each named with
# its file and line), while the same names in comments and strings pass.
# Usage: tests/check_layering_planted_opencl.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_layering_planted_opencl.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/src" "$src/include" "$tmp/"
planted() {
  local f=$1 line=$2
  printf '%s\n' "$line" >>"$tmp/$f"
  echo "$f:$(wc -l <"$tmp/$f")"
}
ok=$(planted src/memory/stats.c '/* clFinish(q), cl_mem and CL_SUCCESS in a comment pass */')
ok2=$(planted src/memory/stats.c 'static const char *clg_planted_text = "clFinish(q) cl_mem";')
want=("$(planted src/memory/stats.c 'static int clg_planted(void *q) { return clFinish(q); }')"
  "$(planted src/runtime/plan.h 'static cl_event clg_planted_event;')"
  "$(planted src/backends/host/basic.c 'static const int clg_planted_flag = CL_MEM_READ_WRITE;')")
if out=$(bash "$src/tests/check_layering.sh" "$tmp" 2>&1); then
  echo "check_layering passed with planted violations:"
  printf '%s\n' "$out"
  exit 1
fi
fail=0
for w in "${want[@]}"; do
  grep -q "^  $w:" <<<"$out" || { echo "not reported: $w"; fail=1; }
done
for w in "$ok" "$ok2"; do
  if grep -q "^  $w:" <<<"$out"; then
    echo "reported although in a comment or string: $w"
    fail=1
  fi
done
[ "$fail" -eq 0 ] || { printf '%s\n' "$out"; exit 1; }
echo "check_layering_planted_opencl: the three planted violations were reported, comments and strings were not"
