#!/usr/bin/env python3
"""Re-trains a pack's MTP head to imitate the pack's own trunk (self-distillation).

The joint training of train.py teaches the MTP head the text: cross-entropy against the token
after next. Speculative sampling accepts a draft with probability sum_x min(p(x), q(x)) =
1 - TV(p, q), where p is the trunk's distribution at that position (shaped by the sampler) and q
the drafter's, so what raises acceptance at every temperature is q close to p, not q close to
the data. This script freezes the trunk at exactly the weights the pack runs (its MLX affine codes
dequantized) and trains only the MTP layer (its norms, fc, decoder layer and final norm; the head
is the tied embedding, shared with the trunk, and stays) on

    KL( p_trunk(t_{p+2} | t_{<=p+1}) || q_mtp(t_{p+2} | h_p, t_{p+1}) )

over windows of the training corpus, starting from the pack's own head. Before and after it
reports, on held-out code windows, the expected acceptance E[sum min(p, q)] at T 0.6 / top-p 0.95
/ top-k 20 and greedy agreement (argmax q = argmax p): the quantities speculation runs on.

mtplx drafts depth k > 1 from the head's own output: step k reads (its normed output of step
k-1, the draft token) at position p+k-1 and attends over the history rows and its own earlier
steps. `--unroll K` trains those chained steps as mtplx runs them (unrolled_logits: the text's
tokens stand in for the drafts, which equal them while the chain is accepted; gradients flow
through the chain), step k's KL weighted by step_decay^(k-1), and the report covers steps 1-3.
Before training, check_unroll compares the unrolled logits with the chain built row by row.

Writes OUT/hf: a bf16 Hugging Face checkpoint (the pack's trunk, dequantized, and the new MTP
head) for `mtplx convert`; then only the converted pack's mtp.safetensors replaces the pack's
(the trunk stays byte for byte). See tools/train/README.md ("Distilling the MTP head").

Usage: distill_mtp.py --pack models/default --tokens data/tokens-pack --out runs/distill
           [--steps 1000] [--lr 1e-3] [--batch 16] [--seq 256] [--threads 2]
           [--unroll 1] [--step-decay 0.8]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402
from train import DEFAULT_MIX, Data, heldout_windows  # noqa: E402

# Trunk vectors the MLX layout stores as 1 + w (zero-centred RMSNorm gains); the MTP sidecar keeps
# them raw (config.json: mtplx_mtp_norm_encoding "delta").
SHIFTED = ("input_layernorm.weight", "post_attention_layernorm.weight", "q_norm.weight",
           "k_norm.weight")


def unpack_codes(words: np.ndarray, bits: int, columns: int) -> np.ndarray:
    """MLX packs `bits`-bit codes little-endian into uint32 words: element j sits at bits
    [j*bits, (j+1)*bits) of the row's bit stream."""
    stream = np.unpackbits(words.astype("<u4").view(np.uint8), axis=-1, bitorder="little")
    stream = stream[..., : columns * bits].reshape(*words.shape[:-1], columns, bits)
    return (stream.astype(np.int64) << np.arange(bits)).sum(-1)


def read_tensors(path: str) -> dict:
    """A safetensors file as numpy arrays: packed codes as uint32, everything else float32
    (numpy has no bf16)."""
    out = {}
    for name, t in load_file(path).items():
        out[name] = (t.view(torch.int32).numpy().view(np.uint32) if t.dtype == torch.uint32
                     else t.float().numpy())
    return out


def dequantize(tensors: dict, bits: int, group: int) -> dict:
    """name -> float32 array, with every affine-quantized matrix (weight, scales, biases)
    turned back into w = scale * q + bias."""
    out = {}
    for name, value in tensors.items():
        if name.endswith((".scales", ".biases")):
            continue
        base = name[: -len(".weight")] if name.endswith(".weight") else None
        if base and base + ".scales" in tensors:
            scales = tensors[base + ".scales"].astype(np.float32)
            biases = tensors[base + ".biases"].astype(np.float32)
            columns = scales.shape[-1] * group
            q = unpack_codes(value, bits, columns).astype(np.float32)
            q = q.reshape(*scales.shape, group)
            out[name] = (q * scales[..., None] + biases[..., None]).reshape(*scales.shape[:-1], columns)
        else:
            out[name] = value.astype(np.float32)
    return out


def load_pack(pack: str):
    """The pack's trunk and MTP head as a Qwen35WithMtp in float32."""
    cfg = json.load(open(os.path.join(pack, "config.json")))
    q = cfg["quantization"]
    mq = cfg.get("mtplx_mtp_quantization", q)
    trunk = dequantize(read_tensors(os.path.join(pack, "model.safetensors")), q["bits"], q["group_size"])
    mtp = dequantize(read_tensors(os.path.join(pack, "mtp.safetensors")), mq["bits"], mq["group_size"])
    spec = M.ModelSpec(**{k: cfg[k] for k in (
        "vocab_size", "hidden_size", "num_hidden_layers", "full_attention_interval",
        "num_attention_heads", "num_key_value_heads", "head_dim", "linear_num_key_heads",
        "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim", "intermediate_size", "max_position_embeddings", "rms_norm_eps",
        "tie_word_embeddings")}, rope_theta=cfg["rope_parameters"]["rope_theta"],
        partial_rotary_factor=cfg["rope_parameters"]["partial_rotary_factor"],
        eos_token_id=cfg.get("eos_token_id") or 0)
    model = M.Qwen35WithMtp(spec)
    state = {}
    prefix = "language_model.model."
    for name, value in trunk.items():
        if not name.startswith(prefix):
            sys.exit(f"{pack}: {name} is not an MLX-layout trunk tensor ({prefix}*); convert the "
                     "checkpoint with `mtplx convert` first")
        key = name[len(prefix):]
        if key.endswith(SHIFTED) or key == "norm.weight":
            value = value - 1.0
        if key.endswith("conv1d.weight"):  # MLX [C, K, 1] -> torch [C, 1, K]: the same bytes
            value = value.reshape(value.shape[0], 1, value.shape[1])
        state["lm.model." + key] = torch.from_numpy(np.ascontiguousarray(value))
    for name, value in mtp.items():
        state["mtp." + name[len("mtp."):]] = torch.from_numpy(np.ascontiguousarray(value))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "rotary_emb" not in k and k != "lm.lm_head.weight"]
    if missing or unexpected:
        sys.exit(f"pack does not match the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.lm.lm_head.weight = model.lm.model.embed_tokens.weight
    return model


LOAD_CHECK_PROMPT = "def read_file(path):"


def check_load(model, pack, mtplx):
    """The dequantized trunk's greedy continuation must equal mtplx's own on the pack: a wrong
    norm convention or unpacking shows at once."""
    import subprocess

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(pack, "tokenizer.json"))
    ids = tok.encode(LOAD_CHECK_PROMPT).ids
    start = len(ids)
    with torch.no_grad():
        for _ in range(16):
            h, _, _ = model.trunk(torch.tensor([ids]))
            ids.append(int(model.lm.lm_head(h[0, -1]).argmax()))
    ours = tok.decode(ids[start:])
    r = subprocess.run([mtplx, "run", "--model", pack, "--raw", LOAD_CHECK_PROMPT, "--max-tokens", "16",
                        "--temperature", "0", "--no-mtp", "--presence-penalty", "0", "--json", "--quiet"],
                       capture_output=True, text=True, check=True)
    theirs = json.loads(r.stdout)["text"]
    if ours != theirs:
        sys.exit(f"the loaded trunk disagrees with mtplx: {ours!r} vs {theirs!r}")
    return ours


def shaped(logits: torch.Tensor, temperature=0.6, top_p=0.95, top_k=20) -> torch.Tensor:
    """The sampler's distribution: temperature, then top-k, then top-p (kept while the mass before
    a token is below top_p), renormalised."""
    probs = torch.softmax(logits / temperature, dim=-1)
    top, ids = probs.topk(top_k, dim=-1)
    top = top / top.sum(-1, keepdim=True)
    before = top.cumsum(-1) - top
    top = torch.where(before < top_p, top, torch.zeros_like(top))
    top = top / top.sum(-1, keepdim=True)
    return torch.zeros_like(probs).scatter_(-1, ids, top)


def kl_per_position(p_logits, q_logits):
    """KL(p || q) in nats at every position of [B, T, V] logits."""
    logp = F.log_softmax(p_logits, -1)
    return (logp.exp() * (logp - F.log_softmax(q_logits, -1))).sum(-1)


def fc_rows(head, embedding, hidden):
    """The MTP layer's input rows: fc over [norm(embedding of the token) | norm(hidden)]."""
    return head.fc(torch.cat([head.pre_fc_norm_embedding(embedding),
                              head.pre_fc_norm_hidden(hidden)], dim=-1))


def draft_mask(steps: int, n: int) -> torch.Tensor:
    """Which rows a query may attend to when `steps` draft steps of n rows each are laid out one
    after another ([step 1 rows | step 2 rows | ...]), as mtplx's MTP cache holds them: a step-k
    row drafting from base position i sees the step-1 (history) rows 0..i and its own chain's
    rows of steps 2..k at base i (mtplx keeps a cycle's draft rows until its last draft)."""
    i = torch.arange(n)
    causal = i.view(-1, 1) >= i.view(1, -1)
    same = i.view(-1, 1) == i.view(1, -1)
    blocks = [[causal if b == 0 else (same if b <= a else torch.zeros_like(same))
               for b in range(steps)] for a in range(steps)]
    return torch.cat([torch.cat(row, dim=1) for row in blocks], dim=0)


def unrolled_logits(model, tokens, steps: int):
    """Trunk targets and MTP draft logits for `steps` chained draft steps, for tokens [B, T+1]
    (the trunk reads T of them). Step 1 drafts from (h_i, t_{i+1}) at position i, as the head was
    trained; step k > 1 from the head's own normed output of step k-1 and t_{i+k} at position
    i+k-1, as mtplx drafts depth k (the text's tokens stand in for the drafts, which equal them
    whenever the chain is still accepted). Returns ([p_k], [q_k]), k = 1..steps, each [B, n, V]
    with n = T - steps, both predicting t_{i+k+1}."""
    inp = tokens[:, :-1]
    t = inp.shape[1]
    n = t - steps
    with torch.no_grad():
        h, (cos, sin), embeds = model.trunk(inp)
        trunk_logits = model.lm.lm_head(h).float()
    head = model.mtp
    layer = head.layers[0]
    rows, cos_rows, sin_rows = [], [], []
    hidden = h[:, :n]
    targets, drafts = [], []
    for k in range(1, steps + 1):
        rows.append(fc_rows(head, embeds[:, k: n + k], hidden))
        cos_rows.append(cos[:, k - 1: n + k - 1])
        sin_rows.append(sin[:, k - 1: n + k - 1])
        x = torch.cat(rows, dim=1)
        pe = (torch.cat(cos_rows, dim=1), torch.cat(sin_rows, dim=1))
        mask = None if k == 1 else draft_mask(k, n).view(1, 1, k * n, k * n)
        out = head.norm(layer(x, position_embeddings=pe, attention_mask=mask))[:, (k - 1) * n:]
        drafts.append(model.lm.lm_head(out).float())
        targets.append(trunk_logits[:, k: n + k])
        hidden = out
    return targets, drafts


@torch.no_grad()
def check_unroll(model, window, steps, tolerance=1e-3):
    """unrolled_logits against the chain built one base position at a time, as mtplx's cache
    holds it: the history rows 0..i run causally, then each draft row is appended at position
    i + k - 1 and the layer runs causally over all of them. A wrong mask or RoPE offset shows at
    once. Returns the largest absolute logit difference."""
    _, drafts = unrolled_logits(model, window, steps)
    inp = window[:, :-1]
    n = inp.shape[1] - steps
    h, (cos, sin), e = model.trunk(inp)
    head, worst = model.mtp, 0.0
    for i in sorted({0, n // 2, n - 1}):
        xs, pos = [fc_rows(head, e[:, 1: i + 2], h[:, : i + 1])], list(range(i + 1))
        for k in range(1, steps + 1):
            if k > 1:
                xs.append(fc_rows(head, e[:, i + k: i + k + 1], out))
                pos.append(i + k - 1)
            p = torch.tensor(pos)
            layer_out = head.layers[0](torch.cat(xs, 1), position_embeddings=(cos[:, p], sin[:, p]),
                                       attention_mask=None)
            out = head.norm(layer_out)[:, -1:]
            q = model.lm.lm_head(out).float()[:, 0]
            worst = max(worst, (q - drafts[k - 1][:, i]).abs().max().item())
    if worst > tolerance:
        sys.exit(f"unrolled draft steps disagree with the row-by-row chain by {worst:.2e}")
    return worst


@torch.no_grad()
def measure(model, windows, steps=1, batch=8):
    """Mean KL, expected T 0.6 acceptance and greedy agreement over held-out windows, for each
    chained draft step (keys with a `_k` suffix from step 2 on)."""
    sums = [[0.0, 0.0, 0.0] for _ in range(steps)]
    n = 0
    for i in range(0, len(windows), batch):
        targets, drafts = unrolled_logits(model, windows[i: i + batch], steps)
        for k, (p_logits, q_logits) in enumerate(zip(targets, drafts)):
            sums[k][0] += kl_per_position(p_logits, q_logits).sum().item()
            sums[k][1] += torch.minimum(shaped(p_logits), shaped(q_logits)).sum(-1).sum().item()
            sums[k][2] += (p_logits.argmax(-1) == q_logits.argmax(-1)).float().sum().item()
        n += targets[0].shape[0] * targets[0].shape[1]
    out = {}
    for k, (kl, accept, agree) in enumerate(sums):
        suffix = "" if k == 0 else f"_{k + 1}"
        out.update({"kl" + suffix: kl / n, "accept_t06" + suffix: accept / n,
                    "greedy_agree" + suffix: agree / n})
    return out


def export(model, pack, out):
    """OUT/hf: the pack's config, generation config and tokenizer with a bf16 checkpoint."""
    import shutil

    from export import hf_state_dict
    os.makedirs(out, exist_ok=True)
    cfg = json.load(open(os.path.join(pack, "config.json")))
    for k in ("quantization", "quantization_config", "mtplx_mtp_norm_encoding",
              "mtplx_mtp_quantization"):
        cfg.pop(k, None)
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(pack, name), os.path.join(out, name))
    save_file(hf_state_dict(model), os.path.join(out, "model.safetensors"), metadata={"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", required=True)
    ap.add_argument("--tokens", required=True, help="encode_corpus.py output, encoded with the pack's tokenizer")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mix", default=DEFAULT_MIX)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--unroll", type=int, default=1,
                    help="chained draft steps trained at once (mtplx's depth): step k > 1 drafts "
                         "from the head's own output, as mtplx does at depth k")
    ap.add_argument("--step-decay", type=float, default=0.8,
                    help="weight of step k's KL is decay^(k-1)")
    ap.add_argument("--mtplx", default=os.path.join(HERE, "..", "..", "build", "bin", "mtplx"),
                    help="checks the loaded trunk against this binary's greedy decoding")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    M.use_fast_gdn(True)
    model = load_pack(args.pack)
    for p in model.parameters():
        p.requires_grad_(False)
    params = list(model.mtp.parameters())
    for p in params:
        p.requires_grad_(True)
    model.eval()  # no dropout anywhere; eval keeps transformers' modules deterministic
    if os.path.exists(args.mtplx):
        print(f"load check: greedy continuation {check_load(model, args.pack, args.mtplx)!r} "
              f"equals mtplx's", flush=True)
    else:
        print(f"load check skipped: no mtplx binary at {args.mtplx} (--mtplx)", flush=True)
    heldout = heldout_windows(args.tokens, "code", args.seq, args.eval_windows)
    check_steps = max(args.unroll, 3)
    print(f"unroll check: {check_steps} chained steps within "
          f"{check_unroll(model, heldout[:2, :65], check_steps):.1e} of the row-by-row chain",
          flush=True)
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "distill_log.txt"), "a")

    def say(msg):
        line = time.strftime("%H:%M:%S ") + msg
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    before = measure(model, heldout, max(args.unroll, 3))
    say(f"before: {before}")
    data = Data(args.tokens, args.mix, args.seq, args.seed)
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    start = time.time()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        tokens = data.batch(args.batch)
        targets, drafts = unrolled_logits(model, tokens, args.unroll)
        # Later steps weigh less: a step-k draft only counts once the k - 1 before it passed.
        weights = [args.step_decay ** k for k in range(args.unroll)]
        loss = sum(w * kl_per_position(p, q).mean()
                   for w, p, q in zip(weights, targets, drafts)) / sum(weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 20 == 0 or step == args.steps - 1:
            say(f"step {step} kl {loss.item():.4f} lr {lr:.2e} {time.time() - start:.0f}s")
    after = measure(model, heldout, max(args.unroll, 3))
    say(f"after: {after}")
    json.dump({"before": before, "after": after, "args": vars(args)},
              open(os.path.join(args.out, "distill.json"), "w"), indent=2)
    export(model, args.pack, os.path.join(args.out, "hf"))
    say(f"exported {os.path.join(args.out, 'hf')}")


if __name__ == "__main__":
    main()
