#!/usr/bin/env python3
"""Checks an exported model folder against transformers and the mtplx engine.

1. transformers: loads DIR with Qwen3_5ForCausalLM (its own torch GDN path, fp32 compute on the
   stored bf16 weights) and takes the logits of a held-out code window.
2. mtplx score on the same ids: max |diff| / max |logit| must be <= --tol (default 1e-4).
3. MTP head (Python, from the exported tensors): on held-out code windows, depth-1 greedy
   agreement (argmax MTP(h_p, t_{p+1}) == argmax trunk(p+1)) and the expected speculative
   acceptance sum_x min(P, Q) under T 0.6 / top-p 0.95 / top-k 20.
4. mtplx run "def fibonacci(n):" --json (MTP stats included when the head passes mtplx's check).

Usage: verify_export.py DIR [--mtplx build-train/bin/mtplx] [--tokens N] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import model as M  # noqa: E402


def warp(logits, temperature=0.6, top_k=20, top_p=0.95):
    """Probabilities after temperature, top-k, top-p (the sampler's order)."""
    x = logits.float() / temperature
    kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
    x = x.masked_fill(x < kth, float("-inf"))
    p = torch.softmax(x, dim=-1)
    sp, si = torch.sort(p, dim=-1, descending=True)
    cum = sp.cumsum(-1)
    drop = (cum - sp) >= top_p  # keep the smallest prefix reaching top_p
    sp = sp.masked_fill(drop, 0.0)
    out = torch.zeros_like(p).scatter_(-1, si, sp)
    return out / out.sum(-1, keepdim=True)


def load_exported(dir_):
    cfg = json.load(open(os.path.join(dir_, "config.json")))
    fields = M.ModelSpec.__dataclass_fields__
    spec = M.ModelSpec(**{k: cfg[k] for k in fields if k in cfg and k not in ("rope_theta", "partial_rotary_factor")})
    spec.rope_theta = cfg["rope_parameters"]["rope_theta"]
    spec.partial_rotary_factor = cfg["rope_parameters"]["partial_rotary_factor"]
    spec.full_attention_interval = cfg.get("full_attention_interval", 4)
    model = M.Qwen35WithMtp(spec)
    sd = load_file(os.path.join(dir_, "model.safetensors"))
    trunk = {k[len("model."):]: v.float() for k, v in sd.items() if k.startswith("model.")}
    mtp = {k[len("mtp."):]: v.float() for k, v in sd.items() if k.startswith("mtp.")}
    missing = model.lm.model.load_state_dict(trunk, strict=False)
    assert not [k for k in missing.missing_keys if "rotary" not in k], missing
    model.mtp.load_state_dict(mtp, strict=True)
    model.eval()
    return model


@torch.no_grad()
def mtp_metrics(model, windows):
    agree = accept = n = 0.0
    for w in windows:
        x = w[None]
        h, pe, emb = model.trunk(x)
        logits = model.lm.lm_head(h)[0]
        t = x.shape[1]
        cos, sin = pe
        m = model.mtp(h[:, :-1], emb[:, 1:], (cos[:, : t - 1], sin[:, : t - 1]))
        ql = model.lm.lm_head(m)[0]            # draft for t_{p+2}, p = 0..t-2
        pl = logits[1:]                        # trunk's distribution for t_{p+2}
        agree += (ql.argmax(-1) == pl.argmax(-1)).float().sum().item()
        accept += torch.minimum(warp(pl), warp(ql)).sum(-1).sum().item()
        n += t - 1
    return agree / n, accept / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build-train", "bin", "mtplx"))
    ap.add_argument("--tokens-dir", default=os.path.join(HERE, "data", "tokens"))
    ap.add_argument("--tokens", type=int, default=200, help="length of the logits comparison window")
    ap.add_argument("--windows", type=int, default=8, help="held-out code windows for MTP metrics")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    report = {}

    from transformers import Qwen3_5ForCausalLM
    code = np.fromfile(os.path.join(args.tokens_dir, "code.heldout.bin"), dtype=np.uint16).astype(np.int64)
    ids = code[1000: 1000 + args.tokens].tolist()
    hf = Qwen3_5ForCausalLM.from_pretrained(args.dir, dtype=torch.float32)
    hf.eval()
    with torch.no_grad():
        ref = hf(torch.tensor([ids])).logits[0].float().numpy()

    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "logits.f32")
        r = subprocess.run([args.mtplx, "score", "--model", args.dir, "--tokens", ",".join(map(str, ids)),
                            "--logits-out", out, "--threads", str(args.threads)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mtplx score failed: {r.stderr}")
        got = np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)
    vocab = ref.shape[1]
    got = got[:, :vocab]
    scale = float(np.abs(ref).max())
    max_diff = float(np.abs(got - ref).max())
    rel = max_diff / scale
    row_rel = float((np.abs(got - ref).max(1) / np.abs(ref).max(1)).max())
    top1 = float((got.argmax(1) == ref.argmax(1)).mean())
    report["logits"] = {"rows": len(ids), "max_abs_diff": max_diff, "max_abs_logit": scale,
                        "rel": rel, "worst_row_rel": row_rel, "top1_agreement": top1,
                        "pass": rel <= args.tol}
    print(f"logits mtplx vs transformers: {len(ids)} rows, max|diff| {max_diff:.3e}, "
          f"max|logit| {scale:.2f}, rel {rel:.2e} (worst row {row_rel:.2e}), top-1 agreement {top1:.3f} "
          f"-> {'PASS' if rel <= args.tol else 'FAIL'} (tol {args.tol})", flush=True)

    model = load_exported(args.dir)
    with torch.no_grad():
        mine = model.lm.lm_head(model.trunk(torch.tensor([ids]))[0])[0].numpy()
    report["python_model_vs_transformers_rel"] = float(np.abs(mine - ref).max() / scale)
    seq = 256
    n = min(args.windows, (len(code) - 1) // seq)
    stride = (len(code) - seq - 1) // max(1, n - 1)
    windows = [torch.from_numpy(code[i * stride: i * stride + seq]) for i in range(n)]
    agree, accept = mtp_metrics(model, windows)
    report["mtp_heldout_code"] = {"greedy_depth1_agreement": agree, "expected_acceptance_T0.6": accept,
                                  "positions": n * (seq - 1)}
    print(f"MTP on held-out code ({n} x {seq} tokens): greedy depth-1 agreement {agree:.3f}, "
          f"expected acceptance at T0.6/top-p0.95/top-k20 {accept:.3f}", flush=True)

    runs = {}
    for label, extra in (("mtp", []), ("no_mtp", ["--no-mtp"])):
        r = subprocess.run([args.mtplx, "run", "def fibonacci(n):", "--model", args.dir, "--json",
                            "--max-tokens", "96", "--seed", "1", "--threads", str(args.threads)] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"mtplx run ({label}) failed: {r.stderr.strip()}")
            runs[label] = {"error": r.stderr.strip()}
            continue
        runs[label] = json.loads(r.stdout)
        st = runs[label]["stats"]
        print(f"mtplx run ({label}): {json.dumps(st)}")
    if "mtp" in runs and "text" in runs["mtp"]:
        print("---- sample (def fibonacci(n):) ----\n" + runs["mtp"]["text"] + "\n----")
    report["run"] = runs
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)
    if not report["logits"]["pass"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
