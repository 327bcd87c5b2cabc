#!/usr/bin/env bash
# tests/check_layering.sh must fail on each rule's violation: each case copies the sources
# into a temporary folder, plants one violation there, and wants the script to exit nonzero
# with that rule's message (and the unplanted copy to pass, so that a failure is the plant's).
# Usage: tests/check_layering_planted.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: check_layering_planted.sh SOURCE_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/clg_layering.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

fresh() {
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree"
  cp -r "$src/src" "$src/include" "$src/tools" "$tmp/tree/"
}

# expect NAME MESSAGE: the script fails on the planted tree, saying MESSAGE.
expect() {
  local out rc=0
  out=$(bash "$here/check_layering.sh" "$tmp/tree" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "FAIL $1: check_layering.sh passed the planted violation" >&2
    failures=$((failures + 1))
  elif ! grep -qF -- "$2" <<<"$out"; then
    echo "FAIL $1: check_layering.sh failed without \"$2\":" >&2
    printf '%s\n' "$out" | sed 's/^/  /' >&2
    failures=$((failures + 1))
  else
    echo "ok   $1"
  fi
}

fresh
if ! out=$(bash "$here/check_layering.sh" "$tmp/tree" 2>&1); then
  echo "FAIL: check_layering.sh fails on the unplanted sources:" >&2
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  exit 1
fi
echo "ok   unplanted copy passes"

fresh # a lower module includes an upper one
printf '#include "runtime/runtime.h"\n' >"$tmp/tree/src/memory/planted.c"
expect "memory includes runtime" "src/memory/ includes a module at its level or above"

fresh # the graph/ops cycle back
printf '#include "ops/ops.h"\n' >"$tmp/tree/src/graph/planted.c"
expect "graph includes ops" "src/graph/ includes a module at its level or above"

fresh # a folder nobody placed in the order
mkdir -p "$tmp/tree/src/newmodule"
printf '#include "core/core.h"\n' >"$tmp/tree/src/newmodule/planted.c"
expect "module without a level" "src/newmodule/ has no level"

fresh # an op told apart by its name outside the registry
printf 'static int f(const char *op) { return strcmp(op, "MatMul") == 0; }\n' \
  >"$tmp/tree/src/runtime/planted.c"
expect "op name compared in runtime" "op name 'MatMul' compared"
fresh
printf 'static int g(const char *op) { return !strncmp(op, "Relu", 5); }\n' \
  >"$tmp/tree/src/ops/planted.c"
expect "op name compared in an op file" "op name 'Relu' compared"

fresh # OpenCL called from the runtime
printf 'static void f(void *q) { clFinish(q); }\n' >"$tmp/tree/src/runtime/planted.c"
expect "OpenCL in runtime" "src/runtime/ uses OpenCL directly"

fresh # an op declared by hand instead of through op_list.h
printf 'extern const clg_op_def clg_op_MatMul;\n' >"$tmp/tree/src/ops/planted.c"
expect "hand-kept extern" "op definitions declared by hand"

fresh # an op defined but not registered
first=$(grep -m1 -o '^CLG_OP([A-Za-z0-9]*)' "$tmp/tree/src/"*/op_list.h | sed 's/.*CLG_OP(\(.*\))/\1/')
sed -i "/^CLG_OP($first)/d" "$tmp/tree/src/"*/op_list.h
expect "op missing from op_list.h" "op clg_op_$first is defined but not listed"

fresh # a benchmark reaching around its door
printf '#include "memory/memory.h"\n' >>"$tmp/tree/tools/bench_conv.c"
expect "benchmark includes a module" "a benchmark includes a module's header"

fresh # device code in an op file
printf 'static cl_mem planted;\n' >>"$tmp/tree/src/ops/add_n.c"
expect "cl_ type in an op file" "op files name device code"
fresh
printf '#include "backends/host/host.h"\n' >>"$tmp/tree/src/ops/add_n.c"
expect "backend include in an op file" "op files name device code"

[ "$failures" -eq 0 ] || {
  echo "check_layering_planted: $failures case(s) failed" >&2
  exit 1
}
echo "check_layering_planted: every planted violation fails check_layering.sh"
