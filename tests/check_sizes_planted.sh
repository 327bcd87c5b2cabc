#!/usr/bin/env bash
# tests/check_sizes.sh must fail on a planted long function and only on it: a small made-up
# tree (no copy of the sources) holds a function of exactly 120 lines (passes), one of 200
# in src/bench/ (exempt) and a file of 900 lines of short functions (a note, not a failure);
# then a function of 121 lines is planted and the script must fail naming its FILE:LINE.
# Usage: tests/check_sizes_planted.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/clg_sizes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# body FILE NAME LINES: append a function whose body (after `{`, through `}`) is LINES lines.
body() {
  printf 'int %s(int x)\n{\n' "$2" >>"$1"
  for _ in $(seq $(($3 - 2))); do printf '  x += 1;\n' >>"$1"; done
  printf '  return x;\n}\n' >>"$1"
}
mkdir -p "$tmp/src/mod" "$tmp/src/bench"
printf '/* fits */\n' >"$tmp/src/mod/fits.c"
body "$tmp/src/mod/fits.c" fits 120
body "$tmp/src/bench/long.c" bench_long 200
for i in $(seq 100); do body "$tmp/src/mod/big.c" "short$i" 7; done

out=$(bash "$here/check_sizes.sh" "$tmp" 2>&1) || {
  echo "FAIL: check_sizes.sh fails on the unplanted tree:" >&2
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  exit 1
}
grep -qF "src/mod/big.c: 900 lines" <<<"$out" || {
  echo "FAIL: no note on the 900-line file:" >&2
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  exit 1
}
echo "ok   120 lines, src/bench/ and a long file of short functions pass"

printf '/* one\n * two */\n' >"$tmp/src/mod/planted.c"
body "$tmp/src/mod/planted.c" planted 121
rc=0
out=$(bash "$here/check_sizes.sh" "$tmp" 2>&1) || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "FAIL: check_sizes.sh passed a function of 121 lines" >&2
  exit 1
fi
grep -qF "src/mod/planted.c:4: function of 121 lines" <<<"$out" || {
  echo "FAIL: check_sizes.sh failed without naming src/mod/planted.c:4 and 121 lines:" >&2
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  exit 1
}
if grep -q "fits.c:\|long.c:" <<<"$out"; then
  echo "FAIL: check_sizes.sh also named a function within the rule:" >&2
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  exit 1
fi
echo "ok   a planted function of 121 lines fails, named by FILE:LINE"
echo "check_sizes_planted: the size check fails on the planted function only"
