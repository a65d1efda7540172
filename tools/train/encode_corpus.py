#!/usr/bin/env python3
"""Tokenizes the corpus into flat uint16 token streams for training.

For each <source>.<split>.jsonl writes <source>.<split>.bin (uint16 ids, <|endoftext|> after every
document) and <source>.<split>.idx (int64 start offset of every document). Chat pairs are rendered
exactly as `mtplx run` encodes a conversation (template pieces with special tokens, the texts
without): <|im_start|>user\\n{user}<|im_end|>\\n<|im_start|>assistant\\n{assistant}<|im_end|>\\n.
Token counts per source are added to the corpus manifest (manifest.json, key "tokens").

Usage: encode_corpus.py [--corpus DIR] [--tokenizer DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import numpy as np
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus"))
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "data", "tokenizer"))
    ap.add_argument("--out", default=os.path.join(HERE, "data", "tokens"))
    args = ap.parse_args()
    tok = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    assert tok.get_vocab_size(with_added_tokens=True) <= 65536
    eot = tok.token_to_id("<|endoftext|>")
    t_user = tok.encode("<|im_start|>user\n").ids
    t_mid = tok.encode("<|im_end|>\n<|im_start|>assistant\n").ids
    t_end = tok.encode("<|im_end|>\n").ids
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.corpus, "manifest.json")
    manifest = json.load(open(manifest_path))
    for path in sorted(glob.glob(os.path.join(args.corpus, "*.jsonl"))):
        name = os.path.basename(path)[: -len(".jsonl")]
        src, split = name.split(".")
        docs = [json.loads(line) for line in open(path, encoding="utf-8")]
        if src == "chat":
            users = tok.encode_batch([d["user"] for d in docs])
            assistants = tok.encode_batch([d["assistant"] for d in docs])
            seqs = [t_user + u.ids + t_mid + a.ids + t_end for u, a in zip(users, assistants)]
        else:
            seqs = [e.ids for e in tok.encode_batch([d["text"] for d in docs])]
        offsets, flat, pos = [], [], 0
        for s in seqs:
            offsets.append(pos)
            flat.extend(s)
            flat.append(eot)
            pos += len(s) + 1
        np.asarray(flat, dtype=np.uint16).tofile(os.path.join(args.out, f"{name}.bin"))
        np.asarray(offsets, dtype=np.int64).tofile(os.path.join(args.out, f"{name}.idx"))
        nbytes = manifest["sources"][src]["bytes"][split]
        manifest["sources"][src].setdefault("tokens", {})[split] = len(flat)
        print(f"{name:16s} {len(docs):6d} docs {len(flat):>10,d} tokens"
              f" ({nbytes / max(1, len(flat)):.2f} bytes/token)", flush=True)
    manifest["tokenizer"] = {"vocab": tok.get_vocab_size(with_added_tokens=True), "eot": eot}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
