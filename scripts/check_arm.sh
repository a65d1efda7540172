#!/usr/bin/env bash
# Compiles every library source for aarch64 (Debian's cross compiler, g++-aarch64-linux-gnu), to
# object code at -O2: the portable kernels must build on ARM, and x86-only code must stay behind
# its guards. Objects are discarded; nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=aarch64-linux-gnu-g++
if ! command -v "$CXX" > /dev/null; then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[mtplx] installing: g++-aarch64-linux-gnu"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    g++-aarch64-linux-gnu
fi
git ls-files 'src/*.cc' |
  xargs -P "$(nproc)" -I{} "$CXX" -std=c++20 -O2 -Isrc -Werror=return-type -c {} -o /dev/null
echo "[mtplx] every source under src/ compiles for aarch64"
