#!/usr/bin/env bash
# Sanitizers and valgrind (called by ci/test.sh; runs alone too):
#   a. build/asan: the whole CTest suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#      (-fno-sanitize-recover=all: the first UB report fails the test) and LeakSanitizer;
#   b. valgrind memcheck on a representative subset, with the plain build/ci (configured and
#      built here when missing);
#   c. build/tsan: ThreadSanitizer on the tests that run threads.
# Steps a and c run the clusters under mpirun too (the mpi_* tests of MPI_ASAN and MPI_TSAN).
# Zero reports from clgraph's code are allowed. PoCL's in-process kernel compiler keeps memory
# for the life of the process (opencl-practice.md, 5): clgraph calls clUnloadPlatformCompiler at
# exit where PoCL survives it, and tests/lsan.supp and tests/valgrind.supp name only PoCL, LLVM
# and ld.so frames, never clgraph's, so a cl_* object clgraph forgets is still reported. Open
# MPI's runtime keeps allocations to exit and takes locks in either order inside itself:
# tests/mpi.supp (LSan) names only Open MPI's, PMIx's, hwloc's and libevent's libraries;
# tests/tsan-mpi.supp ignores the calls made inside Open MPI's internal libraries
# (called_from_lib) and names PMIx's init-time frames, never libmpi.so or the data path's
# components: a race with an MPI frame on one side only is still reported.
#
#   ci/sanitize.sh                      # all three
#   SANITIZE_STEPS="asan tsan" ci/sanitize.sh
#   CLG_CI_BUILD=build-me ci/sanitize.sh  # build trees under build-me/ instead of build/
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
jobs=$(nproc)
steps="${SANITIZE_STEPS:-asan valgrind tsan}"
root="${CLG_CI_BUILD:-build}"
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
has_step() { [[ " $steps " == *" $1 "* ]]; }
# The clusters under the sanitizers (about 1.5 min under ASan, half a minute under TSan on 2
# cores): every path of src/cluster/ (transfers, staged transfers, the exchange, the ring and
# MPI_Allreduce, the meetings, mixed placements, a failed staging, faults, joining, thread
# levels); TSan where a thread runs beside the one in MPI (the reductions' watchdog, the
# polled reductions).
MPI_ASAN='^mpi_(s7|gpu_transfer|random_2|allreduce_3|fault_stop|fault_collective|fault_kill|mismatch_[23]|mixed_2|stage_fault|late_receive|silent_join|thread_funneled|thread_serialized)$'
MPI_TSAN='^mpi_(allreduce_small|fault_collective|mismatch_2|mixed_3|late_receive|thread_serialized)$'
# The rerun after LeakSanitizer's tracer crashed (step a) scans no thread-local storage: the
# tracer's crash is in its walk of the dynamic TLS (a bogus "DTLS" range after dlopen'd
# libraries with TLS come and go; every run of readme_example_split4 on an Intel Xeon with
# GCC 12's libasan). Fewer roots can only add reports, never hide a leak; the one it adds,
# ld.so's dependency lists, reachable from the dynamic TLS only, is in tests/lsan.supp.
LSAN_RERUN="use_tls=0"
# Whether a CTest log holds a sanitizer report (from any task: a fault test's surviving task
# may report after the line its test greps for, and the test passes).
has_report() {
  grep -nE "ERROR: (AddressSanitizer|LeakSanitizer): |runtime error: |WARNING: ThreadSanitizer" "$1"
}
# Runs the mpi_* tests matching $2 in build tree $1; fails on a failed test and on any report.
mpi_sanitized() {
  local listed log="$1/Testing/Temporary/LastTest.log"
  listed=$(ctest --test-dir "$1" -N -R '^mpi_')
  if [[ $listed != *"Total Tests: "[1-9]* ]]; then
    echo "sanitize: no mpi_* tests in $1 (built without MPI): clusters not checked"
    return 0
  fi
  local failed=0
  ctest --test-dir "$1" --output-on-failure -R "$2" || failed=1
  if has_report "$log"; then
    echo "sanitize: a sanitizer report in the mpi_* tests (log: $log)"
    return 1
  fi
  # LeakSanitizer's tracer crashing at exit is no report (see step a): those tests run again.
  if ((failed)) && grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
    ! grep -q "FAIL " "$log"; then
    echo "sanitize: LeakSanitizer's tracer crashed (not a report); running the failed tests again"
    failed=0
    LSAN_OPTIONS="$LSAN_OPTIONS:$LSAN_RERUN" ctest --test-dir "$1" --output-on-failure \
      --rerun-failed || failed=1
    if has_report "$log"; then
      return 1
    fi
  fi
  return $failed
}

# --- a. ASan + UBSan + LSan on the whole suite ---------------------------------------------------
if has_step asan; then
  echo "== sanitize: ASan+UBSan build ($root/asan) and the whole suite ($(elapsed))"
  cmake -S . -B "$root/asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON \
    -DCLGRAPH_SANITIZE=ON >/dev/null
  cmake --build "$root/asan" -j "$jobs" >/dev/null
  export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  log="$root/asan/ctest.log"
  # The mpi_* tests run after the suite, with Open MPI's suppressions. ONNX's conformance
  # suite runs here on CPU:0 only (the importer and the host kernels under ASan): on the PoCL
  # stand-in its 1,070 children each build their OpenCL programs under ASan, which would take
  # most of CI's time for kernels the other _gpu tests already cover under ASan. The checks
  # that run no clgraph code (the layering scripts over the sources, the Python tfjs-to-pb
  # tool) ran in step 1 and are not run again here.
  if ! ctest --test-dir "$root/asan" --output-on-failure -j "$jobs" --output-log "$log" \
    -E '^(mpi_|onnx_(node|other)_gpu$|check_layering|tfjs_to_pb$)'; then
    # LeakSanitizer's stop-the-world tracer itself crashes now and then at exit ("Tracer
    # caught signal 11 ... LeakSanitizer has encountered a fatal error": no report, an LSan
    # limitation with threads that exit meanwhile). Only then are the failed tests run once
    # more; any real report (ASan, LSan leak, UBSan) fails at once.
    if grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
      ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer): |runtime error: |FAIL " "$log"; then
      echo "sanitize: LeakSanitizer's tracer crashed (not a report); running the failed tests again"
      LSAN_OPTIONS="$LSAN_OPTIONS:$LSAN_RERUN" ctest --test-dir "$root/asan" --output-on-failure \
        --rerun-failed
    else
      exit 1
    fi
  fi
  # Clusters under mpirun: Open MPI's runtime (libopen-pal, PMIx, its transports) keeps
  # allocations to exit, reported by the hundred outside clgraph's frames: tests/mpi.supp
  # names its libraries. Full stacks (fast_unwind_on_malloc=0), or they stop at Open MPI's
  # first frame without a frame pointer and match nothing.
  echo "== sanitize: ASan+UBSan on the clusters (mpi_* tests) ($(elapsed))"
  cat tests/lsan.supp tests/mpi.supp >"$root/asan/lsan-mpi.supp"
  ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$PWD/$root/asan/lsan-mpi.supp:print_suppressions=0" \
    mpi_sanitized "$root/asan" "$MPI_ASAN" || exit 1
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi

# --- b. valgrind memcheck on a subset --------------------------------------------------------------
# Pure C parts, a placement-only test, the guide's scenarios on one PoCL device (where the
# compiler unload at exit runs: no leak suppression needed), the threaded test on four and the
# clgraph tool's input pipeline with its reader thread (test_input). The longest first: they
# run $jobs at once (below).
valgrind_tests=(
  "test_scenarios POCL_DEVICES=pthread"
  "test_concurrency"
  "test_input"
  "test_placer"
  "test_devname"
  "test_graph"
  "test_tensor"
)
# One entry under valgrind: its verdict into $root/ci/valgrind-<test>.verdict, and a non-zero
# status when it failed.
valgrind_one() {
  local t env_extra log t0
  read -r t env_extra <<<"$1"
  log="$root/ci/valgrind-$t.log"
  t0=$(date +%s)
  # The environment of tests/CMakeLists.txt's default test variant, plus the entry's.
  if env POCL_DEVICES="pthread pthread pthread pthread" POCL_MEMORY_LIMIT=2 \
      POCL_CACHE_DIR="$POCL_CACHE_DIR" POCL_ENABLE_UNINIT=1 CLGRAPH_DEVICE_TYPES=all \
      CLGRAPH_LOG_LEVEL=warning CLG_SOURCE_DIR="$PWD" CLG_BINARY_DIR="$PWD/$root/ci" \
      ${env_extra:+"$env_extra"} \
      valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible \
        --suppressions=tests/valgrind.supp "$root/ci/tests/$t" >"$log" 2>&1; then
    echo "valgrind: $t clean ($(($(date +%s) - t0)) s)" >"$root/ci/valgrind-$t.verdict"
    return 0
  fi
  { echo "valgrind: $t FAILED (log: $log)"
    grep -v "^hwloc\|^May be\|^and reloading" "$log" | tail -n 80; } >"$root/ci/valgrind-$t.verdict"
  return 1
}
if has_step valgrind; then
  echo "== sanitize: valgrind memcheck on ${#valgrind_tests[@]} tests ($root/ci) ($(elapsed))"
  cmake -S . -B "$root/ci" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON >/dev/null
  cmake --build "$root/ci" -j "$jobs" >/dev/null
  # valgrind runs a program's threads one at a time, on one core: $jobs entries at once keep
  # every core busy. Verdicts print in the list's order.
  pids=()
  for entry in "${valgrind_tests[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do
      wait -n || true # statuses are collected below, by pid
    done
    valgrind_one "$entry" &
    pids+=($!)
  done
  failed=0
  for k in "${!valgrind_tests[@]}"; do
    wait "${pids[$k]}" || failed=1
    read -r t _ <<<"${valgrind_tests[$k]}"
    cat "$root/ci/valgrind-$t.verdict"
  done
  ((failed == 0)) || exit 1
fi

# --- c. ThreadSanitizer on the threaded tests ----------------------------------------------------
if has_step tsan; then
  echo "== sanitize: TSan build ($root/tsan) and the threaded tests ($(elapsed))"
  cmake -S . -B "$root/tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAPH_WERROR=ON \
    -DCLGRAPH_TSAN=ON >/dev/null
  mpi_target=""
  targets=$(cmake --build "$root/tsan" --target help)
  if [[ $targets == *" mpi_cluster"* ]]; then
    mpi_target=mpi_cluster
  fi
  cmake --build "$root/tsan" -j "$jobs" --target test_concurrency test_allocator test_matmul_race \
    test_input test_events test_host_team $mpi_target >/dev/null
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    ctest --test-dir "$root/tsan" --output-on-failure -j "$jobs" \
    -R '^test_(concurrency|allocator|matmul_race|input|events|host_team.*)$'
  echo "== sanitize: TSan on the clusters (mpi_* tests) ($(elapsed))"
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan-mpi.supp" \
    mpi_sanitized "$root/tsan" "$MPI_TSAN"
fi
echo "== sanitize: all clean ($(elapsed))"
