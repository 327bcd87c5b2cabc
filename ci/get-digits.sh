#!/usr/bin/env bash
# Takes the UCI handwritten digits (digits.csv.gz: 1,797 rows of 64 pixels 0-16, then the
# label) out of Debian's python3-sklearn package without installing the package or Python:
# apt-get download, dpkg-deb -x, copy. `clgraph train --dataset digits --data-dir DIR` and
# tests/test_input (test_input_real_digits) read it there. A valid copy already in DIR is kept.
#
#   ci/get-digits.sh [DIR]     # DIR defaults to build/data; prints the file's path
set -euo pipefail
dir="${1:-$(cd "$(dirname "$0")/.." && pwd)/build/data}"
rows=1797
valid() { # file: a complete gzip stream of 1,797 lines
  [ -s "$1" ] && gzip -t "$1" 2>/dev/null && [ "$(gzip -dc "$1" | wc -l)" -eq "$rows" ]
}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
out="$dir/digits.csv.gz"
if valid "$out"; then
  echo "$out"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get download drops root privileges to the _apt user where it can write the folder.
chmod 755 "$work"
cd "$work"
if ! apt-get download python3-sklearn >/dev/null 2>&1; then
  # A fresh system has no package lists yet.
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  apt-get download python3-sklearn >/dev/null
fi
deb=$(ls python3-sklearn_*.deb)
dpkg-deb -x "$deb" unpacked
src=$(find unpacked -path '*/sklearn/datasets/data/digits.csv.gz' | head -n 1)
if [ -z "$src" ]; then
  echo "ci/get-digits.sh: $deb holds no sklearn/datasets/data/digits.csv.gz" >&2
  exit 1
fi
if ! valid "$src"; then
  echo "ci/get-digits.sh: $deb's digits.csv.gz is not $rows rows of gzip'd CSV" >&2
  exit 1
fi
# A temporary name in the same folder, then a rename: no half-written file under the name.
cp "$src" "$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "$out"
