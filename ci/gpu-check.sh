#!/usr/bin/env bash
# clgraph on a real GPU in one bounded run (issue 25), for a machine that reaches no package
# registry: the Debian packages the build needs are fetched beforehand, on a machine that
# reaches Debian's registry, and travel with the tree:
#
#   ci/gpu-check.sh --download [DIR]   # here: apt-get download of PACKAGES into DIR (.gpu-debs)
#   ci/gpu-check.sh                    # there: unpack, build, run every step, write the report
#
# There it unpacks the packages with dpkg -x (or Python when dpkg is missing) into a prefix,
# points PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH, CMAKE_PREFIX_PATH at it and OCL_ICD_VENDORS
# at the vendor's ICD (from /etc/OpenCL/vendors, or the driver's libnvidia-opencl.so.1 /
# libamdocl64.so where a container mounts the driver without an .icd), builds with every
# core, then runs each step under a time limit so that the whole fits in --budget seconds
# (default 570, for one 10-minute command): clgraph devices and demo, the CTest suite in the
# native mode (the GPU split into four parts, CLGRAPH_VIRTUAL_DEVICES), bench matmul before
# tuning, CLBlast's GEMM tuners, bench matmul after, bench train-step on GPU:0 and CPU:0,
# bench conv, bench towers (one tower per part), clgraph train 200 steps with its profile.
# A step that fails or runs out of time is reported and the next one runs; steps that no
# longer fit are reported as skipped. The report is one text and one JSON file under --out
# ($OUT when set, so the device tool brings it back), with every figure and, for every
# failure, its command and the end of its log; all logs are in gpu-check-logs.tar.gz there.
#
# --pocl runs the same steps on PoCL with one pthread device split into four stand-ins and
# short sizes (how the script is tested without a GPU). --dry-run prints the plan, checks
# that the packages are there and that every clgraph option a step uses exists (from each
# command's --help), and writes the report with every step "planned". ci/gpu-check.sh --help
# lists the options.
set -uo pipefail # no -e: every step runs and is reported

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/ci/gpu-check.sh"

# What the build and the steps need that a stock Debian/Ubuntu machine with a C compiler and
# CMake lacks, with the libraries those need (libc6, libstdc++6 and libgcc-s1 are assumed).
# zlib1g: only for its link-time library (the .so that zlib1g-dev points at); the machine's
# own libz.so.1 serves at run time.
PACKAGES=(ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers
          libclblast1 libclblast-dev clblast-utils
          libjansson4 libjansson-dev
          libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0
          zlib1g zlib1g-dev
          pkgconf pkgconf-bin libpkgconf3
          clinfo)

STEPS=(prepare icd build devices demo suite matmul-before tune matmul-after train-step-gpu
       train-step-cpu conv towers train)

usage() {
  cat <<EOF
usage: ci/gpu-check.sh --download [DIR]
       ci/gpu-check.sh [--pocl] [--quick] [--dry-run] [--debs DIR | --no-debs] [--out DIR]
                       [--budget SECONDS] [--steps LIST] [--build-dir DIR] [--no-build] [--work DIR]
                       [--peak-fp32 TFLOPS] [--install-tuning]

  --download [DIR]  apt-get download the packages (and nothing else) into DIR (default
                    .gpu-debs, git-ignored); prints their total size
  --debs DIR        the downloaded packages (default .gpu-debs); --no-debs: use the
                    machine's own installed packages instead
  --out DIR         report folder (default \$OUT, else build/gpu-check-report)
  --budget S        seconds for the whole run (default 570)
  --steps LIST      only these steps, a comma list of: ${STEPS[*]}
  --build-dir DIR   the build (default build/gpu-check); --no-build: use it as it is
  --work DIR        the prefix, logs and tuner files (default: the build folder's name
                    followed by -work)
  --pocl            the GPU steps on one PoCL pthread device split into four, short sizes
  --quick           short sizes on the GPU too
  --peak-fp32 T     the card's FP32 peak in TFLOP/s, for SGEMM's fraction of it (known
                    for some cards by name)
  --install-tuning  also copy the tuning into the cache folder the card's runs read
  --dry-run         print the plan and check packages and options; run nothing
EOF
}

work="" mode=run debs="$ROOT/.gpu-debs" use_debs=1 out="" budget=570 only="" pocl=0 quick=0
build_dir="$ROOT/build/gpu-check" do_build=1 peak="" install_tuning=0 dry=0 internal=""
while (($#)); do
  case $1 in
  --download) mode=download; if [[ ${2:-} && $2 != -* ]]; then debs=$(realpath -m "$2"); shift; fi ;;
  --debs) debs=$(realpath -m "$2"); shift ;;
  --no-debs) use_debs=0 ;;
  --out) out=$(realpath -m "$2"); shift ;;
  --budget) budget=$2; shift ;;
  --steps) only=",$2,"; shift ;;
  --build-dir) build_dir=$(realpath -m "$2"); shift ;;
  --work) work=$(realpath -m "$2"); shift ;;
  --no-build) do_build=0 ;;
  --pocl) pocl=1; quick=1 ;;
  --quick) quick=1 ;;
  --peak-fp32) peak=$2; shift ;;
  --install-tuning) install_tuning=1 ;;
  --dry-run) dry=1 ;;
  --internal-step) internal=$2; shift ;;
  -h | --help) usage; exit 0 ;;
  *) echo "ci/gpu-check.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "ci/gpu-check.sh: --budget wants seconds, not '$budget'" >&2; exit 2; }
if [[ $only ]]; then
  for s in ${only//,/ }; do
    [[ " ${STEPS[*]} " == *" $s "* ]] || { echo "ci/gpu-check.sh: unknown step '$s' (steps: ${STEPS[*]})" >&2; exit 2; }
  done
fi
WORK=${work:-$build_dir-work}
PREFIX="$WORK/prefix"
CLG="$build_dir/clgraph"

# --- here: fetch the packages ----------------------------------------------------------
if [[ $mode == download ]]; then
  command -v apt-get >/dev/null || { echo "ci/gpu-check.sh --download needs apt-get" >&2; exit 1; }
  mkdir -p "$debs"
  cd "$debs" || exit 1
  if ! apt-get download "${PACKAGES[@]}" 2> >(grep -v "unsandboxed" >&2); then
    echo "apt-get download failed; updating the package lists once and trying again" >&2
    apt-get update -qq && apt-get download "${PACKAGES[@]}" || exit 1
  fi
  # What the packages need beyond the list: assumed on the GPU machine (named, to check).
  # "|Depends:" lines are alternatives of the next one; <name> is a virtual package.
  for p in "${PACKAGES[@]}"; do
    apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
      --no-enhances "$p" 2>/dev/null |
      awk -v have=" ${PACKAGES[*]} " '
        /^ *\|?Depends:/ { alt = alt " " $2; if ($1 ~ /^\|/) next
                          n = split(alt, a, " "); met = 0
                          for (i = 1; i <= n; i++) met = met || index(have, " " a[i] " ") || a[i] ~ /^</
                          if (!met) print alt; alt = "" }'
  done | sort -u | while read -r dep; do
    echo "note: needed and assumed on the machine: ${dep// / or }"
  done
  sha256sum ./*.deb >SHA256SUMS
  echo "ci/gpu-check.sh: $(ls ./*.deb | wc -l) packages in $debs, $(du -cb ./*.deb | tail -1 | cut -f1) bytes"
  exit 0
fi

# --- the environment the steps see ----------------------------------------------------------
# A prefix of unpacked packages comes first; the machine's own libraries serve the rest.
setup_env() {
  [[ ${CLG_GPU_CHECK_ENV:-} ]] && return 0 # once: the internal steps inherit it
  export CLG_GPU_CHECK_ENV=1
  if ((use_debs)); then
    export PATH="$PREFIX/usr/bin:$PATH"
    export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PKG_CONFIG_PATH="$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig:$PREFIX/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export CMAKE_PREFIX_PATH="$PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  fi
  export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$HOME/.cache/clgraph/pocl}"
  export OCL_ICD_VENDORS="$WORK/icd"
  if [[ -f $WORK/icd/driver-dir ]]; then # the driver's own libraries (libcuda.so.1 beside it)
    LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(cat "$WORK/icd/driver-dir")"
    export LD_LIBRARY_PATH
  fi
  if ((pocl)); then # one pthread device, split into four by the steps that want four
    export CLGRAPH_DEVICE_TYPES=all POCL_DEVICES=pthread POCL_MEMORY_LIMIT=8
    export CLGRAPH_TEST_DEVICE_TYPES=all
  fi
}

# Unpacks every .deb into the prefix, then points the packages' absolute /usr paths (.pc and
# CMake files, symbolic links) into it.
unpack() {
  local n=0
  [[ -d $debs ]] || { echo "no packages folder $debs: run ci/gpu-check.sh --download first (or --no-debs)"; return 1; }
  # The stamp: these packages, unpacked by this script.
  local stamp
  stamp=$( (cd "$debs" && ls ./*.deb | sort; cat "$SELF") | md5sum)
  if [[ -f $PREFIX/.unpacked && $(cat "$PREFIX/.unpacked") == "$stamp" ]]; then
    echo "the prefix $PREFIX already holds these packages"
    return 0
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  for p in "${PACKAGES[@]}"; do
    local f
    f=$(ls "$debs/${p}_"*.deb 2>/dev/null | head -1)
    [[ $f ]] || { echo "missing package: $p (in $debs)"; return 1; }
    if command -v dpkg >/dev/null && [[ -z ${GPU_CHECK_NO_DPKG:-} ]]; then # (the variable: a test)
      dpkg -x "$f" "$PREFIX" || return 1
    else
      python3 - "$f" "$PREFIX" <<'EOF' || return 1
import io, lzma, sys, tarfile
# A .deb is an ar archive; its data.tar.* member holds the files.
deb, dest = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
assert data[:8] == b"!<arch>\n", deb + ": not a .deb"
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    pos += 60 + size + (size & 1)
    if name.startswith("data.tar"):
        mode = "r:xz" if name.endswith(".xz") else "r:gz" if name.endswith(".gz") else "r:*"
        tar = tarfile.open(fileobj=io.BytesIO(body), mode=mode)
        try:  # as dpkg -x: the package's own symbolic links, absolute ones too
            tar.extractall(dest, filter="fully_trusted")
        except TypeError:  # a Python before extraction filters
            tar.extractall(dest)
        break
EOF
    fi
    echo "unpacked $(basename "$f")"
    n=$((n + 1))
  done
  grep -rlE '/usr(/|$)' --include='*.pc' --include='*.cmake' "$PREFIX" | while read -r f; do
    sed -i -e "s#\([\"' =(;]\)/usr/#\1$PREFIX/usr/#g" -e "s#=/usr\$#=$PREFIX/usr#" "$f"
  done
  find "$PREFIX" -type l -lname '/*' | while read -r l; do
    local t
    t=$(readlink "$l")
    [[ -e $PREFIX$t ]] && ln -sfn "$PREFIX$t" "$l"
  done
  echo "$stamp" >"$PREFIX/.unpacked"
  echo "$n packages in $PREFIX"
}

# The vendor's OpenCL driver as the ICD loader's only platform(s): the .icd files of
# /etc/OpenCL/vendors but PoCL's, or the driver library where the container has no .icd.
find_icd() {
  rm -rf "$WORK/icd"
  mkdir -p "$WORK/icd"
  if ((pocl)); then
    [[ -f /etc/OpenCL/vendors/pocl.icd ]] || { echo "--pocl: no /etc/OpenCL/vendors/pocl.icd"; return 1; }
    cp /etc/OpenCL/vendors/pocl.icd "$WORK/icd/"
    echo "PoCL: $(cat "$WORK/icd/pocl.icd")"
    return 0
  fi
  local f found=0
  for f in /etc/OpenCL/vendors/*.icd; do
    [[ -f $f && $(basename "$f") != pocl.icd ]] || continue
    cp "$f" "$WORK/icd/"
    echo "$(basename "$f"): $(cat "$f")"
    found=1
  done
  if ((!found)); then
    local lib d
    for lib in libnvidia-opencl.so.1 libamdocl64.so libamdocl64.so.2 libigdrcl.so; do
      for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 \
        /usr/local/cuda/lib64 /opt/rocm/lib /opt/rocm/opencl/lib /usr/lib/wsl/lib; do
        if [[ -e $d/$lib ]]; then
          echo "$d/$lib" >"$WORK/icd/${lib%%.so*}.icd"
          echo "$d" >"$WORK/icd/driver-dir"
          echo "no .icd in /etc/OpenCL/vendors: using $d/$lib"
          found=1
          break 2
        fi
      done
    done
  fi
  ((found)) || { echo "no OpenCL GPU driver: nothing in /etc/OpenCL/vendors, no libnvidia-opencl.so.1 or libamdocl64.so in the usual places"; return 1; }
}

# --- internal steps (run as their own process, so that `timeout` can bound them) ----------
step_build() {
  local gen=() blas=()
  command -v make >/dev/null || { command -v ninja >/dev/null && gen=(-G Ninja); }
  local ob="$PREFIX/usr/lib/x86_64-linux-gnu/openblas-pthread/cmake/openblas"
  ((use_debs)) && [[ -d $ob ]] && blas=(-DOpenBLAS_DIR="$ob")
  for tool in cmake cc; do
    command -v $tool >/dev/null || { echo "no $tool on this machine: the build needs a C compiler and CMake"; return 1; }
  done
  echo "cc: $(cc --version | head -1); cmake: $(cmake --version | head -1)"
  export CMAKE_POLICY_VERSION_MINIMUM=3.5 # CMake 4 refuses older packages' files without it
  cmake -S "$ROOT" -B "$build_dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCLGRAPH_WITH_MPI=OFF \
    -DCLGRAPH_TEST_PLATFORM=native "${blas[@]}" || return 1
  cmake --build "$build_dir" -j "$(nproc)" || return 1
  echo "what CMake found:"
  grep -E '^(OpenCL_LIBRARY|OpenCL_INCLUDE_DIR|CLBlast_DIR|OpenBLAS_DIR|ZLIB_LIBRARY_RELEASE|pkgcfg_lib_JANSSON_jansson):' \
    "$build_dir/CMakeCache.txt"
}

step_devices() {
  "$CLG" devices || return 1
  "$CLG" devices --json >"$WORK/out/devices.json" || return 1
  command -v clinfo >/dev/null && clinfo -l
  return 0
}

# The suite in the native mode: as many test processes at once as the card holds four
# parts of CLGRAPH_TEST_GPU_MEMORY_MB each for.
step_suite() {
  local exclude=()
  command -v chromium >/dev/null || exclude=(-E '^test_browser$') # needs headless Chromium
  echo "CLGRAPH_TEST_GPU_MEMORY_MB=$CLGRAPH_TEST_GPU_MEMORY_MB, -j $SUITE_JOBS, excluded: ${exclude[*]:-none}"
  CLGRAPH_TEST_PLATFORM=native ctest --test-dir "$build_dir" -j "$SUITE_JOBS" --timeout "$SUITE_TEST_TIMEOUT" \
    --output-on-failure "${exclude[@]}"
  local rc=$?
  cp "$build_dir/Testing/Temporary/LastTest.log" "$WORK/logs/suite-LastTest.log" 2>/dev/null
  return $rc
}

# A tuner runs its variations in turn (xgemm: GEMMK 0 on a fixed set, GEMMK 0 sampled from a
# larger one, then the same for GEMMK 1) and writes each one's file when it completes: stop
# it once the first has (the others would not finish in the time there is) or after LIMIT s.
tune_first_variation() { # LIMIT TUNER ARGS...
  local limit=$1 log
  shift
  log="$WORK/tuning/$1-$(date +%s%N).log"
  echo "== $* (until its first variation completes, at most $limit s)"
  "$@" >"$log" 2>&1 &
  local pid=$! t=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    t=$((t + 1))
    if grep -q "Completed tuning process" "$log" || ((t >= limit)); then
      kill "$pid" 2>/dev/null
      break
    fi
  done
  wait "$pid" 2>/dev/null
  grep -E "Found|Exploring|best result|Writing|Completed|rror" "$log"
  grep -q "Completed tuning process" "$log" || echo "   stopped after $limit s before a variation completed"
  return 0
}

# CLBlast's GEMM tuners on GPU:0 (platform 0 device 0: the ICD folder holds the GPU's
# driver alone), float and, where the card has it, half; the files, as they are, between
# brackets: the tuning file.
step_tune() {
  local dir="$WORK/tuning" precisions=(32) p
  rm -rf "$dir"
  mkdir -p "$dir"
  cd "$dir" || return 1
  [[ $GPU_FP16 == true ]] && precisions+=(16)
  for tuner in clblast_tuner_xgemm clblast_tuner_xgemm_direct; do
    command -v $tuner >/dev/null || { echo "no $tuner (Debian's clblast-utils)"; return 1; }
  done
  local n=${#precisions[@]}
  local t_x=$((TUNE_SECONDS * 2 / 3 / n)) t_d=$((TUNE_SECONDS / 3 / n))
  for p in "${precisions[@]}"; do
    tune_first_variation "$t_x" clblast_tuner_xgemm -platform 0 -device 0 -precision "$p" $TUNE_XGEMM_ARGS
    tune_first_variation "$t_d" clblast_tuner_xgemm_direct -platform 0 -device 0 -precision "$p" $TUNE_DIRECT_ARGS
  done
  local files=(clblast_*.json)
  [[ -e ${files[0]} ]] || { echo "no tuner finished a variation in time"; return 1; }
  {
    echo "["
    local first=1
    for f in "${files[@]}"; do
      ((first)) || echo ","
      first=0
      cat "$f"
    done
    echo "]"
  } >"$WORK/out/clblast-tuning.json"
  echo "tuning file: $WORK/out/clblast-tuning.json from ${files[*]}"
  if ((install_tuning)); then
    local dest
    dest=$(grep -o '"clblast_tuning_file": "[^"]*"' "$WORK/out/devices.json" | head -1 | cut -d'"' -f4)
    [[ $dest ]] && mkdir -p "$(dirname "$dest")" && cp "$WORK/out/clblast-tuning.json" "$dest" && echo "installed as $dest"
  fi
}

if [[ $internal ]]; then
  setup_env
  case $internal in
  build) step_build ;;
  devices) step_devices ;;
  suite) step_suite ;;
  tune) step_tune ;;
  *) echo "unknown internal step $internal" >&2; exit 2 ;;
  esac
  exit $?
fi

# --- the run -----------------------------------------------------------------------------
start=$(date +%s)
deadline=$((start + budget))
[[ $out ]] || out=${OUT:-$ROOT/build/gpu-check-report}
mkdir -p "$out" "$WORK/logs" "$WORK/out"
rm -f "$WORK"/logs/* "$WORK"/out/*.json "$WORK"/out/*.out "$WORK/steps.tsv"
: >"$WORK/steps.tsv"

wanted() { [[ -z $only || $only == *",$1,"* ]]; }

# record NAME STATUS RC SECONDS NOTE COMMAND
# (empty fields as "-": read collapses adjacent tabs)
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3:--}" "$4" "${5:--}" "${6:--}" >>"$WORK/steps.tsv"; }

# run_step NAME CAP [ENV=VALUE ...] COMMAND...: at most CAP seconds and what the budget has
# left; stdout in out/NAME.out, stderr in logs/NAME.log.
run_step() {
  local name=$1 cap=$2
  shift 2
  wanted "$name" || return 0
  local cmd="$*" now left limit
  now=$(date +%s)
  left=$((deadline - now))
  if ((dry)); then
    record "$name" planned "" 0 "at most $cap s" "$cmd"
    printf '%-15s at most %4s s: %s\n' "$name" "$cap" "$cmd"
    return 0
  fi
  if ((left < 20)); then
    record "$name" skipped "" 0 "out of time: $left s of the $budget s budget left" "$cmd"
    echo "== $name: skipped, $left s left"
    return 1
  fi
  limit=$cap
  ((limit > left - 10)) && limit=$((left - 10))
  echo "== $name (at most $limit s): $cmd"
  local t0 t1 rc
  t0=$(date +%s.%N)
  # timeout signals the command's whole process group: a step's children stop with it.
  timeout -k 10 "$limit" env "$@" >"$WORK/out/$name.out" 2>"$WORK/logs/$name.log"
  rc=$?
  t1=$(date +%s.%N)
  local secs status=ok note=""
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  if ((rc == 124 || rc == 137)); then
    status=timeout note="stopped after $limit s"
  elif ((rc != 0)); then
    status=failed note="exit status $rc"
  fi
  record "$name" "$status" "$rc" "$secs" "$note" "$cmd"
  echo "   $status in $secs s${note:+ ($note)}"
  return $rc
}

# Steps of the shell itself (they set the environment the others see).
shell_step() { # NAME FUNCTION
  local name=$1 fn=$2
  wanted "$name" || return 0
  if ((dry)); then
    record "$name" planned "" 0 "" "$fn"
    printf '%-15s %s\n' "$name" "$fn"
    return 0
  fi
  local t0 rc
  t0=$(date +%s.%N)
  $fn >"$WORK/logs/$name.log" 2>&1
  rc=$?
  local secs
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  record "$name" "$([[ $rc == 0 ]] && echo ok || echo failed)" "$rc" "$secs" "" "$fn"
  echo "== $name: $([[ $rc == 0 ]] && echo ok || echo "failed (see $WORK/logs/$name.log)") in $secs s"
  return $rc
}

# Sizes: the issue's on a GPU; a few small ones on PoCL (--pocl) or with --quick.
if ((quick)); then
  MM_SIZES=256,512 MM_F16=256 REPEATS=2 BATCH=16 STEPS_TRAIN=20 CONV_ARGS="--batch 8 --repeats 1"
  TUNE_XGEMM_ARGS="-m 128 -n 128 -k 128 -fraction 200 -runs 1" TUNE_DIRECT_ARGS="-m 64 -n 64 -k 64 -fraction 23 -runs 1"
  TUNE_SECONDS=120 SUITE_TEST_TIMEOUT=900 SUITE_CAP=1500
else
  MM_SIZES=1024,2048,4096,8192 MM_F16=1024,2048,4096,8192 REPEATS=5 BATCH=128 STEPS_TRAIN=200
  CONV_ARGS="--repeats 5" TUNE_XGEMM_ARGS="-fraction 8" TUNE_DIRECT_ARGS="-fraction 2" TUNE_SECONDS=180
  SUITE_TEST_TIMEOUT=300 SUITE_CAP=200
fi
export TUNE_XGEMM_ARGS TUNE_DIRECT_ARGS TUNE_SECONDS SUITE_TEST_TIMEOUT GPU_FP16=false
echo "ci/gpu-check.sh: $( ((pocl)) && echo "PoCL stand-ins" || echo "the machine's GPU"), budget $budget s, report in $out"

if ((dry)); then
  # The packages, and the options the steps use (from each command's --help).
  if ((use_debs)); then
    for p in "${PACKAGES[@]}"; do
      ls "$debs/${p}_"*.deb >/dev/null 2>&1 || echo "missing package: $p in $debs (ci/gpu-check.sh --download)"
    done
  fi
fi

# What the internal steps are told (they run this script again).
IFLAGS=(--build-dir "$build_dir" --work "$WORK")
((use_debs)) || IFLAGS+=(--no-debs)
((pocl)) && IFLAGS+=(--pocl)
((install_tuning)) && IFLAGS+=(--install-tuning)

((use_debs)) && shell_step prepare unpack
shell_step icd find_icd
setup_env
if ((do_build)); then
  run_step build 300 "$SELF" --internal-step build "${IFLAGS[@]}"
fi
[[ -x $CLG ]] || { ((dry)) || echo "no $CLG: the build failed"; }
run_step devices 30 "$SELF" --internal-step devices "${IFLAGS[@]}"

# What the card is: the memory for the suite's parts, and whether half can be tuned.
gmem=0
if [[ -f $WORK/out/devices.json ]]; then
  gpu0=$(grep '"name": "/device:GPU:0"' "$WORK/out/devices.json" | head -1)
  gmem=$(grep -o '"global_mem": [0-9]*' <<<"$gpu0" | grep -o '[0-9]*$')
  gmem=${gmem:-0}
  grep -q '"has_fp16": true' <<<"$gpu0" && GPU_FP16=true
fi
SUITE_JOBS=$(nproc)
((SUITE_JOBS > 8)) && SUITE_JOBS=8
if ((pocl)); then # PoCL's parts are host memory, one device per test process
  part_mb=2048
else # every test process reserves its four parts on the one card
  part_mb=$((gmem / 1048576 * 85 / 100 / (4 * SUITE_JOBS)))
  ((part_mb > 2048)) && part_mb=2048
fi
export CLGRAPH_TEST_GPU_MEMORY_MB=$part_mb SUITE_JOBS GPU_FP16
F16=""
[[ $GPU_FP16 == true ]] && F16=$MM_F16
TUNING="$WORK/out/clblast-tuning.json"
GPU=/device:GPU:0

run_step demo 60 "$CLG" demo --json
run_step suite $SUITE_CAP "$SELF" --internal-step suite "${IFLAGS[@]}"
run_step matmul-before 90 CLGRAPH_CLBLAST_TUNING=off "$CLG" bench matmul --json --device $GPU \
  --sizes $MM_SIZES --f64-sizes "" --f16-sizes "$F16" --repeats $REPEATS
run_step tune $((TUNE_SECONDS + 20)) "$SELF" --internal-step tune "${IFLAGS[@]}"
if [[ -f $TUNING ]] || ((dry)); then
  export CLGRAPH_CLBLAST_TUNING=$TUNING # the later steps run tuned
  run_step matmul-after 90 "$CLG" bench matmul --json --device $GPU --sizes $MM_SIZES \
    --f64-sizes "" --f16-sizes "$F16" --repeats $REPEATS
elif wanted matmul-after; then
  record matmul-after skipped "" 0 "no tuning file (the tune step made none)" ""
fi
run_step train-step-gpu 60 "$CLG" bench train-step --json --device $GPU --batch $BATCH --repeats $REPEATS
run_step train-step-cpu 60 "$CLG" bench train-step --json --batch $BATCH --repeats $REPEATS
run_step conv 60 "$CLG" bench conv --json --device $GPU $CONV_ARGS
run_step towers 90 CLGRAPH_VIRTUAL_DEVICES=4 "$CLG" bench towers --json --towers 4 --batch $BATCH \
  --repeats $REPEATS
run_step train 120 "$CLG" train --dataset synthetic --towers 1 --steps $STEPS_TRAIN --batch $BATCH \
  --profile --quiet

if ((dry)); then
  # Every clgraph option a step uses must be one its command knows.
  if [[ -x $CLG ]]; then
    while IFS=$'\t' read -r name _ _ _ _ cmd; do
      [[ $cmd == *"$CLG "* ]] || continue
      read -ra words <<<"${cmd#*"$CLG" }"
      sub=${words[0]}
      [[ $sub == bench ]] && sub="bench ${words[1]}"
      help=$("$CLG" $sub --help 2>&1)
      for w in "${words[@]}"; do
        [[ $w == --* ]] || continue
        grep -qE -- "(^|[^a-z0-9-])$w([^a-z0-9-]|\$)" <<<"$help" || { echo "step $name: 'clgraph $sub' has no option $w"; record "$name" failed 2 0 "clgraph $sub has no option $w" "$cmd"; }
      done
    done < <(cat "$WORK/steps.tsv")
  else
    echo "no $CLG to check the options with (build first, or --build-dir)"
  fi
fi

# --- the report ------------------------------------------------------------------------
saved=(logs out steps.tsv)
[[ -d $WORK/tuning ]] && saved+=(tuning)
tar -czf "$out/gpu-check-logs.tar.gz" -C "$WORK" "${saved[@]}" 2>/dev/null
[[ -f $TUNING ]] && cp "$TUNING" "$out/clblast-tuning.json"
python3 - "$WORK" "$out" "$budget" "$pocl" "$dry" "$peak" "$(date -u +%FT%TZ)" "$(($(date +%s) - start))" <<'EOF'
import json, os, re, sys

work, out, budget, pocl, dry, peak, when, took = sys.argv[1:9]
pocl, dry = pocl == "1", dry == "1"


def read(path, limit=None):
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return text if limit is None else text[-limit:]


def tail(text, lines=40):
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def load_json(name):
    text = read(os.path.join(work, "out", name)).strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        # bench train-step and friends print one object; a log line before it is tolerated
        start = text.find("{")
        try:
            return json.loads(text[start:]) if start >= 0 else None
        except ValueError:
            return None


steps = []
for line in read(os.path.join(work, "steps.tsv")).splitlines():
    name, status, rc, secs, note, cmd = (line.split("\t") + [""] * 6)[:6]
    rc, note, cmd = [None if v == "-" else v for v in (rc, note, cmd)]
    s = {"step": name, "status": status, "rc": int(rc) if rc else None, "seconds": float(secs),
         "note": note or "", "command": cmd or ""}
    if status in ("failed", "timeout"):
        s["stderr_tail"] = tail(read(os.path.join(work, "logs", name + ".log")))
        s["stdout_tail"] = tail(read(os.path.join(work, "out", name + ".out")))
    steps.append(s)

figures, text = {}, []
devices = load_json("devices.json")
gpu = None
if devices:
    gpus = [d for d in devices.get("devices", []) if d.get("type") == "GPU"]
    gpu = gpus[0] if gpus else None
    figures["gpu"] = gpu and {k: gpu.get(k) for k in ("cl_name", "cl_vendor", "driver_version",
                                                       "cl_version", "global_mem", "max_alloc",
                                                       "compute_units", "has_fp16", "has_fp64")}
# FP32 peaks by name (vendors' datasheets), for SGEMM's fraction of it.
peaks = {"H200": 66.9, "H100": 66.9, "A100": 19.5, "V100": 15.7, "L40S": 91.6, "A10": 31.2,
         "T4": 8.1, "RTX 4090": 82.6, "MI300X": 163.4, "MI250": 45.3}
peak_tflops = float(peak) if peak else None
if peak_tflops is None and gpu:
    for key, v in peaks.items():
        if key in gpu.get("cl_name", ""):
            peak_tflops = v
figures["fp32_peak_tflops"] = peak_tflops

demo = load_json("demo.out")
if demo:
    sc = demo.get("scenarios", [])
    figures["demo"] = {"right": sum(1 for s in sc if s.get("ok")), "scenarios": len(sc),
                       "wrong": [s.get("id") for s in sc if not s.get("ok")]}

suite_out = read(os.path.join(work, "out", "suite.out"))
ran = re.findall(r"Test +#\d+: (\S+) \.+\s*(?:\*\*\*)?([A-Za-z][^\n]*?)\s+[\d.]+ sec", suite_out)
m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", suite_out)
if m:
    failed = re.findall(r"^\s*\d+ - (\S+) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|[^)]*)\)",
                        suite_out.split("The following tests FAILED:")[-1], re.M) \
        if "The following tests FAILED:" in suite_out else []
    not_run = re.findall(r"^\s*\d+ - (\S+) \(([^)]*)\)",
                         suite_out.split("The following tests did not run:")[-1].split(
                             "The following tests FAILED:")[0], re.M) \
        if "The following tests did not run:" in suite_out else []
    total, nfail = int(m.group(3)), int(m.group(2))
    figures["suite"] = {"total": total, "failed": nfail,
                        "passed": sum(1 for _, why in ran if why == "Passed"),
                        "failed_tests": [f"{n} ({why})" for n, why in failed],
                        "not_run": [f"{n} ({why})" for n, why in not_run]}
elif ran:  # stopped before its summary: what finished
    bad = [f"{n} ({why})" for n, why in ran if why != "Passed"]
    figures["suite"] = {"total": None, "finished": len(ran), "failed": len(bad),
                        "passed": sum(1 for _, why in ran if why == "Passed"),
                        "failed_tests": bad, "not_run": [], "incomplete": True}


def matmul(name):
    j = load_json(name)
    if not j:
        return None
    return {f'{r["dtype"]} {r["n"]}': {k: r.get(k) for k in ("clgraph_gflops", "direct_gflops",
                                                            "kernel_gflops", "note")}
            for r in j.get("results", [])}


before, after = matmul("matmul-before.out"), matmul("matmul-after.out")
if before or after:
    mm = {"before": before, "after": after}
    sg = {}
    for when_, res in (("before", before), ("after", after)):
        r = (res or {}).get("float 4096")
        if r and r.get("kernel_gflops"):
            sg[when_] = r["kernel_gflops"] / 1000
    mm["sgemm_4096_kernel_tflops"] = sg
    if peak_tflops:
        mm["sgemm_4096_fraction_of_fp32_peak"] = {k: v / peak_tflops for k, v in sg.items()}
    figures["matmul"] = mm
tuned = re.findall(r"CLBlast (\S+) \((\w+)\) on \S+ tuned from \S+: (.*)",
                   read(os.path.join(work, "logs", "matmul-after.log")))
if tuned:
    figures["tuning_applied"] = [f"{k} ({p}): {v}" for k, p, v in tuned]
warn = [l for l in read(os.path.join(work, "logs", "matmul-after.log")).splitlines()
        if "tuning" in l and "warning" in l.lower()]
if warn:
    figures["tuning_warnings"] = warn

ts_gpu, ts_cpu = load_json("train-step-gpu.out"), load_json("train-step-cpu.out")
if ts_gpu or ts_cpu:
    t = {"gpu": ts_gpu, "cpu": ts_cpu, "tutorial_k20m_s_per_batch": [0.35, 0.60]}
    if ts_gpu:
        t["gpu_s_per_batch"] = ts_gpu["ms_per_step"] / 1000
        t["gpu_outside_gemm_share"] = 1 - ts_gpu.get("gemm_fraction", 0)
    if ts_cpu:
        t["cpu_s_per_batch"] = ts_cpu["ms_per_step"] / 1000
    if ts_gpu and ts_cpu:
        t["gpu_speedup_over_cpu"] = ts_cpu["ms_per_step"] / ts_gpu["ms_per_step"]
    figures["train_step"] = t
conv = load_json("conv.out")
if conv:
    figures["conv"] = {r["conv"]: {"session_gflops": r.get("session_gflops"),
                                   "hand_gflops": r.get("hand_gflops")} for r in conv["results"]}
towers = load_json("towers.out")
if towers:
    figures["towers"] = towers
train_out = read(os.path.join(work, "out", "train.out")) + read(os.path.join(work, "logs", "train.log"))
spb = re.findall(r"step (\d+), loss = ([\d.]+) \(([\d.]+) examples/sec; ([\d.]+) sec/batch\)", train_out)
if spb:
    figures["train"] = {"last_step": int(spb[-1][0]), "loss": float(spb[-1][1]),
                        "sec_per_batch": float(spb[-1][3]), "examples_per_sec": float(spb[-1][2])}
    prof = train_out.split("Per-op profile")
    if len(prof) > 1:
        rows = ("Per-op profile" + prof[1]).splitlines()
        figures["train"]["profile_top10"] = rows[:12]  # the title, the header, ten ops

report = {"when": when, "mode": "pocl stand-ins" if pocl else "gpu", "dry_run": dry,
          "budget_s": int(budget), "took_s": int(took), "steps": steps, "figures": figures}
with open(os.path.join(out, "gpu-check.json"), "w") as f:
    json.dump(report, f, indent=1)

L = text.append
L(f"clgraph ci/gpu-check.sh, {when}: {'PoCL stand-ins' if pocl else 'the GPU'}"
  f"{' (dry run)' if dry else ''}, {took} s of a {budget} s budget")
if gpu:
    L(f"GPU:0 {gpu['cl_name']} ({gpu['global_mem'] / 2**30:.1f} GiB, driver {gpu['driver_version']}, "
      f"{gpu['cl_version']}, fp16 {gpu['has_fp16']}, FP32 peak {peak_tflops or 'unknown'} TFLOP/s)")
L("")
L(f"{'step':<15} {'status':<8} {'seconds':>8}  note")
for s in steps:
    L(f"{s['step']:<15} {s['status']:<8} {s['seconds']:>8.1f}  {s['note']}")
L("")
if "demo" in figures:
    d = figures["demo"]
    L(f"demo: {d['right']} of {d['scenarios']} scenarios right{'; wrong: ' + ', '.join(d['wrong']) if d['wrong'] else ''}")
if "suite" in figures:
    s = figures["suite"]
    L(f"suite (native mode): {s['passed']} passed, {s['failed']} failed, {len(s['not_run'])} not run, "
      + (f"of {s['total']}" if s["total"] else f"of the {s['finished']} that finished before the time limit"))
    for t_ in s["failed_tests"]:
        L(f"  failed: {t_}")
    for t_ in s["not_run"]:
        L(f"  not run: {t_}")
if "matmul" in figures:
    mm = figures["matmul"]
    L("bench matmul on GPU:0, GFLOP/s (session / by hand / kernel alone), before and after tuning:")
    keys = sorted(set((mm["before"] or {}).keys()) | set((mm["after"] or {}).keys()),
                  key=lambda k: (k.split()[0], int(k.split()[1])))
    for k in keys:
        cells = []
        for res in (mm["before"], mm["after"]):
            r = (res or {}).get(k)
            cells.append("-" if not r else " / ".join("-" if r.get(x) is None else f"{r[x]:.0f}"
                                                      for x in ("clgraph_gflops", "direct_gflops", "kernel_gflops"))
                         + (f" ({r['note']})" if r.get("note") else ""))
        L(f"  {k:<11} before {cells[0]:<28} after {cells[1]}")
    if mm.get("sgemm_4096_kernel_tflops"):
        fr = mm.get("sgemm_4096_fraction_of_fp32_peak", {})
        L("  SGEMM n=4096, kernel alone: " + ", ".join(
            f"{k} {v:.1f} TFLOP/s" + (f" = {100 * fr[k]:.0f}% of FP32 peak" if k in fr else "")
            for k, v in mm["sgemm_4096_kernel_tflops"].items()))
for line in figures.get("tuning_applied", []):
    L(f"  tuned: {line}")
for line in figures.get("tuning_warnings", []):
    L(f"  tuning warning: {line}")
if "train_step" in figures:
    t = figures["train_step"]
    parts = []
    if "gpu_s_per_batch" in t:
        parts.append(f"GPU:0 {t['gpu_s_per_batch']:.4f} s/batch ({t['gpu']['images_per_sec']:.0f} images/s, "
                     f"{100 * t['gpu_outside_gemm_share']:.0f}% outside GEMM)")
    if "cpu_s_per_batch" in t:
        parts.append(f"CPU:0 {t['cpu_s_per_batch']:.4f} s/batch")
    if "gpu_speedup_over_cpu" in t:
        parts.append(f"GPU:0 {t['gpu_speedup_over_cpu']:.2f} times as fast as CPU:0")
    L("train step (bench train-step): " + "; ".join(parts) + "; the tutorial's K20m: 0.35-0.60 s/batch")
if "conv" in figures:
    L("bench conv on GPU:0 (forward, GFLOP/s session / by hand): " + ", ".join(
        f"{k} {v['session_gflops']} / {v['hand_gflops']}" for k, v in figures["conv"].items()))
if "towers" in figures:
    L(f"bench towers: {json.dumps(figures['towers'])}")
if "train" in figures:
    t = figures["train"]
    L(f"clgraph train: step {t['last_step']}, loss {t['loss']}, {t['sec_per_batch']} s/batch "
      f"({t['examples_per_sec']} examples/s); per-op profile, top rows:")
    for r in t.get("profile_top10", []):
        L("  " + r)
for s in steps:
    if s["status"] in ("failed", "timeout"):
        L("")
        L(f"--- {s['step']} {s['status']} ({s['note']}): {s['command']}")
        if s.get("stdout_tail"):
            L("stdout, last lines:")
            L(s["stdout_tail"])
        if s.get("stderr_tail"):
            L("stderr, last lines:")
            L(s["stderr_tail"])
with open(os.path.join(out, "gpu-check.txt"), "w") as f:
    f.write("\n".join(text) + "\n")
print("\n".join(text))
EOF
rc=$?
((rc)) && echo "ci/gpu-check.sh: the report could not be written (python3: status $rc); the logs are in $out/gpu-check-logs.tar.gz"
echo "ci/gpu-check.sh: report in $out (gpu-check.txt, gpu-check.json, gpu-check-logs.tar.gz)"
# The status: 0 when every step that ran succeeded.
! awk -F'\t' '$2 == "failed" || $2 == "timeout" { bad = 1 } END { exit !bad }' "$WORK/steps.tsv"
