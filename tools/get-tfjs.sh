#!/usr/bin/env bash
# Installs TensorFlow.js for Node (the pure JavaScript CPU backend and the WebAssembly backend,
# XNNPACK with SIMD) into a cache folder, for tools/compare_tfjs.js: the yardstick and the
# source of the reference outputs under tests/data/tfjs/. Never a dependency of the build or
# the tests. --ignore-scripts: no install script runs (tfjs itself needs none; its optional
# postinstall only prints). A valid copy already in DIR is kept.
#
#   tools/get-tfjs.sh [DIR]     # DIR defaults to $CLGRAPH_TFJS_DIR or build/tfjs; prints
#                               # DIR/node_modules, the folder to put in NODE_PATH
set -euo pipefail
version=4.22.0
dir="${1:-${CLGRAPH_TFJS_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/tfjs}}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
valid() { # both packages there at the pinned version, and loadable
  (cd "$dir" && node -e "
    const v = require('@tensorflow/tfjs/package.json').version;
    const w = require('@tensorflow/tfjs-backend-wasm/package.json').version;
    if (v !== '$version' || w !== '$version') process.exit(1);
    require('@tensorflow/tfjs'); require('@tensorflow/tfjs-backend-wasm');
  " >/dev/null 2>&1)
}
if valid; then
  echo "$dir/node_modules"
  exit 0
fi
# A package.json of its own, so that npm installs here and not into a parent project.
[ -f "$dir/package.json" ] || echo '{"name": "clgraph-tfjs-cache", "private": true}' > "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --save-exact \
  "@tensorflow/tfjs@$version" "@tensorflow/tfjs-backend-wasm@$version" >&2)
if ! valid; then
  echo "tools/get-tfjs.sh: @tensorflow/tfjs@$version or its wasm backend does not load from $dir" >&2
  exit 1
fi
echo "$dir/node_modules"
