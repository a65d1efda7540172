"""aider (PyPI `aider-chat`) on the OpenAI endpoint of `mtplx serve` completes a one-message
session: `aider --message "..."` sends the chat request, receives the streamed reply and exits 0.

Usage: python aider_test.py PATH/TO/mtplx   (in the `aider` environment of install-clients.sh)
"""
import os
import subprocess
import sys

from harness import Server, check, mtplx_binary, run_scenarios, scratch_dir


def one_message_session(server):
    workdir = scratch_dir("mtplx-aider-")
    aider = os.path.join(os.path.dirname(sys.executable), "aider")
    env = {**os.environ, "HOME": workdir, "AIDER_ANALYTICS": "false", "AIDER_CHECK_UPDATE": "false"}
    result = subprocess.run(
        [aider, "--model", "openai/local", "--openai-api-base", server.base + "/v1",
         "--openai-api-key", "sk-local", "--message", "Say hello.", "--yes-always", "--no-git",
         "--no-auto-commits", "--no-analytics", "--no-check-update", "--no-show-model-warnings",
         "--map-tokens", "0", "--no-pretty", "--no-fancy-input"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    print(f"  aider exited {result.returncode}; output tail: {result.stdout.strip()[-200:]!r}")
    check(result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-2000:]}\n"
                                  f"{result.stderr[-2000:]}")
    logs = server.logs()
    check("POST /v1/chat/completions" in logs, "the server saw no chat request:\n" + logs[-3000:])
    check("Traceback" not in result.stdout + result.stderr, result.stdout[-2000:])
    # aider streamed a reply: the server generated tokens for it (the bundled model rarely ends a
    # turn by itself, so aider may add its note about reaching the output limit).
    check("completion=0 " not in logs and "completion=" in logs, logs[-2000:])


def main():
    mtplx = mtplx_binary()
    with Server(mtplx, "--max-tokens", "64") as server:
        code = run_scenarios([one_message_session], server)
        check(server.alive(), "the server died:\n" + server.logs())
        if code:
            print(server.logs()[-4000:])
    return code


if __name__ == "__main__":
    sys.exit(main())
