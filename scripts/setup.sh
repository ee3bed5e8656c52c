#!/usr/bin/env bash
# Installs everything prima needs on a fresh Debian 12 machine. Safe to rerun:
# apt-get skips what is installed, the model fetch skips an existing file.
#   scripts/setup.sh            # build dependencies (apt)
#   PRIMA_SETUP_SKIP_APT=1 ...  # skip apt (already installed)
#   PRIMA_SETUP_SKIP_MODEL=1 ...  # skip the model download (scripts/fetch-model.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake pkg-config ninja-build git
  libsimgrid-dev
  nlohmann-json3-dev
  libboost-program-options-dev libboost-context-dev
  libspdlog-dev libfmt-dev
  googletest libgtest-dev libgmock-dev
  libbenchmark-dev
  python3 python3-matplotlib
  libssl-dev libicu-dev
  libucx-dev ucx-utils libopenmpi-dev openmpi-bin
  libcpp-httplib-dev prometheus-cpp-dev prometheus curl python3-pip python3-yaml
  iproute2
)

need=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ "${PRIMA_SETUP_SKIP_APT:-0}" != 1 ] && [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ "${PRIMA_SETUP_SKIP_MODEL:-0}" = 1 ] || bash scripts/fetch-model.sh  # the real model (~93 MB)
echo "setup: dependencies present" >&2
