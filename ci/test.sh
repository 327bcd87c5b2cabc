#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with -Werror and runs every
# test with CTest against real PoCL devices.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
source ci/env.sh
jobs=$(nproc)

echo "== build (Release checks, -Werror)"
cmake -S . -B build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON >/dev/null
cmake --build build/ci -j "$jobs"
echo "== tests"
ctest --test-dir build/ci --output-on-failure -j "$jobs"
bash ci/consumer.sh  # embedding: install, build tests/consumer with CMake and pkg-config, README example (added by face)
