#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node, whose package carries the CPU
# libonnxruntime.so.1) into a cache folder, for tools/ort_run.js: the yardstick that
# tools/compare_onnx.py times clgraph against. Never a dependency of the build or the tests.
# --ignore-scripts: its install script tries to download CUDA files and fails without a
# network; the CPU library needs no script. A valid copy already in DIR is kept.
#
#   tools/get-ort.sh [DIR]      # DIR defaults to $CLGRAPH_ORT_DIR or build/ort; prints
#                               # DIR/node_modules, the folder to put in NODE_PATH
set -euo pipefail
version=1.30.0
dir="${1:-${CLGRAPH_ORT_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/ort}}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
valid() { # the pinned version there, and its native binding loadable
  (cd "$dir" && node -e "
    const v = require('onnxruntime-node/package.json').version;
    if (v !== '$version') process.exit(1);
    require('onnxruntime-node');
  " >/dev/null 2>&1)
}
if valid; then
  echo "$dir/node_modules"
  exit 0
fi
# A package.json of its own, so that npm installs here and not into a parent project.
[ -f "$dir/package.json" ] || echo '{"name": "clgraph-ort-cache", "private": true}' > "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --save-exact \
  "onnxruntime-node@$version" >&2)
if ! valid; then
  echo "tools/get-ort.sh: onnxruntime-node@$version does not load from $dir" >&2
  exit 1
fi
echo "$dir/node_modules"
