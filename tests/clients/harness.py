"""Shared pieces of the client tests: start `mtplx serve` on a free loopback port, make model
folders that use another chat template, and run scenario functions with a readable report.

Only the Python standard library here: each test script runs in the virtual environment of the
client it drives (scripts/install-clients.sh).
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLED_MODEL = os.path.join(ROOT, "models", "default")
TEMPLATES = os.path.join(ROOT, "tests", "data", "chat", "templates")


_scratch: list[str] = []


def _remove_scratch():
    for path in _scratch:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.unlink(path)


atexit.register(_remove_scratch)


def scratch_dir(prefix: str) -> str:
    """A fresh temp folder, removed when the test process exits (a test run leaves nothing in
    /tmp, where repeated runs would otherwise fill the disk)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    _scratch.append(folder)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_with_template(template: str) -> str:
    """The bundled model with another chat template (e.g. "qwen3.6.jinja": XML tool calls and a
    pre-opened <think>), as a folder of links in a fresh temp dir."""
    folder = scratch_dir("mtplx-model-")
    for name in os.listdir(BUNDLED_MODEL):
        os.symlink(os.path.join(BUNDLED_MODEL, name), os.path.join(folder, name))
    shutil.copy(os.path.join(TEMPLATES, template), os.path.join(folder, "chat_template.jinja"))
    return folder


class Server:
    """`mtplx serve` on a free port; stops (SIGTERM) on exit."""

    def __init__(self, mtplx: str, *args: str, model: str | None = None, env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [mtplx, "serve", "--port", str(self.port), "--quiet", "--threads", "1"]
        if model:
            command += ["--model", model]
        command += list(args)
        self.log = tempfile.NamedTemporaryFile(prefix="mtplx-serve-", suffix=".log", delete=False)
        _scratch.append(self.log.name)  # read until the end of the test, removed after it
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})})
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mtplx serve exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("mtplx serve did not become healthy:\n" + self.logs())

    def logs(self) -> str:
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def health(self) -> dict:
        with urllib.request.urlopen(self.base + "/health", timeout=10) as r:
            return json.load(r)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def run_scenarios(scenarios, *args) -> int:
    """Runs each scenario(*args); prints PASS/FAIL lines; returns the process exit code."""
    failed = 0
    for scenario in scenarios:
        start = time.time()
        try:
            scenario(*args)
            print(f"PASS {scenario.__name__} ({time.time() - start:.1f}s)", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported, then the next runs
            failed += 1
            print(f"FAIL {scenario.__name__} ({time.time() - start:.1f}s)", flush=True)
            traceback.print_exc()
    print(f"{len(scenarios) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def wait_for(predicate, seconds, what):
    """Polls `predicate` every 50 ms; raises AssertionError(what) after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def check(condition, message=""):
    if not condition:
        raise AssertionError(message)


def mtplx_binary() -> str:
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} PATH/TO/mtplx")
    return os.path.abspath(sys.argv[1])
