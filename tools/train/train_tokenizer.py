#!/usr/bin/env python3
"""Trains the byte-level BPE tokenizer (Qwen 3.5 pipeline) and writes tokenizer.json + tokenizer_config.json.

Pipeline exactly as Qwen 3.5 (spec §6): NFC normalizer; pre-tokenizer Sequence[Split(Qwen 3.5
regex, Isolated), ByteLevel(add_prefix_space=false, use_regex=false)]; ByteLevel post-processor
and decoder; BPE without byte fallback or unk. BPE ids are 0..base-1 and the 33 Qwen added tokens
follow at base..base+32 in spec §6 order (so the total is --vocab, default 8192 = base + 33).
The chat template is Qwen3's ChatML template (tests/data/tokenizers/qwen3, Apache-2.0).

Usage: train_tokenizer.py [--corpus DIR] [--out DIR] [--vocab 8192]
"""

from __future__ import annotations

import argparse
import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))

QWEN35_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Spec §6 order; flags as Qwen3's tokenizer.json (audio/TTS tokens of Qwen 3.5: special).
ADDED_TOKENS = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False), ("<|repo_name|>", False), ("<|file_sep|>", False),
    ("<tool_response>", False), ("</tool_response>", False), ("<think>", False), ("</think>", False),
    ("<|audio_start|>", True), ("<|audio_end|>", True), ("<tts_pad>", True), ("<tts_text_bos>", True),
    ("<tts_text_eod>", True), ("<tts_text_bos_single>", True), ("<|audio_pad|>", True),
]
assert len(ADDED_TOKENS) == 33

QWEN3_TOKENIZER_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "tokenizers", "qwen3", "tokenizer_config.json")
TRAIN_SOURCES = ["code", "pydocs", "austen", "moby", "web"]


def iter_texts(corpus_dir):
    for src in TRAIN_SOURCES:
        with open(os.path.join(corpus_dir, f"{src}.train.jsonl"), encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)["text"]


def build(corpus_dir, vocab_total):
    base = vocab_total - len(ADDED_TOKENS)
    tok = Tokenizer(models.BPE(byte_fallback=False, fuse_unk=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False, trim_offsets=False),
    ])
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=base, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(iter_texts(corpus_dir), trainer=trainer)
    assert tok.get_vocab_size() == base, (tok.get_vocab_size(), base)
    data = json.loads(tok.to_str())
    # Added tokens at base.. in spec order (tokenizers assigns ids sequentially after the model vocab).
    data["added_tokens"] = [
        {"id": base + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": s}
        for i, (c, s) in enumerate(ADDED_TOKENS)
    ]
    tok = Tokenizer.from_str(json.dumps(data))
    for i, (c, _) in enumerate(ADDED_TOKENS):
        assert tok.token_to_id(c) == base + i
    return tok, base


def tokenizer_config(base):
    q = json.load(open(QWEN3_TOKENIZER_CONFIG))
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(base + i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                            "single_word": False, "special": s}
            for i, (c, s) in enumerate(ADDED_TOKENS)
        },
        "additional_special_tokens": q["additional_special_tokens"],
        "bos_token": None,
        "chat_template": q["chat_template"],
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 32768,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus"))
    ap.add_argument("--out", default=os.path.join(HERE, "data", "tokenizer"))
    ap.add_argument("--vocab", type=int, default=8192, help="total ids including the 33 added tokens")
    args = ap.parse_args()
    tok, base = build(args.corpus, args.vocab)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config(base), f, indent=2, ensure_ascii=False)
    sample = "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"
    ids = tok.encode(sample).ids
    assert tok.decode(ids, skip_special_tokens=False) == sample
    print(f"tokenizer: {base} BPE ids + {len(ADDED_TOKENS)} added = {args.vocab}; "
          f"sample {len(sample)} chars -> {len(ids)} tokens")


if __name__ == "__main__":
    main()
