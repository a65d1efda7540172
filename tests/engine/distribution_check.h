// Shared by distribution_test.cc (label model, a few thousand samples) and
// distribution_slow_test.cc (label slow, 20,000 samples): end-to-end sampled exactness of
// speculative decoding on the synthetic dense-tiny model. The first tokens generated with MTP
// speculation must follow the same joint distribution as plain decoding:
//
//   * plain: GeneratePlain, seeds 1..N;
//   * speculative: GenerateSpeculative at depth 2 (and 1), seeds 10^6 + 1..N, with
//       - the model's own MTP head drafting with the target sampler (random synthetic head, so
//         acceptance is low), or
//       - an "oracle-ish" point-mass proposer (SpeculativeOptions::proposer) that replays a
//         continuation seen in the plain samples (same prefix) 3 times in 4, else proposes a
//         uniformly random token, so accepted drafts, corrections and bonuses all occur.
//
// Tests (fixed seeds: deterministic): chi-square homogeneity of the joint outcome of the first 3
// tokens (sparse cells pooled) and of each position's marginal, Bonferroni over all of them at
// alpha = 1e-3. Every spec seed differs from every plain seed: with equal seeds the first
// (primary) token would be the same draw in both runs and the samples would not be independent.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "engine/generator.h"
#include "engine/speculative.h"
#include "sample/test_stats.h"
#include "support/synthetic_model.h"

namespace mtplx::engine::distribution {

constexpr int kJointTokens = 3;
constexpr double kAlpha = 1e-3;

inline std::unique_ptr<model::Model> LoadDenseTiny() {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  auto m = model::Model::Load(testing::SyntheticModel("dense-tiny"), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

inline GenerateRequest BaseRequest(int max_tokens) {
  GenerateRequest r;
  r.prompt = {17, 400, 5, 923, 81, 300, 12, 640};
  r.sampling.temperature = 0.6;
  r.sampling.top_p = 0.95;
  r.sampling.top_k = 20;
  r.max_tokens = max_tokens;
  return r;
}

using Samples = std::vector<std::vector<int32_t>>;

inline Samples RunPlain(const model::Model& m, int samples, int max_tokens) {
  Samples out;
  GenerateRequest request = BaseRequest(max_tokens);
  for (int i = 0; i < samples; ++i) {
    request.seed = 1 + static_cast<uint64_t>(i);
    auto r = GeneratePlain(m, request, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.push_back(r->tokens);
  }
  return out;
}

struct SpecTotals {
  int64_t proposed = 0, accepted = 0, corrections = 0, bonuses = 0;
};

// Replays continuations of the plain samples: prefix -> every next token seen after it.
class Oracle {
 public:
  explicit Oracle(const Samples& plain) {
    for (const auto& s : plain)
      for (size_t t = 0; t < s.size(); ++t)
        next_[std::vector<int32_t>(s.begin(), s.begin() + t)].push_back(s[t]);
  }
  int32_t Propose(const std::vector<int32_t>& emitted, SplitMix64& rng, int32_t vocab) const {
    const auto it = next_.find(emitted);
    if (it != next_.end() && rng.Next() % 4 != 0)
      return it->second[rng.Next() % it->second.size()];
    return static_cast<int32_t>(rng.Next() % static_cast<uint64_t>(vocab));
  }

 private:
  std::map<std::vector<int32_t>, std::vector<int32_t>> next_;
};

inline Samples RunSpeculative(const model::Model& m, int samples, int max_tokens, int depth,
                              const Oracle* oracle, SpecTotals* totals) {
  Samples out;
  GenerateRequest request = BaseRequest(max_tokens);
  const int32_t vocab = static_cast<int32_t>(m.config().vocab_size);
  SplitMix64 proposal_rng(0);
  SpeculativeOptions options;
  options.depth = depth;
  if (oracle) {
    options.proposer = [&](const std::vector<int32_t>& emitted, int, int32_t) {
      return oracle->Propose(emitted, proposal_rng, vocab);
    };
  }
  for (int i = 0; i < samples; ++i) {
    request.seed = 1000000 + 1 + static_cast<uint64_t>(i);
    proposal_rng = SplitMix64(777 + static_cast<uint64_t>(i));
    auto r = GenerateSpeculative(m, request, options, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.push_back(r->result.tokens);
    const auto& s = r->speculative;
    for (int d = 1; d <= depth; ++d) {
      totals->proposed += s.proposed_by_depth[d];
      totals->accepted += s.accepted_by_depth[d];
    }
    totals->corrections += s.corrections;
    totals->bonuses += s.bonus_tokens;
  }
  return out;
}

struct Comparison {
  double min_p_value = 1.0;
  int tests = 0;
  std::string worst;
  std::string report;
};

// Two-sample homogeneity: the joint of the first kJointTokens tokens, and every position.
inline Comparison Compare(const Samples& a, const Samples& b) {
  Comparison c;
  auto test = [&](auto key_of, const std::string& what) {
    std::map<std::vector<int32_t>, std::array<int64_t, 2>> cells;
    for (const auto& s : a) ++cells[key_of(s)][0];
    for (const auto& s : b) ++cells[key_of(s)][1];
    std::vector<int64_t> ca, cb;
    for (const auto& [key, n] : cells) {
      ca.push_back(n[0]);
      cb.push_back(n[1]);
    }
    const test_stats::ChiSquareResult r = test_stats::ChiSquareHomogeneity(ca, cb);
    ++c.tests;
    c.report += what + ": " + std::to_string(cells.size()) + " outcomes, " + r.ToString() + "\n";
    if (r.p_value < c.min_p_value) {
      c.min_p_value = r.p_value;
      c.worst = what + ": " + r.ToString();
    }
  };
  test([](const std::vector<int32_t>& s) {
         return std::vector<int32_t>(s.begin(), s.begin() + kJointTokens);
       },
       "joint(x1..x3)");
  const size_t length = a.front().size();
  for (size_t t = 0; t < length; ++t)
    test([t](const std::vector<int32_t>& s) { return std::vector<int32_t>{s[t]}; },
         "x" + std::to_string(t + 1));
  return c;
}

struct Scenario {
  const char* name;
  int depth;
  bool oracle;
  int max_tokens;
};

// Runs plain once and every scenario against it; returns the worst p-value seen.
inline void CheckScenarios(int samples, const std::vector<Scenario>& scenarios) {
  auto m = LoadDenseTiny();
  ASSERT_TRUE(m);
  int max_tokens = 0;
  for (const Scenario& s : scenarios) max_tokens = std::max(max_tokens, s.max_tokens);
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&]() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - clock).count();
    clock = now;
    return s;
  };
  const Samples plain_all = RunPlain(*m, samples, max_tokens);
  ASSERT_EQ(static_cast<int>(plain_all.size()), samples);
  std::printf("plain: %d samples x %d tokens in %.1f s\n", samples, max_tokens, lap());
  const Oracle oracle(plain_all);
  for (const Scenario& s : scenarios) {
    Samples plain;
    for (const auto& p : plain_all) plain.emplace_back(p.begin(), p.begin() + s.max_tokens);
    SpecTotals totals;
    const Samples spec =
        RunSpeculative(*m, samples, s.max_tokens, s.depth, s.oracle ? &oracle : nullptr, &totals);
    ASSERT_EQ(static_cast<int>(spec.size()), samples);
    for (const auto& x : spec) ASSERT_EQ(static_cast<int>(x.size()), s.max_tokens);
    const Comparison c = Compare(plain, spec);
    std::printf("%s (depth %d): %.1f s; drafts proposed %lld accepted %lld, corrections %lld, "
                "bonuses %lld\n%s",
                s.name, s.depth, lap(), static_cast<long long>(totals.proposed),
                static_cast<long long>(totals.accepted),
                static_cast<long long>(totals.corrections),
                static_cast<long long>(totals.bonuses), c.report.c_str());
    // Bonferroni over every test of every scenario.
    const double alpha = kAlpha / (c.tests * static_cast<double>(scenarios.size()));
    EXPECT_GT(c.min_p_value, alpha) << s.name << " worst " << c.worst;
    EXPECT_GT(totals.proposed, 0);
    if (s.oracle) {  // the oracle really exercised every path
      EXPECT_GT(totals.accepted, totals.proposed / 4) << s.name;
      EXPECT_GT(totals.corrections, samples / 10) << s.name;
      EXPECT_GT(totals.bonuses, samples / 10) << s.name;
    }
  }
}

}  // namespace mtplx::engine::distribution
