// Sampling in the reference order: penalties -> temperature -> top-k -> top-p (nucleus over
// full-vocabulary probabilities) -> min-p -> renormalise. The result is a sparse distribution
// in float64, which speculative acceptance needs (p(d)/q(d) and the residual).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mtplx::sample {

struct SamplingParams {
  double temperature = 0.6;  // <= 0: greedy
  double top_p = 0.95;       // 1: off
  int top_k = 20;            // <= 0: off
  double min_p = 0.0;        // 0: off
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;

  bool greedy() const { return temperature <= 0.0; }
};

struct SparseDistribution {
  std::vector<int32_t> ids;   // descending probability
  std::vector<double> probs;  // sums to 1
};

// Counter-based random numbers: draw i of a request depends only on (seed, i), so a replay
// with the same seed gives the same stream whatever else ran in between.
class CounterRng {
 public:
  explicit CounterRng(uint64_t seed) : seed_(seed) {}
  double Uniform();  // [0, 1)
  uint64_t counter() const { return counter_; }

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

int32_t Argmax(std::span<const float> logits);
// The probability of the most likely id under softmax(logits) at temperature 1: how sure a greedy
// choice is (1 for an empty or degenerate input).
double TopProbability(std::span<const float> logits);
// The same when the caller already has the maximum of `logits` (e.g. the value at Argmax): saves
// one pass over the vocabulary.
double TopProbability(std::span<const float> logits, float max);

// `counts` (optional, vocab-sized) holds how often each token appeared in the completion so far,
// for the OpenAI presence / frequency penalties.
SparseDistribution Shape(std::span<const float> logits, const SamplingParams& params,
                         std::span<const int32_t> counts = {});

int32_t SampleFrom(const SparseDistribution& dist, double uniform);

// Greedy when params.greedy(), else Shape + SampleFrom with one uniform from rng.
int32_t Sample(std::span<const float> logits, const SamplingParams& params, CounterRng& rng,
               std::span<const int32_t> counts = {});

}  // namespace mtplx::sample
