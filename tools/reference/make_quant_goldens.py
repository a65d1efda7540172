#!/usr/bin/env python3
"""Generates MLX affine (de)quantization golden files for tests/kernels/affine_quant_test.cc.

For every bits in {2,3,4,5,6,8} x group_size in {32,64,128} and input dtype in {bf16, f32} it
builds a deterministic matrix (fixed numpy seed), calls

    wq, scales, biases = mx.quantize(w, group_size=g, bits=b, mode="affine")
    w_hat = mx.dequantize(wq, scales, biases, group_size=g, bits=b, mode="affine")

on the MLX CPU device and writes one little-endian binary file per case:

    tests/data/quant/affine_b{bits}_g{group}_{bf16|f32}.bin

File layout (all little-endian):
    char[4]  magic "MQG1"
    uint32   bits
    uint32   group_size
    uint32   rows
    uint32   cols
    uint32   dtype code: 1 = f32 (4-byte elements), 2 = bf16 (2-byte elements, raw bits)
    input    rows*cols elements of dtype
    packed   rows*cols*bits/32 uint32 words (mx.quantize output 0)
    scales   rows*(cols/group_size) elements of dtype
    biases   rows*(cols/group_size) elements of dtype
    dequant  rows*cols elements of dtype (mx.dequantize output)

Usage:  /opt/mtplx-py/bin/python tools/reference/make_quant_goldens.py [--out tests/data/quant]
        add --check to regenerate in memory and compare against the files already on disk.
"""

import argparse
import os
import struct
import sys

import numpy as np
import mlx.core as mx

BITS = (2, 3, 4, 5, 6, 8)
GROUPS = (32, 64, 128)
MAGIC = b"MQG1"
DTYPE_F32 = 1
DTYPE_BF16 = 2
SEED = 20240607

# Shapes: the random part of each matrix. Special per-group patterns are appended as extra rows.
# bf16 (the common checkpoint case) gets every pattern, f32 only those in F32_PATTERNS
# (all-equal, zeros, positive / negative max magnitude, range below eps, subnormals, clamped).
BF16_RANDOM_ROWS, BF16_COLS = 3, 256
F32_RANDOM_ROWS, F32_COLS, F32_PATTERNS = 1, 128, (0, 1, 2, 3, 8, 12, 14)


def round_to_bf16(x):
    """Round-to-nearest-even f32 -> bf16, returned as f32 values (exactly representable)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def bf16_bits(x_f32):
    """Top 16 bits of f32 values that are already bf16-representable."""
    u = np.ascontiguousarray(x_f32, dtype=np.float32).view(np.uint32)
    assert np.all((u & 0xFFFF) == 0), "value not representable in bf16"
    return (u >> 16).astype(np.uint16)


def group_patterns(rng, g):
    """Interesting single groups (length g) that exercise every branch of affine quantize."""
    pats = []
    pats.append(np.full(g, 0.75, np.float32))                       # all equal, positive
    pats.append(np.zeros(g, np.float32))                            # all zeros (q0 == 0 path)
    pos = rng.normal(0.0, 0.5, g).astype(np.float32)
    pos[rng.integers(g)] = 3.0                                      # max magnitude is positive
    pats.append(pos)
    neg = rng.normal(0.0, 0.5, g).astype(np.float32)
    neg[rng.integers(g)] = -3.0                                     # max magnitude is negative
    pats.append(neg)
    pats.append(np.full(g, -1.3, np.float32))                       # all equal, negative
    pats.append(rng.uniform(0.5, 2.0, g).astype(np.float32))        # all positive (min > 0)
    pats.append(rng.uniform(-2.0, -0.25, g).astype(np.float32))     # all negative (max < 0)
    sym = rng.uniform(-1.0, 1.0, g).astype(np.float32)
    sym[0], sym[1] = 1.0, -1.0                                      # |min| == |max| (mask false)
    pats.append(sym)
    pats.append(rng.normal(0.0, 1e-9, g).astype(np.float32))        # range below eps: scale = 1e-7
    one = np.zeros(g, np.float32)
    one[g // 3] = -0.4                                              # single non-zero entry
    pats.append(one)
    pats.append((rng.integers(-8, 8, g) * 0.25).astype(np.float32))  # coarse grid: ties in rint
    pats.append((rng.normal(0.0, 1.0, g) * 300.0).astype(np.float32))  # large magnitudes
    sub = rng.normal(0.0, 1.0, g).astype(np.float32) * np.float32(1e-39)  # f32 subnormals
    pats.append(sub)
    mixed = rng.normal(0.0, 0.02, g).astype(np.float32)
    mixed[rng.integers(g)] = 0.9                                    # one outlier, rest tiny
    pats.append(mixed)
    clamp = np.zeros(g, np.float32)
    clamp[0], clamp[1] = -1.0, 0.99     # s = edge/q0 shrinks: 0.99 -> code n_bins+1, clamped
    pats.append(clamp)
    return pats


def build_matrix(rng, random_rows, cols, g, pattern_subset=None):
    rand = rng.normal(0.0, 1.0, (random_rows, cols)).astype(np.float32)
    rand[0] *= 0.05                                                  # weight-like magnitudes
    pats = group_patterns(rng, g)
    if pattern_subset is not None:
        pats = [pats[i] for i in pattern_subset]
    per_row = cols // g
    n_rows = (len(pats) + per_row - 1) // per_row
    extra = np.zeros((n_rows, cols), np.float32)
    for i in range(n_rows * per_row):
        p = pats[i] if i < len(pats) else rng.normal(0.0, 0.1, g).astype(np.float32)
        extra[i // per_row, (i % per_row) * g:(i % per_row + 1) * g] = p
    return np.concatenate([rand, extra], axis=0)


def to_numpy_raw(a, dtype_code):
    """mx array -> numpy array of the raw little-endian element bits."""
    if dtype_code == DTYPE_BF16:
        return np.array(mx.view(a, mx.uint16)).astype("<u2")
    return np.array(a).astype("<f4")


def make_case(bits, g, dtype_code):
    # Seed depends on the case so that each file is reproducible on its own.
    rng = np.random.default_rng([SEED, bits, g, dtype_code])
    if dtype_code == DTYPE_BF16:
        w = round_to_bf16(build_matrix(rng, BF16_RANDOM_ROWS, BF16_COLS, g))
        wx = mx.array(w).astype(mx.bfloat16)
        raw_in = bf16_bits(w).astype("<u2")
    else:
        w = build_matrix(rng, F32_RANDOM_ROWS, F32_COLS, g, F32_PATTERNS)
        wx = mx.array(w)
        raw_in = w.astype("<f4")
    rows, cols = w.shape
    wq, scales, biases = mx.quantize(wx, group_size=g, bits=bits, mode="affine")
    deq = mx.dequantize(wq, scales, biases, group_size=g, bits=bits, mode="affine")
    mx.eval(wq, scales, biases, deq)
    assert wq.dtype == mx.uint32 and wq.shape == (rows, cols * bits // 32)
    assert scales.dtype == wx.dtype and scales.shape == (rows, cols // g)
    assert deq.dtype == wx.dtype and deq.shape == (rows, cols)
    # The input must survive the round trip through mlx unchanged.
    assert np.array_equal(to_numpy_raw(wx, dtype_code), raw_in)
    blob = bytearray(MAGIC)
    blob += struct.pack("<5I", bits, g, rows, cols, dtype_code)
    blob += raw_in.tobytes()
    blob += np.array(wq).astype("<u4").tobytes()
    blob += to_numpy_raw(scales, dtype_code).tobytes()
    blob += to_numpy_raw(biases, dtype_code).tobytes()
    blob += to_numpy_raw(deq, dtype_code).tobytes()
    return bytes(blob)


def case_name(bits, g, dtype_code):
    return "affine_b%d_g%d_%s.bin" % (bits, g, "bf16" if dtype_code == DTYPE_BF16 else "f32")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "tests", "data", "quant"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--check", action="store_true", help="compare with existing files, write nothing")
    args = ap.parse_args()
    mx.set_default_device(mx.cpu)
    os.makedirs(args.out, exist_ok=True)
    total, mismatched = 0, []
    for dtype_code in (DTYPE_BF16, DTYPE_F32):
        for bits in BITS:
            for g in GROUPS:
                blob = make_case(bits, g, dtype_code)
                path = os.path.join(args.out, case_name(bits, g, dtype_code))
                total += len(blob)
                if args.check:
                    with open(path, "rb") as f:
                        if f.read() != blob:
                            mismatched.append(path)
                else:
                    with open(path, "wb") as f:
                        f.write(blob)
    print("mlx %s, numpy %s: %d files, %d bytes%s" % (
        mx.__version__, np.__version__, 2 * len(BITS) * len(GROUPS), total,
        " (check mode)" if args.check else ""))
    if mismatched:
        print("MISMATCH:\n  " + "\n  ".join(mismatched))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
