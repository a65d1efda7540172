#!/usr/bin/env bash
# Installs the real client programs the server tests drive, from PyPI, into virtual environments
# under build/clients, or the folder given (pinned versions; reinstalled only when the pins change):
#   sdk:   openai, anthropic, claude-agent-sdk (which bundles the Claude Code CLI), selenium,
#          jsonschema (validates structured output)
#   aider: aider-chat (it pins its own openai and httpx, so it gets its own environment)
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-build/clients}"
python="${MTPLX_PYTHON:-/usr/bin/python3}"

make_env() {
  local name="$1"
  shift
  local dir="$root/$name" stamp="$root/$name/.installed"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$*" ]]; then
    return
  fi
  echo "[mtplx] installing test clients ($name): $*"
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  echo "$*" > "$stamp"
}

make_env sdk openai==3.57.0 anthropic==2.15.0 claude-agent-sdk==0.2.189 selenium==4.51.0 jsonschema==4.26.0
make_env aider aider-chat==0.86.2
