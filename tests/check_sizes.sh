#!/usr/bin/env bash
# Issue 22's size rule, checked on the sources: no function in src/ (outside src/bench/, the
# benchmarks' door) longer than 120 lines, counted from the line after its opening `{` at
# column 0 to its closing `}` at column 0 (the repo's clang-format puts both there). Files
# over 800 lines are printed as a note only: one long file with one job is allowed.
# Usage: tests/check_sizes.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_sizes.sh SOURCE_DIR}
max_fn=120
max_file=800
cd "$src"
files=$(find src -name '*.c' -not -path 'src/bench/*' | LC_ALL=C sort)
[ -n "$files" ] || {
  echo "check_sizes: no C files under $src/src" >&2
  exit 1
}
fail=0
# shellcheck disable=SC2086
long=$(awk -v max="$max_fn" '
  FNR == 1 { open = 0 }
  /^\{/ { open = FNR; next }
  /^\}/ && open {
    len = FNR - open
    if (len > max) printf "%s:%d: function of %d lines (over %d)\n", FILENAME, open, len, max
    open = 0
  }' $files)
if [ -n "$long" ]; then
  echo "check_sizes: functions over $max_fn lines (split them into named steps):" >&2
  printf '%s\n' "$long" | sed 's/^/  /' >&2
  fail=1
fi
# shellcheck disable=SC2086
big=$(wc -l $files | awk -v max="$max_file" '$2 != "total" && $1 > max { print "  " $2 ": " $1 " lines" }')
if [ -n "$big" ]; then
  echo "check_sizes: note: files over $max_file lines (fine if each has one job):"
  printf '%s\n' "$big"
fi
[ "$fail" -eq 0 ] || exit 1
echo "check_sizes: no function over $max_fn lines"
