// Sampler cost per call on one core: Shape (temperature, top-k, top-p over the whole vocabulary)
// for the bundled model's vocabulary (8192), its draft head (4096) and Qwen 3.5's (248,320),
// without and with presence / frequency penalties. Speculative decoding shapes a verify row per
// committed token and a draft row per proposed one, so at small vocabularies this is a visible
// share of a cycle. Run: build/bench/sampler_bench.
#include <benchmark/benchmark.h>

#include <vector>

#include "base/rng.h"
#include "sample/sampler.h"

namespace mtplx::sample {
namespace {

void BM_Shape(benchmark::State& state) {
  const int64_t vocab = state.range(0);
  const bool penalties = state.range(1) != 0;
  SplitMix64 rng(11);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = static_cast<float>(rng.Uniform(-12.0, 12.0));
  std::vector<int32_t> counts(vocab, 0);
  for (int i = 0; i < 200; ++i) ++counts[rng.Next() % vocab];  // a 200-token completion
  SamplingParams params;                                       // 0.6 / 0.95 / 20
  if (penalties) params.presence_penalty = 0.5;
  for (auto _ : state) benchmark::DoNotOptimize(Shape(logits, params, counts));
  state.SetItemsProcessed(state.iterations() * vocab);
}
BENCHMARK(BM_Shape)->ArgsProduct({{4096, 8192, 248320}, {0, 1}})->ArgNames({"vocab", "penalty"});

}  // namespace
}  // namespace mtplx::sample

BENCHMARK_MAIN();
