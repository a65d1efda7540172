// The chunked Gated DeltaNet path against the token-by-token recurrence, and the causal conv.
#include "kernels/gated_delta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"
#include "kernels/ops.h"

namespace mtplx::kernels {
namespace {

struct Inputs {
  std::vector<float> q, k, v, g, beta;
  GdnInputs view() const { return {q.data(), k.data(), v.data(), g.data(), beta.data()}; }
};

Inputs RandomInputs(const GdnDims& d, int64_t tokens, uint64_t seed) {
  SplitMix64 rng(seed);
  Inputs in;
  auto fill = [&](std::vector<float>& v, int64_t n, double lo, double hi) {
    v.resize(n);
    for (auto& x : v) x = static_cast<float>(rng.Uniform(lo, hi));
  };
  fill(in.q, tokens * d.key_heads * d.key_dim, -1, 1);
  fill(in.k, tokens * d.key_heads * d.key_dim, -1, 1);
  fill(in.v, tokens * d.value_heads * d.value_dim, -1, 1);
  fill(in.g, tokens * d.value_heads, -0.7, -0.001);
  fill(in.beta, tokens * d.value_heads, 0.05, 0.95);
  for (int64_t t = 0; t < tokens * d.key_heads; ++t) {
    L2Normalize(in.q.data() + t * d.key_dim, d.key_dim, 1e-6f);
    L2Normalize(in.k.data() + t * d.key_dim, d.key_dim, 1e-6f);
  }
  return in;
}

TEST(GatedDeltaTest, ChunkedEqualsRecurrentAtChunkBoundaries) {
  const GdnDims dims{2, 4, 16, 8};
  for (int64_t tokens : {1, 63, 64, 65, 130}) {
    const Inputs in = RandomInputs(dims, tokens, tokens);
    const int64_t state_size = dims.value_heads * dims.key_dim * dims.value_dim;
    std::vector<float> s1(state_size, 0.01f), s2(state_size, 0.01f);
    std::vector<float> o1(tokens * dims.value_heads * dims.value_dim), o2(o1.size());
    GdnRecurrent(dims, tokens, in.view(), s1.data(), o1.data(), nullptr);
    GdnChunked(dims, tokens, in.view(), s2.data(), o2.data(), nullptr);
    for (size_t i = 0; i < o1.size(); ++i) ASSERT_NEAR(o1[i], o2[i], 2e-5) << tokens << " " << i;
    for (size_t i = 0; i < s1.size(); ++i) ASSERT_NEAR(s1[i], s2[i], 2e-5) << tokens << " " << i;
  }
}

TEST(GatedDeltaTest, RecurrentSplitsIntoStepsBitExactly) {
  const GdnDims dims{1, 2, 8, 8};
  const int64_t tokens = 9;
  const Inputs in = RandomInputs(dims, tokens, 3);
  const int64_t state_size = dims.value_heads * dims.key_dim * dims.value_dim;
  std::vector<float> whole(state_size, 0.0f), steps(state_size, 0.0f);
  std::vector<float> o(tokens * dims.value_heads * dims.value_dim), o_step(o.size());
  GdnRecurrent(dims, tokens, in.view(), whole.data(), o.data(), nullptr);
  const int64_t qk = dims.key_heads * dims.key_dim, vv = dims.value_heads * dims.value_dim;
  for (int64_t t = 0; t < tokens; ++t) {
    const GdnInputs one{in.q.data() + t * qk, in.k.data() + t * qk, in.v.data() + t * vv,
                        in.g.data() + t * dims.value_heads, in.beta.data() + t * dims.value_heads};
    GdnRecurrent(dims, 1, one, steps.data(), o_step.data() + t * vv, nullptr);
  }
  EXPECT_EQ(whole, steps);
  EXPECT_EQ(o, o_step);
}

// Starting from a separate initial state (what a verify pass does to keep its starting state)
// gives the same bits as running in place, and leaves the initial state untouched.
TEST(GatedDeltaTest, SeparateInitialStateEqualsInPlace) {
  const GdnDims dims{2, 4, 16, 16};
  for (int64_t tokens : {1, 2, 5}) {
    const Inputs in = RandomInputs(dims, tokens, 40 + tokens);
    const int64_t state_size = dims.value_heads * dims.key_dim * dims.value_dim;
    std::vector<float> in_place(state_size), initial(state_size), out_of_place(state_size, 7.0f);
    for (int64_t i = 0; i < state_size; ++i) in_place[i] = initial[i] = 0.001f * (i % 97);
    const std::vector<float> kept = initial;
    std::vector<float> o1(tokens * dims.value_heads * dims.value_dim), o2(o1.size());
    GdnRecurrent(dims, tokens, in.view(), in_place.data(), o1.data(), nullptr);
    GdnRecurrent(dims, tokens, in.view(), out_of_place.data(), o2.data(), nullptr, nullptr,
                 initial.data());
    EXPECT_EQ(out_of_place, in_place);
    EXPECT_EQ(o2, o1);
    EXPECT_EQ(initial, kept);
  }
}

// Replaying the recorded tape reproduces the forward's state bit for bit, for value widths that
// take the vector path (multiples of 16) and the plain loops (others).
TEST(GatedDeltaTest, ReplayOfTheTapeEqualsTheForwardState) {
  for (const GdnDims dims : {GdnDims{2, 4, 16, 64}, GdnDims{1, 2, 32, 128}, GdnDims{1, 2, 8, 24}}) {
    const int64_t tokens = 4;
    const Inputs in = RandomInputs(dims, tokens, dims.value_dim);
    const int64_t state_size = dims.value_heads * dims.key_dim * dims.value_dim;
    std::vector<float> forward(state_size), replay(state_size);
    for (int64_t i = 0; i < state_size; ++i) forward[i] = replay[i] = 0.002f * (i % 89) - 0.05f;
    std::vector<float> o(tokens * dims.value_heads * dims.value_dim), deltas(o.size());
    GdnRecurrent(dims, tokens, in.view(), forward.data(), o.data(), nullptr, deltas.data());
    // From a separate starting state (a rollback's), into a buffer whose contents are ignored.
    const std::vector<float> start = replay;
    std::vector<float> into(state_size, 1e30f);
    GdnReplay(dims, tokens, in.k.data(), in.g.data(), deltas.data(), into.data(), nullptr,
              start.data());
    GdnReplay(dims, tokens, in.k.data(), in.g.data(), deltas.data(), replay.data(), nullptr);
    EXPECT_EQ(replay, forward) << "dv=" << dims.value_dim;
    EXPECT_EQ(into, forward) << "dv=" << dims.value_dim;
  }
}

TEST(CausalConvTest, MatchesDirectDefinitionAndCarriesWindow) {
  const int64_t channels = 5, kernel = 4, tokens = 7;
  SplitMix64 rng(1);
  std::vector<float> x(tokens * channels), w(channels * kernel);
  for (auto& v : x) v = static_cast<float>(rng.Uniform(-1, 1));
  for (auto& v : w) v = static_cast<float>(rng.Uniform(-1, 1));
  const std::vector<float> taps = ConvTaps(w.data(), channels, kernel);
  std::vector<float> window((kernel - 1) * channels, 0.0f), out(tokens * channels);
  CausalConvSilu(x.data(), tokens, channels, taps.data(), kernel, window.data(), out.data());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < channels; ++c) {
      float sum = 0;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t src = t - (kernel - 1) + j;
        if (src >= 0) sum += w[c * kernel + j] * x[src * channels + c];
      }
      EXPECT_NEAR(out[t * channels + c], SiluScalar(sum), 1e-6);
    }
  // Split the same stream into 3 + 4 tokens: the window carries the history exactly.
  std::vector<float> win2((kernel - 1) * channels, 0.0f), out2(tokens * channels);
  CausalConvSilu(x.data(), 3, channels, taps.data(), kernel, win2.data(), out2.data());
  CausalConvSilu(x.data() + 3 * channels, 4, channels, taps.data(), kernel, win2.data(),
                 out2.data() + 3 * channels);
  EXPECT_EQ(out, out2);
  EXPECT_EQ(window, win2);
}

}  // namespace
}  // namespace mtplx::kernels
