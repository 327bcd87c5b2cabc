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
# The targets the tests matching regex $2 in build tree $1 run: every executable of the tree
# that a test's command names (its own test program, the clgraph tool, ...), read from CTest's
# files after configuring, so that a subset step builds those and the library, not all.
test_targets() {
  local dir names known
  dir=$(cd "$1" && pwd)
  names=$(ctest --test-dir "$dir" -N -R "$2" | sed -n 's/^ *Test *#[0-9]*: //p')
  known=" $(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | tr '\n' ' ') "
  find "$dir" -name CTestTestfile.cmake -exec grep -h '^add_test(' {} + |
    while IFS= read -r line; do
      local name=${line#add_test([=[}
      name=${name%%]=]*}
      grep -qxF -- "$name" <<<"$names" || continue
      grep -oE "\"$dir/[^ \"]+" <<<"$line" | sed 's|.*/||'
    done | sed 's/^clgraph$/clgraph_tool/' | sort -u | while read -r t; do
      if [[ $known == *" $t "* ]]; then echo "$t"; fi
    done | tr '\n' ' '
}
# Configures build tree $1 with options $4..., then builds the library, what the tests
# matching regex $2 run, and the extra targets $3: those whose own sources hold code only this
# configuration compiles (#if CLG_HAVE_...), so that -Werror still sees every such line here.
configure_and_build_for() { # dir, test regex, extra targets, cmake options...
  local dir=$1 regex=$2 extra=$3
  shift 3
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON "$@" >/dev/null
  # shellcheck disable=SC2046,SC2086 # lists of target names, split on purpose
  cmake --build "$dir" -j "$jobs" --target clgraph $extra $(test_targets "$dir" "$regex") >/dev/null
}

step "1. default build (-Werror) and the whole suite"
configure_and_build build/ci
ctest --test-dir build/ci --output-on-failure -j "$jobs"
bash ci/consumer.sh  # embedding: install, build tests/consumer with CMake and pkg-config, README example (added by face)

step "2. built without CLBlast (MatMul has no OpenCL kernel) and without MPI (clusters: UNIMPLEMENTED)"
subset2='test_(placer|scenarios|execution|random_graphs|cl_kernels|host_kernels|fallback|ops|gradients|cluster)'
# (the tool's benchmarks, test_clblast_tuning and test_faults' fault layer hold #if CLBlast code)
configure_and_build_for build/ci-noclblast "$subset2" "clgraph_tool test_clblast_tuning test_faults" \
  -DCLGRAPH_WITH_CLBLAST=OFF -DCLGRAPH_WITH_MPI=OFF
ctest --test-dir build/ci-noclblast --output-on-failure -j "$jobs" -R "$subset2"

step "3. built without CBLAS: the portable host GEMM"
subset3='test_(host_kernels|scenarios|random_graphs|gradients)'
# (the tool's benchmarks hold #if CBLAS code)
configure_and_build_for build/ci-portable "$subset3" clgraph_tool -DCLGRAPH_WITH_CBLAS=OFF
ctest --test-dir build/ci-portable --output-on-failure -j "$jobs" -R "$subset3"

step "4. sanitizers"
bash ci/sanitize.sh

step "5. fuzzing (FUZZ_SECONDS per target, default 60)"
bash ci/fuzz.sh
step "all checks passed"
