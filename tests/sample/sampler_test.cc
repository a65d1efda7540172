// The sampler: Shape() against goldens from an independent numpy implementation of the reference
// order (tools/sample/make_sampler_goldens.py), greedy = first argmax, CounterRng determinism and
// stream independence, SampleFrom at the ends of [0, 1), and a chi-square check that sampled
// frequencies follow the shaped distribution. Every random test uses a fixed seed.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.h"
#include "sample/test_stats.h"
#include "support/test_support.h"

namespace mtplx::sample {
namespace {

// ---------------------------------------------------------------------------------------------
// Goldens

struct GoldenCase {
  uint64_t seed = 0;
  int vocab = 0;
  double scale = 0;
  SamplingParams params;
  std::vector<int32_t> ids;
  std::vector<double> probs;
};

std::vector<GoldenCase> ReadGoldens() {
  std::ifstream in(testing::TestDataPath("sample/shape_goldens.txt"));
  EXPECT_TRUE(in.good()) << "missing tests/data/sample/shape_goldens.txt";
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string s; fields >> s;) f.push_back(s);
    auto num = [&](size_t i) { return std::strtod(f.at(i).c_str(), nullptr); };
    GoldenCase c;
    c.seed = std::strtoull(f.at(0).c_str(), nullptr, 10);
    c.vocab = std::atoi(f.at(1).c_str());
    c.scale = num(2);
    c.params.temperature = num(3);
    c.params.top_k = std::atoi(f.at(4).c_str());
    c.params.top_p = num(5);
    c.params.min_p = num(6);
    c.params.presence_penalty = num(7);
    c.params.frequency_penalty = num(8);
    const size_t n = std::strtoull(f.at(9).c_str(), nullptr, 10);
    EXPECT_EQ(f.size(), 10 + 2 * n) << line.substr(0, 80);
    for (size_t i = 0; i < n; ++i) {
      c.ids.push_back(std::atoi(f.at(10 + 2 * i).c_str()));
      c.probs.push_back(num(11 + 2 * i));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// The input recipe of make_sampler_goldens.py: plain double arithmetic on SplitMix64 draws.
void MakeInputs(const GoldenCase& c, std::vector<float>* logits, std::vector<int32_t>* counts) {
  SplitMix64 rng(c.seed);
  logits->resize(c.vocab);
  counts->resize(c.vocab);
  for (int i = 0; i < c.vocab; ++i) {
    double s = rng.Uniform() + rng.Uniform();
    s = s + rng.Uniform();
    s = s + rng.Uniform();
    (*logits)[i] = static_cast<float>(c.scale * (s - 2.0));
  }
  for (int i = 0; i < c.vocab; ++i) {
    const uint64_t r = rng.Next();
    (*counts)[i] = r % 5 == 0 ? static_cast<int32_t>(1 + (r >> 32) % 3) : 0;
  }
}

TEST(SamplerTest, ShapeMatchesNumpyReference) {
  const std::vector<GoldenCase> cases = ReadGoldens();
  ASSERT_GE(cases.size(), 200u);
  int truncated_by_k = 0, truncated_by_p_or_min_p = 0, penalised = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const GoldenCase& c = cases[ci];
    std::vector<float> logits;
    std::vector<int32_t> counts;
    MakeInputs(c, &logits, &counts);
    const SparseDistribution d = Shape(logits, c.params, counts);
    const std::string where = "case " + std::to_string(ci) + " seed " + std::to_string(c.seed) +
                              " vocab " + std::to_string(c.vocab);
    ASSERT_EQ(d.ids, c.ids) << where;
    ASSERT_EQ(d.probs.size(), c.probs.size()) << where;
    for (size_t i = 0; i < c.probs.size(); ++i)
      ASSERT_NEAR(d.probs[i], c.probs[i], 1e-12 * c.probs[i]) << where << " rank " << i;
    const int k = c.params.top_k > 0 ? std::min(c.params.top_k, c.vocab) : c.vocab;
    if (static_cast<int>(c.ids.size()) == k && k < c.vocab) ++truncated_by_k;
    if (static_cast<int>(c.ids.size()) < k) ++truncated_by_p_or_min_p;
    if (c.params.presence_penalty != 0.0 || c.params.frequency_penalty != 0.0) ++penalised;
  }
  // The goldens really cover each stage.
  EXPECT_GT(truncated_by_k, 20);
  EXPECT_GT(truncated_by_p_or_min_p, 40);
  EXPECT_GT(penalised, 60);
}

// ---------------------------------------------------------------------------------------------
// Shape properties the goldens do not pin down

TEST(SamplerTest, ShapeOutputIsSortedAndNormalised) {
  SplitMix64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(300);
    for (float& l : logits) l = static_cast<float>(rng.Uniform(-8.0, 8.0));
    SamplingParams params;
    params.temperature = rng.Uniform(0.2, 1.5);
    params.top_k = trial % 3 == 0 ? 0 : 40;
    params.top_p = rng.Uniform(0.3, 1.0);
    const SparseDistribution d = Shape(logits, params);
    ASSERT_FALSE(d.ids.empty());
    EXPECT_EQ(d.ids.front(), Argmax(logits));
    EXPECT_NEAR(std::accumulate(d.probs.begin(), d.probs.end(), 0.0), 1.0, 1e-14);
    for (size_t i = 1; i < d.probs.size(); ++i) EXPECT_GE(d.probs[i - 1], d.probs[i]);
    for (double p : d.probs) EXPECT_GT(p, 0.0);
  }
}

// Top-k keeps the k highest logits, the lower id first among equal ones, for small and large k
// (one pass with a heap, or a partial sort) and on logits full of ties.
TEST(SamplerTest, TopKKeepsTheBestIdsWithLowerIdsWinningTies) {
  SplitMix64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const int vocab = 1000;
    std::vector<float> logits(vocab);
    for (float& l : logits)
      l = static_cast<float>(std::floor(rng.Uniform(0.0, trial % 2 ? 8.0 : 1e4)));
    std::vector<int32_t> want(vocab);
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (int k : {1, 5, 20, 249, 250, 999}) {
      SamplingParams params;
      params.temperature = 1.0;
      params.top_p = 1.0;
      params.top_k = k;
      const SparseDistribution d = Shape(logits, params, {});
      ASSERT_EQ(d.ids.size(), static_cast<size_t>(k));
      for (int i = 0; i < k; ++i) ASSERT_EQ(d.ids[i], want[i]) << "trial " << trial << " k " << k;
    }
  }
}

TEST(SamplerTest, TopPOneAndTopKZeroKeepTheWholeVocabulary) {
  // Tail probabilities far below 1e-16: the running mass rounds to 1.0 long before the end, but
  // top_p = 1 is documented as "off", so nothing may be cut.
  std::vector<float> logits(200);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -0.5f * static_cast<float>(i);
  SamplingParams params;
  params.temperature = 1.0;
  params.top_k = 0;
  params.top_p = 1.0;
  const SparseDistribution d = Shape(logits, params);
  EXPECT_EQ(d.ids.size(), logits.size());
  params.top_k = 50;
  EXPECT_EQ(Shape(logits, params).ids.size(), 50u);
}

TEST(SamplerTest, ZeroPenaltiesAreAnExactNoOp) {
  SplitMix64 rng(11);
  std::vector<float> logits(500);
  std::vector<int32_t> counts(500);
  for (size_t i = 0; i < logits.size(); ++i) {
    logits[i] = static_cast<float>(rng.Uniform(-4.0, 4.0));
    counts[i] = static_cast<int32_t>(rng.Next() % 4);
  }
  SamplingParams params;
  params.top_k = 0;
  params.top_p = 0.99;
  const SparseDistribution with = Shape(logits, params, counts);
  const SparseDistribution without = Shape(logits, params);
  EXPECT_EQ(with.ids, without.ids);
  EXPECT_EQ(with.probs, without.probs);  // bitwise
  // Penalties before anything was generated (all counts 0) leave the distribution as it is, bit
  // for bit, at every top-k.
  params.presence_penalty = 1.5;
  params.frequency_penalty = 0.5;
  const std::vector<int32_t> none(logits.size(), 0);
  for (int top_k : {0, 20, 200}) {
    params.top_k = top_k;
    SamplingParams plain = params;
    plain.presence_penalty = plain.frequency_penalty = 0.0;
    const SparseDistribution first = Shape(logits, params, none);
    EXPECT_EQ(first.ids, Shape(logits, plain).ids) << top_k;
    EXPECT_EQ(first.probs, Shape(logits, plain).probs) << top_k;
  }
}

TEST(SamplerTest, PenaltiesFollowTheOpenAiFormula) {
  // Three tokens, equal logits; token 1 seen once, token 2 seen three times.
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f};
  const std::vector<int32_t> counts = {0, 1, 3};
  SamplingParams params;
  params.temperature = 1.0;
  params.top_k = 0;
  params.top_p = 1.0;
  params.presence_penalty = 0.5;
  params.frequency_penalty = 0.25;
  const SparseDistribution d = Shape(logits, params, counts);
  const double l[3] = {0.0, -(0.25 * 1 + 0.5), -(0.25 * 3 + 0.5)};
  const double z = std::exp(l[0]) + std::exp(l[1]) + std::exp(l[2]);
  ASSERT_EQ(d.ids, (std::vector<int32_t>{0, 1, 2}));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(d.probs[i], std::exp(l[i]) / z, 1e-15);
}

// Penalties at a realistic vocabulary (k well below it: the sparse path that merges the penalised
// ids into the float ranking) against a plain double reference: every id scaled in double, a
// full sort, top-k, top-p over full-vocabulary probabilities, renormalised.
SparseDistribution ReferenceShape(const std::vector<float>& logits, const SamplingParams& params,
                                  const std::vector<int32_t>& counts) {
  const size_t n = logits.size();
  std::vector<double> s(n);
  for (size_t i = 0; i < n; ++i) {
    double l = logits[i];
    if (counts[i] > 0) l -= params.frequency_penalty * counts[i] + params.presence_penalty;
    s[i] = l / params.temperature;
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
  const double max = s[order[0]];
  double z = 0.0;
  for (double v : s) z += std::exp(v - max);
  SparseDistribution d;
  double before = 0.0;
  for (int i = 0; i < params.top_k && before < params.top_p; ++i) {
    d.ids.push_back(order[i]);
    d.probs.push_back(std::exp(s[order[i]] - max) / z);
    before += d.probs.back();
  }
  const double kept = std::accumulate(d.probs.begin(), d.probs.end(), 0.0);
  for (double& p : d.probs) p /= kept;
  return d;
}

TEST(SamplerTest, PenalisedShapeAtALargeVocabularyMatchesADoubleReference) {
  SplitMix64 rng(2024);
  int cut_by_p = 0, penalised_kept = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const size_t vocab = 3000 + rng.Next() % 9000;
    std::vector<float> logits(vocab);
    for (float& l : logits) l = static_cast<float>(rng.Uniform(-6.0, 6.0));
    // A peaked head of 40 likely ids (so that top-p cuts), and a completion that keeps picking
    // from it, so that penalties reorder the top.
    std::vector<size_t> head(40);
    for (size_t& id : head) {
      id = rng.Next() % vocab;
      logits[id] += static_cast<float>(rng.Uniform(4.0, 14.0));
    }
    std::vector<int32_t> counts(vocab, 0);
    const int generated = 1 + static_cast<int>(rng.Next() % 300);
    for (int i = 0; i < generated; ++i)
      ++counts[rng.Next() % 2 ? head[rng.Next() % head.size()] : rng.Next() % vocab];
    if (trial % 7 == 0) logits[rng.Next() % vocab] = logits[rng.Next() % vocab];  // a tie
    SamplingParams params;
    params.temperature = rng.Uniform(0.3, 1.2);
    params.top_k = 1 + static_cast<int>(rng.Next() % 60);
    params.top_p = trial % 3 == 0 ? 1.0 : rng.Uniform(0.5, 0.99);
    params.presence_penalty = rng.Uniform(-1.0, 2.0);
    params.frequency_penalty = trial % 2 ? rng.Uniform(-0.5, 1.0) : 0.0;
    const SparseDistribution got = Shape(logits, params, counts);
    const SparseDistribution want = ReferenceShape(logits, params, counts);
    ASSERT_EQ(got.ids, want.ids) << "trial " << trial;
    for (size_t i = 0; i < want.probs.size(); ++i)
      EXPECT_NEAR(got.probs[i], want.probs[i], 1e-12 * want.probs[i]) << "trial " << trial;
    if (static_cast<int>(want.ids.size()) < params.top_k) ++cut_by_p;
    for (int32_t id : want.ids) penalised_kept += counts[id] > 0;
  }
  EXPECT_GT(cut_by_p, 10);
  EXPECT_GT(penalised_kept, 30);
}

// ---------------------------------------------------------------------------------------------
// Greedy

// How sure a greedy draft is: softmax at temperature 1, checked against a double reference on odd
// sizes, with masked (-inf) entries and the degenerate inputs.
TEST(SamplerTest, TopProbabilityIsTheSoftmaxMaximum) {
  SplitMix64 gen(17);
  for (int n : {1, 7, 33, 1001, 8191}) {
    std::vector<float> logits(n);
    for (float& l : logits) l = static_cast<float>(gen.Uniform(-6.0, 6.0));
    if (n > 7) logits[3] = -std::numeric_limits<float>::infinity();
    const float max = *std::max_element(logits.begin(), logits.end());
    double total = 0.0;
    for (float l : logits) total += std::exp(static_cast<double>(l) - max);
    EXPECT_NEAR(TopProbability(logits), 1.0 / total, 1e-6 / total) << n;
    // Given the value at the argmax (as a greedy draft does), the same number without a scan.
    EXPECT_EQ(TopProbability(logits, logits[Argmax(logits)]), TopProbability(logits)) << n;
  }
  EXPECT_NEAR(TopProbability(std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}), 0.25, 1e-7);
  EXPECT_NEAR(TopProbability(std::vector<float>{100.0f, 0.0f}), 1.0, 1e-12);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(TopProbability(std::vector<float>{}), 1.0);
  EXPECT_EQ(TopProbability(std::vector<float>{-inf, -inf}), 1.0);
  EXPECT_EQ(TopProbability(std::vector<float>{inf, 0.0f}), 1.0);
  EXPECT_EQ(TopProbability(std::vector<float>{1.0f, 0.0f}, std::nanf("")), 1.0);
  EXPECT_EQ(TopProbability(std::vector<float>{-inf, -inf}, -inf), 1.0);
}

TEST(SamplerTest, GreedyIsTheFirstArgmax) {
  EXPECT_EQ(Argmax(std::vector<float>{1.0f, 3.0f, 2.0f, 3.0f}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{5.0f, 5.0f}), 0);
  EXPECT_EQ(Argmax(std::vector<float>{-std::numeric_limits<float>::infinity(), -1e30f}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{0.0f}), 0);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  CounterRng rng(3);
  SplitMix64 gen(99);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Argmax(std::vector<float>(37, -inf)), 0);
  EXPECT_EQ(Argmax(std::vector<float>{1.0f, inf, 2.0f, inf}), 1);
  for (int trial = 0; trial < 100; ++trial) {
    // Odd lengths across the 16-wide blocks and their tails.
    std::vector<float> logits(1 + gen.Next() % 90);
    for (float& l : logits) l = static_cast<float>(static_cast<int>(gen.Next() % 8));  // many ties
    const int32_t want =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(Sample(logits, greedy, rng), want);
    // Ties in Shape are broken the same way: the first maximum leads.
    SamplingParams sharp;
    sharp.temperature = 0.05;
    EXPECT_EQ(Shape(logits, sharp).ids.front(), want);
  }
}

// ---------------------------------------------------------------------------------------------
// CounterRng

TEST(SamplerTest, CounterRngIsDeterministicAndInRange) {
  CounterRng a(42), b(42);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_EQ(a.counter(), static_cast<uint64_t>(i));
    const double u = a.Uniform();
    ASSERT_EQ(u, b.Uniform());
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  // Draw i depends only on (seed, i): a fresh generator replays the same stream.
  CounterRng c(42);
  std::vector<double> first(100);
  for (double& u : first) u = c.Uniform();
  CounterRng d(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(d.Uniform(), first[i]);
}

TEST(SamplerTest, CounterRngStreamsAreDistinctAndUncorrelated) {
  // Seeds 0..999 x counters 0..999: no value repeats (a shared stream or an overlap between
  // neighbouring seeds would).
  constexpr int kSeeds = 1000, kDraws = 1000;
  std::vector<double> all;
  all.reserve(kSeeds * kDraws);
  for (int s = 0; s < kSeeds; ++s) {
    CounterRng rng(s);
    for (int i = 0; i < kDraws; ++i) all.push_back(rng.Uniform());
  }
  std::vector<double> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());

  // Uniformity of all draws: 100 equal bins.
  std::vector<int64_t> bins(100, 0);
  for (double u : all) ++bins[static_cast<int>(u * 100)];
  const test_stats::ChiSquareResult fit =
      test_stats::ChiSquareGoodnessOfFit(bins, std::vector<double>(100, 0.01));
  EXPECT_GT(fit.p_value, 1e-3) << fit.ToString();

  // Pearson correlation: neighbouring seeds at the same counter, and lag 1 within a stream.
  auto correlation = [](const std::vector<double>& x, const std::vector<double>& y) {
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
    mx /= n, my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      sxy += (x[i] - mx) * (y[i] - my);
      sxx += (x[i] - mx) * (x[i] - mx);
      syy += (y[i] - my) * (y[i] - my);
    }
    return sxy / std::sqrt(sxx * syy);
  };
  std::vector<double> x, y, lag0, lag1;
  for (int s = 0; s + 1 < kSeeds; ++s)
    for (int i = 0; i < kDraws; ++i) {
      x.push_back(all[s * kDraws + i]);
      y.push_back(all[(s + 1) * kDraws + i]);
      if (i + 1 < kDraws) {
        lag0.push_back(all[s * kDraws + i]);
        lag1.push_back(all[s * kDraws + i + 1]);
      }
    }
  // 5 standard errors: deterministic, and far from the bound for a decent generator.
  EXPECT_LT(std::fabs(correlation(x, y)), 5.0 / std::sqrt(static_cast<double>(x.size())));
  EXPECT_LT(std::fabs(correlation(lag0, lag1)), 5.0 / std::sqrt(static_cast<double>(lag0.size())));
}

// ---------------------------------------------------------------------------------------------
// SampleFrom

TEST(SamplerTest, SampleFromEdges) {
  const double just_below_one = std::nextafter(1.0, 0.0);
  const SparseDistribution d{{7, 3, 9}, {0.5, 0.3, 0.2}};
  EXPECT_EQ(SampleFrom(d, 0.0), 7);
  EXPECT_EQ(SampleFrom(d, std::nextafter(0.5, 0.0)), 7);
  EXPECT_EQ(SampleFrom(d, 0.5), 3);  // u < cumulative is strict
  EXPECT_EQ(SampleFrom(d, 0.79), 3);
  EXPECT_EQ(SampleFrom(d, 0.81), 9);
  EXPECT_EQ(SampleFrom(d, just_below_one), 9);
  // A single token takes every u.
  const SparseDistribution one{{5}, {1.0}};
  EXPECT_EQ(SampleFrom(one, 0.0), 5);
  EXPECT_EQ(SampleFrom(one, just_below_one), 5);
  // Probabilities whose running sum stays below 1 in floating point: u above the sum still
  // lands on the last token, never outside the support.
  const SparseDistribution thirds{{1, 2, 3}, {1.0 / 3, 1.0 / 3, 1.0 / 3 - 1e-15}};
  EXPECT_EQ(SampleFrom(thirds, just_below_one), 3);
  // Shape()'d distributions: u = 0 gives the top token, u -> 1 the last kept one.
  SplitMix64 gen(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(1000);
    for (float& l : logits) l = static_cast<float>(gen.Uniform(-5.0, 5.0));
    SamplingParams params;
    params.top_k = trial % 2 ? 0 : 20;
    params.top_p = 0.9;
    const SparseDistribution s = Shape(logits, params);
    EXPECT_EQ(SampleFrom(s, 0.0), s.ids.front());
    EXPECT_EQ(SampleFrom(s, just_below_one), s.ids.back());
  }
}

TEST(SamplerTest, SampledFrequenciesFollowTheShapedDistribution) {
  // Sample() end to end (Shape + SampleFrom + one CounterRng draw per token).
  SplitMix64 gen(2024);
  std::vector<float> logits(2000);
  for (float& l : logits) l = static_cast<float>(gen.Uniform(-6.0, 6.0));
  std::vector<int32_t> counts(2000, 0);
  for (int i = 0; i < 2000; i += 7) counts[i] = 2;
  SamplingParams params;
  params.temperature = 0.8;
  params.top_k = 50;
  params.top_p = 0.9;
  params.min_p = 0.05;
  params.presence_penalty = 0.3;
  params.frequency_penalty = 0.2;
  const SparseDistribution d = Shape(logits, params, counts);
  ASSERT_GT(d.ids.size(), 5u);
  std::vector<int64_t> observed(d.ids.size() + 1, 0);  // last cell: outside the support
  constexpr int kSamples = 200000;
  CounterRng rng(12345);
  for (int n = 0; n < kSamples; ++n) {
    const int32_t t = Sample(logits, params, rng, counts);
    const auto it = std::find(d.ids.begin(), d.ids.end(), t);
    ++observed[it - d.ids.begin()];
  }
  std::vector<double> probs = d.probs;
  probs.push_back(0.0);
  const test_stats::ChiSquareResult r = test_stats::ChiSquareGoodnessOfFit(observed, probs);
  EXPECT_EQ(r.impossible, 0);
  EXPECT_GT(r.p_value, 1e-3) << r.ToString();
  EXPECT_LT(test_stats::TotalVariation(observed, probs), 3.0 / std::sqrt(double{kSamples}));
}

}  // namespace
}  // namespace mtplx::sample
