#!/usr/bin/env python3
"""Held-out perplexity of a model pack, computed by mtplx itself (`mtplx score`).

For each held-out token file (data/tokens/<set>.heldout.bin, uint16 ids written by
encode_corpus.py), scores --windows windows of --window tokens taken at evenly spaced offsets and
reports the mean next-token cross-entropy and its exponential. Use it to compare packs of one
model (bf16 against 8-bit, f32 against int8 activations).

Usage: pack_perplexity.py --model DIR [--activations int8|f32] [--windows 8] [--window 512]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def score(mtplx, model, ids, activations, threads):
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "logits.f32")
        r = subprocess.run([mtplx, "score", "--model", model, "--tokens", ",".join(map(str, ids)),
                            "--logits-out", out, "--activations", activations,
                            "--threads", str(threads)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mtplx score failed: {r.stderr.strip()}")
        return np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)


def cross_entropy(logits, ids):
    x = logits[:-1].astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(x).sum(axis=1))
    target = x[np.arange(len(ids) - 1), ids[1:]]
    return float((log_z - target).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build", "bin", "mtplx"))
    ap.add_argument("--tokens-dir", default=os.path.join(HERE, "data", "tokens"))
    ap.add_argument("--sets", default="code,pydocs,austen,web")
    ap.add_argument("--activations", default="int8", choices=["int8", "f32"])
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    report = {"model": args.model, "activations": args.activations, "windows": args.windows,
              "window": args.window, "sets": {}}
    for name in args.sets.split(","):
        path = os.path.join(args.tokens_dir, f"{name}.heldout.bin")
        if not os.path.exists(path):
            print(f"{name}: no held-out tokens at {path}, skipped")
            continue
        tokens = np.fromfile(path, dtype=np.uint16).astype(np.int64)
        step = max(1, (len(tokens) - args.window) // args.windows)
        ces = [cross_entropy(score(args.mtplx, args.model, tokens[o:o + args.window].tolist(),
                                   args.activations, args.threads), tokens[o:o + args.window])
               for o in range(0, step * args.windows, step)]
        ce = sum(ces) / len(ces)
        report["sets"][name] = {"ce": ce, "ppl": math.exp(ce)}
        print(f"{name}: cross-entropy {ce:.4f} nats/token, perplexity {math.exp(ce):.2f}",
              flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
