#!/usr/bin/env python3
"""Trains the small Qwen 3.5 model and its MTP head jointly on CPU.

loss = CE(next token) + mtp_weight * CE(token after next, through the MTP head)

The learning-rate schedule runs on progress = max(tokens / --max-tokens, train seconds / --time-budget),
so a run ends on whichever budget comes first and still decays properly on a busy machine.
A checkpoint (model, optimizer, data RNG, counters) is written atomically every --ckpt-minutes to
runs/<name>/ckpt.pt; `--resume` continues from it. Held-out loss (whole held-out code files, and
held-out prose) is logged every --eval-minutes. At the end the model is exported to runs/<name>/hf
(see export.py).

Usage:
  train.py --run NAME [--preset default|smoke] [--time-budget 7200] [--resume]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402

PRESETS = {
    # ~10.4 M parameters (2.1 M of them the tied embedding); dims follow Qwen3.5-9B's ratios
    # (GDN key width H/2, value width H, FFN 3H, 2:1 attention GQA).
    "default": dict(hidden_size=256, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=64, linear_num_key_heads=2, linear_num_value_heads=4,
                    linear_key_head_dim=64, linear_value_head_dim=64, intermediate_size=768),
}
PRESETS["smoke"] = PRESETS["default"]

DEFAULT_MIX = "code:0.42,chat:0.14,pydocs:0.12,austen:0.14,moby:0.05,web:0.13"


def log(fh, msg):
    line = time.strftime("%Y-%m-%d %H:%M:%S ") + msg
    print(line, flush=True)
    if fh:
        fh.write(line + "\n")
        fh.flush()


class Data:
    def __init__(self, token_dir, mix, seq, seed):
        self.seq = seq
        self.names, weights = [], []
        for part in mix.split(","):
            k, v = part.split(":")
            self.names.append(k)
            weights.append(float(v))
        w = np.asarray(weights, dtype=np.float64)
        self.weights = w / w.sum()
        self.train = {k: np.fromfile(os.path.join(token_dir, f"{k}.train.bin"), dtype=np.uint16) for k in self.names}
        self.idx = {k: np.fromfile(os.path.join(token_dir, f"{k}.train.idx"), dtype=np.int64) for k in self.names}
        self.rng = np.random.default_rng(seed)

    def batch(self, b):
        out = np.empty((b, self.seq + 1), dtype=np.int64)
        srcs = self.rng.choice(len(self.names), size=b, p=self.weights)
        for i, s in enumerate(srcs):
            name = self.names[s]
            arr = self.train[name]
            if name == "chat":  # chat windows start at a conversation start
                starts = self.idx[name]
                st = int(starts[self.rng.integers(0, len(starts))])
                st = min(st, len(arr) - self.seq - 1)
            else:
                st = int(self.rng.integers(0, len(arr) - self.seq - 1))
            out[i] = arr[st: st + self.seq + 1]
        return torch.from_numpy(out)


def heldout_windows(token_dir, name, seq, max_windows):
    arr = np.fromfile(os.path.join(token_dir, f"{name}.heldout.bin"), dtype=np.uint16).astype(np.int64)
    n = min(max_windows, (len(arr) - 1) // seq)
    # evenly spaced, non-overlapping windows across the whole held-out stream
    stride = (len(arr) - seq - 1) // max(1, n - 1) if n > 1 else 0
    return torch.from_numpy(np.stack([arr[i * stride: i * stride + seq + 1] for i in range(n)]))


@torch.no_grad()
def evaluate(model, sets, mtp_weight, bs=8):
    model.eval()
    res = {}
    for name, x in sets.items():
        ce_sum = mce_sum = 0.0
        n = 0
        for i in range(0, len(x), bs):
            xb = x[i: i + bs]
            _, ce, mce = model(xb, mtp_weight=1.0)
            ce_sum += float(ce) * len(xb)
            mce_sum += float(mce) * len(xb)
            n += len(xb)
        res[name] = {"ce": ce_sum / n, "ppl": math.exp(ce_sum / n), "mtp_ce": mce_sum / n}
    model.train()
    return res


def save_ckpt(path, model, opt, data, state, args):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "spec": asdict(model.spec),
                "rng": data.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                "state": state, "args": vars(args)}, tmp)
    os.replace(tmp, path)


def lr_at(progress, args):
    """Cosine from --lr down to --min-lr-frac * --lr over progress 0..1 (warm-up applied by the caller)."""
    p = min(1.0, progress)
    return args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="run name: runs/<name>/ holds log, checkpoint, export")
    ap.add_argument("--runs-dir", default=os.path.join(HERE, "runs"))
    ap.add_argument("--tokens-dir", default=os.path.join(HERE, "data", "tokens"))
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "data", "tokenizer"))
    ap.add_argument("--preset", default="default", choices=sorted(PRESETS))
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=40)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--mtp-weight", type=float, default=0.5)
    ap.add_argument("--max-tokens", type=float, default=50e6)
    ap.add_argument("--time-budget", type=float, default=7200, help="training seconds (excl. eval)")
    ap.add_argument("--ckpt-minutes", type=float, default=8)
    ap.add_argument("--eval-minutes", type=float, default=15)
    ap.add_argument("--eval-windows", type=int, default=24)
    ap.add_argument("--mix", default=DEFAULT_MIX)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-export", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    M.use_fast_gdn(True)
    run_dir = os.path.join(args.runs_dir, args.run)
    os.makedirs(run_dir, exist_ok=True)
    ckpt_path = os.path.join(run_dir, "ckpt.pt")
    fh = open(os.path.join(run_dir, "train_log.txt"), "a")

    tok_cfg = json.load(open(os.path.join(args.tokenizer, "tokenizer_config.json")))
    ids = {v["content"]: int(k) for k, v in tok_cfg["added_tokens_decoder"].items()}
    vocab = max(ids.values()) + 1

    ck = None
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        spec = M.spec_from_dict(ck["spec"])
    else:
        torch.manual_seed(args.seed)
        spec = M.ModelSpec(vocab_size=vocab, eos_token_id=ids["<|endoftext|>"], **PRESETS[args.preset])
    model = M.Qwen35WithMtp(spec)
    decay, no_decay = [], []
    seen = set()
    for n, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() == 2 else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    data = Data(args.tokens_dir, args.mix, args.seq, args.seed)
    state = {"step": 0, "tokens": 0, "train_seconds": 0.0, "evals": []}
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        data.rng.bit_generator.state = ck["rng"]
        torch.set_rng_state(ck["torch_rng"])
        state = ck["state"]
        log(fh, f"resumed from step {state['step']}, {state['tokens']:,} tokens, {state['train_seconds']:.0f}s")
    else:
        log(fh, f"new run {args.run}: params {M.count_params(model):,} "
                f"(embedding {model.lm.model.embed_tokens.weight.numel():,}); spec {json.dumps(asdict(spec))}")
    log(fh, f"args {json.dumps(vars(args))}")

    evalsets = {}
    for name in ("code", "pydocs", "austen", "web"):
        evalsets[name] = heldout_windows(args.tokens_dir, name, args.seq,
                                         args.eval_windows if name == "code" else args.eval_windows // 3)

    def progress():
        return max(state["tokens"] / args.max_tokens, state["train_seconds"] / args.time_budget)

    last_ckpt = time.time()
    last_eval = time.time() if state["step"] > 0 else 0.0
    ema = None
    model.train()
    while progress() < 1.0:
        if time.time() - last_eval >= args.eval_minutes * 60:
            res = evaluate(model, evalsets, args.mtp_weight)
            state["evals"].append({"step": state["step"], "tokens": state["tokens"], **res})
            log(fh, "eval step %d tokens %d: %s" % (state["step"], state["tokens"], "  ".join(
                f"{k} ce {v['ce']:.3f} ppl {v['ppl']:.1f} mtp_ce {v['mtp_ce']:.3f}" for k, v in res.items())))
            last_eval = time.time()
        t0 = time.time()
        step = state["step"]
        lr = lr_at(progress(), args) * min(1.0, (step + 1) / args.warmup_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        x = data.batch(args.batch)
        loss, ce, mce = model(x, mtp_weight=args.mtp_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.time() - t0
        state["step"] += 1
        state["tokens"] += x.shape[0] * args.seq
        state["train_seconds"] += dt
        cur = (float(ce), float(mce))
        ema = cur if ema is None else tuple(0.9 * a + 0.1 * b for a, b in zip(ema, cur))
        if state["step"] % 10 == 0 or state["step"] <= 3:
            log(fh, f"step {state['step']} tokens {state['tokens']:,} ce {cur[0]:.3f} mtp_ce {cur[1]:.3f} "
                    f"(ema {ema[0]:.3f} / {ema[1]:.3f}) gnorm {float(gn):.2f} lr {lr:.2e} "
                    f"{x.numel() / dt:.0f} tok/s progress {progress():.3f}")
        if time.time() - last_ckpt >= args.ckpt_minutes * 60:
            save_ckpt(ckpt_path, model, opt, data, state, args)
            last_ckpt = time.time()
            log(fh, f"checkpoint step {state['step']}")
    res = evaluate(model, evalsets, args.mtp_weight)
    state["evals"].append({"step": state["step"], "tokens": state["tokens"], **res})
    log(fh, "final eval step %d tokens %d: %s" % (state["step"], state["tokens"], "  ".join(
        f"{k} ce {v['ce']:.3f} ppl {v['ppl']:.1f} mtp_ce {v['mtp_ce']:.3f}" for k, v in res.items())))
    save_ckpt(ckpt_path, model, opt, data, state, args)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"params": M.count_params(model), "spec": asdict(spec), "state": state, "args": vars(args)}, f,
                  indent=1)
    log(fh, f"done: {state['step']} steps, {state['tokens']:,} tokens, {state['train_seconds']:.0f}s training")
    if not args.no_export:
        import export
        out = os.path.join(run_dir, "hf")
        export.export(ckpt_path, args.tokenizer, out, summary_path=os.path.join(run_dir, "summary.json"))
        log(fh, f"exported {out}")


if __name__ == "__main__":
    main()
