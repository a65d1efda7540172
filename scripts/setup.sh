#!/usr/bin/env bash
# Installs dependencies (Debian packages) and builds mtplx in build/ (release).
# The bundled default model is prepared by the build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build build -j "$(nproc)"
echo "[mtplx] ready: build/bin/mtplx"
