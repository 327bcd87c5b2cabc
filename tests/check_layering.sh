#!/usr/bin/env bash
# The house's layering rules, checked on the sources (issue "Ops as data"):
#  1. src/runtime/ calls no OpenCL function and names no OpenCL type or constant: devices are
#     reached through their table (src/device/interface.c);
#  2. src/runtime/ never asks whether a device is the host (no is_host);
#  3. graph building does not pull in CL/cl.h;
#  4. no op type name is compared outside the registry (src/ops/);
#  5. src/memory/ calls OpenCL only in its region backend (src/memory/region_cl.c);
#  6. an op file says what its op is, not where it runs: it names no CLG_KIND_OPENCL, no cl_
#     type, no clg_cl_ call and includes nothing from src/backends/ (its kernels live in
#     src/backends/<kind>/). Checked on the op files listed in op_files below, those whose
#     kernels have moved so far.
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
# The op files whose kernels moved to src/backends/<kind>/ (issue 22: an op file holds what
# the op is, not where it runs) name no CLG_KIND_OPENCL, no cl_ type, no OpenCL or clg_cl_
# call and include nothing from src/backends/.
moved_op_files=()
for name in conv2d conv2d_grad matmul nn nn_grad reduce shape_ops softmax; do
  moved_op_files+=("$src/src/ops/$name.c")
done
for f in "${moved_op_files[@]}"; do
  [ -f "$f" ] || report "op file checked for device code is missing:" "$f"
done
hits=$(grep -nHE '\bCLG_KIND_OPENCL\b|\bcl_[a-z_]+\b|\bcl[A-Z][A-Za-z]*[[:space:]]*\(|\bclg_cl_[a-z_]+|#[[:space:]]*include[[:space:]]*["<]backends/' \
  "${moved_op_files[@]}" 2>/dev/null || true)
[ -z "$hits" ] || report "op files name device code (it belongs in src/backends/<kind>/):" "$hits"
cc=${CC:-cc}
if pre=$(echo '#include "graph/graph.h"' |
  "$cc" -E -I "$src/include" -I "$src/src" -x c - 2>&1); then
  hits=$(printf '%s\n' "$pre" | grep -E '^# [0-9]+ ".*CL/cl\.h"' | head -3 || true)
  [ -z "$hits" ] || report "graph/graph.h pulls in CL/cl.h:" "$hits"
else
  report "graph/graph.h does not preprocess on its own:" "$pre"
fi
ops=$(grep -ho '\.name = "[A-Za-z0-9]*"' "$src"/src/ops/*.c | sed 's/.*"\(.*\)"/\1/' | sort -u)
for op in $ops; do
  hits=$(grep -rnE "strcmp\([^;]*\"$op\"" "$src/src" --include='*.c' | grep -v '^'"$src"'/src/ops/' || true)
  [ -z "$hits" ] || report "op name '$op' compared outside src/ops/:" "$hits"
done
# Rule 6 covers these op files, those whose kernels have moved (to become every file of
# src/ops/: op_files=("$src"/src/ops/*.c)).
op_files=()
for name in add_n assign binary cast const fill identity math placeholder relu relu_grad select \
  variable; do
  op_files+=("$src/src/ops/$name.c")
done
for f in "${op_files[@]}"; do
  [ -f "$f" ] || report "op file checked for device code is missing:" "$f"
done
hits=$(grep -nHE '\bCLG_KIND_OPENCL\b|\bcl_[a-z_]+\b|\bclg_cl_[a-z_]+|#[[:space:]]*include[[:space:]]*["<]backends/' \
  "${op_files[@]}" 2>/dev/null || true)
[ -z "$hits" ] || report "op files name device code (it belongs in src/backends/<kind>/):" "$hits"
[ "$fail" -eq 0 ] && echo "check_layering: runtime without OpenCL, memory/ OpenCL in region_cl.c only, graph.h without CL/cl.h, op names in the registry only, op files without device code"
exit "$fail"
