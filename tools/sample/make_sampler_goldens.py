#!/usr/bin/env python3
"""Golden outputs of the sampler shaping transform for tests/sample/sampler_test.cc.

An independent numpy implementation of the reference order (docs: shared/spec/reference-product.md
section 3.4; src/sample/sampler.h):

  1. penalties on the raw logits: logit -= frequency * count + presence * [count > 0]
  2. divide by the temperature
  3. top-k (k <= 0: off; ties broken by the lower token id)
  4. nucleus over FULL-vocabulary probabilities (softmax over every logit): walking the top-k in
     descending order, keep a token while the mass of the tokens before it is < top_p; the first
     token is always kept. top_p >= 1 keeps everything (mathematically the mass before any token
     is < 1).
  5. min-p: keep tokens whose probability is >= min_p * (probability of the top kept token)
  6. renormalise over the kept set

Inputs are not stored: every case's logits and counts are regenerated from the case seed with
SplitMix64 using plain double arithmetic only (no transcendental functions), so the C++ test gets
bit-identical float32 logits:

  rng = SplitMix64(seed)
  u() = (rng.next() >> 11) * 2^-53
  for i in range(vocab): logits[i] = float32(scale * (((u() + u()) + u()) + u() - 2.0))
  for i in range(vocab): r = rng.next(); counts[i] = 1 + (r >> 32) % 3 if r % 5 == 0 else 0

Cases whose result could depend on the last bits of floating point are skipped (a new seed is
drawn): equal scaled logits among the top (k + 1), a nucleus mass within 1e-9 of top_p, or a
probability within 1e-9 (relative) of the min-p floor. Cases keeping more than 800 tokens
are skipped too, to keep the file small. So the C++ result must have exactly the
golden support, and probabilities equal within ~1e-12 relative.

Output: tests/data/sample/shape_goldens.txt, one case per line:

  seed vocab scale temperature top_k top_p min_p presence frequency n id_1 prob_1 ... id_n prob_n

(floats in Python repr, which round-trips exactly through strtod; ids in descending probability).

Usage:  /opt/mtplx-py/bin/python tools/sample/make_sampler_goldens.py            # rewrite
        /opt/mtplx-py/bin/python tools/sample/make_sampler_goldens.py --check    # compare only
"""

import argparse
import math
import os
import sys

import numpy as np

MASK = (1 << 64) - 1
CASES = 200
BASE_SEED = 0x5A3D1E5
MARGIN = 1e-9
MAX_SUPPORT = 800
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "data", "sample", "shape_goldens.txt"))


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53


def make_inputs(seed, vocab, scale):
    rng = SplitMix64(seed)
    logits = np.empty(vocab, dtype=np.float32)
    for i in range(vocab):
        s = rng.uniform() + rng.uniform()
        s = s + rng.uniform()
        s = s + rng.uniform()
        logits[i] = np.float32(scale * (s - 2.0))
    counts = np.zeros(vocab, dtype=np.int64)
    for i in range(vocab):
        r = rng.next()
        counts[i] = 1 + (r >> 32) % 3 if r % 5 == 0 else 0
    return logits, counts


class Ambiguous(Exception):
    pass


def shape(logits, counts, temperature, top_k, top_p, min_p, presence, frequency):
    """The reference transform. Returns (ids, probs) or raises Ambiguous near a boundary."""
    x = logits.astype(np.float64)
    x = x - (frequency * counts + presence * (counts > 0))      # 1. penalties
    x = x / temperature                                          # 2. temperature
    vocab = x.size
    m = np.max(x)
    log_z = m + math.log(np.sum(np.exp(x - m)))
    full = np.exp(x - log_z)                                     # full-vocabulary probabilities
    order = np.lexsort((np.arange(vocab), -x))                   # descending, ties by lower id
    k = vocab if top_k <= 0 else min(top_k, vocab)               # 3. top-k
    # No (near-)ties among the top k + 1: the top-k set and the order are unambiguous.
    head = x[order[: min(k + 1, vocab)]]
    if head.size > 1 and np.min(-np.diff(head)) <= MARGIN * max(1.0, np.max(np.abs(head))):
        raise Ambiguous("tie")
    cand = order[:k]
    p = full[cand]
    if top_p < 1.0:                                              # 4. nucleus
        before = np.concatenate(([0.0], np.cumsum(p)[:-1]))
        if np.any(np.abs(before[1:] - top_p) < MARGIN):
            raise Ambiguous("top_p boundary")
        keep = before < top_p
        keep[0] = True
        n = int(np.argmin(keep)) if not keep.all() else keep.size
        cand, p = cand[:n], p[:n]
    if min_p > 0.0:                                              # 5. min-p
        rel = p / p[0]
        if np.any(np.abs(rel - min_p) < MARGIN):
            raise Ambiguous("min_p boundary")
        n = int(np.sum(rel >= min_p))
        cand, p = cand[:n], p[:n]
    return cand, p / np.sum(p)                                   # 6. renormalise


def draw_params(rng):
    """Case parameters from numpy's generator (only the results are stored, not this stream)."""
    vocab = int(round(math.exp(rng.uniform(math.log(5), math.log(5000)))))
    scale = float(rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]))
    temperature = float(rng.uniform(0.1, 2.0))
    top_k = int(rng.choice([0, 1, 20, 50]))
    top_p = 1.0 if rng.uniform() < 0.2 else float(rng.uniform(0.5, 1.0))
    min_p = float(rng.choice([0.0, 0.05, 0.2]))
    presence = 0.0 if rng.uniform() < 0.4 else float(rng.uniform(-1.0, 2.0))
    frequency = 0.0 if rng.uniform() < 0.4 else float(rng.uniform(-1.0, 2.0))
    return vocab, scale, temperature, top_k, top_p, min_p, presence, frequency


def generate():
    rng = np.random.default_rng(20250501)
    lines, skipped, large, attempt = [], 0, 0, 0
    while len(lines) < CASES:
        params = draw_params(rng)
        vocab, scale, temperature, top_k, top_p, min_p, presence, frequency = params
        seed = (BASE_SEED + attempt) & MASK
        attempt += 1
        logits, counts = make_inputs(seed, vocab, scale)
        try:
            ids, probs = shape(logits, counts, temperature, top_k, top_p, min_p, presence, frequency)
        except Ambiguous:
            skipped += 1
            continue
        if len(ids) > MAX_SUPPORT:  # keeps the file small; large supports add little
            large += 1
            continue
        fields = [str(seed), str(vocab), repr(scale), repr(temperature), str(top_k), repr(top_p),
                  repr(min_p), repr(presence), repr(frequency), str(len(ids))]
        for i, pr in zip(ids, probs):
            fields += [str(int(i)), repr(float(pr))]
        lines.append(" ".join(fields))
    header = ["# Sampler Shape() goldens: written by tools/sample/make_sampler_goldens.py "
              "(see its docstring for the format).",
              f"# {CASES} cases; skipped draws: {skipped} ambiguous, {large} with support > {MAX_SUPPORT}."]
    return "\n".join(header + lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = ap.parse_args()
    text = generate()
    if args.check:
        with open(args.out) as f:
            same = f.read() == text
        print("goldens up to date" if same else "goldens DIFFER")
        return 0 if same else 1
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
