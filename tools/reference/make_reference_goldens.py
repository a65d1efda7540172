#!/usr/bin/env python3
"""Golden logits from Hugging Face transformers for the three synthetic presets.

For each preset (dense-tiny, moe-tiny, next-tiny):
  1. `mtplx synth --preset P --seed 0` writes the checkpoint (the same bytes as
     `mtplx::testing::SyntheticModel(P, "hf", 0, 64, 0)` in the C++ tests);
  2. tools/reference/hf_logits.py runs transformers' own model on a fixed token sequence
     (float32, prefill) and checks it against transformers' own token-by-token decode;
  3. the logits are written to tests/data/reference/<P>.bin (f32 little-endian [rows, vocab])
     with a JSON sidecar <P>.json (tokens, shapes, versions, seed, checks);
  4. `mtplx score` is run on the same checkpoint (auto / recurrent / chunked DeltaNet paths, and
     one row per call) and its max relative error per position is printed; the script exits
     non-zero when it exceeds the tolerance anywhere.

Usage:
  make_reference_goldens.py [--mtplx build/src/cli/mtplx] [--out tests/data/reference]
                            [--presets dense-tiny,moe-tiny,next-tiny] [--check] [--skip-mtplx]
--check regenerates the transformers logits in memory and compares them with the committed
files instead of writing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_logits  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESETS = ["dense-tiny", "moe-tiny", "next-tiny"]
SEED = 0
ROWS = 70           # > 64: crosses the 64-row chunk boundary of the chunked delta rule
VOCAB_LIMIT = 960   # real (non-special) token ids of the synthetic tokenizer
TOLERANCE = 1e-4    # per position: max |ours - ref| / max |ref|
TOKEN_FORMULA = "t[i] = (17 + 389*i + 7*i*i) % 960, i = 0..rows-1"


def tokens_for(rows: int = ROWS) -> list[int]:
    return [(17 + 389 * i + 7 * i * i) % VOCAB_LIMIT for i in range(rows)]


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def synth(mtplx: str, preset: str, out_dir: str) -> None:
    subprocess.run([mtplx, "synth", "--preset", preset, "--out", out_dir, "--seed", str(SEED),
                    "--no-progress"], check=True, stdout=subprocess.DEVNULL)


def mtplx_logits(mtplx: str, model_dir: str, tokens: list[int], vocab: int, work: str,
                 delta_path: str = "auto", chunk: int | None = None) -> np.ndarray:
    out = os.path.join(work, f"mtplx-{delta_path}-{chunk}.bin")
    cmd = [mtplx, "score", "--model", model_dir, "--tokens", ",".join(map(str, tokens)),
           "--logits-out", out, "--delta-path", delta_path]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return np.fromfile(out, dtype="<f4").reshape(len(tokens), vocab)


def describe(rel: np.ndarray) -> str:
    return f"max {rel.max():.3e} at position {int(rel.argmax())}, median {np.median(rel):.3e}"


def run_preset(args, preset: str, work: str) -> bool:
    model_dir = os.path.join(work, preset)
    synth(args.mtplx, preset, model_dir)
    tokens = tokens_for()
    r = hf_logits.reference(model_dir, tokens, decode=True, float64=True)
    ref, vocab = r["prefill"], r["vocab"]
    ok = True
    print(f"== {preset}: {r['load']['model_class']} ({r['load']['consumed_tensors']} tensors "
          f"consumed, {r['load']['ignored_mtp_tensors']} mtp.* ignored), {len(tokens)} rows")
    print(f"   norms: zero-centred (1+w) err {r['norms']['zero_centred']['max_err_one_plus_w']:.1e}"
          f" over {r['norms']['zero_centred']['count']} calls; gated plain-w err "
          f"{r['norms']['gated']['max_err_plain_w']:.1e}")
    if r["routers"]:
        print(f"   MoE routing: smallest top-k router logit gap {r['routers']['min_topk_logit_gap']:.2e}"
              f" over {r['routers']['router_calls']} router calls")
    print(f"   transformers decode (cache) vs prefill: max rel {r['decode_vs_prefill_max_rel']:.3e}"
          f" at position {r['decode_vs_prefill_worst_position']}")
    print(f"   transformers f32 vs the same code in f64: prefill {r['prefill_vs_float64_max_rel']:.3e}, "
          f"decode {r['decode_vs_float64_max_rel']:.3e}")
    if r["decode_vs_prefill_max_rel"] > TOLERANCE:
        print("   !! transformers' own decode disagrees with its prefill")
        ok = False
    if max(r["prefill_vs_float64_max_rel"], r["decode_vs_float64_max_rel"]) > TOLERANCE / 4:
        print("   !! ill-conditioned sequence: f32 rounding alone uses over a quarter of the tolerance")
        ok = False

    bin_path = os.path.join(args.out, f"{preset}.bin")
    json_path = os.path.join(args.out, f"{preset}.json")
    if args.check:
        committed = np.fromfile(bin_path, dtype="<f4").reshape(len(tokens), vocab)
        rel = hf_logits.relative_error_per_position(ref, committed)
        print(f"   regenerated vs committed golden: {describe(rel)}")
        ok &= bool(rel.max() <= 1e-6)

    mtplx_results = {}
    if not args.skip_mtplx:
        for label, path, chunk in [("auto", "auto", None), ("recurrent", "recurrent", None),
                                   ("chunked", "chunked", None), ("decode", "auto", 1)]:
            ours = mtplx_logits(args.mtplx, model_dir, tokens, vocab, work, path, chunk)
            rel = hf_logits.relative_error_per_position(ours, ref)
            rel_dec = hf_logits.relative_error_per_position(ours, r["decode"])
            rel_64 = hf_logits.relative_error_per_position(ours, r["float64"])
            mtplx_results[label] = {"max_rel_vs_prefill": float(rel.max()),
                                    "max_rel_vs_hf_decode": float(rel_dec.max()),
                                    "max_rel_vs_float64": float(rel_64.max())}
            flag = "" if rel.max() <= TOLERANCE else "   !! over tolerance"
            print(f"   mtplx {label:9s} vs transformers prefill: {describe(rel)}; "
                  f"vs transformers decode: max {rel_dec.max():.3e}; vs f64: max {rel_64.max():.3e}{flag}")
            if args.verbose or rel.max() > TOLERANCE:
                print("     per position: " + " ".join(f"{x:.1e}" for x in rel))
            ok &= bool(rel.max() <= TOLERANCE)

    if not args.check:
        os.makedirs(args.out, exist_ok=True)
        ref.astype("<f4").tofile(bin_path)
        sidecar = {
            "preset": preset,
            "checkpoint": f"mtplx synth --preset {preset} --seed {SEED} (hf, bf16); "
                          f"C++: mtplx::testing::SyntheticModel(\"{preset}\", \"hf\", 0, 64, {SEED})",
            "seed": SEED,
            "checkpoint_sha256": sha256(os.path.join(model_dir, "model.safetensors")),
            "config_sha256": sha256(os.path.join(model_dir, "config.json")),
            "tokens": tokens,
            "token_formula": TOKEN_FORMULA,
            "rows": len(tokens),
            "vocab": vocab,
            "file": f"{preset}.bin",
            "layout": "float32 little-endian, row-major [rows, vocab]; row i = logits after tokens[0..i]",
            "reference": "transformers prefill: one forward over all rows, float32, eval, "
                         "attn_implementation=eager, experts_implementation=eager, use_cache=False",
            "tolerance": {"metric": "per position: max_v |ours - ref| / max_v |ref|", "max": TOLERANCE},
            "transformers_model": r["load"],
            "norm_check": r["norms"],
            "moe_routing": r["routers"],
            "transformers_decode_vs_prefill_max_rel": r["decode_vs_prefill_max_rel"],
            "transformers_f32_vs_float64_max_rel": {"prefill": r["prefill_vs_float64_max_rel"],
                                                     "decode": r["decode_vs_float64_max_rel"]},
            "mtplx_at_generation": mtplx_results,
            "versions": r["versions"],
            "generator": "tools/reference/make_reference_goldens.py",
        }
        with open(json_path, "w") as f:
            json.dump(sidecar, f, indent=1)
            f.write("\n")
        print(f"   wrote {os.path.relpath(bin_path, REPO)} ({os.path.getsize(bin_path)} bytes) and "
              f"{os.path.relpath(json_path, REPO)}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build", "src", "cli", "mtplx"),
                    help="the mtplx CLI (synth and score)")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "reference"))
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--work", help="keep checkpoints here instead of a temporary folder")
    ap.add_argument("--check", action="store_true", help="compare with the committed goldens, write nothing")
    ap.add_argument("--skip-mtplx", action="store_true", help="do not run `mtplx score`")
    ap.add_argument("--verbose", action="store_true", help="print every position's error")
    args = ap.parse_args()
    if not os.path.exists(args.mtplx):
        print(f"{args.mtplx}: not found (build the mtplx target, or pass --mtplx)", file=sys.stderr)
        return 2
    hf_logits.torch.manual_seed(0)
    ok = True
    with tempfile.TemporaryDirectory(prefix="mtplx-reference-") as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        for preset in args.presets.split(","):
            try:
                ok &= run_preset(args, preset, work)
            except hf_logits.ReferenceError as e:
                print(f"== {preset}: FAILED: {e}")
                ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
