#!/usr/bin/env bash
# Builds and runs the test suite: layering check, then every ctest label except `slow`
# (run those with: ctest --test-dir build -L slow). The server tests drive real clients (PyPI
# openai, anthropic, claude-agent-sdk, aider-chat, selenium with Debian's chromium), installed
# into build/clients first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
python3 tools/check_layering.py
cmake --preset release > /dev/null
cmake --build build -j "$(nproc)"
bash scripts/install-clients.sh build/clients
ctest --test-dir build -j "$(nproc)" --output-on-failure -LE slow
