"""Helpers the benchmark scripts share: free ports and waiting for a server to be healthy."""
import argparse
import os
import socket
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, what, seconds=120):
    """Polls http://127.0.0.1:PORT/health until it answers 200; exits if `proc` dies first."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"{what} did not become healthy")


def model_parser(doc):
    """The options every end-to-end benchmark takes: the model, the binary, the threads."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--mtplx", default=os.path.join(repo, "build", "bin", "mtplx"))
    ap.add_argument("--threads", type=int, default=2)
    return ap
