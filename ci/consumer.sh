#!/usr/bin/env bash
# Embedding, as a user does it: installs clgraph into a temporary prefix, then builds the
# tiny consumer in tests/consumer against the installed package twice (CMake's
# find_package, then pkg-config with plain cc), runs both and checks their output exactly.
# Also checks that the README's C example is tests/readme_example.c, and builds and runs
# it. Needs the packages of ci/install-deps.sh. Build directory: $CLG_BUILD_DIR (default
# build/ci, the one ci/test.sh uses).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
build=${CLG_BUILD_DIR:-build/ci}
jobs=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

# The devices the outputs below are written for: four PoCL CPU devices standing in as GPUs.
export POCL_DEVICES="pthread pthread pthread pthread" CLGRAPH_DEVICE_TYPES=all

echo "== install clgraph into a temporary prefix"
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCLGRAPH_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs" --target clgraph clgraph_tool >/dev/null
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name clgraph.pc)
libdir=$(dirname "$(dirname "$pc")")
for f in "$libdir/libclgraph.a" "$prefix/include/clgraph.h" "$prefix/include/clgraph/session.h" \
         "$libdir/cmake/clgraph/clgraphConfig.cmake" "$prefix/bin/clgraph"; do
  [ -f "$f" ] || { echo "ci/consumer.sh: not installed: ${f#"$prefix"/}" >&2; exit 1; }
done
bash tests/check_symbols.sh "$libdir/libclgraph.a"

want=$(printf '%s\n' 'clgraph consumer: 4 GPUs' \
  'MatMul: /job:localhost/replica:0/task:0/device:CPU:0' '[[ 22.  28.]' ' [ 49.  64.]]' \
  'MatMul_1: /job:localhost/replica:0/task:0/device:GPU:0' '[[ 22.  28.]' ' [ 49.  64.]]')
check() { # check <what> <expected> <command...>: runs the command, compares its stdout
  local what=$1 expected=$2 got
  shift 2
  got=$("$@")
  if [ "$got" != "$expected" ]; then
    echo "ci/consumer.sh: $what printed something else:" >&2
    diff <(printf '%s\n' "$expected") <(printf '%s\n' "$got") >&2 || true
    exit 1
  fi
  echo "$what: output as expected"
}

echo "== consumer built with CMake (find_package(clgraph), clgraph::clgraph)"
cmake -S tests/consumer -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
check "consumer (CMake)" "$want" "$work/cmake-build/consumer"

echo "== consumer built with pkg-config and cc"
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046  # the flags are meant to split
cc -std=c11 -Wall -Wextra -Wpedantic -Werror tests/consumer/main.c \
  $(pkg-config --cflags --libs --static clgraph) -o "$work/consumer-pc"
check "consumer (pkg-config)" "$want" "$work/consumer-pc"

echo "== the README's C example"
awk '/^```c$/ { inside = 1; next } /^```$/ { inside = 0 } inside' README.md >"$work/readme.c"
if ! diff -u tests/readme_example.c "$work/readme.c"; then
  echo "ci/consumer.sh: README.md's C example differs from tests/readme_example.c" >&2
  exit 1
fi
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/readme.c" \
  $(pkg-config --cflags --libs --static clgraph) -o "$work/readme"
check "README example" "$(printf '%s\n' '[[  44.   56.]' ' [  98.  128.]]')" "$work/readme"
echo "ci/consumer.sh: all consumers built and ran as expected"
