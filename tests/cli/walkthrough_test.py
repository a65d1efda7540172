"""A new user's first session, command after command, as the README tells it: pull a Hugging
Face checkpoint (from a local server that speaks the hub's API, pull_test.py's), inspect it,
convert it into a pack in mtplx's model cache, write its FP16 sibling, tune, run, list the models,
remove one. Every step must succeed, show progress while it works (the long ones) and end with a
summary a person can read; the models are found by name throughout. Python standard library only.

Usage: python3 walkthrough_test.py PATH/TO/mtplx
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import pull_test  # noqa: E402  (the mock hub and its check())
from pull_test import check  # noqa: E402


def main():
    mtplx = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="mtplx-walk-") as tmp:
        tmp = pathlib.Path(tmp)
        # What the hub serves: a Hugging Face checkpoint (bf16, MTP inline), made from the bundled
        # model by widening it, so it computes what the trained model computes.
        src = tmp / "upstream"
        made = subprocess.run([mtplx, "synth", "--from", str(pull_test.MODEL), "--widen", "2",
                               "--format", "hf", "--out", str(src), "--no-progress"],
                              capture_output=True, text=True)
        check(made.returncode == 0, f"synth: {made.stderr}")
        files = sorted(p.name for p in src.iterdir() if p.is_file())
        pull_test.REPOS["qwen/tiny-hf"] = files
        pull_test.SOURCES["qwen/tiny-hf"] = src
        hub = pull_test.Hub()
        threading.Thread(target=hub.serve_forever, daemon=True).start()
        env = dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{hub.server_address[1]}",
                   HF_HUB_CACHE=str(tmp / "hub"), MTPLX_HOME=str(tmp / "home"))
        env.pop("MTPLX_MODEL", None)
        packs = tmp / "home" / "models"

        def step(name, *args, progress=False, summary=None, timeout=600):
            print(f"$ mtplx {' '.join(args)}", flush=True)
            r = subprocess.run([mtplx, *args], capture_output=True, text=True, env=env,
                               timeout=timeout)
            shown = (r.stdout + r.stderr).strip()
            print("\n".join("  " + line for line in shown.splitlines()[-6:]), flush=True)
            check(r.returncode == 0, f"{name}: exit {r.returncode}: {shown[-2000:]}")
            if progress:
                check("%" in r.stderr, f"{name}: no progress shown: {r.stderr[-500:]}")
            if summary:
                check(summary in shown, f"{name}: no summary '{summary}' in: {shown[-1000:]}")
            return r

        step("pull", "pull", "qwen/tiny-hf", progress=True, summary="qwen/tiny-hf")
        step("inspect", "inspect", "qwen/tiny-hf", summary="contract")
        packs.mkdir(parents=True, exist_ok=True)
        step("convert", "convert", "qwen/tiny-hf", str(packs / "me--tiny-q8"), "--bits", "8",
             progress=True, summary="wrote")
        step("fp16", "fp16", "me/tiny-q8", str(packs / "me--tiny-q8-FP16"), progress=True,
             summary="Wrote")
        # The verdict depends on the machine (a tiny model on a CPU without AVX-512 may decode
        # faster without drafting); either way it is said and stored.
        tuned = step("tune", "tune", "--model", "me/tiny-q8", "--depths", "1", "--max-tokens",
                     "48", progress=True, summary="Stored in")
        check("Best for this machine" in tuned.stdout or "No MTP depth beat" in tuned.stdout,
              f"tune: no verdict in: {tuned.stdout}")
        run = step("run", "run", "def add(a, b):", "--raw", "--model", "me/tiny-q8",
                   "--max-tokens", "16", summary="tok/s=")
        check(len(run.stdout.strip()) > 0, "run printed no text")
        listed = step("models", "models", summary="qwen/tiny-hf")
        for name in ("me/tiny-q8", "me/tiny-q8-FP16"):
            check(name in listed.stdout, f"models does not list {name}: {listed.stdout}")
        step("remove", "remove", "me/tiny-q8-FP16", "--yes", summary="Removed me/tiny-q8-FP16")
        after = step("models again", "models")
        check("me/tiny-q8-FP16" not in after.stdout, f"still listed: {after.stdout}")
        check(not (packs / "me--tiny-q8-FP16").exists(), "the removed pack is still on disk")
        hub.shutdown()
    failures = pull_test.failures
    print("walkthrough:", "ok" if failures == 0 else f"{failures} failure(s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
