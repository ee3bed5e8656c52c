#!/usr/bin/env bash
# Configures and builds prima into build/ (or $PRIMA_BUILD_DIR). Extra args go to cmake.
#   scripts/build.sh                     # RelWithDebInfo
#   PRIMA_WERROR=1 scripts/build.sh      # warnings are errors (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PRIMA_BUILD_DIR:-build}
JOBS=${PRIMA_JOBS:-2}
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then GEN=(); fi  # keep the existing generator
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPRIMA_WERROR="$([ "${PRIMA_WERROR:-0}" = 1 ] && echo ON || echo OFF)" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
