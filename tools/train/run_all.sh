#!/usr/bin/env bash
# Reproduces the bundled model from scratch: corpus -> tokenizer -> tokens -> mtplx build ->
# training (with the MTP head) -> Hugging Face export -> verification against transformers and mtplx.
#
#   tools/train/run_all.sh [RUN_NAME] [extra train.py flags...]
#
# Environment:
#   PYTHON         Python with torch, transformers 5.x, tokenizers, safetensors (default /opt/mtplx-py/bin/python)
#   STAGES         space-separated subset of: corpus tokenizer encode build train verify pack
#                  distill card (default: all; pack converts runs/RUN/hf into models/default with
#                  `mtplx convert`; distill re-trains the pack's MTP head on its own trunk's
#                  distributions and replaces models/default/mtp.safetensors; card measures MTP
#                  acceptance with mtplx and writes models/default/MODEL_CARD.md)
#   NICE           niceness for the heavy steps (default 15)
#   THREADS        torch threads (default 2)
# Outputs (all git-ignored): tools/train/data/{raw,corpus,tokenizer,tokens}, tools/train/runs/RUN_NAME/
#   {log.txt via the caller, train_log.txt, ckpt.pt, summary.json, hf/, verify.json}
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
RUN="${1:-main}"
shift || true
PYTHON="${PYTHON:-/opt/mtplx-py/bin/python}"
STAGES="${STAGES:-corpus tokenizer encode build train verify pack distill card}"
NICE="${NICE:-15}"
THREADS="${THREADS:-2}"
N="nice -n $NICE"

has() { [[ " $STAGES " == *" $1 "* ]]; }
say() { echo "[run_all $(date +%H:%M:%S)] $*"; }

if has corpus; then
  say "corpus (Debian packages; --install apt-gets the missing ones)"
  $N "$PYTHON" "$HERE/prepare_corpus.py" --install
fi
if has tokenizer; then
  say "tokenizer"
  $N "$PYTHON" "$HERE/train_tokenizer.py"
fi
if has encode; then
  say "encode"
  $N "$PYTHON" "$HERE/encode_corpus.py"
fi
if has build; then
  say "build mtplx (build-train)"
  cmake -S "$REPO" -B "$REPO/build-train" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMTPLX_BUILD_TESTS=OFF -DMTPLX_BUILD_BENCH=OFF > /dev/null
  $N ninja -C "$REPO/build-train" -j1 mtplx
fi
if has train; then
  say "train run '$RUN' (resumes if runs/$RUN/ckpt.pt exists)"
  RESUME=()
  [[ -f "$HERE/runs/$RUN/ckpt.pt" ]] && RESUME=(--resume)
  $N "$PYTHON" "$HERE/train.py" --run "$RUN" --threads "$THREADS" "${RESUME[@]}" "$@"
fi
if has verify; then
  say "verify runs/$RUN/hf against transformers and mtplx"
  $N "$PYTHON" "$HERE/verify_export.py" "$HERE/runs/$RUN/hf" --threads "$THREADS" \
    --mtplx "$REPO/build-train/bin/mtplx" --json-out "$HERE/runs/$RUN/verify.json"
fi
if has pack; then
  say "pack runs/$RUN/hf -> models/default (convert, perplexity)"
  # 8-bit g64 (trunk and MTP head): half the size of bf16, the same held-out perplexity, and the
  # int8 panel kernel decodes it about three times faster. Depth 1 is the faster depth here.
  # Presence penalty 0.5 by default: without it this 10 M model often falls into a loop of one
  # token at T 0.6 (Qwen's own cards recommend 0-2 against endless repetition).
  "$REPO/build-train/bin/mtplx" convert "$HERE/runs/$RUN/hf" "$REPO/models/default" --force \
    --bits 8 --group-size 64 --mtp-bits 8 --mtp-depth 1 --sampler 0.6,0.95,20,0.5
  $N "$PYTHON" "$HERE/pack_perplexity.py" --model "$REPO/models/default" \
    --mtplx "$REPO/build-train/bin/mtplx" --json-out "$HERE/runs/$RUN/pack_perplexity.json"
  $N "$PYTHON" "$HERE/pack_perplexity.py" --model "$HERE/runs/$RUN/hf" --activations f32 \
    --mtplx "$REPO/build-train/bin/mtplx" --json-out "$HERE/runs/$RUN/export_perplexity.json"
fi
if has distill; then
  # The joint training taught the MTP head the text; speculation accepts a draft with probability
  # sum min(p, q), so the head is then trained on the trunk's own distributions (KL(p || q), trunk
  # frozen at the pack's 8-bit weights). Only mtp.safetensors changes; the trunk stays byte for byte.
  say "distill the MTP head of models/default on its trunk (runs/$RUN/distill)"
  $N "$PYTHON" "$HERE/encode_corpus.py" --tokenizer "$REPO/models/default" \
    --out "$HERE/data/tokens-pack"
  $N "$PYTHON" "$HERE/distill_mtp.py" --pack "$REPO/models/default" --tokens "$HERE/data/tokens-pack" \
    --out "$HERE/runs/$RUN/distill" --steps 1000 --batch 16 --lr 1e-3 --threads "$THREADS" \
    --mtplx "$REPO/build-train/bin/mtplx"
  "$REPO/build-train/bin/mtplx" convert "$HERE/runs/$RUN/distill/hf" "$HERE/runs/$RUN/distill/pack" \
    --force --bits 8 --group-size 64 --mtp-bits 8 --mtp-depth 1 --sampler 0.6,0.95,20,0.5
  cp "$HERE/runs/$RUN/distill/pack/mtp.safetensors" "$REPO/models/default/mtp.safetensors"
  # Then the chained draft steps (depth 2 and 3 draft from the head's own output), in two legs.
  for leg in "distill3:300:5e-4" "distill3b:400:3e-4"; do
    IFS=: read -r name steps lr <<< "$leg"
    $N "$PYTHON" "$HERE/distill_mtp.py" --pack "$REPO/models/default" \
      --tokens "$HERE/data/tokens-pack" --out "$HERE/runs/$RUN/$name" --steps "$steps" --batch 8 \
      --lr "$lr" --warmup 10 --unroll 3 --threads "$THREADS" --mtplx "$REPO/build-train/bin/mtplx"
    "$REPO/build-train/bin/mtplx" convert "$HERE/runs/$RUN/$name/hf" "$HERE/runs/$RUN/$name/pack" \
      --force --bits 8 --group-size 64 --mtp-bits 8 --mtp-depth 1 --sampler 0.6,0.95,20,0.5
    cp "$HERE/runs/$RUN/$name/pack/mtp.safetensors" "$REPO/models/default/mtp.safetensors"
  done
fi
if has card; then
  # One thread: on this 2-vCPU machine a 2-thread run is fast or 1.5x slower depending on where
  # the host places the vCPUs, which swamps the ratio. Three interleaved passes each: the issue's
  # sampler (T 0.6, no penalty), the pack's default (presence penalty 0.5) and greedy.
  for mode in "acceptance:" "acceptance_penalty:--presence-penalty 0.5" \
              "acceptance_greedy:--temperature 0"; do
    $N "$PYTHON" "$HERE/measure_acceptance.py" --model "$REPO/models/default" --depths 1,2 \
      --threads 1 --repeats 3 ${mode#*:} --mtplx "$REPO/build-train/bin/mtplx" \
      --json-out "$HERE/runs/$RUN/${mode%%:*}.json"
  done
  "$PYTHON" "$HERE/write_model_card.py" --run "$RUN" --pack "$REPO/models/default"
fi
say "done"
