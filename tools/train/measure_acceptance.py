#!/usr/bin/env python3
"""Measures MTP acceptance and speedup of a model with mtplx itself, on held-out code.

For each of --prompts snippets cut from the held-out code files (data/corpus/code.heldout.jsonl:
whole files never seen in training), runs

    mtplx run --raw SNIPPET --temperature 0.6 --top-p 0.95 --top-k 20 --depth D --json

and pools the raw per-depth counts (proposed_by_depth / accepted_by_depth) over all runs:
conditional acceptance at depth d = accepted_d / proposed_d. Then runs the same prompts with
--no-mtp and reports decode tok/s of both (the speedup of speculation on this machine).

Usage: measure_acceptance.py --model DIR [--mtplx build/bin/mtplx] [--prompts 24]
       [--max-tokens 128] [--depths 1,2,3] [--threads 0] [--repeats 1] [--temperature 0.6]
       [--presence-penalty 0] [--json-out FILE]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def snippets(path, count, seed, max_chars):
    """Cuts `count` prompts from the held-out files: a few lines ending at a line break,
    starting at a random line of a random file."""
    docs = [json.loads(line)["text"] for line in open(path, encoding="utf-8")]
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        lines = rng.choice(docs).split("\n")
        if len(lines) < 40:
            continue
        start = rng.randrange(0, len(lines) - 30)
        text = "\n".join(lines[start:start + rng.randrange(6, 20)]) + "\n"
        if text.strip():
            out.append(text[-max_chars:])
    return out


def run(mtplx, model, prompt, extra, threads):
    cmd = [mtplx, "run", "--raw", prompt, "--model", model, "--json", "--quiet",
           "--threads", str(threads)] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mtplx failed: {' '.join(cmd[:3])} ...: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build", "bin", "mtplx"))
    ap.add_argument("--heldout", default=os.path.join(HERE, "data", "corpus", "code.heldout.jsonl"))
    ap.add_argument("--prompts", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--depths", default="1,2,3")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=1, help="interleaved passes; median ratios")
    ap.add_argument("--json-out")
    ap.add_argument("--temperature", type=float, default=0.6,
                    help="0 = greedy (default 0.6: the sampler of the acceptance target)")
    ap.add_argument("--presence-penalty", type=float, default=0.0,
                    help="for every run (default 0: the sampler of the acceptance target)")
    ap.add_argument("--extra", default="", help="more mtplx run flags for the speculative runs, "
                    "e.g. '--draft-vocab 0'")
    args = ap.parse_args()

    prompts = snippets(args.heldout, args.prompts, args.seed, 1500)
    sampler = ["--temperature", str(args.temperature), "--top-p", "0.95", "--top-k", "20",
               "--presence-penalty", str(args.presence_penalty), "--max-tokens", str(args.max_tokens)]
    report = {"command": "tools/train/measure_acceptance.py " + " ".join(sys.argv[1:]), "model": args.model, "prompts": len(prompts), "max_tokens": args.max_tokens,
              "sampler": {"temperature": args.temperature, "top_p": 0.95, "top_k": 20,
                          "presence_penalty": args.presence_penalty}, "depths": {}}

    def decode_rate(runs):
        tokens = sum(r["stats"]["tokens"] for r in runs)
        seconds = sum(r["stats"]["tokens"] / r["stats"]["tok_s"] for r in runs if r["stats"]["tok_s"] > 0)
        return tokens / seconds if seconds else 0.0

    # Interleaved per prompt (plain, then each depth), so that a slow spell of this shared machine
    # hits every mode alike; the whole pass is repeated --repeats times. Acceptance does not move
    # between repeats (same seeds, same tokens); speeds do, so each repeat's ratio is kept and the
    # median reported.
    depths = [int(d) for d in args.depths.split(",")]
    passes = []
    for rep in range(args.repeats):
        plain, by_depth = [], {d: [] for d in depths}
        for i, p in enumerate(prompts):
            plain.append(run(args.mtplx, args.model, p, sampler + ["--no-mtp", "--seed", str(i)],
                             args.threads))
            for depth in depths:
                by_depth[depth].append(
                    run(args.mtplx, args.model, p,
                        sampler + ["--depth", str(depth), "--seed", str(i), "--skip-mtp-check"] +
                        args.extra.split(), args.threads))
        passes.append((plain, by_depth))
        rates = ", ".join(f"depth {d} {decode_rate(by_depth[d]) / decode_rate(plain):.2f}x"
                          for d in depths)
        print(f"pass {rep + 1}: plain {decode_rate(plain):.1f} tok/s, {rates}", flush=True)
    plain_rates = [decode_rate(plain) for plain, _ in passes]
    report["repeats"] = args.repeats
    report["threads"] = args.threads
    report["plain_tok_s"] = statistics.median(plain_rates)
    print(f"plain decoding: {report['plain_tok_s']:.1f} tok/s over {len(prompts)} prompts "
          f"(median of {args.repeats})", flush=True)
    for depth in depths:
        runs = passes[0][1][depth]
        proposed = [0] * depth
        accepted = [0] * depth
        cycles = 0
        for r in runs:
            st = r["stats"]
            if st.get("mode") != "MTP":
                sys.exit(f"speculation did not run: {r.get('notice', st)}")
            for d in range(depth):
                proposed[d] += st["proposed_by_depth"][d]
                accepted[d] += st["accepted_by_depth"][d]
            cycles += st["cycles"]
        conditional = [a / p if p else 0.0 for a, p in zip(accepted, proposed)]
        tokens = sum(r["stats"]["tokens"] for r in runs)
        speedups = [decode_rate(by_depth[depth]) / rate if rate else 0.0
                    for (_, by_depth), rate in zip(passes, plain_rates)]
        entry = {"acceptance_by_depth": conditional,
                 "acceptance_unconditional": [a / cycles if cycles else 0.0 for a in accepted],
                 "proposed_by_depth": proposed, "accepted_by_depth": accepted,
                 "mean_tokens_per_cycle": tokens / cycles if cycles else 0.0,
                 "tok_s": statistics.median(decode_rate(by_depth[depth]) for _, by_depth in passes),
                 "speedups_vs_plain": speedups,
                 "speedup_vs_plain": statistics.median(speedups)}
        report["depths"][str(depth)] = entry
        print(f"depth {depth}: acceptance {', '.join(f'{a:.3f}' for a in conditional)} "
              f"(counts {accepted}/{proposed}), {entry['mean_tokens_per_cycle']:.2f} tokens/cycle, "
              f"{entry['tok_s']:.1f} tok/s = {entry['speedup_vs_plain']:.2f}x plain "
              f"(passes: {', '.join(f'{x:.2f}' for x in speedups)})", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
