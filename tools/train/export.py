#!/usr/bin/env python3
"""Exports a training checkpoint in the Hugging Face layout mtplx (and transformers) read.

Writes to OUT:
  config.json             flat text-only Qwen 3.5 config, architectures ["Qwen3_5ForCausalLM"],
                          model_type "qwen3_5_text", mtp_num_hidden_layers 1, tied embeddings
  model.safetensors       trunk as `model.*`, MTP as `mtp.*` (spec §3.1 names), bf16 except
                          `linear_attn.A_log` (f32, as Qwen3.5-0.8B); no lm_head.weight (tied)
  generation_config.json  eos [<|im_end|>, <|endoftext|>], T 0.6, top-p 0.95, top-k 20
  tokenizer.json, tokenizer_config.json (Qwen3 ChatML chat template)
  training_summary.json   (if given) parameter count, tokens seen, held-out losses

Usage: export.py CKPT OUT [--tokenizer DIR] [--summary runs/<name>/summary.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402


def hf_state_dict(model: M.Qwen35WithMtp):
    out = {}
    for k, v in model.lm.model.state_dict().items():
        if "rotary_emb" in k:
            continue
        out["model." + k] = v
    if not model.spec.tie_word_embeddings:
        out["lm_head.weight"] = model.lm.lm_head.weight
    for k, v in model.mtp.state_dict().items():
        out["mtp." + k] = v
    res = {}
    for k, v in out.items():
        v = v.detach().contiguous()
        res[k] = v.to(torch.float32) if k.endswith("linear_attn.A_log") else v.to(torch.bfloat16)
    return res


def load_checkpoint(ckpt_path):
    ck = torch.load(ckpt_path, map_location="cpu", weights_only=False)
    spec = M.spec_from_dict(ck["spec"])
    model = M.Qwen35WithMtp(spec)
    model.load_state_dict(ck["model"])
    model.eval()
    return model, ck


def export(ckpt_path, tokenizer_dir, out_dir, summary_path=None):
    model, ck = load_checkpoint(ckpt_path)
    spec = model.spec
    tok_cfg = json.load(open(os.path.join(tokenizer_dir, "tokenizer_config.json")))
    ids = {v["content"]: int(k) for k, v in tok_cfg["added_tokens_decoder"].items()}
    eot, im_end = ids["<|endoftext|>"], ids["<|im_end|>"]
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"architectures": ["Qwen3_5ForCausalLM"], **spec.text_config_dict()}
    cfg.update({"model_type": "qwen3_5_text", "bos_token_id": None, "eos_token_id": eot,
                "pad_token_id": None, "dtype": "bfloat16", "transformers_version": "5.x"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    gen = {"bos_token_id": eot, "do_sample": True, "eos_token_id": [im_end, eot], "pad_token_id": eot,
           "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
    sd = hf_state_dict(model)
    save_file(sd, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out_dir, name))
    if summary_path and os.path.exists(summary_path):
        shutil.copy(summary_path, os.path.join(out_dir, "training_summary.json"))
    n = sum(v.numel() for v in sd.values())
    print(f"exported {len(sd)} tensors, {n:,} parameters -> {out_dir}")
    return out_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ckpt")
    ap.add_argument("out")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "data", "tokenizer"))
    ap.add_argument("--summary", default=None)
    args = ap.parse_args()
    export(args.ckpt, args.tokenizer, args.out, args.summary)


if __name__ == "__main__":
    main()
