#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/rng.h"
#include "kernels/ops.h"

namespace mtplx::sample {

double CounterRng::Uniform() {
  SplitMix64 mix(MixSeed(seed_, counter_++));
  return mix.Uniform();
}

int32_t Argmax(std::span<const float> logits) {
  // First maximum wins, matching torch.argmax / numpy.argmax.
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

namespace {

// scaled[i] = double(logits[i]) * inv_t, a loop the compiler vectorizes.
void ScaleLogits(const float* __restrict logits, size_t n, double inv_t,
                 double* __restrict scaled) {
  for (size_t i = 0; i < n; ++i) scaled[i] = static_cast<double>(logits[i]) * inv_t;
}

// The largest value (8 running maxima, then combined; max is exact in any order).
double MaxOf(const double* x, size_t n) {
  double lanes[8];
  for (double& lane : lanes) lane = x[0];
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  double max = lanes[0];
  for (double lane : lanes) max = lane > max ? lane : max;
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

}  // namespace

SparseDistribution Shape(std::span<const float> logits, const SamplingParams& params,
                         std::span<const int32_t> counts) {
  const size_t vocab = logits.size();
  std::vector<double> scaled(vocab);
  const double inv_t = 1.0 / std::max(params.temperature, 1e-6);
  ScaleLogits(logits.data(), vocab, inv_t, scaled.data());
  if (!counts.empty()) {
    for (size_t i = 0; i < vocab; ++i) {
      if (counts[i] <= 0) continue;
      const double l = logits[i] - (params.frequency_penalty * counts[i] + params.presence_penalty);
      scaled[i] = l * inv_t;
    }
  }
  // Full-vocabulary log-partition, so top-p sees true probabilities.
  const double max = MaxOf(scaled.data(), vocab);
  const double z = kernels::SumExpShifted(scaled.data(), static_cast<int64_t>(vocab), max);
  const double log_z = max + std::log(z);

  const size_t k = params.top_k > 0 ? std::min<size_t>(params.top_k, vocab) : vocab;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  auto better = [&](int32_t a, int32_t b) {
    return scaled[a] > scaled[b] || (scaled[a] == scaled[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), better);

  SparseDistribution dist;
  double mass_before = 0.0;
  for (size_t i = 0; i < k; ++i) {
    const double p = std::exp(scaled[order[i]] - log_z);
    // top_p >= 1 is "off": the running mass can round up to 1.0 before the tail is reached.
    if (i > 0 && params.top_p < 1.0 && mass_before >= params.top_p) break;
    dist.ids.push_back(order[i]);
    dist.probs.push_back(p);
    mass_before += p;
  }
  if (params.min_p > 0.0) {
    const double floor = params.min_p * dist.probs.front();
    size_t keep = 1;
    while (keep < dist.probs.size() && dist.probs[keep] >= floor) ++keep;
    dist.ids.resize(keep);
    dist.probs.resize(keep);
  }
  const double total = std::accumulate(dist.probs.begin(), dist.probs.end(), 0.0);
  for (double& p : dist.probs) p /= total;
  return dist;
}

int32_t SampleFrom(const SparseDistribution& dist, double uniform) {
  double cumulative = 0.0;
  for (size_t i = 0; i < dist.ids.size(); ++i) {
    cumulative += dist.probs[i];
    if (uniform < cumulative) return dist.ids[i];
  }
  return dist.ids.back();
}

int32_t Sample(std::span<const float> logits, const SamplingParams& params, CounterRng& rng,
               std::span<const int32_t> counts) {
  if (params.greedy()) return Argmax(logits);
  return SampleFrom(Shape(logits, params, counts), rng.Uniform());
}

}  // namespace mtplx::sample
