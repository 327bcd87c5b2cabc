#!/usr/bin/env bash
# The house's layering rules, checked on the sources (issues "Ops as data" and 22):
#  1. no OpenCL call (cl[A-Z]...(), type (cl_...) or constant (CL_...) in src/ outside the
#     OpenCL backend (src/backends/opencl/) and the device module's enumeration files
#     (ENUMERATION below: registry.c makes the contexts and queues, clerror.c names OpenCL's
#     errors, opencl_handles.h types the handles for registry.c and the OpenCL backend);
#     src/bench/ (the benchmarks' door) hands the benchmarks the handles of their direct
#     OpenCL baselines. Comments and string literals do not count; a type or constant is
#     a name CL/cl.h defines, so clgraph's own cl_name or CL_CHUNK_BYTES pass. The rest of
#     the code reaches devices through their tables (src/backends/<kind>/device.c);
#  2. src/runtime/ never asks whether a device is the host (no is_host);
#  3. graph building does not pull in CL/cl.h;
#  4. no op type name is compared outside the registry (src/ops/registry.c): an op file
#     tells its ops apart by their definitions (n->def == &clg_op_X), never by name;
#  5. (src/memory/'s OpenCL: part of rule 1 now, none left there);
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

# Every C file of src/ (but the OpenCL backend, the benchmarks' door and the enumeration)
# without its comments and string literals, lines kept, and each line that calls cl[A-Z]...(
# or names a CL/cl.h name printed as FILE:LINE:CODE. One perl for all files: a process per
# file made this the slowest part of CTest's layering checks.
hits=$(find "$src/src" -name '*.[ch]' -not -path "$src/src/backends/opencl/*" \
  -not -path "$src/src/bench/*" | sort | NAMES="$names" SRC="$src" SKIP=" $ENUMERATION " perl -e '
  open(my $n, "<", $ENV{NAMES}) or die "$ENV{NAMES}: $!";
  my %cl = map { chomp; ($_ => 1) } <$n>;
  while (my $f = <STDIN>) {
    chomp $f;
    (my $rel = $f) =~ s{^\Q$ENV{SRC}\E/}{};
    next if index($ENV{SKIP}, " $rel ") >= 0;
    open(my $h, "<", $f) or die "$f: $!";
    local $/;
    my $code = <$h>;
    $code =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27}{
      my $t = $&; $t =~ m{^/\*} ? "\n" x ($t =~ tr/\n//) : ($t =~ /^"/ ? "\"\"" : ($t =~ /^\x27/ ? "0" : ""))}gse;
    my $i = 0;
    for my $line (split /\n/, $code, -1) {
      $i++;
      my $hit = $line =~ /\bcl[A-Z][A-Za-z0-9]*\s*\(/;
      $hit ||= grep { $cl{$_} } $line =~ /\b(\w+)\b/g;
      print "$rel:$i:$line\n" if $hit;
    }
  }')
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
# Op names: every registered op (op_list.h, complete by the last rule).
ops=$(grep -ho '^CLG_OP([A-Za-z0-9]*)' "$src"/src/ops/op_list.h | sed 's/CLG_OP(\(.*\))/\1/')
[ -n "$ops" ] || report "no op names found in src/ops/op_list.h" ""
# One grep for every comparison with a string literal, then each op over those lines only.
cmps=$(grep -rnE '(str(n|case|ncase)?cmp|memcmp|strstr)\([^;]*"' "$src/src" \
  --include='*.c' --include='*.h' | grep -v '^'"$src"'/src/ops/registry\.c:' || true)
if [ -n "$cmps" ]; then
  for op in $ops; do
    hits=$(printf '%s\n' "$cmps" | grep -E "(str(n|case|ncase)?cmp|memcmp|strstr)\([^;]*\"$op\"" || true)
    [ -z "$hits" ] || report "op name '$op' compared outside src/ops/registry.c:" "$hits"
  done
fi
hits=$(grep -rnE '^[[:space:]]*extern[[:space:]]+const[[:space:]]+clg_op_def\b' "$src/src" \
  "$src/tools" --include='*.c' --include='*.h' || true)
[ -z "$hits" ] || report "op definitions declared by hand (list them in src/ops/op_list.h):" "$hits"
# Definitions as the compiler sees them (many come out of a file's own macro).
# (one preprocessor run for all the op files)
defs=$( ("$cc" -E -P -I "$src/include" -I "$src/src" -DCL_TARGET_OPENCL_VERSION=120 \
  "$src"/src/ops/*.c 2>/dev/null || true) |
  grep -oE '\bclg_op_def[[:space:]]+clg_op_[A-Za-z0-9]+[[:space:]]*=' |
  sed -E 's/.*clg_op_([A-Za-z0-9]+).*/\1/' | sort -u || true)
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
declare -A level # (no subshell per include line: this loop sees every include of src/)
for e in $levels; do level[${e%%:*}]=${e#*:}; done
for dir in "$src"/src/*/; do
  m=$(basename "$dir")
  lm=${level[$m]:-}
  if [ -z "$lm" ]; then
    report "src/$m/ has no level in check_layering.sh's module order:" "$levels"
    continue
  fi
  hits=""
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    rest=${line#*\"}
    inc=${rest%%/*}
    [ "$inc" != "$m" ] && [ -d "$src/src/$inc" ] || continue
    li=${level[$inc]:-}
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
[ "$fail" -eq 0 ] && echo "check_layering: OpenCL only in src/backends/opencl/ and the enumeration, graph.h without CL/cl.h, op names in the registry only, ops listed in op_list.h only, benchmarks through bench.h, modules include lower ones only, op files without device code"
exit "$fail"
