#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, and runs `clgraph demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
source ci/env.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
exec build/release/clgraph demo "$@"
