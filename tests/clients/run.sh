#!/usr/bin/env bash
# Runs one client test in the virtual environment scripts/install-clients.sh made for it.
# Usage: run.sh VENV_DIR TEST_SCRIPT PATH/TO/mtplx
set -euo pipefail
venv="$1" script="$2" mtplx="$3"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "no client environment at $venv: run scripts/install-clients.sh first" >&2
  exit 1
fi
cd "$(dirname "$script")"
exec "$venv/bin/python" -u "$script" "$mtplx"
