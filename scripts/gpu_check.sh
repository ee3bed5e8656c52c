#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU, nvcc, CMake and a C++
# compiler (ninja if there): no Debian -dev package is needed. Configures a kernels-only build
# (-DPRIMA_KERNELS_ONLY=ON -DPRIMA_CUDA=ON: kernels/cpu, kernels/cuda and tests/gpu, none of
# SimGrid, Boost, MPI, UCX, ...) in build-gpu/ (or $PRIMA_GPU_BUILD_DIR), builds it, runs
# prima_gpu_check (every device kernel against its CPU kernel on random data) and, where
# GoogleTest was found, the ctest label `gpu` too, then prima_gpu_gemm_bench (the dense GEMM's
# TFLOP/s in BF16 and FP8 on large shapes; the JSON's "gemm"). Where nvidia-smi is there it
# also samples the board power, idle (before the checks) and under the checks' kernels, for the
# power model of topologies/prices.json. Prints a summary and writes one JSON
# summary to $OUT/gpu_check.json when OUT is set (else to the build directory). Warnings are
# not errors here (another machine's compiler must not stop the device checks); CI holds the
# host code to -Werror.
# Where .gpu-bundle/prima-bundle.tar.xz is (scripts/gpu_bundle.sh packs the prima binary of a
# CUDA build made elsewhere, with its libraries), it then runs the GPU forward pass's checks and
# figures with it (scripts/gpu_forward_check.py): SmolLM2-135M's shape with random weights
# (BF16, Q4_1, Q8_0) giving the CPU path's ids on the GPU, and `prima profile --device cuda:0`
# on Llama 3 8B's shape in BF16 (decode at batch 1 and 64, prefill of 2,048 tokens, against the
# GPU's peaks); the JSON's "forward" holds them.
#   bash scripts/gpu_check.sh                    # build + run (a few minutes on 16 cores)
#   PRIMA_GPU_CHECK_BUILD_ONLY=1 bash scripts/gpu_check.sh   # configure + build only
#   PRIMA_GPU_CHECK_FORWARD_ONLY=1 PRIMA_GPU_FORWARD_DEVICE=cuda-emu \
#     PRIMA_GPU_FORWARD_ARGS="--token-models tiny:bf16 --big tiny:bf16 --contexts 128" \
#     bash scripts/gpu_check.sh                  # the forward stage alone (here: emulated)
# Exit: 0 all passed, 1 a check or the build failed, 77 built but no CUDA device to run on.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${PRIMA_GPU_BUILD_DIR:-build-gpu}
JOBS=${PRIMA_JOBS:-$(nproc)}
mkdir -p "$BUILD"
JSON=${OUT:+$OUT/gpu_check.json}
JSON=${JSON:-$BUILD/gpu_check.json}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
nvcc_version=$( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) |
  sed -n 's/.*release \([0-9.]*\).*/\1/p')

# Writes the final JSON: the script's own fields around the checks' JSON ($2, a file) if any.
write_json() {
  local status=$1 checks_file=${2:-}
  {
    echo "{"
    echo "  \"script\": \"scripts/gpu_check.sh\", \"commit\": \"$commit\","
    echo "  \"nvcc\": \"${nvcc_version:-none}\", \"status\": \"$status\","
    echo "  \"configure_s\": ${configure_s:-0}, \"build_s\": ${build_s:-0}, \"run_s\": ${run_s:-0},"
    echo "  \"ctest_gpu\": \"${ctest_gpu:-not run}\","
    echo "  \"power\": ${power_json:-null},"
    if [ -n "${gemm_json:-}" ] && [ -s "$gemm_json" ]; then
      echo "  \"gemm\": $(cat "$gemm_json"),"
    else
      echo "  \"gemm\": \"not run\","
    fi
    if [ -n "${forward_json:-}" ] && [ -s "$forward_json" ]; then
      echo "  \"forward\": $(cat "$forward_json"),"
    else
      echo "  \"forward\": \"${forward_status:-not run}\","
    fi
    if [ -n "$checks_file" ] && [ -s "$checks_file" ]; then
      echo "  \"result\": $(cat "$checks_file")"
    else
      echo "  \"result\": null"
    fi
    echo "}"
  } >"$JSON"
  echo "gpu_check: $status (configure ${configure_s:-0} s, build ${build_s:-0} s," \
    "run ${run_s:-0} s); JSON summary: $JSON"
}

# The GPU forward pass's stage: the bundle's prima (scripts/gpu_bundle.sh) on
# $PRIMA_GPU_FORWARD_DEVICE (cuda:0), CUDA's libraries from this machine's toolkit.
run_forward() {
  local tarball=${PRIMA_GPU_BUNDLE:-.gpu-bundle/prima-bundle.tar.xz}
  if [ ! -f "$tarball" ]; then
    forward_status="not run: no $tarball (scripts/gpu_bundle.sh makes it on a machine that builds prima)"
    echo "gpu_check: forward pass $forward_status"
    return 0
  fi
  local dir=$BUILD/bundle libs=""
  rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xJf "$tarball"
  for lib in libcudart.so.13 libcublasLt.so.13; do
    local found
    found=$(find /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/local/cuda*/lib* /usr/lib \
      /opt /usr/local/lib -name "$lib*" 2>/dev/null | head -1)
    [ -n "$found" ] && libs="$libs:$(dirname "$found")"
  done
  export LD_LIBRARY_PATH="$dir/lib$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local missing
  missing=$(ldd "$dir/prima" | grep "not found" | awk '{print $1}' | tr '\n' ' ')
  if [ -n "$missing" ]; then
    forward_status="failed: the bundle's prima (commit $(cat "$dir/COMMIT")) lacks $missing"
    echo "gpu_check: forward pass $forward_status"
    return 1
  fi
  forward_json=$BUILD/forward.json
  # shellcheck disable=SC2086
  python3 scripts/gpu_forward_check.py --prima "$dir/prima" \
    --device "${PRIMA_GPU_FORWARD_DEVICE:-cuda:0}" --out-dir "$BUILD/forward" \
    --json "$forward_json" ${PRIMA_GPU_FORWARD_ARGS:-}
}

if [ "${PRIMA_GPU_CHECK_FORWARD_ONLY:-0}" = 1 ]; then
  t2=$(date +%s)
  run_forward
  rc=$?
  run_s=$(($(date +%s) - t2))
  write_json "$([ $rc -eq 0 ] && echo passed || echo failed)"
  exit $rc
fi

t0=$(date +%s)
GEN=()
command -v ninja >/dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && GEN=(-G Ninja)
if ! cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRIMA_KERNELS_ONLY=ON \
  -DPRIMA_CUDA=ON -DPRIMA_WERROR=OFF >"$BUILD/configure.log" 2>&1; then
  tail -30 "$BUILD/configure.log"
  configure_s=$(($(date +%s) - t0))
  write_json "configure failed"
  exit 1
fi
configure_s=$(($(date +%s) - t0))
t1=$(date +%s)
if ! cmake --build "$BUILD" -j "$JOBS" >"$BUILD/build.log" 2>&1; then
  grep -E "error|Error" "$BUILD/build.log" | head -30
  build_s=$(($(date +%s) - t1))
  write_json "build failed"
  exit 1
fi
build_s=$(($(date +%s) - t1))
echo "gpu_check: built in ${build_s} s (configure ${configure_s} s) in $BUILD"
if [ "${PRIMA_GPU_CHECK_BUILD_ONLY:-0}" = 1 ]; then
  write_json "built (not run)"
  exit 0
fi

# Board power of GPU 0 (nvidia-smi, watts): the median of 10 samples over 5 s idle, then the
# highest sample every 0.2 s while the checks run.
sample_power() { nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits 2>/dev/null; }
idle_w=""
if command -v nvidia-smi >/dev/null && [ -n "$(sample_power)" ]; then
  idle_w=$(for _ in $(seq 10); do sample_power; sleep 0.5; done | sort -n | sed -n 5p)
  (while :; do sample_power; sleep 0.2; done) >"$BUILD/power_samples.txt" &
  sampler=$!
fi

t2=$(date +%s)
"$BUILD/tests/gpu/prima_gpu_check" --json "$BUILD/checks.json"
rc=$?
if [ -x "$BUILD/tests/gpu/prima_gpu_tests" ] && [ $rc -ne 77 ]; then
  if ctest --test-dir "$BUILD" -L gpu --output-on-failure >"$BUILD/ctest_gpu.log" 2>&1; then
    ctest_gpu="passed"
  else
    ctest_gpu="failed (see $BUILD/ctest_gpu.log)"
    [ $rc -eq 0 ] && rc=1
  fi
  tail -3 "$BUILD/ctest_gpu.log"
fi
if [ $rc -ne 77 ] && [ -x "$BUILD/tests/gpu/prima_gpu_gemm_bench" ]; then
  # The dense GEMM's throughput, BF16 and FP8, on large shapes (the issue's FP8 target:
  # >= 1,100 TFLOP/s on an H100/H200 SXM).
  gemm_json=$BUILD/gemm.json
  "$BUILD/tests/gpu/prima_gpu_gemm_bench" --json "$gemm_json" || rc=1
fi
if [ $rc -ne 77 ]; then
  run_forward || rc=1
fi
run_s=$(($(date +%s) - t2))
if [ -n "$idle_w" ]; then
  kill "$sampler" 2>/dev/null
  loaded_w=$(sort -n "$BUILD/power_samples.txt" | tail -1)
  gpu_name=$(nvidia-smi -i 0 --query-gpu=name --format=csv,noheader 2>/dev/null)
  limit_w=$(nvidia-smi -i 0 --query-gpu=power.limit --format=csv,noheader,nounits 2>/dev/null)
  power_json="{\"gpu\": \"$gpu_name\", \"idle_watts\": ${idle_w:-null}, \"loaded_watts_max\": ${loaded_w:-null}, \"power_limit_watts\": ${limit_w:-null}}"
  echo "gpu_check: $gpu_name power: idle ${idle_w} W, highest under the checks ${loaded_w} W, limit ${limit_w} W"
fi
case $rc in
  0) write_json "passed" "$BUILD/checks.json" ;;
  77) write_json "skipped: no CUDA device" "$BUILD/checks.json" ;;
  *) write_json "failed" "$BUILD/checks.json" ;;
esac
exit $rc
