#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and tests clgraph in
# every configuration CI cares about, against real PoCL devices:
#   1. the default build (-Werror): the whole CTest suite, then the embedding checks;
#   2. built without CLBlast: MatMul falls back to the host (placement and fallbacks); also
#      without MPI: a cluster option is UNIMPLEMENTED (test_cluster);
#   3. built without CBLAS: the portable host GEMM serves CPU:0;
#   4. sanitizers (ASan+UBSan on the suite, valgrind on a subset, TSan on concurrency);
#   5. a bounded fuzzing run of each libFuzzer target.
# Every step must pass; the first failure stops the script with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/get-digits.sh >/dev/null  # Debian's digits.csv.gz into build/data (test_input_real_digits)
source ci/env.sh
jobs=$(nproc)
start=$(date +%s)
step() { echo; echo "== $* ($(($(date +%s) - start)) s)"; }

configure_and_build() { # dir, cmake options...
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
}

step "1. default build (-Werror) and the whole suite"
configure_and_build build/ci
ctest --test-dir build/ci --output-on-failure -j "$jobs"
bash ci/consumer.sh  # embedding: install, build tests/consumer with CMake and pkg-config, README example (added by face)

step "2. built without CLBlast (MatMul has no OpenCL kernel) and without MPI (clusters: UNIMPLEMENTED)"
configure_and_build build/ci-noclblast -DCLGRAPH_WITH_CLBLAST=OFF -DCLGRAPH_WITH_MPI=OFF
ctest --test-dir build/ci-noclblast --output-on-failure -j "$jobs" \
  -R 'test_(placer|scenarios|execution|random_graphs|cl_kernels|host_kernels|fallback|ops|gradients|cluster)'

step "3. built without CBLAS: the portable host GEMM"
configure_and_build build/ci-portable -DCLGRAPH_WITH_CBLAS=OFF
ctest --test-dir build/ci-portable --output-on-failure -j "$jobs" \
  -R 'test_(host_kernels|scenarios|random_graphs|gradients)'

step "4. sanitizers"
bash ci/sanitize.sh

step "5. fuzzing (FUZZ_SECONDS per target, default 60)"
bash ci/fuzz.sh
step "all checks passed"
