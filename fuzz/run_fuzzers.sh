#!/usr/bin/env bash
# Builds the libFuzzer targets (the "fuzz" CMake preset, clang) and runs each one for N seconds
# over a scratch copy of its seed corpus (tests/data/fuzz/<target>/), with fuzz/<target>.dict as
# its dictionary. Fails on any crash, leak, sanitizer report, timeout or out-of-memory; the
# reproducer is kept in the artifacts folder.
#
# Usage: fuzz/run_fuzzers.sh [seconds per target, default 30] [target ...]
#   MTPLX_FUZZ_JOBS    build parallelism (default 1)
#   MTPLX_FUZZ_SEED    libFuzzer seed (default 1: CI replays the prefix that was run here)
#   MTPLX_FUZZ_ARTIFACTS  where crash reproducers go (default <build>/fuzz/artifacts)
#   MTPLX_FUZZ_BUILD   an already configured build folder with MTPLX_BUILD_FUZZ=ON to build them
#                      in (CI: build-asan, the "asan" preset's one build for the sanitizer
#                      suites and the fuzzers); default build-fuzz, configured by the "fuzz"
#                      preset
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-30}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(safetensors_header_fuzz model_config_fuzz tokenizer_json_fuzz chat_template_fuzz
           tool_call_fuzz api_request_fuzz prefix_file_fuzz grammar_fuzz)
fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -lt 1 ]]; then
  echo "usage: $0 [seconds>=1] [target ...]" >&2
  exit 2
fi

cd "$root"
build="${MTPLX_FUZZ_BUILD:-build-fuzz}"
[[ "$build" == /* ]] || build="$root/$build"
[[ -n "${MTPLX_FUZZ_BUILD:-}" ]] || cmake --preset fuzz >/dev/null
cmake --build "$build" -j"${MTPLX_FUZZ_JOBS:-1}" --target "${targets[@]}"

artifacts="${MTPLX_FUZZ_ARTIFACTS:-$build/fuzz/artifacts}"
mkdir -p "$artifacts"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/mtplx-fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

failed=()
for target in "${targets[@]}"; do
  seeds="$root/tests/data/fuzz/$target"
  corpus="$scratch/$target"
  mkdir -p "$corpus"
  if [[ -d "$seeds" ]]; then cp -r "$seeds"/. "$corpus"/; fi
  echo "=== $target: ${seconds}s over $(ls "$corpus" | wc -l) seeds"
  log="$scratch/$target.log"
  max_len=4096
  # These seeds carry a whole tokenizer.json or chat template.
  [[ "$target" == tokenizer_json_fuzz || "$target" == chat_template_fuzz ]] && max_len=16384
  dict=()
  if [[ -f "$root/fuzz/$target.dict" ]]; then dict=(-dict="$root/fuzz/$target.dict"); fi
  set +e
  "$build/fuzz/$target" "${dict[@]}" "$corpus" -max_len="$max_len" -max_total_time="$seconds" \
      -seed="${MTPLX_FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$target-" >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs)' "$log" || true
  if [[ $rc -ne 0 ]]; then
    echo "!!! $target failed (exit $rc); log tail:" >&2
    tail -n 60 "$log" >&2
    failed+=("$target")
  fi
done

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "FAILED: ${failed[*]} (reproducers in $artifacts)" >&2
  exit 1
fi
echo "all fuzzers ran clean"
