#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/rng.h"
#include "kernels/ops.h"

namespace mtplx::sample {

double CounterRng::Uniform() {
  SplitMix64 mix(MixSeed(seed_, counter_++));
  return mix.Uniform();
}

int32_t Argmax(std::span<const float> logits) {
  // First maximum wins, matching torch.argmax / numpy.argmax. Two vectorized passes (the maximum,
  // then the first value above the float just below it) instead of a scalar scan.
  const int64_t n = static_cast<int64_t>(logits.size());
  if (n > 0) {
    const float max = kernels::MaxF32(logits.data(), n);
    if (max > -std::numeric_limits<float>::infinity()) {  // not NaN, not all -inf
      const float below = std::nextafter(max, -std::numeric_limits<float>::infinity());
      return static_cast<int32_t>(kernels::FirstAbove(logits.data(), 0, n, below));
    }
  }
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double TopProbability(std::span<const float> logits) {
  const int64_t n = static_cast<int64_t>(logits.size());
  if (n == 0) return 1.0;
  return TopProbability(logits, kernels::MaxF32(logits.data(), n));
}

double TopProbability(std::span<const float> logits, float max) {
  const int64_t n = static_cast<int64_t>(logits.size());
  if (n == 0 || !std::isfinite(max)) return 1.0;  // empty, all -inf, +inf or NaN
  // The maximum contributes exp(0) = 1, so the sum is at least 1 and the result at most 1.
  return 1.0 / kernels::SumExpScaledF32(logits.data(), n, 1.0f, max);
}

namespace {

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
// log sum_i exp(s_i), so that top-p sees true probabilities, and the k best ids. s_i itself is
// recomputed in double for the few ids that are kept (ScaledLogit), so it is never stored for the
// whole vocabulary.
struct Scaled {
  double log_z;
  std::vector<int32_t> best;
};

// Penalty weights that change some logit: zero weights leave every value unchanged (l - 0 is
// exact), whatever the counts.
bool HasPenalties(const SamplingParams& params, std::span<const int32_t> counts) {
  return (params.frequency_penalty != 0.0 || params.presence_penalty != 0.0) && !counts.empty();
}

// s_id in double, penalties first (the OpenAI order: l - (frequency * count + presence)).
double ScaledLogit(std::span<const float> logits, std::span<const int32_t> counts,
                   const SamplingParams& params, bool penalties, double inv_t, int32_t id) {
  if (!penalties || counts[id] <= 0) return static_cast<double>(logits[id]) * inv_t;
  const double l = logits[id] - (params.frequency_penalty * counts[id] + params.presence_penalty);
  return l * inv_t;
}

// Without penalties the float logits rank the same ids as s (scaling by 1 / T > 0 keeps the
// order, and distinct floats stay distinct in double), and their maximum scaled is the maximum
// of s. The partition only decides where top-p cuts (the kept probabilities are renormalised, so
// it cancels from them): float exponentials, about 1e-6 relative, are ample and 4x faster.
Scaled RankFloat(std::span<const float> logits, double inv_t, size_t k) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  const float max = kernels::MaxF32(logits.data(), vocab) * static_cast<float>(inv_t);
  Scaled out;
  out.log_z = max + std::log(kernels::SumExpScaledF32(logits.data(), vocab,
                                                      static_cast<float>(inv_t), max));
  out.best = BestIndices(logits.data(), logits.size(), k);
  return out;
}

// Every id in double: the reference, and the fallback when the fast path below cannot rank.
Scaled RankDouble(std::span<const float> logits, std::span<const int32_t> counts,
                  const SamplingParams& params, double inv_t, size_t k) {
  const size_t vocab = logits.size();
  std::vector<double> values(vocab);
  for (size_t i = 0; i < vocab; ++i)
    values[i] = ScaledLogit(logits, counts, params, true, inv_t, static_cast<int32_t>(i));
  const double max = *std::max_element(values.begin(), values.end());
  Scaled out;
  out.log_z =
      max + std::log(kernels::SumExpShifted(values.data(), static_cast<int64_t>(vocab), max));
  out.best = BestIndices(values.data(), vocab, k);
  return out;
}

// The ids with a positive count, ascending. Counts are never negative, so a block of 16 whose OR
// is zero holds none: one vectorized test a block instead of a branch an id.
std::vector<int32_t> CountedIds(std::span<const int32_t> counts) {
  const size_t n = counts.size();
  std::vector<int32_t> ids;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int32_t any = 0;
    for (size_t j = 0; j < 16; ++j) any |= counts[i + j];
    if (any == 0) continue;
    for (size_t j = i; j < i + 16; ++j)
      if (counts[j] > 0) ids.push_back(static_cast<int32_t>(j));
  }
  for (; i < n; ++i)
    if (counts[i] > 0) ids.push_back(static_cast<int32_t>(i));
  return ids;
}

// With penalties only the generated ids move. The others keep the float path's ranking and
// partition on a copy where the penalised ids are -inf; the penalised ids, at most one per
// generated token, are ranked and summed in double and merged in. The k best of the untouched ids
// hold every untouched id of the overall k best, so sorting them with the penalised ids ranks
// exactly as RankDouble does. RankDouble decides when k or the penalised ids are a large share
// of the vocabulary (the merge would not save work) and when fewer than k untouched ids are
// finite.
Scaled RankPenalised(std::span<const float> logits, std::span<const int32_t> counts,
                     const SamplingParams& params, double inv_t, size_t k) {
  const size_t vocab = logits.size();
  const std::vector<int32_t> penalised = CountedIds(counts);
  if (penalised.empty()) return RankFloat(logits, inv_t, k);  // nothing generated yet
  if (k * 4 >= vocab || penalised.size() * 8 > vocab)
    return RankDouble(logits, counts, params, inv_t, k);
  thread_local std::vector<float> rest;
  rest.assign(logits.begin(), logits.end());
  for (int32_t id : penalised) rest[id] = -std::numeric_limits<float>::infinity();
  std::vector<int32_t> candidates = BestIndices(rest.data(), vocab, k);
  if (!(rest[candidates.back()] > -std::numeric_limits<float>::infinity()))
    return RankDouble(logits, counts, params, inv_t, k);

  std::vector<double> penalised_values(penalised.size());
  double max = static_cast<double>(kernels::MaxF32(rest.data(), static_cast<int64_t>(vocab)) *
                                   static_cast<float>(inv_t));
  for (size_t j = 0; j < penalised.size(); ++j) {
    penalised_values[j] = ScaledLogit(logits, counts, params, true, inv_t, penalised[j]);
    max = std::max(max, penalised_values[j]);
  }
  const float shift = static_cast<float>(max);
  double total = kernels::SumExpScaledF32(rest.data(), static_cast<int64_t>(vocab),
                                          static_cast<float>(inv_t), shift);
  for (double v : penalised_values) total += std::exp(v - shift);
  Scaled out;
  out.log_z = shift + std::log(total);

  candidates.insert(candidates.end(), penalised.begin(), penalised.end());
  std::vector<double> value(candidates.size());
  for (size_t j = 0; j < candidates.size(); ++j)
    value[j] = ScaledLogit(logits, counts, params, true, inv_t, candidates[j]);
  std::vector<int32_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(k), order.end(),
                    [&](int32_t a, int32_t b) {
                      return value[a] > value[b] ||
                             (value[a] == value[b] && candidates[a] < candidates[b]);
                    });
  out.best.resize(k);
  for (size_t j = 0; j < k; ++j) out.best[j] = candidates[order[j]];
  return out;
}

}  // namespace

SparseDistribution Shape(std::span<const float> logits, const SamplingParams& params,
                         std::span<const int32_t> counts) {
  const size_t vocab = logits.size();
  const double inv_t = 1.0 / std::max(params.temperature, 1e-6);
  const size_t k = params.top_k > 0 ? std::min<size_t>(params.top_k, vocab) : vocab;
  const bool penalties = HasPenalties(params, counts);
  const Scaled scaled =
      penalties ? RankPenalised(logits, counts, params, inv_t, k) : RankFloat(logits, inv_t, k);
  const std::vector<int32_t>& order = scaled.best;
  const double log_z = scaled.log_z;
  auto scaled_at = [&](int32_t id) {
    return ScaledLogit(logits, counts, params, penalties, inv_t, id);
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
