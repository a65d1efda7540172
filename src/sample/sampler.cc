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

// Ranking: higher value first, the lower id among equals.
template <typename T>
struct Better {
  const T* s;
  bool operator()(int32_t a, int32_t b) const { return s[a] > s[b] || (s[a] == s[b] && a < b); }
};

// The first i >= from with s[i] > bound (n if none). A loop of its own: inside the heap loop the
// compiler kept the index in memory, and the scan over the whole vocabulary is the hot part.
template <typename T>
size_t NextAbove(const T* s, size_t from, size_t n, T bound) {
  size_t i = from;
  while (i < n && !(s[i] > bound)) ++i;
  return i;
}
// Float logits (no penalties, the common case): 16 at a time.
size_t NextAbove(const float* s, size_t from, size_t n, float bound) {
  return static_cast<size_t>(
      kernels::FirstAbove(s, static_cast<int64_t>(from), static_cast<int64_t>(n), bound));
}

// The k best ids, best first (what partial_sort gives). For k well below n, one pass keeps a heap
// of the k best so far and skips every value not above the worst of them: ids arrive in
// increasing order, so a value equal to the worst ranks below it.
template <typename T>
std::vector<int32_t> BestIndices(const T* s, size_t n, size_t k) {
  const Better<T> better{s};
  std::vector<int32_t> ids;
  if (k * 4 >= n) {
    ids.resize(n);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
    ids.resize(k);
    return ids;
  }
  ids.resize(k);
  std::iota(ids.begin(), ids.end(), 0);
  std::make_heap(ids.begin(), ids.end(), better);  // front: the worst of the k
  T worst = s[ids.front()];
  for (size_t i = NextAbove(s, k, n, worst); i < n; i = NextAbove(s, i + 1, n, worst)) {
    std::pop_heap(ids.begin(), ids.end(), better);
    ids.back() = static_cast<int32_t>(i);
    std::push_heap(ids.begin(), ids.end(), better);
    worst = s[ids.front()];
  }
  std::sort_heap(ids.begin(), ids.end(), better);
  return ids;
}

// Scaled logits s_i = l_i / T (penalties applied first): the full-vocabulary log-partition
// log sum_i exp(s_i), so that top-p sees true probabilities, and the k best ids. Without
// penalties s_i is never stored: the float logits rank the same ids (scaling by 1 / T > 0 keeps
// the order, and distinct floats stay distinct in double), and their maximum scaled is the
// maximum of s.
struct Scaled {
  double log_z;
  std::vector<int32_t> best;
  std::vector<double> values;  // s_i, with penalties only
};

Scaled ScaleAndRank(std::span<const float> logits, const SamplingParams& params,
                    std::span<const int32_t> counts, double inv_t, size_t k) {
  const size_t vocab = logits.size();
  Scaled out;
  // Zero penalty weights leave every value unchanged (l - 0 is exact), whatever the counts.
  const bool penalties = (params.frequency_penalty != 0.0 || params.presence_penalty != 0.0) &&
                         std::any_of(counts.begin(), counts.end(), [](int32_t c) { return c > 0; });
  if (!penalties) {
    // The partition only decides where top-p cuts (the kept probabilities are renormalised, so it
    // cancels from them): float exponentials, about 1e-6 relative, are ample and 4x faster.
    const float max =
        kernels::MaxF32(logits.data(), static_cast<int64_t>(vocab)) * static_cast<float>(inv_t);
    out.log_z = max + std::log(kernels::SumExpScaledF32(logits.data(), static_cast<int64_t>(vocab),
                                                        static_cast<float>(inv_t), max));
    out.best = BestIndices(logits.data(), vocab, k);
    return out;
  }
  out.values.resize(vocab);
  ScaleLogits(logits.data(), vocab, inv_t, out.values.data());
  for (size_t i = 0; i < vocab; ++i) {
    if (counts[i] <= 0) continue;
    const double l = logits[i] - (params.frequency_penalty * counts[i] + params.presence_penalty);
    out.values[i] = l * inv_t;
  }
  const double max = *std::max_element(out.values.begin(), out.values.end());
  out.log_z =
      max + std::log(kernels::SumExpShifted(out.values.data(), static_cast<int64_t>(vocab), max));
  out.best = BestIndices(out.values.data(), vocab, k);
  return out;
}

}  // namespace

SparseDistribution Shape(std::span<const float> logits, const SamplingParams& params,
                         std::span<const int32_t> counts) {
  const size_t vocab = logits.size();
  const double inv_t = 1.0 / std::max(params.temperature, 1e-6);
  const size_t k = params.top_k > 0 ? std::min<size_t>(params.top_k, vocab) : vocab;
  const Scaled scaled = ScaleAndRank(logits, params, counts, inv_t, k);
  const std::vector<int32_t>& order = scaled.best;
  const double log_z = scaled.log_z;
  auto scaled_at = [&](int32_t id) {
    return scaled.values.empty() ? static_cast<double>(logits[id]) * inv_t : scaled.values[id];
  };
  SparseDistribution dist;
  double mass_before = 0.0;
  for (size_t i = 0; i < k; ++i) {
    const double p = std::exp(scaled_at(order[i]) - log_z);
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
