#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of tests/fuzz/ and runs each for a bounded time.
#
#   FUZZ_SECONDS=60 ci/fuzz.sh            # every target, 60 s each (the CI default), nproc at once
#   FUZZ_SECONDS=600 ci/fuzz.sh fuzz_graph
#
# How it builds (kept simple on purpose): CMake configures build/fuzz with clang and
# -fsanitize=fuzzer-no-link,address,undefined, and builds only libclgraph.a; then each
# tests/fuzz/fuzz_*.c is linked with clang -fsanitize=fuzzer against it, with the libraries
# CMake chose for the clgraph tool (read from its generated link line). New inputs go to
# build/fuzz/work/<target>/; the committed seeds in tests/fuzz/corpus/<target>/ are only
# read. A crash stops the script with the input saved as build/fuzz/crashes/<target>-*:
# copy it to tests/fuzz/regressions/<target>/ so that tests/test_fuzz_replay.c replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
seconds="${FUZZ_SECONDS:-60}"
build="${CLG_CI_BUILD:-build}/fuzz"
targets=("$@")
((${#targets[@]})) || targets=(fuzz_devname fuzz_suballoc fuzz_graph fuzz_safetensors fuzz_npy fuzz_graphdef fuzz_tfjs fuzz_onnx)

san="-fsanitize=address,undefined -fno-sanitize-recover=all"
cflags="-g -O1 -fno-omit-frame-pointer $san"
echo "== fuzz: build ($build, clang)"
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCLGRAPH_BUILD_TESTS=OFF \
  "-DCMAKE_C_FLAGS=$cflags -fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" --target clgraph -j "$(nproc)" >/dev/null
link_txt="$build/CMakeFiles/clgraph_tool.dir/link.txt"
libs=$(sed -e 's/.*libclgraph\.a//' "$link_txt")
for t in "${targets[@]}"; do
  clang -std=c11 -D_POSIX_C_SOURCE=200809L -DCL_TARGET_OPENCL_VERSION=120 $cflags \
    -fsanitize=fuzzer -Wall -Wextra -Wpedantic -Werror -Iinclude -Isrc \
    "tests/fuzz/$t.c" -o "$build/$t" "$build/libclgraph.a" $libs
done

# The environment the tests use: four PoCL devices standing in as GPUs. PoCL's in-process
# kernel compiler keeps memory for the life of the process (opencl-practice.md, 5): the
# suppressions name only libpocl and libLLVM frames; clang's C code needs full unwinding
# for them to match.
export POCL_DEVICES="pthread pthread pthread pthread" CLGRAPH_DEVICE_TYPES=all
export POCL_ENABLE_UNINIT=1 CLGRAPH_LOG_LEVEL=off
export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export FUZZ_GRAPH_STATS=1 # fuzz_graph prints how many runs it checked

mkdir -p "$build/crashes"
# One target: its verdict (and the end of its log when it failed) into $build/$t.verdict.
fuzz_one() {
  local t=$1 start
  start=$(date +%s)
  mkdir -p "$build/work/$t"
  if ! "$build/$t" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=6144 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" \
      "$build/work/$t" "tests/fuzz/corpus/$t" >"$build/$t.log" 2>&1; then
    { tail -n 60 "$build/$t.log"
      echo "fuzz: $t FAILED; the input is in $build/crashes/ (log: $build/$t.log)"; } >"$build/$t.verdict"
    return 1
  fi
  { grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE|^fuzz_graph: " "$build/$t.log" || true
    echo "fuzz: $t passed ($(($(date +%s) - start))s)"; } >"$build/$t.verdict"
}
# As many targets at once as there are cores (each fuzzer is one process on one core): the
# bounded run then takes FUZZ_SECONDS per nproc targets, not per target.
status=0
par=$(nproc)
for ((i = 0; i < ${#targets[@]}; i += par)); do
  batch=("${targets[@]:i:par}")
  pids=()
  for t in "${batch[@]}"; do
    echo "== fuzz: $t for ${seconds}s"
    fuzz_one "$t" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    wait "${pids[$k]}" || status=1
    cat "$build/${batch[$k]}.verdict"
  done
done
exit $status
