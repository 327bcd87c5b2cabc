#!/usr/bin/env bash
# The static library exports only clg_ symbols: every defined global symbol of every object
# in the archive must start with clg_, so that embedding clgraph cannot clash with the
# embedding program's names. Static functions are local and not listed by nm -g.
# Usage: tests/check_symbols.sh path/to/libclgraph.a
set -euo pipefail
lib=${1:?usage: check_symbols.sh path/to/libclgraph.a}
[ -f "$lib" ] || { echo "check_symbols: no such file: $lib" >&2; exit 2; }
# "nm -A" prefixes each line with archive:member; lines are "<file>: <value> <type> <name>".
listing=$(nm -A -g --defined-only "$lib")
total=$(printf '%s\n' "$listing" | awk 'NF >= 3' | wc -l)
# Sanitizer builds add their own instrumentation symbols (__asan_*, __odr_asan.*, ...).
bad=$(printf '%s\n' "$listing" | awk 'NF >= 3 { print $1, $NF }' |
  grep -Ev ' (clg_|__(asan|odr_asan|ubsan|tsan|sanitizer))' || true)
if [ -n "$bad" ]; then
  echo "check_symbols: $lib defines global symbols without the clg_ prefix:" >&2
  printf '  %s\n' "$bad" >&2
  echo "make them static, or rename them clg_<module>_<verb>" >&2
  exit 1
fi
[ "$total" -gt 0 ] || { echo "check_symbols: $lib defines no symbols at all" >&2; exit 1; }
echo "check_symbols: $total global symbols in $(basename "$lib"), all clg_"
