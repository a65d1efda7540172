#!/usr/bin/env python3
"""mtplx against llama.cpp on the same checkpoint, at matched bits per weight, on this machine.

Not run in CI. llama.cpp comes from PyPI: the llama-cpp-python source distribution carries a
llama.cpp tree (vendor/llama.cpp) with Qwen 3.5 support; this script builds its llama-bench and
llama-quantize with CMake (once) and converts the checkpoint with its convert_hf_to_gguf.py.

    pip download llama-cpp-python --no-deps -d /tmp/llw && tar xzf /tmp/llw/llama_cpp_python-*.tar.gz -C /tmp/llw
    tools/bench/compare_llama_cpp.py --llama-cpp /tmp/llw/llama_cpp_python-*/vendor/llama.cpp \\
        --hf tools/train/runs/v1/hf --threads 1,2

Pairs (bits per weight): llama.cpp Q8_0 (8.5) with mtplx MLX 8-bit g64 (8.5), Q4_0 (4.5) with
4-bit g64 (4.5). For each pair and thread count it takes, interleaved over --repeats rounds:
  * llama.cpp: `llama-bench -p 512 -n 128` (prompt processing and token generation tok/s);
  * mtplx: `mtplx bench --prefill 512` (plain decode tok/s, prefill tok/s, v(2), c), and
    `mtplx run` on a code prompt with --no-mtp and at --depth 1 (sampled at T 0.6 / top-p 0.95 /
    top-k 20) for the speed speculation really reaches.
Medians are reported; the ratios are mtplx / llama.cpp.

The checkpoint's tokenizer may be one llama.cpp's converter does not know by hash; it uses the
Qwen 3.5 pre-tokenizer regex, so the converter is told "qwen35" (tokenization does not affect
the timings).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROMPT = 'def _parse(self, text):\n    lines = text.split("\\n")\n'

CONVERT = """
import runpy, sys
from pathlib import Path
llama = Path(sys.argv[1])
sys.path.insert(0, str(llama)); sys.path.insert(1, str(llama / "gguf-py"))
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen35"
sys.argv = [str(llama / "convert_hf_to_gguf.py")] + sys.argv[2:]
runpy.run_path(str(llama / "convert_hf_to_gguf.py"), run_name="__main__")
"""


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


def build_llama(src, build):
    if all(os.path.exists(os.path.join(build, "bin", t)) for t in ("llama-bench", "llama-quantize")):
        return
    print(f"building llama-bench and llama-quantize in {build} (once; minutes)", flush=True)
    sh(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"])
    sh(["ninja", "-C", build, "llama-bench", "llama-quantize"])


def prepare(args, work):
    """GGUF Q8_0 / Q4_0 and mtplx 8-bit / 4-bit packs of the checkpoint, in `work`."""
    f16 = os.path.join(work, "model-f16.gguf")
    if not os.path.exists(f16):
        script = os.path.join(work, "convert.py")
        with open(script, "w") as f:
            f.write(CONVERT)
        sh([sys.executable, script, args.llama_cpp, args.hf, "--outfile", f16, "--outtype", "f16"])
    pairs = []
    for bits, qtype in ((8, "Q8_0"), (4, "Q4_0")):
        gguf = os.path.join(work, f"model-{qtype}.gguf")
        if not os.path.exists(gguf):
            sh([os.path.join(args.build, "bin", "llama-quantize"), f16, gguf, qtype])
        pack = os.path.join(work, f"mtplx-{bits}bit")
        if not os.path.exists(os.path.join(pack, "config.json")):
            sh([args.mtplx, "convert", args.hf, pack, "--force", "--bits", str(bits),
                "--group-size", "64", "--mtp-bits", str(bits), "--mtp-depth", "1",
                "--no-progress"])
        pairs.append((f"{bits}-bit g64 / {qtype}", pack, gguf))
    return pairs


def llama_bench(args, gguf, threads):
    out = json.loads(sh([os.path.join(args.build, "bin", "llama-bench"), "-m", gguf, "-t",
                         str(threads), "-p", "512", "-n", "128", "-r", "3", "-o", "json"]))
    rates = {("pp" if r["n_prompt"] > 0 else "tg"): r["avg_ts"] for r in out}
    return rates["tg"], rates["pp"]


def mtplx_bench(args, pack, threads):
    d = json.loads(sh([args.mtplx, "bench", "--model", pack, "--threads", str(threads),
                       "--repeats", "3", "--prefill", "512", "--json", "--quiet"]))
    return d["decode_tok_s"], d["prefill_tok_s"]["512"], d["verify_cost"]["2"], d["draft_cost_ratio"]


def mtplx_run(args, pack, threads, flags, seed):
    d = json.loads(sh([args.mtplx, "run", "--model", pack, "--raw", PROMPT, "--max-tokens", "256",
                       "--temperature", "0.6", "--top-p", "0.95", "--top-k", "20", "--seed",
                       str(seed), "--threads", str(threads), "--json", "--quiet"] + flags))
    return d["stats"]["tok_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True, help="a llama.cpp source tree")
    ap.add_argument("--build", default="/tmp/llama-cpp-build")
    ap.add_argument("--hf", required=True, help="Hugging Face checkpoint folder (bf16)")
    ap.add_argument("--mtplx", default=os.path.join(REPO, "build", "bin", "mtplx"))
    ap.add_argument("--work", default=None, help="folder for the converted models")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    build_llama(args.llama_cpp, args.build)
    work = args.work or tempfile.mkdtemp(prefix="mtplx-vs-llama-")
    os.makedirs(work, exist_ok=True)
    pairs = prepare(args, work)
    report = {"hf": args.hf, "prompt": PROMPT, "rows": []}
    print("| weights | threads | llama.cpp tg / pp512 tok/s | mtplx plain / pp512 tok/s | mtplx v(2), c "
          "| mtplx MTP depth 1 tok/s | plain vs llama.cpp | MTP vs llama.cpp |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for threads in [int(t) for t in args.threads.split(",")]:
        for name, pack, gguf in pairs:
            samples = {"tg": [], "pp": [], "plain": [], "prefill": [], "v2": [], "c": [], "run_plain": [],
                       "run_mtp": []}
            for i in range(args.repeats):
                tg, pp = llama_bench(args, gguf, threads)
                plain, prefill, v2, c = mtplx_bench(args, pack, threads)
                samples["tg"].append(tg)
                samples["pp"].append(pp)
                samples["plain"].append(plain)
                samples["prefill"].append(prefill)
                samples["v2"].append(v2)
                samples["c"].append(c)
                samples["run_plain"].append(mtplx_run(args, pack, threads, ["--no-mtp"], i))
                samples["run_mtp"].append(mtplx_run(args, pack, threads, ["--depth", "1"], i))
            m = {k: statistics.median(v) for k, v in samples.items()}
            row = {"weights": name, "threads": threads, **m}
            report["rows"].append(row)
            print(f"| {name} | {threads} | {m['tg']:.1f} / {m['pp']:.1f} | {m['plain']:.1f} / "
                  f"{m['prefill']:.1f} | {m['v2']:.2f}, {m['c']:.3f} | {m['run_mtp']:.1f} "
                  f"(plain run {m['run_plain']:.1f}) | {m['plain'] / m['tg']:.2f}x | "
                  f"{m['run_mtp'] / m['tg']:.2f}x |", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
