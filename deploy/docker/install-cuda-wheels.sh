#!/usr/bin/env bash
# Lays out the CUDA toolkit pieces prima's build needs from NVIDIA's Python wheels (pip), for
# the build stage of Dockerfile.cuda:
#   DEVEL_PREFIX    nvcc (with its crt headers and NVVM), cudart, cuBLAS and cuBLASLt, CCCL: the
#                   layout of a toolkit install (bin/, include/, lib/, lib64 -> lib, nvvm/,
#                   targets/x86_64-linux/{include,lib}, lib*.so links), what CMake's
#                   check_language(CUDA) and find_package(CUDAToolkit) look for
#   RUNTIME_PREFIX  lib/ with the shared libraries the final image carries and nothing else:
#                   libcudart.so.13, libcublas.so.13, libcublasLt.so.13 (NCCL joins them when
#                   the GPU backend links it)
#   bash install-cuda-wheels.sh /usr/local/cuda /opt/cuda-runtime
# Versions: the CUDA_* variables below (the environment overrides them; Dockerfile.cuda passes
# its build arguments). The wheels lay everything under nvidia/cu13/.
set -euo pipefail
DEVEL=${1:?usage: install-cuda-wheels.sh DEVEL_PREFIX RUNTIME_PREFIX}
RUNTIME=${2:?usage: install-cuda-wheels.sh DEVEL_PREFIX RUNTIME_PREFIX}
CUDA_NVCC=${CUDA_NVCC:-13.0.88}        # nvidia-cuda-nvcc, nvidia-cuda-crt, nvidia-nvvm
CUDA_RUNTIME=${CUDA_RUNTIME:-13.0.96}  # nvidia-cuda-runtime (cudart)
CUDA_CUBLAS=${CUDA_CUBLAS:-13.1.0.3}   # nvidia-cublas (cuBLAS, cuBLASLt)
CUDA_CCCL=${CUDA_CCCL:-13.0.85}        # nvidia-cuda-cccl (headers)

# A CA bundle for a TLS-intercepting proxy, where the build passes one as the build secret
# ca-bundle (podman/docker build --secret id=ca-bundle,src=FILE); it is not kept in the image.
if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip install --no-deps --no-cache-dir --disable-pip-version-check --quiet \
  --target "$tmp" \
  "nvidia-cuda-nvcc==$CUDA_NVCC" "nvidia-cuda-crt==$CUDA_NVCC" "nvidia-nvvm==$CUDA_NVCC" \
  "nvidia-cuda-runtime==$CUDA_RUNTIME" "nvidia-cublas==$CUDA_CUBLAS" "nvidia-cuda-cccl==$CUDA_CCCL"
src="$tmp/nvidia/cu13"
[ -x "$src/bin/nvcc" ] || {
  echo "install-cuda-wheels: no nvidia/cu13/bin/nvcc in the wheels" >&2
  exit 1
}

mkdir -p "$DEVEL" "$RUNTIME/lib"
cp -a "$src/." "$DEVEL/"
ln -sfn lib "$DEVEL/lib64"
mkdir -p "$DEVEL/targets/x86_64-linux"
ln -sfn ../../include "$DEVEL/targets/x86_64-linux/include"
ln -sfn ../../lib "$DEVEL/targets/x86_64-linux/lib"
for so in "$DEVEL"/lib/lib*.so.*; do
  link="${so%%.so.*}.so"
  [ -e "$link" ] || ln -s "$(basename "$so")" "$link"
done

for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  cp -a "$src/lib/$lib" "$RUNTIME/lib/"
done
# Debian 12's CMake 3.25.1 marks CUDA::nvToolsExt deprecated without checking that the target
# exists (fixed in CMake 3.25.2), so find_package(CUDAToolkit) fails under
# cmake_minimum_required(3.25) where the toolkit has no libnvToolsExt, as these wheels have not:
# the 3.25.2 condition, in the build stage's CMake only.
module=/usr/share/cmake-3.25/Modules/FindCUDAToolkit.cmake
if [ -f "$module" ] && grep -q '^    if(CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)$' "$module"; then
  sed -i 's/^    if(CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)$/    if(TARGET CUDA::nvToolsExt AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)/' "$module"
fi

echo "install-cuda-wheels: toolkit in $DEVEL ($(du -sh "$DEVEL" | cut -f1)), runtime libraries" \
  "in $RUNTIME ($(du -sh "$RUNTIME" | cut -f1))" >&2
