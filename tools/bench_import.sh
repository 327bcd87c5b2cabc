#!/bin/bash
# Import cost of models (issue 23's goal: import plus session creation under 10% of the first
# run): builds tools/bench_import/bench_import.c (public API only) against each given build
# tree's libclgraph.a and runs it ROUNDS times per model, the builds alternated within each
# round (old and new binaries measured under the same load), each run a fresh process (so
# session_ms holds OpenCL's start-up, as a program's first session does). Prints, per build
# and model, the median over the rounds of each figure bench_import.c prints.
#
#   tools/bench_import.sh [--build DIR]... [--rounds N] [--repeats N] [--allow-growth] MODEL...
#
# DIR defaults to build/ci. Environment as for the tests (source ci/env.sh; for PoCL stand-ins
# OCL_ICD_VENDORS, CLGRAPH_DEVICE_TYPES=all, POCL_DEVICES). --allow-growth: sessions with
# allow_growth instead of reserving (and touching) each device's whole memory at first use.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
builds=() rounds=5 repeats=10 models=() growth=()
while [ $# -gt 0 ]; do
  case "$1" in
  --build) builds+=("$2"); shift 2 ;;
  --rounds) rounds="$2"; shift 2 ;;
  --repeats) repeats="$2"; shift 2 ;;
  --allow-growth) growth=(--allow-growth); shift ;;
  -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
  -*) echo "bench_import.sh: unknown option $1" >&2; exit 2 ;;
  *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "bench_import.sh: no MODEL given" >&2; exit 2; }
[ ${#builds[@]} -gt 0 ] || builds=("$src/build/ci")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The library's dependencies as its pkg-config file names them.
deps="$(sed -n 's/^Libs.private: //p' "${builds[0]}/package/clgraph.pc") -lOpenCL -ljansson"
for i in "${!builds[@]}"; do
  b="${builds[$i]}"
  [ -f "$b/libclgraph.a" ] || { echo "bench_import.sh: $b/libclgraph.a not found" >&2; exit 1; }
  # shellcheck disable=SC2086
  cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$src/include" \
    "$src/tools/bench_import/bench_import.c" -o "$work/bench$i" "$b/libclgraph.a" $deps \
    -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openmpi/lib:/usr/lib/x86_64-linux-gnu/openblas-pthread
done
for ((r = 0; r < rounds; r++)); do
  for m in "${models[@]}"; do
    for i in "${!builds[@]}"; do
      line="$("$work/bench$i" "${growth[@]}" "$m" "$repeats")" || { echo "bench_import.sh: $m failed" >&2; exit 1; }
      echo "$i $(basename "$m") $line" >>"$work/all"
    done
  done
done
python3 - "$work/all" "${builds[@]}" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    b, model, *kv = line.split()
    d = rows.setdefault((int(b), model), {})
    for f in kv:
        k, v = f.split("=")
        d.setdefault(k, []).append(float(v))
keys = ["import_ms", "session_ms", "session2_ms", "first_run_ms", "median_ms", "min_ms", "share"]
print("%-12s %-28s " % ("build", "model") + " ".join("%13s" % k for k in keys))
for (b, model), d in sorted(rows.items(), key=lambda x: (x[0][1], x[0][0])):
    print("%-12s %-28s " % (sys.argv[2 + b].rstrip("/").split("/")[-1], model)
          + " ".join("%13.3f" % statistics.median(d[k]) for k in keys))
print("medians over %d rounds; share = (import + session) / first run" % len(next(iter(rows.values()))["share"]))
PY
