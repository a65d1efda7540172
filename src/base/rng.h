// Deterministic random numbers. SplitMix64 is used for synthetic weights: fast, seedable and
// identical on every platform (no std::distribution, whose output is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>

namespace mtplx {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

 private:
  uint64_t state_;
};

// Mixes a seed with a stream id so independent streams can be derived from one seed.
inline uint64_t MixSeed(uint64_t seed, uint64_t stream) {
  SplitMix64 mix(seed ^ (stream * 0xd1b54a32d192ed03ull));
  return mix.Next();
}

}  // namespace mtplx
