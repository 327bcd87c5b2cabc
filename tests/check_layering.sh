#!/usr/bin/env bash
# The house's layering rules, checked on the sources (issues "Ops as data" and 22):
#  1. no OpenCL call (cl[A-Z]...(), type (cl_...) or constant (CL_...) in src/ outside the
#     OpenCL backend (src/backends/opencl/) and the device module's enumeration files
#     (ENUMERATION below: registry.c makes the contexts and queues, clerror.c names OpenCL's
#     errors, opencl_handles.h types the handles for registry.c and the OpenCL backend);
#     src/ops/ is left out while its kernels move into src/backends/. Comments and string literals do not count; a type or
#     constant is a name CL/cl.h defines, so clgraph's own cl_name or CL_CHUNK_BYTES pass;
#  2. src/runtime/ never asks whether a device is the host (no is_host);
#  3. graph building does not pull in CL/cl.h;
#  4. no op type name is compared outside the registry (src/ops/).
# Usage: tests/check_layering.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_layering.sh SOURCE_DIR}
fail=0
report() {
  echo "check_layering: $1" >&2
  printf '%s\n' "$2" | sed 's/^/  /' >&2
  fail=1
}
cc=${CC:-cc}
ENUMERATION="src/device/registry.c src/device/clerror.c src/device/opencl_handles.h"

# OpenCL's own names, from its header: every CL_ macro and cl_ typedef.
names=$(mktemp)
trap 'rm -f "$names"' EXIT
if ! hdr=$(echo '#include <CL/cl.h>' | "$cc" -E -dD -x c - 2>/dev/null); then
  report "CL/cl.h does not preprocess:" "$("$cc" -E -x c - <<<'#include <CL/cl.h>' 2>&1 | head -3)"
  exit 1
fi
{
  printf '%s\n' "$hdr" | sed -n 's/^#define \(CL_[A-Za-z0-9_]*\).*/\1/p'
  printf '%s\n' "$hdr" | grep -v '^#' | grep -oE '\bcl_[a-z0-9_]+\b'
} | sort -u >"$names"

# The code of a C file without its comments and string literals (lines kept, so that grep -n
# numbers them as the file does).
strip() {
  perl -0777 -pe 's{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'}{
    my $t = $&; $t =~ /^\/\*/ ? "\n" x ($t =~ tr/\n//) : ($t =~ /^"/ ? "\"\"" : ($t =~ /^'"'"'/ ? "0" : ""))}gse' "$1"
}

hits=""
while IFS= read -r f; do
  rel=${f#"$src"/}
  case " $ENUMERATION " in *" $rel "*) continue ;; esac
  code=$(strip "$f")
  h=$( (printf '%s\n' "$code" | grep -nE '\bcl[A-Z][A-Za-z0-9]*[[:space:]]*\(' || true
    printf '%s\n' "$code" | grep -nwFf "$names" || true) | sort -t: -k1,1n -u)
  [ -z "$h" ] || hits+=$(printf '%s\n' "$h" | sed "s|^|$rel:|")$'\n'
done < <(find "$src/src" -name '*.[ch]' -not -path "$src/src/backends/opencl/*" \
  -not -path "$src/src/ops/*" | sort)
[ -z "$hits" ] || report "OpenCL named outside src/backends/opencl/ and the enumeration ($ENUMERATION):" "${hits%$'\n'}"

hits=$(grep -n 'is_host' "$src"/src/runtime/*.[ch] || true)
[ -z "$hits" ] || report "src/runtime/ branches on the host:" "$hits"
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
[ "$fail" -eq 0 ] && echo "check_layering: OpenCL only in src/backends/opencl/ and the enumeration, runtime without is_host, graph.h without CL/cl.h, op names in the registry only"
exit "$fail"
