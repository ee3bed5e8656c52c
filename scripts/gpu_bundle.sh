#!/usr/bin/env bash
# Packs the prima binary of a CUDA build made here (build/ or $PRIMA_BUILD_DIR) for a GPU
# machine that has the CUDA toolkit and driver but none of prima's Debian libraries: the
# binary without its debug sections, and every shared library it loads except the C and C++
# runtimes and CUDA's own (cudart, cuBLASLt: the GPU machine's toolkit provides them), in
# .gpu-bundle/prima-bundle.tar.xz (about 25 MB; git ignores the folder). scripts/gpu_check.sh
# finds it there, unpacks it and runs the GPU forward pass's checks (scripts/gpu_forward_check.py)
# with it. To run them on a lent GPU through the device tool, carry the folder:
#   bash scripts/gpu_bundle.sh
#   (device run, carry [".gpu-bundle"]) OUT=$OUT bash scripts/gpu_check.sh
# Exit: 0 packed, 1 no CUDA build of prima to pack.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PRIMA_BUILD_DIR:-build}
DEST=.gpu-bundle
if [ ! -x "$BUILD/prima" ]; then
  echo "gpu_bundle: no $BUILD/prima: build it first (cmake --build $BUILD --target prima)" >&2
  exit 1
fi
if ! ldd "$BUILD/prima" | grep -q libcublasLt; then
  echo "gpu_bundle: $BUILD/prima is not a CUDA build (it does not load cuBLASLt): configure" \
    "with -DPRIMA_CUDA=ON where nvcc is found" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
strip --strip-debug -o "$stage/prima" "$BUILD/prima"
# Every resolved library but glibc's, the C++ runtime's and CUDA's.
ldd "$BUILD/prima" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
  while read -r name path; do
    case $name in
      libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | \
        librt.so.* | ld-linux* | libcudart.so.* | libcublas*.so.*) ;;
      *) cp -L "$path" "$stage/lib/$name" ;;
    esac
  done
git rev-parse --short HEAD >"$stage/COMMIT" 2>/dev/null || echo unknown >"$stage/COMMIT"
mkdir -p "$DEST"
tar -C "$stage" -cJf "$DEST/prima-bundle.tar.xz" .
echo "gpu_bundle: $DEST/prima-bundle.tar.xz ($(du -h "$DEST/prima-bundle.tar.xz" | cut -f1)," \
  "$(ls "$stage/lib" | wc -l) libraries, commit $(cat "$stage/COMMIT"))"
