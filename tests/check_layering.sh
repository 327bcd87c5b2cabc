#!/usr/bin/env bash
# The house's layering rules, checked on the sources (issue "Ops as data"):
#  1. src/runtime/ calls no OpenCL function and names no OpenCL type or constant: devices are
#     reached through their table (src/device/interface.c);
#  2. src/runtime/ never asks whether a device is the host (no is_host);
#  3. graph building does not pull in CL/cl.h;
#  4. no op type name is compared outside the registry (src/ops/registry.c): an op file
#     tells its ops apart by their definitions (n->def == &clg_op_X), never by name;
#  5. src/memory/ calls OpenCL only in its region backend (src/memory/region_cl.c);
#  6. ops are registered in one place: src/ops/op_list.h (one CLG_OP(Name) line per op),
#     which ops.h expands into the declarations; no file declares an op definition itself;
#  7. the benchmarks (tools/bench_*.c) and `clgraph devices` (tools/cmd_devices.c) reach the
#     library through the public API and their one door, src/bench/bench.h, only;
#  8. modules are ordered (levels below, lowest first): a module's files include headers of
#     their own module and of lower levels only, never of an upper one or of another module
#     of the same level, so no include cycle between modules can form; a folder of src/ that
#     has no level is an error (give it one);
#  9. an op file says what its op is, not where it runs: no CLG_KIND_OPENCL, no cl_ type, no
#     clg_cl_ call and no include of src/backends/ in src/ops/ (its kernels live in
#     src/backends/<kind>/).
# Usage: tests/check_layering.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_layering.sh SOURCE_DIR}
fail=0
report() {
  echo "check_layering: $1" >&2
  printf '%s\n' "$2" | sed 's/^/  /' >&2
  fail=1
}
hits=$(grep -nE '\bcl[A-Z][A-Za-z]*[[:space:]]*\(|\bcl_[a-z_]+\b|\bCL_[A-Z_]+\b' \
  "$src"/src/runtime/*.[ch] || true)
[ -z "$hits" ] || report "src/runtime/ uses OpenCL directly:" "$hits"
hits=$(grep -nE '\bcl[A-Z][A-Za-z]*[[:space:]]*\(' "$src"/src/memory/*.[ch] |
  grep -v '^'"$src"'/src/memory/region_cl\.c:' || true)
[ -z "$hits" ] || report "src/memory/ calls OpenCL outside region_cl.c:" "$hits"
hits=$(grep -n 'is_host' "$src"/src/runtime/*.[ch] || true)
[ -z "$hits" ] || report "src/runtime/ branches on the host:" "$hits"
cc=${CC:-cc}
if pre=$(echo '#include "graph/graph.h"' |
  "$cc" -E -I "$src/include" -I "$src/src" -x c - 2>&1); then
  hits=$(printf '%s\n' "$pre" | grep -E '^# [0-9]+ ".*CL/cl\.h"' | head -3 || true)
  [ -z "$hits" ] || report "graph/graph.h pulls in CL/cl.h:" "$hits"
else
  report "graph/graph.h does not preprocess on its own:" "$pre"
fi
# Op names: every registered op (op_list.h, complete by the last rule).
ops=$(grep -ho '^CLG_OP([A-Za-z0-9]*)' "$src"/src/ops/op_list.h | sed 's/CLG_OP(\(.*\))/\1/')
[ -n "$ops" ] || report "no op names found in src/ops/op_list.h" ""
for op in $ops; do
  hits=$(grep -rnE "(str(n|case|ncase)?cmp|memcmp|strstr)\([^;]*\"$op\"" "$src/src" \
    --include='*.c' --include='*.h' | grep -v '^'"$src"'/src/ops/registry\.c:' || true)
  [ -z "$hits" ] || report "op name '$op' compared outside src/ops/registry.c:" "$hits"
done
hits=$(grep -rnE '^[[:space:]]*extern[[:space:]]+const[[:space:]]+clg_op_def\b' "$src/src" \
  "$src/tools" --include='*.c' --include='*.h' || true)
[ -z "$hits" ] || report "op definitions declared by hand (list them in src/ops/op_list.h):" "$hits"
# Definitions as the compiler sees them (many come out of a file's own macro).
defs=$(for f in "$src"/src/ops/*.c; do
  "$cc" -E -P -I "$src/include" -I "$src/src" -DCL_TARGET_OPENCL_VERSION=120 "$f" 2>/dev/null |
    grep -oE '\bclg_op_def[[:space:]]+clg_op_[A-Za-z0-9]+[[:space:]]*=' || true
done | sed -E 's/.*clg_op_([A-Za-z0-9]+).*/\1/' | sort -u)
[ -n "$defs" ] || report "no op definitions found in src/ops/*.c (does it preprocess?)" ""
for d in $defs; do
  grep -q "^CLG_OP($d)" "$src/src/ops/op_list.h" ||
    report "op clg_op_$d is defined but not listed in src/ops/op_list.h:" "$d"
done
# The module order: core, then what needs only core, ... up to the benchmarks' door.
levels="core:0 device:1 trace:1 schema:1 memory:2 cluster:2 graph:2 ops:3 backends:4 runtime:5
  checkpoint:6 train:6 import:6 export:6 bench:7"
# Includes allowed for now against the order, as "from>to" (none since the last op file's
# kernels moved into src/backends/, issue 22).
pending=""
level_of() {
  local e
  for e in $levels; do
    [ "${e%%:*}" = "$1" ] && echo "${e#*:}" && return
  done
  echo ""
}
for dir in "$src"/src/*/; do
  m=$(basename "$dir")
  lm=$(level_of "$m")
  if [ -z "$lm" ]; then
    report "src/$m/ has no level in check_layering.sh's module order:" "$levels"
    continue
  fi
  hits=""
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    inc=$(printf '%s\n' "$line" | sed -E 's/^[^"]*"([a-z_]+)\/.*/\1/')
    [ "$inc" != "$m" ] && [ -d "$src/src/$inc" ] || continue
    li=$(level_of "$inc")
    case " $pending " in *" $m>$inc "*) continue ;; esac
    if [ -z "$li" ] || [ "$li" -ge "$lm" ]; then
      hits+="$line (src/$m/ is level $lm, src/$inc/ level ${li:-none})"$'\n'
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$dir" \
    --include='*.c' --include='*.h' || true)
  [ -z "$hits" ] || report "src/$m/ includes a module at its level or above:" "${hits%$'\n'}"
done
hits=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$src"/tools/bench_*.c \
  "$src"/tools/cmd_devices.c | grep -vE '"(bench/bench\.h|clgraph/[a-z_]+\.h)"' || true)
[ -z "$hits" ] || report "a benchmark includes a module's header (use src/bench/bench.h):" "$hits"
hits=$(grep -nHE '\bCLG_KIND_OPENCL\b|\bcl_[a-z_]+\b|\bclg_cl_[a-z_]+|#[[:space:]]*include[[:space:]]*["<]backends/' \
  "$src"/src/ops/*.[ch] || true)
[ -z "$hits" ] || report "op files name device code (it belongs in src/backends/<kind>/):" "$hits"
[ "$fail" -eq 0 ] && echo "check_layering: runtime without OpenCL, memory/ OpenCL in region_cl.c only, graph.h without CL/cl.h, op names in the registry only, ops listed in op_list.h only, benchmarks through bench.h, modules include lower ones only, op files without device code"
exit "$fail"
