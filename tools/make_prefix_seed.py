#!/usr/bin/env python3
"""Writes small valid prefix-cache files (engine/prefix_file.h) from the format description
alone, as seeds for fuzz/prefix_file_fuzz (tests/data/fuzz/prefix_file_fuzz/). An independent
writer: the C++ reader accepting these files checks the format is what the header says."""
import os
import struct
import sys

MASK = (1 << 64) - 1


def checksum(data: bytes) -> int:
    state = 0x243F6A8885A308D3
    padded = data + b"\0" * (-len(data) % 8)
    for (word,) in struct.iter_unpack("<Q", padded):
        state ^= word
        state = (((state << 29) | (state >> 35)) & MASK) * 0x9E3779B97F4A7C15 & MASK
    return state ^ (state >> 31)


def array(fmt, values):
    return struct.pack("<Q", len(values)) + struct.pack(f"<{len(values)}{fmt}", *values)


def kv_bytes(values, kv_type):
    """A KV cache array: its length in bytes, then f32 (type 0) or bf16 (type 1) elements."""
    if kv_type == 0:
        data = struct.pack(f"<{len(values)}f", *values)
    else:  # bf16: the high half of each f32 (these values are exact in bf16)
        data = b"".join(struct.pack("<f", v)[2:] for v in values)
    return struct.pack("<Q", len(data)) + data


def snapshot(position, heads, head_dim, capacity, kv_type=0, delta_layers=0):
    out = struct.pack("<qQ", position, 1) + struct.pack("<qQ", capacity, kv_type)
    n = heads * capacity * head_dim
    out += kv_bytes([0.25 * (i % 13) for i in range(n)], kv_type)
    out += kv_bytes([-0.5 * (i % 7) for i in range(n)], kv_type)
    out += struct.pack("<Q", delta_layers)
    return out


def prefix_file(tokens, checkpoints, with_mtp, trunk_rows=None):
    heads, head_dim, hidden = 2, 4, 8
    body = array("i", tokens)
    for _ in checkpoints:
        body += array("f", [0.125 * i for i in range(hidden)])
        body += struct.pack("<Q", 1) + array("f", [1.0] * 6) + array("f", [0.5] * 10)
    rows = len(tokens) if trunk_rows is None else trunk_rows
    body += snapshot(len(tokens), heads, head_dim, rows)
    if with_mtp:  # the drafter's cache in bf16, so the seeds cover both types
        body += snapshot(len(tokens) - 1, heads, head_dim, len(tokens) - 1, kv_type=1)
    fingerprint = b"seed"
    header = (struct.pack("<IQ", 2, len(fingerprint)) + fingerprint +
              struct.pack("<BBQ", int(with_mtp), 0, 1000) + array("q", checkpoints))
    data = b"MTPLXPFX" + header + body
    return data + struct.pack("<Q", checksum(data))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/fuzz/prefix_file_fuzz"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "with_mtp"), "wb") as f:
        f.write(prefix_file(list(range(5, 17)), [6, 12], True))
    with open(os.path.join(out, "trunk_only"), "wb") as f:
        f.write(prefix_file([3, 1, 4, 1, 5], [5], False))
    with open(os.path.join(out, "empty-array"), "wb") as f:
        f.write(prefix_file([3, 1, 4, 1, 5], [5], False, trunk_rows=0))


if __name__ == "__main__":
    main()
