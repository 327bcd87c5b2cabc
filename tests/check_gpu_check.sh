#!/usr/bin/env bash
# ci/gpu-check.sh's dry run on this build (CTest gpu_check_dry_run): on PoCL stand-ins and as
# on a GPU, every step is planned, every clgraph option a step gives exists (the script
# checks each against its command's --help and fails otherwise), and the report is written.
set -euo pipefail
script=$1 build=$2
out="$build/gpu-check-dry"
rm -rf "$out"
for mode in --pocl ""; do
  bash "$script" --dry-run $mode --no-debs --build-dir "$build" --work "$out/work" --out "$out"
  planned=$(grep -c '"status": "planned"' "$out/gpu-check.json")
  echo "planned steps: $planned"
  test "$planned" -eq 13
  grep -q '"dry_run": true' "$out/gpu-check.json"
  grep -q "^suite  *planned" "$out/gpu-check.txt"
  test -s "$out/gpu-check-logs.tar.gz"
done
# A step's option that its command lacks fails the dry run, naming it.
sed 's/bench conv --json --device \$GPU/bench conv --json --no-such-option $GPU/' "$script" \
  >"$out/gpu-check-bad.sh"
if bash "$out/gpu-check-bad.sh" --dry-run --no-debs --build-dir "$build" --work "$out/work" \
  --out "$out" >"$out/bad.log" 2>&1; then
  echo "a step with an unknown option passed the dry run"
  exit 1
fi
grep -q "step conv: 'clgraph bench conv' has no option --no-such-option" "$out/bad.log"
echo "gpu-check dry run: 2 plans of 13 steps, unknown options refused"
