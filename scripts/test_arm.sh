#!/usr/bin/env bash
# Builds mtplx for 64-bit ARM with Debian's cross compiler and runs test suites under qemu-user:
# every library and the CLI must build and link for aarch64, and the NEON kernels (and the portable
# ones ARM falls back to) must pass the same tests as on x86. Usage: scripts/test_arm.sh [ctest
# label regex, default 'unit']; with 'unit' only the unit_tests target is built (the libraries,
# the CLI and the unit suites), with any other label every target.
set -euo pipefail
cd "$(dirname "$0")/.."
labels="${1:-unit}"
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
PACKAGES=(g++-aarch64-linux-gnu qemu-user libpcre2-dev:arm64 libutf8proc-dev:arm64
          libgtest-dev:arm64)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[mtplx] installing: ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi
cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DMTPLX_BUILD_BENCH=OFF -DMTPLX_WERROR=ON > /dev/null  # no debug info: 0.5 GB, not 2.2
target=all
[[ "$labels" == unit ]] && target=unit_tests
cmake --build build-arm -j "$(nproc)" --target "$target"
echo "[mtplx] target $target builds and links for aarch64"
ctest --test-dir build-arm -j "$(nproc)" -L "$labels" -LE slow --output-on-failure
echo "[mtplx] aarch64 tests ($labels) passed under qemu-user"
