// Shared by distribution_test.cc (label model, a few thousand samples) and
// distribution_slow_test.cc (label slow, 20,000 samples): end-to-end sampled exactness of
// speculative decoding on the synthetic dense-tiny model. The first tokens generated with MTP
// speculation must follow the same joint distribution as plain decoding:
//
//   * plain: GeneratePlain, seeds 1..N;
//   * speculative: GenerateSpeculative at depth 2 (and 1), seeds 10^6 + 1..N, with
//       - the model's own MTP head drafting with the target sampler (random synthetic head, so
//         acceptance is low), or
//       - an "oracle-ish" point-mass proposer (SpeculativeOptions::proposer) that proposes the
//         most frequent continuation of the same prefix in the plain samples 3 times in 4, else
//         a uniformly random token, so accepted drafts, corrections and bonuses all occur.
//
// Every plain sample starts from one prefix state of the prompt but its last token (BuildPrefix,
// restored as the server's prompt cache restores it), so a sample runs one prompt row, not the
// whole prompt. Speculative samples do too, except in a "cold" scenario: there each one prefills
// the whole prompt, as `mtplx run` and a server request without a cached prefix do, and must still
// follow the distribution of the restored plain runs.
//
// Tests (fixed seeds: deterministic): chi-square homogeneity of the joint outcome of the first 3
// tokens (sparse cells pooled), of their repeat pattern (which of them are equal) and of each
// position's marginal, Bonferroni over all of them at alpha = 1e-3. Every spec seed differs from
// every plain seed: with equal seeds the first (primary) token would be the same draw in both
// runs and the samples would not be independent. (The oracle is built from the plain samples,
// but exactness holds for any proposer, so the speculative samples stay independent of them.)
//
// Power, checked by breaking src/engine/sequence.{h,cc} (the 2,000-sample variant fails for each;
// re-checked with the prefix-state samples): correction drawn from p instead of (p - q)+; bonus
// sampled from the wrong verify row; verify rows shaped without the penalty counts (the oracle
// scenario with penalties). Not detectable with this random synthetic MTP head (it almost never
// drafts inside p's support): errors that only involve a sampled q, such as accepting with
// probability p(d) instead of min(1, p/q); the trained model's test fails for that one, and
// tests/sample/speculative_accept_test.cc covers the rule directly.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/rng.h"
#include "engine/depth_controller.h"
#include "engine/generator.h"
#include "engine/prefix.h"
#include "engine/speculative.h"
#include "sample/test_stats.h"
#include "support/synthetic_model.h"

namespace mtplx::engine::distribution {

constexpr int kJointTokens = 3;
constexpr double kAlpha = 1e-3;

// The model and prompt under test: by default the synthetic dense-tiny with a 2-token prompt
// (short: the synthetic forward pass dominates the run time).
struct ModelUnderTest {
  std::string model_dir;  // empty: synthetic dense-tiny
  std::vector<int32_t> prompt = {17, 400};
  int draft_head_bits = 0;
  // The exact reference numerics by default; int8 runs the CLI's and server's kernels.
  kernels::Activations activations = kernels::Activations::kF32;
};

inline std::unique_ptr<model::Model> LoadModel(const ModelUnderTest& setup) {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  options.draft_head_bits = setup.draft_head_bits;
  options.activations = setup.activations;
  const std::string dir =
      setup.model_dir.empty() ? testing::SyntheticModel("dense-tiny") : setup.model_dir;
  auto m = model::Model::Load(dir, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// T = 0.6, top-p 0.95, top-k 20; with `penalties` also presence -1.0 and frequency -0.5: negative
// (allowed, OpenAI range [-2, 2]) so that repeats become ~12x MORE likely and common enough for
// the token counts the engine keeps across verify rows to matter to the test.
inline GenerateRequest BaseRequest(const ModelUnderTest& setup, const PrefixState* prefix,
                                   int max_tokens, bool penalties) {
  GenerateRequest r;
  r.prompt = setup.prompt;
  r.prefix = prefix;
  r.sampling.temperature = 0.6;
  r.sampling.top_p = 0.95;
  r.sampling.top_k = 20;
  if (penalties) {
    r.sampling.presence_penalty = -1.0;
    r.sampling.frequency_penalty = -0.5;
  }
  r.max_tokens = max_tokens;
  return r;
}

using Samples = std::vector<std::vector<int32_t>>;

inline Samples RunPlain(const model::Model& m, const ModelUnderTest& setup,
                        const PrefixState& prefix, int samples, int max_tokens, bool penalties) {
  Samples out;
  GenerateRequest request = BaseRequest(setup, &prefix, max_tokens, penalties);
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

// Proposes, 3 times in 4, the most frequent continuation of the same prefix among the plain
// samples (accepted with probability p(mode), the best a point mass can do), else a uniformly
// random token (almost always outside p's top-k: rejected, then corrected).
class Oracle {
 public:
  explicit Oracle(const Samples& plain) {
    std::map<std::vector<int32_t>, std::map<int32_t, int64_t>> seen;
    for (const auto& s : plain)
      for (size_t t = 0; t < s.size(); ++t)
        ++seen[std::vector<int32_t>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(t))][s[t]];
    for (const auto& [prefix, next] : seen) {
      int32_t best = next.begin()->first;
      for (const auto& [token, n] : next)
        if (n > next.at(best)) best = token;
      mode_[prefix] = best;
    }
  }
  int32_t Propose(const std::vector<int32_t>& emitted, SplitMix64& rng, int32_t vocab) const {
    const auto it = mode_.find(emitted);
    if (it != mode_.end() && rng.Next() % 4 != 0) return it->second;
    return static_cast<int32_t>(rng.Next() % static_cast<uint64_t>(vocab));
  }

 private:
  std::map<std::vector<int32_t>, int32_t> mode_;
};

// `prefix`: nullptr prefills the whole prompt in every sample.
inline Samples RunSpeculative(const model::Model& m, const ModelUnderTest& setup,
                              const PrefixState* prefix, int samples, int max_tokens,
                              bool penalties, int depth, const Oracle* oracle, SpecTotals* totals,
                              bool adaptive = false) {
  Samples out;
  GenerateRequest request = BaseRequest(setup, prefix, max_tokens, penalties);
  const int32_t vocab = static_cast<int32_t>(m.config().vocab_size);
  SplitMix64 proposal_rng(0);
  SpeculativeOptions options;
  options.depth = depth;
  if (adaptive) {
    // Rows priced as on plain AVX2 and a draft step as dear as this small model's, so that a
    // fresh controller drafts a second draft after a sure first one and stops after an unsure
    // one: where a cycle stops then depends on the drafts drawn, which must not bend the output.
    options.adaptive = true;
    options.cycle_costs = EstimateCycleCosts(0.3, CostRegime::kStreamedArithmetic, depth);
  }
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

// Two-sample homogeneity: the joint of the first kJointTokens tokens, their repeat pattern, and
// every position.
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
  test(
      [](const std::vector<int32_t>& s) {
        return std::vector<int32_t>(s.begin(), s.begin() + kJointTokens);
      },
      "joint(x1..x3)");
  // Which of the first three tokens repeat (5 patterns, dense cells): sensitive to the token
  // counts behind the presence / frequency penalties, which the sparse joint pools away.
  test(
      [](const std::vector<int32_t>& s) {
        return std::vector<int32_t>{s[0] == s[1], s[1] == s[2], s[0] == s[2]};
      },
      "repeats(x1..x3)");
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
  bool penalties = false;
  bool adaptive = false;  // depth adapts, sampled cycles stop early (the ceiling is `depth`)
  bool cold = false;      // speculative samples prefill the whole prompt (no cached prefix)
};

// For each sampling setup (with / without penalties) runs plain decoding once, then every
// scenario of that setup against it. Bonferroni over every test of every scenario.
inline void CheckScenarios(int samples, const std::vector<Scenario>& scenarios,
                           const ModelUnderTest& setup = {}) {
  auto m = LoadModel(setup);
  ASSERT_TRUE(m);
  ASSERT_GE(setup.prompt.size(), 2u);
  auto prefix =
      BuildPrefix(*m, std::span<const int32_t>(setup.prompt.data(), setup.prompt.size() - 1));
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&]() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - clock).count();
    clock = now;
    return s;
  };
  for (bool penalties : {false, true}) {
    int max_tokens = 0;
    for (const Scenario& s : scenarios)
      if (s.penalties == penalties) max_tokens = std::max(max_tokens, s.max_tokens);
    if (max_tokens == 0) continue;
    const Samples plain_all = RunPlain(*m, setup, *prefix, samples, max_tokens, penalties);
    ASSERT_EQ(static_cast<int>(plain_all.size()), samples);
    std::printf("plain%s: %d samples x %d tokens in %.1f s\n", penalties ? " (penalties)" : "",
                samples, max_tokens, lap());
    const Oracle oracle(plain_all);
    for (const Scenario& s : scenarios) {
      if (s.penalties != penalties) continue;
      Samples plain;
      for (const auto& p : plain_all) plain.emplace_back(p.begin(), p.begin() + s.max_tokens);
      SpecTotals totals;
      const Samples spec =
          RunSpeculative(*m, setup, s.cold ? nullptr : &*prefix, samples, s.max_tokens, penalties,
                         s.depth, s.oracle ? &oracle : nullptr, &totals, s.adaptive);
      ASSERT_EQ(static_cast<int>(spec.size()), samples);
      for (const auto& x : spec) ASSERT_EQ(static_cast<int>(x.size()), s.max_tokens);
      const Comparison c = Compare(plain, spec);
      std::printf(
          "%s%s (depth %d): %.1f s; drafts proposed %lld accepted %lld, corrections "
          "%lld, bonuses %lld\n%s",
          s.name, penalties ? " (penalties)" : "", s.depth, lap(),
          static_cast<long long>(totals.proposed), static_cast<long long>(totals.accepted),
          static_cast<long long>(totals.corrections), static_cast<long long>(totals.bonuses),
          c.report.c_str());
      const double alpha = kAlpha / (c.tests * static_cast<double>(scenarios.size()));
      EXPECT_GT(c.min_p_value, alpha) << s.name << " depth " << s.depth << " worst " << c.worst;
      EXPECT_GT(totals.proposed, 0);
      if (s.oracle) {  // the oracle really exercised every path
        EXPECT_GT(totals.accepted, totals.proposed / 10) << s.name;
        EXPECT_GT(totals.corrections, samples / 10) << s.name;
        EXPECT_GT(totals.bonuses, samples / 50) << s.name;
      }
    }
  }
}

}  // namespace mtplx::engine::distribution
