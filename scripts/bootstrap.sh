#!/usr/bin/env bash
# \brief Fresh-machine set-up and build: installs what is missing (Debian/Ubuntu packages, when
# run as root), checks for the CUDA toolkit, then configures and builds f8gemm into ./build.
# The CUDA toolkit itself (nvcc not needed: headers, cudart, NVRTC, cuBLASLt) must be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "bootstrap: installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "bootstrap: please install: ${need[*]}" >&2
    exit 1
  fi
fi

cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "bootstrap: no CUDA toolkit at $cuda (set CUDAToolkit_ROOT); f8gemm needs CUDA 12.8+" >&2
  exit 1
fi
export PATH="$cuda/bin:$PATH"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda" >/dev/null
cmake --build build -j "$(nproc)"
