#!/usr/bin/env python3
"""Writes MODEL_CARD.md for the bundled pack from the files the pipeline produced.

Inputs (all written by earlier stages of run_all.sh):
  runs/RUN/summary.json        train.py: parameters, steps, tokens, training seconds, held-out evals
  runs/RUN/verify.json         verify_export.py: logits vs transformers (optional)
  runs/RUN/acceptance.json     measure_acceptance.py: acceptance and speedup measured with mtplx
  runs/RUN/pack_perplexity.json  pack_perplexity.py: held-out perplexity of the pack, with mtplx
  runs/RUN/export_perplexity.json  the same for the bf16 export (runs/RUN/hf), f32 activations
  data/corpus/manifest.json    prepare_corpus.py: sources, Debian packages, licences, token counts
  PACK/mtplx_runtime.json      mtplx convert

Usage: write_model_card.py --run NAME --pack models/default
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, required=True):
    if not os.path.exists(path):
        if required:
            raise SystemExit(f"missing {path}")
        return None
    with open(path) as f:
        return json.load(f)


def data_table(manifest):
    rows = ["| source | Debian package | licence | train tokens | held-out tokens |",
            "| --- | --- | --- | --- | --- |"]
    for name, s in manifest["sources"].items():
        tokens = s.get("tokens") or {}
        rows.append(f"| {name} | {s.get('package') or '—'} {s.get('version') or ''} | {s.get('licence', '—')} | "
                    f"{tokens.get('train', 0):,} | {tokens.get('heldout', 0):,} |")
    return "\n".join(rows)


def eval_table(final):
    rows = ["| held-out set | cross-entropy (nats/token) | perplexity | MTP (token after next) cross-entropy |",
            "| --- | --- | --- | --- |"]
    for name, v in final.items():
        if isinstance(v, dict) and "ppl" in v:
            rows.append(f"| {name} | {v['ce']:.3f} | {v['ppl']:.1f} | {v['mtp_ce']:.3f} |")
    return "\n".join(rows)


def penalty_note(runtime):
    """The pack's presence penalty, and why it has one."""
    penalty = runtime.get("sampler", {}).get("presence_penalty")
    if not penalty:
        return ""
    return (f" with presence penalty {penalty} (without one this small model often falls into a "
            "loop of one token at T 0.6; `--presence-penalty 0` turns it off)")


def sampler_label(acc):
    sampler = acc.get("sampler", {})
    t = sampler.get("temperature", 0.6)
    if t == 0:
        return "greedy (T 0)"
    label = f"T {t} / top-p {sampler.get('top_p', 0.95)} / top-k {sampler.get('top_k', 20)}"
    if sampler.get("presence_penalty"):
        label += f", presence penalty {sampler['presence_penalty']}"
    return label


def acceptance_section(runs):
    """runs: (role, report of measure_acceptance.py) pairs; the first is the acceptance target."""
    runs = [(role, acc) for role, acc in runs if acc]
    if not runs:
        return "Not measured yet."
    first = runs[0][1]
    threads = first.get("threads", 0)
    thread_text = "one thread" if threads == 1 else f"{threads or 'all'} threads"
    repeats = first.get("repeats", 1)
    lines = [f"Measured with `tools/train/measure_acceptance.py` (mtplx itself, `mtplx run --raw`): "
             f"{first['prompts']} snippets of the held-out Python files, {first['max_tokens']} new "
             f"tokens each, acceptance pooled over all runs; "
             f"{thread_text}, "
             f"{repeats} interleaved pass{'es' if repeats > 1 else ''} (plain and each depth per "
             "prompt), the median ratio and each pass's.",
             "",
             "| sampler | depth | conditional acceptance by depth | tokens per cycle | vs `--no-mtp` |",
             "| --- | --- | --- | --- | --- |"]
    for role, acc in runs:
        for depth, e in sorted(acc["depths"].items(), key=lambda kv: int(kv[0])):
            passes = e.get("speedups_vs_plain", [e["speedup_vs_plain"]])
            label = f"{sampler_label(acc)} ({role})" if role else sampler_label(acc)
            lines.append(f"| {label} | {depth} | "
                         f"{', '.join(f'{a:.3f}' for a in e['acceptance_by_depth'])} | "
                         f"{e['mean_tokens_per_cycle']:.2f} | {e['speedup_vs_plain']:.2f}x "
                         f"({', '.join(f'{x:.2f}' for x in passes)}) |")
    lines += ["", f"Plain decoding ran at {first['plain_tok_s']:,.0f} tok/s (median) in the first "
              "measurement."]
    best = max(e["speedup_vs_plain"] for _, acc in runs for e in acc["depths"].values())
    sampled = max(e["speedup_vs_plain"] for e in first["depths"].values())
    why = ("The head drafts well (acceptance above), but the whole pack is about 11 MB and sits in "
           "the CPU's 32 MB L3 cache, so a decode step is bound by arithmetic per row, not by "
           "reading weights from memory. On one thread, at the snippets' 400-560 tokens of context "
           "(`mtplx run --json` phase timers): a depth-1 cycle spends 310 µs verifying 2 rows, "
           "64 µs drafting (one decoder layer plus the 4,096-id 4-bit draft head), 18 µs accepting "
           "and 5 µs committing, about 1.7 plain steps of 230 µs, for 1.6-1.9 tokens. The second "
           "verify row costs its own int8 dot products (the panel kernel is at the core's "
           "`vpdpbusd` rate from two rows on), its DeltaNet state updates, attention and norms. "
           "Models that do not fit in cache stream their weights from memory, and there extra "
           "verify rows are nearly free (see docs/performance.md).")
    if sampled < 1.05:
        lines += ["", f"**Sampled speculation is about even with plain decoding on this model** "
                  f"({sampled:.2f}x at T 0.6; {best:.2f}x at best, greedy, where more drafts are "
                  "accepted and no sampling is done). " + why]
    elif best < 1.2:
        lines += ["", f"**Speculation gains only a little on this model** ({best:.2f}x at best). " + why]
    lines += ["", "On two threads the ratio is not reproducible here: a 2-thread run of the same "
              "binary is either faster than one thread or about 1.5x slower, depending on where "
              "the host places the two vCPUs (two concurrent 1-thread runs each keep full speed, "
              "so it is the cross-core hand-offs of the thread pool that slow down)."]
    for _, acc in runs:
        for note in acc.get("notes", []):
            lines += ["", note]
    lines.append("")
    commands = "; ".join(f"`{acc.get('command')}`" for _, acc in runs)
    lines.append(f"Commands: {commands}. Decode speeds come from one shared 2-core machine and drift "
                 "between runs; the ratios within one run are what to compare.")
    return "\n".join(lines)


def distill_section(report):
    """The MTP head's self-distillation (distill_mtp.py), when the run did it."""
    if not report:
        return ""
    a, b, args = report["after"], report["before"], report["args"]
    return f"""
### MTP head distilled on the trunk

After the joint training, the MTP head was trained {args['steps']:,} more steps (batch {args['batch']} x
{args['seq']} tokens, AdamW, peak learning rate {args['lr']}, cosine) on the trunk's own
distributions: KL(p_trunk || q_mtp) for the token after next, the trunk frozen at this pack's
8-bit weights (`tools/train/distill_mtp.py`). Speculation accepts a draft with probability
sum min(p, q), so a head that imitates the trunk is accepted more often than one that imitates
the text. On {args['eval_windows']} held-out code windows (PyTorch, f32): KL {b['kl']:.3f} -> {a['kl']:.3f} nats,
expected acceptance at T 0.6 / top-p 0.95 / top-k 20 {b['accept_t06']:.3f} -> {a['accept_t06']:.3f},
greedy agreement {b['greedy_agree']:.3f} -> {a['greedy_agree']:.3f}.
"""


def chained_section(legs):
    """The chained-step legs (distill_mtp.py --unroll K), when the run did them."""
    legs = [leg for leg in legs if leg]
    if not legs:
        return ""
    first, last = legs[0]["before"], legs[-1]["after"]
    steps = "\nthen ".join(f"{leg['args']['steps']:,} steps at peak learning rate {leg['args']['lr']}"
                            for leg in legs)
    args = legs[0]["args"]
    rows = ["| draft step | expected acceptance T 0.6 before -> after | greedy agreement before -> after |",
            "| --- | --- | --- |"]
    for k, suffix in enumerate(("", "_2", "_3")):
        if "accept_t06" + suffix not in last:
            break
        rows.append(f"| {k + 1} | {first['accept_t06' + suffix]:.3f} -> {last['accept_t06' + suffix]:.3f} | "
                    f"{first['greedy_agree' + suffix]:.3f} -> {last['greedy_agree' + suffix]:.3f} |")
    table = "\n".join(rows)
    return f"""
### Chained draft steps

mtplx drafts depth 2 and 3 from the head's own output (its normed output of the step before and
the draft token, one position on, attending over the history and the chain's earlier steps),
which the training above never showed it. The head was then trained on {args['unroll']} chained steps
as mtplx runs them (`distill_mtp.py --unroll {args['unroll']}`, the text's tokens standing in for the
drafts; step k's KL weighted {args['step_decay']}^(k-1); batch {args['batch']} x {args['seq']}), {steps}.
On {args['eval_windows']} held-out code windows (PyTorch, f32, teacher-forced):

{table}
"""


def pack_perplexity_section(report, export):
    """This pack as mtplx runs it, beside the bf16 export with exact activations (same windows)."""
    if not report:
        return ""
    rows = [f"Held-out perplexity with mtplx (`tools/train/pack_perplexity.py`, {report['windows']} "
            f"windows of {report['window']} tokens per set): this pack with "
            f"{report['activations']} activations, against the bf16 export with "
            f"{(export or {}).get('activations', '-')} activations.", "",
            "| held-out set | this pack | bf16 export |", "| --- | --- | --- |"]
    for name, v in report["sets"].items():
        ref = (export or {}).get("sets", {}).get(name)
        rows.append(f"| {name} | {v['ppl']:.2f} | {ref['ppl']:.2f} |" if ref else
                    f"| {name} | {v['ppl']:.2f} | - |")
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--pack", required=True)
    ap.add_argument("--runs-dir", default=os.path.join(HERE, "runs"))
    ap.add_argument("--manifest", default=os.path.join(HERE, "data", "corpus", "manifest.json"))
    args = ap.parse_args()
    run_dir = os.path.join(args.runs_dir, args.run)
    summary = load(os.path.join(run_dir, "summary.json"))
    verify = load(os.path.join(run_dir, "verify.json"), required=False)
    acc = [(role, load(os.path.join(run_dir, name), required=False))
           for role, name in (("the acceptance target", "acceptance.json"),
                              ("the pack's default", "acceptance_penalty.json"),
                              ("", "acceptance_greedy.json"))]
    pack_ppl = load(os.path.join(run_dir, "pack_perplexity.json"), required=False)
    export_ppl = load(os.path.join(run_dir, "export_perplexity.json"), required=False)
    distill = load(os.path.join(run_dir, "distill", "distill.json"), required=False)
    chained = [load(os.path.join(run_dir, leg, "distill.json"), required=False)
               for leg in ("distill3", "distill3b")]
    manifest = load(args.manifest)
    runtime = load(os.path.join(args.pack, "mtplx_runtime.json"))
    recipe = runtime.get("forge_provenance", {}).get("forge_recipe", {})
    bits, group = recipe.get("bits", 0), recipe.get("group_size", 64)
    weights = f"MLX affine {bits}-bit (groups of {group}) weights" if bits else "bf16 weights"
    spec = summary["spec"]
    state = summary["state"]
    final = state["evals"][-1] if state.get("evals") else {}
    pack_bytes = sum(os.path.getsize(os.path.join(args.pack, f)) for f in os.listdir(args.pack))
    verify_line = ""
    if verify and "logits" in verify:
        lg = verify["logits"]
        verify_line = (f"\nExport check (`verify_export.py`): mtplx logits vs transformers' own Qwen 3.5 on "
                       f"{lg['rows']} positions, relative error {lg['rel']:.1e}, top-1 agreement "
                       f"{lg['top1_agreement']:.3f}.\n")
    card = f"""# mtplx-qwen35-tiny — the bundled default model

A small language model with the real Qwen 3.5 architecture and its own multi-token-prediction
(MTP) head, trained on this machine from permissively licensed text shipped in Debian packages.
It exists so that a fresh mtplx install runs a real model — one whose MTP head predicts — with
no download. It writes recognisable Python and English; it is far too small to be useful as an
assistant.

## Architecture

Qwen 3.5 dense (`Qwen3_5ForCausalLM` layout): {spec.get('num_hidden_layers')} layers (Gated DeltaNet and gated attention
3:1), hidden {spec.get('hidden_size')}, FFN {spec.get('intermediate_size')}, vocabulary {spec.get('vocab_size')}
(byte-level BPE with the Qwen 3.5 pre-tokenizer and the Qwen added tokens), tied embeddings, plus
one MTP layer trained jointly (loss = next-token CE + {summary['args'].get('mtp_weight')} x token-after-next CE through the
MTP head). {summary['params']:,} parameters. Pack: {weights}, MTP head in `mtp.safetensors`,
{pack_bytes / 1e6:.1f} MB in all; `mtplx_runtime.json` recommends MTP depth {runtime.get('mtp_depth_default')} and samples at
T {runtime.get('sampler', {}).get('temperature')} / top-p {runtime.get('sampler', {}).get('top_p')} / top-k {runtime.get('sampler', {}).get('top_k')}{penalty_note(runtime)}.

## Training

{state['step']:,} steps, {state['tokens']:,} tokens (sequences of {summary['args']['seq']},
batch {summary['args']['batch']}), {state['train_seconds'] / 3600:.1f} hours of training on 1–2 CPU cores (AMD EPYC
Zen 4) with PyTorch; AdamW, peak learning rate {summary['args']['lr']}, cosine schedule. Reproduce
with `tools/train/run_all.sh` (see `tools/train/README.md`).
{distill_section(distill)}{chained_section(chained)}
## Data

Debian packages (`tools/train/prepare_corpus.py` says how each is extracted); held-out splits
are whole documents chosen by hash, never trained on.

{data_table(manifest)}

Licences: Python standard library and documentation — PSF-2.0; Jane Austen, Moby Dick, the
World English Bible — public domain texts (the R packages carrying them are MIT). The chat pairs
are derived from the training splits above.

## Held-out quality

During training (PyTorch, f32):

{eval_table(final)}
{verify_line}
{pack_perplexity_section(pack_ppl, export_ppl)}
## MTP acceptance and speedup

{acceptance_section(acc)}

## Limits

Tiny: facts, reasoning and instructions are beyond it; expect fluent-looking but wrong Python
and prose. Trained on English and Python only.
"""
    with open(os.path.join(args.pack, "MODEL_CARD.md"), "w") as f:
        f.write(card)
    print(f"wrote {os.path.join(args.pack, 'MODEL_CARD.md')}")


if __name__ == "__main__":
    main()
