"""`mtplx pull` against a local server that speaks the Hugging Face hub's API (the model
listing with ?blobs=true and /resolve/ downloads with Range), built from the bundled model:
an interrupted transfer resumes (Range), a corrupted file is detected (sha256) and fetched
again, a second pull reuses the cache, a 404 and a 401 say what is wrong, a token opens a
private model, a model without MTP tensors is reported, a leftover .incomplete file resumes,
and the pulled snapshot runs and is listed by `mtplx models`. Python standard library only.

Usage: python3 pull_test.py PATH/TO/mtplx
"""
import atexit
import hashlib
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "default"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FILES = ["config.json", "model.safetensors", "model.safetensors.index.json", "mtp.safetensors",
         "tokenizer.json", "tokenizer_config.json", "mtplx_runtime.json", "MODEL_CARD.md"]
REPOS = {
    "acme/tiny": FILES,
    "acme/private": FILES,
    "acme/nomtp": [f for f in FILES if f not in ("mtp.safetensors", "mtplx_runtime.json")],
}
SOURCES = {}  # repo -> the folder its files come from (default: the bundled model)


def source(repo):
    return pathlib.Path(SOURCES.get(repo, MODEL))


class Hub(http.server.ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.log = []          # (path, range header)
        self.faults = {}       # file name -> "cut" | "corrupt" (once each)
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        hub = self.server
        with hub.lock:
            hub.log.append((self.path, self.headers.get("Range")))
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[:2] == ["api", "models"]:
            repo = "/".join(parts[2:4])
            return self.listing(repo)
        repo = "/".join(parts[0:2])
        if repo not in REPOS or parts[2] != "resolve":
            return self.send_json(404, {"error": "Repository not found"})
        if not self.allowed(repo):
            return self.send_json(401, {"error": "Unauthorized"})
        name = "/".join(parts[4:])
        if name not in REPOS[repo]:
            return self.send_json(404, {"error": "Entry not found"})
        data = (source(repo) / name).read_bytes()
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
        with hub.lock:
            fault = hub.faults.pop(name, None)
        body = data[start:]
        if fault == "corrupt":
            body = bytes(b ^ 0xFF for b in body[:64]) + body[64:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if fault == "cut":  # half the bytes, then the connection drops
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def allowed(self, repo):
        return repo != "acme/private" or self.headers.get("Authorization") == "Bearer secret"

    def listing(self, repo):
        if repo not in REPOS:
            return self.send_json(404, {"error": "Repository not found"})
        if not self.allowed(repo):
            return self.send_json(401, {"error": "Unauthorized"})
        siblings = []
        for name in REPOS[repo] + ["model.gguf"]:  # a file mtplx has no use for
            if name == "model.gguf":
                siblings.append({"rfilename": name, "size": 10, "blobId": "ab" * 20})
                continue
            data = (source(repo) / name).read_bytes()
            entry = {"rfilename": name, "size": len(data),
                     "blobId": hashlib.sha1(data).hexdigest()}
            if name.endswith(".safetensors"):
                entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            siblings.append(entry)
        self.send_json(200, {"id": repo, "sha": COMMIT, "siblings": siblings})


failures = 0


def check(condition, message):
    global failures
    if not condition:
        failures += 1
        print("FAIL:", message, flush=True)


def scratch_dir() -> str:
    """A fresh hub cache, removed when the test exits (each holds a copy of the model)."""
    folder = tempfile.mkdtemp(prefix="mtplx-hub-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def main():
    mtplx = os.path.abspath(sys.argv[1])
    hub = Hub()
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    cache = scratch_dir()
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{hub.server_address[1]}",
           "HF_HUB_CACHE": cache, "HF_TOKEN": "", "HF_HOME": cache + "/hf-home"}

    def pull(*args, extra=None):
        return subprocess.run([mtplx, "pull", *args], env={**env, **(extra or {})},
                              capture_output=True, text=True, timeout=300)

    # 1. A transfer cut short resumes; a corrupted file is fetched again.
    hub.faults = {"model.safetensors": "cut", "mtp.safetensors": "corrupt"}
    r = pull("acme/tiny", "--json")
    check(r.returncode == 0, f"pull exited {r.returncode}: {r.stderr}")
    out = json.loads(r.stdout) if r.returncode == 0 else {}
    check(out.get("files") == len(FILES), f"files: {out}")
    check(out.get("refetched_files") == 1, f"one file fetched again: {out}")
    check(out.get("mtp_tensors", 0) > 0, f"MTP tensors: {out}")
    ranges = [rng for path, rng in hub.log if path.endswith("/model.safetensors") and rng]
    check(ranges and ranges[0] != "bytes=0-", f"the cut transfer resumed with Range: {hub.log}")
    mtp_fetches = [p for p, _ in hub.log if p.endswith("/mtp.safetensors")]
    check(len(mtp_fetches) == 2, f"the corrupted file was fetched twice: {mtp_fetches}")
    check(not any(p.endswith("model.gguf") for p, _ in hub.log), "unneeded files are skipped")
    snapshot = pathlib.Path(out.get("path", "/nonexistent"))
    for name in FILES:
        f = snapshot / name
        check(f.is_symlink() and f.read_bytes() == (MODEL / name).read_bytes(),
              f"{name} in the snapshot is the file")
    entry = pathlib.Path(cache) / "models--acme--tiny"
    check((entry / "refs" / "main").read_text().strip() == COMMIT, "refs/main names the commit")
    check(not list(entry.glob("blobs/*.incomplete")), "no partial files left")

    # 2. Again: everything is already here.
    hub.log.clear()
    r = pull("acme/tiny", "--json")
    out2 = json.loads(r.stdout) if r.returncode == 0 else {}
    check(out2.get("bytes_downloaded") == 0 and out2.get("reused_files") == len(FILES),
          f"second pull reuses the cache: {out2}")

    # 3. The snapshot runs, and `models` lists it.
    run = subprocess.run([mtplx, "run", "hi", "--max-tokens", "4", "--model", str(snapshot)],
                         env=env, capture_output=True, text=True, timeout=120)
    check(run.returncode == 0, f"the pulled model runs: {run.stderr}")
    models = subprocess.run([mtplx, "models", "--json"], env=env, capture_output=True, text=True)
    check("acme/tiny" in models.stdout, f"models lists it: {models.stdout}")

    # 4. Errors say what is wrong.
    r = pull("acme/missing")
    check(r.returncode != 0 and "has no model acme/missing" in r.stderr, f"404: {r.stderr}")
    r = pull("acme/private")
    check(r.returncode != 0 and "needs a token" in r.stderr, f"401: {r.stderr}")
    r = pull("acme/private", extra={"HF_TOKEN": "secret"})
    check(r.returncode == 0, f"the token opens it: {r.stderr}")
    r = pull("not-a-repo")
    check(r.returncode != 0 and "is not ORG/NAME" in r.stderr, f"bad name: {r.stderr}")

    # 5. A model without MTP tensors is pulled and reported.
    r = pull("acme/nomtp")
    check(r.returncode == 0 and "runs without speculation" in r.stdout, f"no MTP: {r.stdout}")

    # 6. A partial file left by an interrupted run resumes from where it stopped.
    data = (MODEL / "model.safetensors").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    fresh = scratch_dir()
    blobs = pathlib.Path(fresh) / "models--acme--tiny" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / (sha + ".incomplete")).write_bytes(data[:1000])
    hub.log.clear()
    r = pull("acme/tiny", "--json", extra={"HF_HUB_CACHE": fresh})
    check(r.returncode == 0, f"resumed pull: {r.stderr}")
    check(("/acme/tiny/resolve/" + COMMIT + "/model.safetensors", "bytes=1000-") in hub.log,
          f"resumed at byte 1000: {hub.log}")
    check((blobs / sha).read_bytes() == data, "the resumed file is whole")

    hub.shutdown()
    print(f"pull test: {failures} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
