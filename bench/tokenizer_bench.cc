// Tokenizer encode throughput on one core, in input bytes per second, with the real Qwen3
// vocabulary. Run: build/bench/tokenizer_bench (the vocabulary is tests/data/tokenizers/qwen3).
#include <benchmark/benchmark.h>

#include <string>

#include "base/file.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer {
namespace {

const Tokenizer* Qwen3() {
  static const Tokenizer* tokenizer = [] {
    auto t =
        Tokenizer::FromJsonFile(MTPLX_SOURCE_DIR "/tests/data/tokenizers/qwen3/tokenizer.json");
    return t.ok() ? new Tokenizer(std::move(t).value()) : nullptr;
  }();
  return tokenizer;
}

// ~1 MB of English prose and Python source, varied enough that the piece cache does not hold
// the whole text.
std::string Sample(bool code) {
  std::string text;
  for (int i = 0; text.size() < (1u << 20); ++i) {
    if (code) {
      text += "def function_" + std::to_string(i) + "(value, items=None):\n    \"\"\"Return the " +
              std::to_string(i * 7) +
              "th item.\"\"\"\n    if items is None:\n        items = []\n" + "    return [x * " +
              std::to_string(i % 13) + " for x in items if x > value]\n\n";
    } else {
      text +=
          "It is a truth universally acknowledged, that a single man in possession of a good "
          "fortune, must be in want of a wife; chapter " +
          std::to_string(i) + " begins. ";
    }
  }
  return text;
}

void BM_Encode(benchmark::State& state) {
  const Tokenizer* tokenizer = Qwen3();
  if (!tokenizer) {
    state.SkipWithError("cannot load tests/data/tokenizers/qwen3/tokenizer.json");
    return;
  }
  const std::string text = Sample(state.range(0) == 1);
  for (auto _ : state) benchmark::DoNotOptimize(tokenizer->Encode(text, false));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.SetLabel(state.range(0) == 1 ? "python" : "english");
}
BENCHMARK(BM_Encode)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mtplx::tokenizer

BENCHMARK_MAIN();
