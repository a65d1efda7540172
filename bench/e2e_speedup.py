#!/usr/bin/env python3
"""End-to-end speed of speculation: `mtplx run` with MTP at each depth against `--no-mtp`, on
held-out code prompts, and (optionally) llama.cpp's plain decoding on the same weights.

For every prompt of bench/prompts/heldout_code.jsonl and every sampler (the pack's: T 0.6 /
top-p 0.95 / top-k 20; and greedy), each mode runs once per round, the modes interleaved so that
drift on a shared machine hits them alike:

    mtplx run --raw PROMPT --max-tokens N --ignore-eos --json --threads T [--no-mtp | --depth D]

(`--depth` pins the depth; `adaptive` is the default, where the depth follows acceptance).
Decode tok/s is what `run --json` reports (prefill excluded). For each mode the script reports
the median over prompts and rounds of tok/s, and the median of the per-prompt ratio to plain
decoding measured in the same round. With --llama-bench and --gguf, `llama-bench -p 0 -n N -t T`
runs between rounds (llama.cpp's plain decoding; its tg rate).

Usage:
  bench/e2e_speedup.py --model /tmp/w8 [--mtplx build/bin/mtplx] [--threads 2]
      [--depths 1,2,3] [--max-tokens 256] [--rounds 1] [--prompts 5]
      [--llama-bench PATH --gguf FILE] [--json-out FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SAMPLERS = {"T0.6": ["--temperature", "0.6", "--top-p", "0.95", "--top-k", "20"],
            "greedy": ["--temperature", "0"]}


def run_mtplx(args, prompt, mode, sampler):
    extra = ["--no-mtp"] if mode == "AR" else [] if mode == "adaptive" else ["--depth", mode[1:]]
    cmd = [args.mtplx, "run", "--raw", prompt, "--model", args.model, "--max-tokens",
           str(args.max_tokens), "--ignore-eos", "--json", "--quiet", "--seed", "1",
           "--threads", str(args.threads)] + SAMPLERS[sampler] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mtplx failed ({mode}, {sampler}): {r.stderr.strip()[-1000:]}")
    stats = json.loads(r.stdout)["stats"]
    return {"tok_s": stats["tok_s"], "tokens_per_cycle": stats.get("mean_tokens_per_cycle"),
            "acceptance": stats.get("acceptance_by_depth"), "mean_depth": stats.get("mean_depth")}


def run_llama(args):
    cmd = [args.llama_bench, "-m", args.gguf, "-p", "0", "-n", str(args.max_tokens), "-t",
           str(args.threads), "-r", "1", "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"llama-bench failed: {r.stderr.strip()[-1000:]}")
    rows = json.loads(r.stdout)
    return rows[0]["avg_ts"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build", "bin", "mtplx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--depths", default="1,2,3")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=5, help="how many prompts of the file")
    ap.add_argument("--prompt-file", default=os.path.join(HERE, "prompts", "heldout_code.jsonl"))
    ap.add_argument("--samplers", default="T0.6,greedy")
    ap.add_argument("--llama-bench")
    ap.add_argument("--gguf")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    prompts = [json.loads(line)["text"] for line in open(args.prompt_file)][:args.prompts]
    modes = ["AR"] + [f"D{d}" for d in args.depths.split(",")] + ["adaptive"]
    samplers = args.samplers.split(",")
    results = {s: {m: [] for m in modes} for s in samplers}
    ratios = {s: {m: [] for m in modes} for s in samplers}
    llama = []
    for r in range(args.rounds):
        for sampler in samplers:
            for i, prompt in enumerate(prompts):
                row = {m: run_mtplx(args, prompt, m, sampler) for m in modes}
                for m in modes:
                    results[sampler][m].append(row[m])
                    ratios[sampler][m].append(row[m]["tok_s"] / row["AR"]["tok_s"])
                print(f"round {r + 1} {sampler} prompt {i + 1}: " +
                      "  ".join(f"{m} {row[m]['tok_s']:.1f}" for m in modes), flush=True)
        if args.llama_bench and args.gguf:
            llama.append(run_llama(args))
            print(f"round {r + 1} llama.cpp tg{args.max_tokens}: {llama[-1]:.1f} tok/s", flush=True)
    summary = {"model": args.model, "threads": args.threads, "max_tokens": args.max_tokens,
               "prompts": len(prompts), "rounds": args.rounds, "samplers": {}}
    print(f"\n{'sampler':8} {'mode':9} {'tok/s':>8} {'x plain':>8} {'tokens/cycle':>13} "
          f"{'mean depth':>11}")
    for sampler in samplers:
        summary["samplers"][sampler] = {}
        for m in modes:
            tok_s = statistics.median(x["tok_s"] for x in results[sampler][m])
            ratio = statistics.median(ratios[sampler][m])
            tpc = [x["tokens_per_cycle"] for x in results[sampler][m] if x["tokens_per_cycle"]]
            depth = [x["mean_depth"] for x in results[sampler][m] if x["mean_depth"] is not None]
            entry = {"tok_s": tok_s, "x_plain": ratio,
                     "tokens_per_cycle": statistics.median(tpc) if tpc else None,
                     "mean_depth": statistics.median(depth) if depth else None}
            summary["samplers"][sampler][m] = entry
            print(f"{sampler:8} {m:9} {tok_s:8.1f} {ratio:7.2f}x "
                  f"{entry['tokens_per_cycle'] or 0:13.2f} {entry['mean_depth'] or 0:11.2f}")
    if llama:
        summary["llama_cpp_tg"] = statistics.median(llama)
        print(f"llama.cpp plain decoding (tg{args.max_tokens}): {summary['llama_cpp_tg']:.1f} tok/s")
        for sampler in samplers:
            best = max(v["tok_s"] for v in summary["samplers"][sampler].values())
            print(f"  mtplx best at {sampler}: {best / summary['llama_cpp_tg']:.2f}x llama.cpp")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
