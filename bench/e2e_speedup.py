#!/usr/bin/env python3
"""End-to-end speed of speculation: `mtplx run` with MTP at each depth against `--no-mtp`, on
held-out code prompts, and (optionally) llama.cpp's plain decoding on the same weights.

For every prompt of bench/prompts/heldout_code.jsonl and every sampler (the pack's: T 0.6 /
top-p 0.95 / top-k 20; and greedy), each mode runs once per round, the modes interleaved so that
drift on a shared machine hits them alike:

    mtplx run --raw PROMPT --max-tokens N --ignore-eos --json --threads T [--no-mtp | --depth D]

(`--depth` pins the depth; `adaptive` is the default, where the depth follows acceptance).
Decode tok/s is what `run --json` reports (prefill excluded). Round r samples with seed r (every
mode of a round alike): sampled text, and with it acceptance, varies a lot from seed to seed, so
more rounds are more texts, not the same texts timed again. For each mode the script reports
the median over prompts and rounds of tok/s, and the median of the per-prompt ratio to plain
decoding measured in the same round. With --llama-bench and --gguf, `llama-bench -p 0 -n N -t T`
runs between rounds (llama.cpp's plain decoding; its tg rate).

With --llama-server and --gguf, llama.cpp's server runs the same prompts in the same rounds
(`/completion`, same sampler and token count, ignore_eos, no prompt cache; decode tok/s is its
timings.predicted_per_second): plain decoding (`llama-AR`), and with --gguf-mtp (the MTP head
exported by its converter's `--mtp`) its own MTP drafting at each depth
(`--spec-type draft-mtp --spec-draft-n-max D`, `llama-D<n>`).

Usage:
  bench/e2e_speedup.py --model /tmp/w8 [--mtplx build/bin/mtplx] [--threads 2]
      [--depths 1,2,3] [--max-tokens 256] [--rounds 1] [--prompts 5]
      [--llama-bench PATH --gguf FILE] [--llama-server PATH --gguf FILE [--gguf-mtp FILE]]
      [--json-out FILE]
"""
import json
import os
import statistics
import subprocess
import sys
import urllib.request

from bench_util import free_port, model_parser, wait_healthy

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLERS = {"T0.6": ["--temperature", "0.6", "--top-p", "0.95", "--top-k", "20"],
            "greedy": ["--temperature", "0"]}


def run_mtplx(args, prompt, mode, sampler, seed):
    extra = ["--no-mtp"] if mode == "AR" else [] if mode == "adaptive" else ["--depth", mode[1:]]
    cmd = [args.mtplx, "run", "--raw", prompt, "--model", args.model, "--max-tokens",
           str(args.max_tokens), "--ignore-eos", "--json", "--quiet", "--seed", str(seed),
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


LLAMA_SAMPLERS = {"T0.6": {"temperature": 0.6, "top_p": 0.95, "top_k": 20},
                  "greedy": {"temperature": 0.0, "top_k": 1}}


class LlamaServer:
    """One llama-server process for the whole run (plain, or MTP drafting at one depth)."""

    def __init__(self, args, draft_max=None):
        self.port = free_port()
        cmd = [args.llama_server, "-m", args.gguf, "-t", str(args.threads), "-c", "4096",
               "-np", "1", "--port", str(self.port), "--host", "127.0.0.1", "--no-webui"]
        if draft_max:
            cmd += ["--spec-type", "draft-mtp", "-md", args.gguf_mtp, "--spec-draft-n-max",
                    str(draft_max), "--spec-draft-n-min", "0"]
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        wait_healthy(self.port, self.proc, "llama-server " + " ".join(cmd[1:4]))

    def complete(self, args, prompt, sampler):
        body = {"prompt": prompt, "n_predict": args.max_tokens, "ignore_eos": True, "seed": 1,
                "cache_prompt": False, **LLAMA_SAMPLERS[sampler]}
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/completion",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            t = json.load(r)["timings"]
        drafted, accepted = t.get("draft_n"), t.get("draft_n_accepted")
        return {"tok_s": t["predicted_per_second"], "tokens_per_cycle": None,
                "acceptance": accepted / drafted if drafted else None, "mean_depth": None}

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def main():
    ap = model_parser(__doc__)
    ap.add_argument("--depths", default="1,2,3")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=5, help="how many prompts of the file")
    ap.add_argument("--prompt-file", default=os.path.join(HERE, "prompts", "heldout_code.jsonl"))
    ap.add_argument("--samplers", default="T0.6,greedy",
                    help="comma list of " + ", ".join(SAMPLERS))
    ap.add_argument("--llama-bench")
    ap.add_argument("--gguf")
    ap.add_argument("--llama-server")
    ap.add_argument("--gguf-mtp", help="llama.cpp's MTP head GGUF (convert_hf_to_gguf.py --mtp)")
    ap.add_argument("--llama-depths", default="1,2,3")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    prompts = [json.loads(line)["text"] for line in open(args.prompt_file)][:args.prompts]
    mtplx_modes = ["AR"] + [f"D{d}" for d in args.depths.split(",")] + ["adaptive"]
    servers = {}
    if args.llama_server and args.gguf:
        servers["llama-AR"] = LlamaServer(args)
        if args.gguf_mtp:
            for d in args.llama_depths.split(","):
                servers[f"llama-D{d}"] = LlamaServer(args, int(d))
    modes = mtplx_modes + list(servers)
    samplers = args.samplers.split(",")
    unknown = [s for s in samplers if s not in SAMPLERS]
    if unknown:
        ap.error(f"--samplers: unknown {', '.join(unknown)} (choose from {', '.join(SAMPLERS)})")
    results = {s: {m: [] for m in modes} for s in samplers}
    ratios = {s: {m: [] for m in modes} for s in samplers}
    llama = []
    for r in range(args.rounds):
        for sampler in samplers:
            for i, prompt in enumerate(prompts):
                row = {m: run_mtplx(args, prompt, m, sampler, r + 1) for m in mtplx_modes}
                row.update({m: srv.complete(args, prompt, sampler) for m, srv in servers.items()})
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
    if servers:
        for srv in servers.values():
            srv.close()
        for sampler in samplers:
            entries = summary["samplers"][sampler]
            ours = max(entries[m]["tok_s"] for m in mtplx_modes)
            theirs = max(entries[m]["tok_s"] for m in servers)
            summary["samplers"][sampler]["x_llama_best"] = ours / theirs
            print(f"  {sampler}: mtplx best {ours:.1f} tok/s vs llama.cpp best {theirs:.1f} "
                  f"tok/s: {ours / theirs:.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
