#!/usr/bin/env bash
# Installs every build dependency of mtplx from Debian 12 packages; with --test, also what the
# tests drive (a headless browser for the dashboard, nginx for the scale-out test).
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3 python3-venv curl
  libhwy-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev
  libcurl4-openssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev clang-format clang-tidy
)
if [[ "${1:-}" == "--test" ]]; then
  PACKAGES+=(chromium chromium-driver nginx)
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[mtplx] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
