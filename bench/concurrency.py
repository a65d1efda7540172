#!/usr/bin/env python3
"""Throughput with several agents at once: N concurrent greedy streams against one stream, on
`mtplx serve --parallel N` (MTP on) and, with --llama-server, on llama.cpp's server
(`-np N`, built as bench/e2e_speedup.py's comparison does) with the same weights at matched
bits. Interleaved rounds; aggregate tok/s = completion tokens of all streams / wall time of the
round (short prompts, so nearly all of it is decoding).

Usage:
  bench/concurrency.py --model /tmp/w8 [--mtplx build/bin/mtplx] [--threads 2] [--streams 4]
      [--max-tokens 128] [--rounds 3] [--mtplx-arg=--max-step-rows=8 ...]
      [--llama-server PATH --gguf FILE] [--json-out FILE]
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from bench_util import free_port, model_parser, wait_healthy

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPTS = [json.loads(line)["text"] for line in open(os.path.join(HERE, "prompts",
                                                                   "heldout_code.jsonl"))]


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1200) as r:
        return json.load(r)


class Mtplx:
    name = "mtplx"

    def __init__(self, args):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [args.mtplx, "serve", "--model", args.model, "--port", str(self.port), "--parallel",
             str(args.streams), "--threads", str(args.threads), "--quiet", "--cache-mib", "0"] +
            args.mtplx_arg,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_healthy(self.port, self.proc, "mtplx serve")

    def generate(self, prompt, tokens):
        body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True}
        return post(self.port, "/v1/completions", body)["usage"]["completion_tokens"]


class Llama:
    name = "llama.cpp"

    def __init__(self, args):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [args.llama_server, "-m", args.gguf, "-t", str(args.threads), "-np", str(args.streams),
             "-c", str(4096 * args.streams), "--port", str(self.port), "--host", "127.0.0.1",
             "--no-webui"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_healthy(self.port, self.proc, "llama-server")

    def generate(self, prompt, tokens):
        body = {"prompt": prompt, "n_predict": tokens, "temperature": 0, "ignore_eos": True,
                "cache_prompt": False}
        return post(self.port, "/completion", body)["tokens_predicted"]


def round_tok_s(server, streams, tokens, offset):
    """Aggregate tok/s of `streams` concurrent requests."""
    counts = [0] * streams

    def one(i):
        counts[i] = server.generate(PROMPTS[(offset + i) % len(PROMPTS)], tokens)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.time() - start)


def main():
    ap = model_parser(__doc__)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mtplx-arg", action="append", default=[],
                    help="an extra `mtplx serve` argument (repeatable), e.g. --max-step-rows=8")
    ap.add_argument("--llama-server")
    ap.add_argument("--gguf")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    servers = [Mtplx(args)]
    if args.llama_server and args.gguf:
        servers.append(Llama(args))
    results = {s.name: {"1": [], str(args.streams): []} for s in servers}
    try:
        for r in range(args.rounds):
            for server in servers:
                for n in (1, args.streams):
                    rate = round_tok_s(server, n, args.max_tokens, r * args.streams)
                    results[server.name][str(n)].append(rate)
                    print(f"round {r + 1} {server.name} {n} stream(s): {rate:.1f} tok/s", flush=True)
    finally:
        for server in servers:
            server.proc.terminate()
            server.proc.wait()
    summary = {"model": args.model, "threads": args.threads, "streams": args.streams,
               "max_tokens": args.max_tokens, "rounds": args.rounds, "servers": {}}
    print(f"\n{'server':10} {'1 stream':>10} {str(args.streams) + ' streams':>11} {'ratio':>7}")
    for name, by_n in results.items():
        one = statistics.median(by_n["1"])
        many = statistics.median(by_n[str(args.streams)])
        summary["servers"][name] = {"one_stream_tok_s": one, "streams_tok_s": many,
                                    "ratio": many / one}
        print(f"{name:10} {one:10.1f} {many:11.1f} {many / one:6.2f}x")
    if len(servers) > 1:
        ours = summary["servers"]["mtplx"]["streams_tok_s"]
        theirs = summary["servers"]["llama.cpp"]["streams_tok_s"]
        summary["x_llama"] = ours / theirs
        print(f"mtplx / llama.cpp at {args.streams} streams: {ours / theirs:.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
