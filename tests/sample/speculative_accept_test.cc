// The speculative acceptance rule as a sampler: on synthetic target / draft distributions the
// emitted tokens must be distributed exactly as plain sampling from the target.
//
// The target is a Markov chain over a small vocabulary: position t's distribution p_t(. | x_{t-1})
// is a sparse Shape() output (so top-k / top-p / min-p truncation is real), and so is the draft
// q_t(. | x_{t-1}). Generation mirrors src/engine/speculative.cc cycle by cycle: the first token
// is sampled plainly; each cycle takes the primary (pending bonus / correction), draws
// min(K, remaining) drafts from q (a point-mass q draws no uniform, like the greedy drafter),
// tests draft i with AcceptDraft(p_i, q_i, d_i, u), on rejection emits a correction from
// Residual(p_i, q_i), and when every draft is accepted emits a bonus from p_{K+1}.
//
// Checks per configuration (fixed seeds, so deterministic): chi-square goodness of fit of the
// token at every output position against the chain's marginal, of every adjacent pair
// (x_t, x_{t+1}), and of the whole sequence when it has few enough outcomes (Bonferroni over all
// of these, alpha = 1e-3); total variation of each marginal <= 3 / sqrt(N). Deliberately broken
// rules must fail the same battery (its power), and the u = 0 / u -> 1 edges are pinned.
#include "sample/speculative_accept.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "base/rng.h"
#include "sample/sampler.h"
#include "sample/test_stats.h"

namespace mtplx::sample {
namespace {

constexpr int kVocab = 6;
constexpr int32_t kContext = 0;  // the token before position 0

// ---------------------------------------------------------------------------------------------
// Synthetic chains

enum class DraftKind { kSampled, kEqual, kGreedy, kOutside, kMixed };

const char* Name(DraftKind k) {
  switch (k) {
    case DraftKind::kSampled:
      return "sampled";
    case DraftKind::kEqual:
      return "equal";
    case DraftKind::kGreedy:
      return "greedy";
    case DraftKind::kOutside:
      return "outside";
    case DraftKind::kMixed:
      return "mixed";
  }
  return "?";
}

struct Chain {
  int length = 0;
  // p[t][prev], q[t][prev]: distributions of token t given token t - 1.
  std::vector<std::vector<SparseDistribution>> p, q;
};

std::vector<float> RandomLogits(SplitMix64& rng, double spread) {
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = static_cast<float>(rng.Uniform(-spread, spread));
  return logits;
}

SamplingParams RandomParams(SplitMix64& rng) {
  SamplingParams s;
  s.temperature = rng.Uniform(0.5, 1.5);
  const int ks[] = {0, 2, 3, 4};
  s.top_k = ks[rng.Next() % 4];
  s.top_p = rng.Next() % 3 == 0 ? 1.0 : rng.Uniform(0.6, 0.95);
  s.min_p = rng.Next() % 3 == 0 ? 0.1 : 0.0;
  return s;
}

SparseDistribution Draft(SplitMix64& rng, DraftKind kind, const SparseDistribution& p,
                         const std::vector<float>& p_logits) {
  if (kind == DraftKind::kMixed) {
    const DraftKind kinds[] = {DraftKind::kSampled, DraftKind::kEqual, DraftKind::kGreedy,
                               DraftKind::kOutside};
    kind = kinds[rng.Next() % 4];
  }
  switch (kind) {
    case DraftKind::kEqual:
      return p;  // residual mass 0: rejection is impossible
    case DraftKind::kGreedy: {
      // Argmax of a perturbed copy: often p's top token, sometimes one outside p's support.
      std::vector<float> l = p_logits;
      for (float& x : l) x += static_cast<float>(rng.Uniform(-2.0, 2.0));
      return PointMass(Argmax(l));
    }
    case DraftKind::kOutside: {
      // Most of q's mass on tokens where p = 0 (p(d) = 0 drafts), some inside.
      std::vector<float> l(kVocab);
      for (int v = 0; v < kVocab; ++v)
        l[v] = static_cast<float>((Probability(p, v) > 0 ? -1.0 : 1.0) + rng.Uniform(-0.5, 0.5));
      SamplingParams s;
      s.temperature = 1.0;
      s.top_k = 0;
      s.top_p = 1.0;
      return Shape(l, s);
    }
    case DraftKind::kSampled:
    default: {
      // A different sampler on perturbed logits; with top_k 0 / top_p 1 it has mass outside
      // p's truncated support.
      std::vector<float> l = p_logits;
      for (float& x : l) x += static_cast<float>(rng.Uniform(-1.5, 1.5));
      return Shape(l, RandomParams(rng));
    }
  }
}

Chain MakeChain(uint64_t seed, int length, DraftKind kind) {
  SplitMix64 rng(seed);
  Chain c;
  c.length = length;
  c.p.resize(length);
  c.q.resize(length);
  for (int t = 0; t < length; ++t)
    for (int prev = 0; prev < kVocab; ++prev) {
      const std::vector<float> logits = RandomLogits(rng, 2.5);
      c.p[t].push_back(Shape(logits, RandomParams(rng)));
      c.q[t].push_back(Draft(rng, kind, c.p[t].back(), logits));
    }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The cycle, as src/engine/speculative.cc runs it, with pluggable rules for the power checks.

struct Rules {
  std::function<bool(const SparseDistribution&, const SparseDistribution&, int32_t, double)>
      accept = AcceptDraft;
  std::function<SparseDistribution(const SparseDistribution&, const SparseDistribution&)> residual =
      Residual;
  bool shared_accept_uniform = false;  // bug: one uniform for every accept test of a cycle
  bool reuse_draft_uniform = false;    // bug: draft i's accept test reuses the uniform it was
                                       // sampled with
};

struct PathCounts {
  int64_t accepted = 0, rejected = 0, bonuses = 0, rejected_outside_p = 0;
};

std::vector<int32_t> Generate(const Chain& c, int depth_limit, CounterRng& rng, const Rules& rules,
                              PathCounts* paths) {
  std::vector<int32_t> out;
  const int max_tokens = c.length;
  auto prev_of = [&](size_t t) { return t == 0 ? kContext : out[t - 1]; };
  out.push_back(SampleFrom(c.p[0][kContext], rng.Uniform()));  // the first token: plain
  int32_t pending = out.back();  // the next cycle's primary (already emitted)
  while (static_cast<int>(out.size()) < max_tokens) {
    const int32_t primary = pending;
    const size_t t0 = out.size();  // index of the first draft's position
    const int depth = std::min(depth_limit, max_tokens - static_cast<int>(out.size()));
    std::vector<int32_t> drafts;
    std::vector<const SparseDistribution*> q;
    std::vector<double> draft_u;
    for (int j = 0; j < depth; ++j) {
      const int32_t prev = j == 0 ? primary : drafts.back();
      q.push_back(&c.q[t0 + j][prev]);
      // A point mass is the greedy drafter: no uniform is drawn.
      draft_u.push_back(q.back()->ids.size() == 1 ? 0.0 : rng.Uniform());
      drafts.push_back(SampleFrom(*q.back(), draft_u.back()));
    }
    int accepted = 0;
    bool finished = false;
    const double shared_u = rules.shared_accept_uniform ? rng.Uniform() : 0.0;
    for (int i = 0; i < depth; ++i) {
      const SparseDistribution& p = c.p[t0 + i][prev_of(t0 + i)];
      const double u = rules.shared_accept_uniform ? shared_u
                       : rules.reuse_draft_uniform ? draft_u[i]
                                                   : rng.Uniform();
      if (rules.accept(p, *q[i], drafts[i], u)) {
        ++accepted;
        ++paths->accepted;
        out.push_back(drafts[i]);
        if (static_cast<int>(out.size()) >= max_tokens) finished = true;
        if (finished) break;
        continue;
      }
      ++paths->rejected;
      if (Probability(p, drafts[i]) == 0.0) ++paths->rejected_outside_p;
      out.push_back(SampleFrom(rules.residual(p, *q[i]), rng.Uniform()));
      if (static_cast<int>(out.size()) >= max_tokens)
        finished = true;
      else
        pending = out.back();
      break;
    }
    if (accepted == depth && !finished) {
      ++paths->bonuses;
      out.push_back(SampleFrom(c.p[out.size()][out.back()], rng.Uniform()));
      if (static_cast<int>(out.size()) < max_tokens) pending = out.back();
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Exact target probabilities

std::vector<double> Dense(const SparseDistribution& d) {
  std::vector<double> v(kVocab, 0.0);
  for (size_t i = 0; i < d.ids.size(); ++i) v[d.ids[i]] = d.probs[i];
  return v;
}

// marginals[t][v] = P(x_t = v).
std::vector<std::vector<double>> Marginals(const Chain& c) {
  std::vector<std::vector<double>> m(c.length, std::vector<double>(kVocab, 0.0));
  m[0] = Dense(c.p[0][kContext]);
  for (int t = 1; t < c.length; ++t)
    for (int x = 0; x < kVocab; ++x) {
      const std::vector<double> next = Dense(c.p[t][x]);
      for (int y = 0; y < kVocab; ++y) m[t][y] += m[t - 1][x] * next[y];
    }
  return m;
}

// P(x_0 .. x_{L-1}) for the sequence encoded base kVocab (x_0 most significant).
std::vector<double> SequenceProbabilities(const Chain& c) {
  std::vector<double> probs(1, 1.0);
  std::vector<int32_t> last(1, kContext);
  for (int t = 0; t < c.length; ++t) {
    std::vector<double> next_probs;
    std::vector<int32_t> next_last;
    for (size_t s = 0; s < probs.size(); ++s) {
      const std::vector<double> p = Dense(c.p[t][last[s]]);
      for (int y = 0; y < kVocab; ++y) {
        next_probs.push_back(probs[s] * p[y]);
        next_last.push_back(y);
      }
    }
    probs.swap(next_probs);
    last.swap(next_last);
  }
  return probs;
}

// ---------------------------------------------------------------------------------------------
// The battery

struct BatteryResult {
  double min_p_value = 1.0;  // smallest p-value over all tests
  int tests = 0;
  double max_tv_times_sqrt_n = 0.0;
  int64_t impossible = 0;  // emitted tokens the target gives probability 0
  std::string worst;
  PathCounts paths;
};

BatteryResult RunBattery(const Chain& c, int depth, int samples, uint64_t seed,
                         const Rules& rules) {
  BatteryResult r;
  const int L = c.length;
  std::vector<std::vector<int64_t>> pos(L, std::vector<int64_t>(kVocab, 0));
  std::vector<std::vector<int64_t>> pairs(L - 1, std::vector<int64_t>(kVocab * kVocab, 0));
  const bool whole = std::pow(kVocab, L) <= 8000;
  std::vector<int64_t> sequences(whole ? static_cast<size_t>(std::pow(kVocab, L)) : 0, 0);
  for (int n = 0; n < samples; ++n) {
    CounterRng rng(seed * 1000003ull + static_cast<uint64_t>(n));  // one stream per "request"
    const std::vector<int32_t> x = Generate(c, depth, rng, rules, &r.paths);
    EXPECT_EQ(static_cast<int>(x.size()), L);
    size_t code = 0;
    for (int t = 0; t < L; ++t) {
      ++pos[t][x[t]];
      if (t + 1 < L) ++pairs[t][x[t] * kVocab + x[t + 1]];
      code = code * kVocab + x[t];
    }
    if (whole) ++sequences[code];
  }
  const std::vector<std::vector<double>> m = Marginals(c);
  auto record = [&](const test_stats::ChiSquareResult& chi, const std::string& what) {
    ++r.tests;
    r.impossible += chi.impossible;
    if (chi.p_value < r.min_p_value) {
      r.min_p_value = chi.p_value;
      r.worst = what + ": " + chi.ToString();
    }
  };
  for (int t = 0; t < L; ++t) {
    record(test_stats::ChiSquareGoodnessOfFit(pos[t], m[t]), "position " + std::to_string(t));
    r.max_tv_times_sqrt_n = std::max(r.max_tv_times_sqrt_n,
                                     test_stats::TotalVariation(pos[t], m[t]) * std::sqrt(samples));
  }
  for (int t = 0; t + 1 < L; ++t) {
    std::vector<double> joint(kVocab * kVocab, 0.0);
    for (int a = 0; a < kVocab; ++a) {
      const std::vector<double> next = Dense(c.p[t + 1][a]);
      for (int b = 0; b < kVocab; ++b) joint[a * kVocab + b] = m[t][a] * next[b];
    }
    record(test_stats::ChiSquareGoodnessOfFit(pairs[t], joint), "pair " + std::to_string(t));
  }
  if (whole)
    record(test_stats::ChiSquareGoodnessOfFit(sequences, SequenceProbabilities(c)),
           "whole sequence");
  return r;
}

constexpr int kSamples = 200000;
constexpr double kAlpha = 1e-3;

struct Config {
  int depth;
  DraftKind kind;
};

class SpeculativeAcceptBattery : public ::testing::TestWithParam<Config> {};

TEST_P(SpeculativeAcceptBattery, EmittedTokensFollowTheTarget) {
  const Config cfg = GetParam();
  const int length = cfg.depth + 2;  // the plain first token, one full cycle, one more token
  const uint64_t seed = 1000 * cfg.depth + static_cast<uint64_t>(cfg.kind);
  const Chain c = MakeChain(seed, length, cfg.kind);
  const BatteryResult r = RunBattery(c, cfg.depth, kSamples, seed, Rules{});
  std::printf(
      "K=%d %-8s accepted %lld rejected %lld (p(d)=0: %lld) bonuses %lld; %d tests, "
      "min p %.3g, max TV*sqrt(N) %.3f\n",
      cfg.depth, Name(cfg.kind), static_cast<long long>(r.paths.accepted),
      static_cast<long long>(r.paths.rejected), static_cast<long long>(r.paths.rejected_outside_p),
      static_cast<long long>(r.paths.bonuses), r.tests, r.min_p_value, r.max_tv_times_sqrt_n);
  const double alpha = kAlpha / r.tests;  // Bonferroni
  EXPECT_EQ(r.impossible, 0);
  EXPECT_GT(r.min_p_value, alpha) << "K=" << cfg.depth << " " << Name(cfg.kind) << " worst "
                                  << r.worst;
  EXPECT_LE(r.max_tv_times_sqrt_n, 3.0);
  // Every path was exercised (an all-equal q never rejects, by construction; greedy and
  // outside-support drafters rarely survive a whole cycle, so bonuses are counted elsewhere).
  EXPECT_GT(r.paths.accepted, kSamples / 20);
  if (cfg.kind != DraftKind::kGreedy && cfg.kind != DraftKind::kOutside) {
    EXPECT_GT(r.paths.bonuses, kSamples / 100);
  }
  if (cfg.kind == DraftKind::kEqual) {
    EXPECT_EQ(r.paths.rejected, 0);
  } else {
    EXPECT_GT(r.paths.rejected, kSamples / 20);
  }
  if (cfg.kind == DraftKind::kOutside || cfg.kind == DraftKind::kMixed) {
    EXPECT_GT(r.paths.rejected_outside_p, kSamples / 100);
  }
}

std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (int depth = 1; depth <= 5; ++depth)
    for (DraftKind kind : {DraftKind::kSampled, DraftKind::kEqual, DraftKind::kGreedy,
                           DraftKind::kOutside, DraftKind::kMixed})
      configs.push_back({depth, kind});
  return configs;
}

INSTANTIATE_TEST_SUITE_P(Chains, SpeculativeAcceptBattery, ::testing::ValuesIn(AllConfigs()),
                         [](const auto& test_info) {
                           return "K" + std::to_string(test_info.param.depth) + "_" +
                                  Name(test_info.param.kind);
                         });

// ---------------------------------------------------------------------------------------------
// Power: the same battery must reject rules that are known to be wrong.

TEST(SpeculativeAcceptPowerTest, BrokenRulesFailTheBattery) {
  struct Broken {
    const char* name;
    Rules rules;
    DraftKind kind;
  };
  std::vector<Broken> broken;
  {
    Rules r;  // correction sampled from p instead of (p - q)+
    r.residual = [](const SparseDistribution& p, const SparseDistribution&) { return p; };
    broken.push_back({"residual = p", r, DraftKind::kSampled});
  }
  {
    Rules r;  // one-hot acceptance u < p(d) for a sampled (not one-hot) draft
    r.accept = [](const SparseDistribution& p, const SparseDistribution&, int32_t d, double u) {
      return u < Probability(p, d);
    };
    broken.push_back({"accept iff u < p(d) with sampled q", r, DraftKind::kSampled});
  }
  {
    Rules r;  // (p - q) without the clamp at 0, i.e. renormalised p - q over p's support
    r.residual = [](const SparseDistribution& p, const SparseDistribution& q) {
      SparseDistribution out = p;
      double total = 0.0;
      for (size_t i = 0; i < out.ids.size(); ++i) {
        out.probs[i] = std::max(1e-12, p.probs[i] - 0.5 * Probability(q, p.ids[i]));
        total += out.probs[i];
      }
      for (double& x : out.probs) x /= total;
      return out;
    };
    broken.push_back({"residual = norm(p - q/2)", r, DraftKind::kMixed});
  }
  {
    Rules r;  // accepts every draft
    r.accept = [](const SparseDistribution&, const SparseDistribution&, int32_t, double) {
      return true;
    };
    broken.push_back({"always accept", r, DraftKind::kGreedy});
  }
  {
    Rules r;
    r.shared_accept_uniform = true;
    broken.push_back({"one uniform shared by a cycle's accept tests", r, DraftKind::kSampled});
  }
  {
    Rules r;
    r.reuse_draft_uniform = true;
    broken.push_back({"accept test reuses the draft's uniform", r, DraftKind::kSampled});
  }
  for (const Broken& b : broken) {
    const int depth = 3;
    const Chain c = MakeChain(77, depth + 2, b.kind);
    const BatteryResult r = RunBattery(c, depth, kSamples, 77, b.rules);
    const double alpha = kAlpha / r.tests;
    std::printf("%-45s min p %.3g, impossible %lld, max TV*sqrt(N) %.2f\n", b.name, r.min_p_value,
                static_cast<long long>(r.impossible), r.max_tv_times_sqrt_n);
    EXPECT_TRUE(r.min_p_value < alpha || r.impossible > 0)
        << b.name << " was not detected: " << r.worst;
  }
}

// ---------------------------------------------------------------------------------------------
// Exact algebra and edges

TEST(SpeculativeAcceptTest, OneStepOutputDistributionIsExactlyP) {
  // out(y) = q(y) min(1, p(y)/q(y)) + P(reject) r(y) with r = Residual(p, q), for many (p, q).
  SplitMix64 rng(31);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::vector<float> logits = RandomLogits(rng, 3.0);
    const SparseDistribution p = Shape(logits, RandomParams(rng));
    const DraftKind kinds[] = {DraftKind::kSampled, DraftKind::kEqual, DraftKind::kGreedy,
                               DraftKind::kOutside};
    const SparseDistribution q = Draft(rng, kinds[trial % 4], p, logits);
    const SparseDistribution r = Residual(p, q);
    double reject = 0.0;
    std::vector<double> out(kVocab, 0.0);
    for (size_t i = 0; i < q.ids.size(); ++i) {
      const double a = std::min(1.0, Probability(p, q.ids[i]) / q.probs[i]);
      out[q.ids[i]] += q.probs[i] * a;
      reject += q.probs[i] * (1.0 - a);
    }
    for (size_t i = 0; i < r.ids.size(); ++i) out[r.ids[i]] += reject * r.probs[i];
    for (int v = 0; v < kVocab; ++v) ASSERT_NEAR(out[v], Probability(p, v), 1e-12) << trial;
    // The residual lives inside p's support and is normalised.
    for (int32_t id : r.ids) EXPECT_GT(Probability(p, id), 0.0);
    EXPECT_NEAR(std::accumulate(r.probs.begin(), r.probs.end(), 0.0), 1.0, 1e-12);
    // AcceptDraft's threshold in u is exactly min(1, p(d) / q(d)).
    for (size_t i = 0; i < q.ids.size(); ++i) {
      const int32_t d = q.ids[i];
      const double a = std::min(1.0, Probability(p, d) / q.probs[i]);
      if (a > 1e-9) {
        EXPECT_TRUE(AcceptDraft(p, q, d, a * (1 - 1e-9)));
      }
      if (a < 1.0) {
        EXPECT_FALSE(
            AcceptDraft(p, q, d, std::min(a * (1 + 1e-9) + 1e-300, std::nextafter(1.0, 0.0))));
      }
    }
  }
}

TEST(SpeculativeAcceptTest, UniformAtZeroAndJustBelowOne) {
  const double zero = 0.0, top = std::nextafter(1.0, 0.0);
  const SparseDistribution p{{2, 0}, {0.75, 0.25}};
  const SparseDistribution q{{3, 2, 0}, {0.5, 0.3, 0.2}};
  // p(d) = 0 never accepts, not even at u = 0 (SGLang #35771 accepted it with <=).
  EXPECT_FALSE(AcceptDraft(p, q, 3, zero));
  EXPECT_FALSE(AcceptDraft(p, PointMass(3), 3, zero));
  EXPECT_FALSE(AcceptDraft(p, q, 5, zero));  // outside both supports
  // p(d) > 0 always accepts at u = 0.
  EXPECT_TRUE(AcceptDraft(p, q, 2, zero));
  EXPECT_TRUE(AcceptDraft(p, PointMass(0), 0, zero));
  // p(d) >= q(d) accepts for every u < 1.
  EXPECT_TRUE(AcceptDraft(p, q, 2, top));
  EXPECT_TRUE(AcceptDraft(p, q, 0, top));
  EXPECT_TRUE(AcceptDraft(p, p, 2, top));
  // p(d) < q(d): accepted iff u < p/q. Point mass: iff u < p(d).
  const SparseDistribution q2{{0, 2}, {0.5, 0.5}};  // p(0) / q(0) = 0.5
  EXPECT_TRUE(AcceptDraft(p, q2, 0, std::nextafter(0.5, 0.0)));
  EXPECT_FALSE(AcceptDraft(p, q2, 0, 0.5));
  EXPECT_FALSE(AcceptDraft(p, q2, 0, top));
  EXPECT_TRUE(AcceptDraft(p, PointMass(0), 0, std::nextafter(0.25, 0.0)));
  EXPECT_FALSE(AcceptDraft(p, PointMass(0), 0, 0.25));
  EXPECT_FALSE(AcceptDraft(p, PointMass(0), 0, top));
  // A draft whose p is a hair below q still rejects at the top of [0, 1).
  const SparseDistribution pa{{1, 4}, {0.5, 0.5}};
  const SparseDistribution qa{{1, 4}, {0.5 + 1e-12, 0.5 - 1e-12}};
  EXPECT_FALSE(AcceptDraft(pa, qa, 1, top));
  EXPECT_TRUE(AcceptDraft(pa, qa, 1, 1.0 - 1e-11));

  // Corrections drawn at u = 0 and u -> 1 stay where the residual has mass.
  const SparseDistribution r = Residual(p, q);  // (p - q)+ = {2: 0.45, 0: 0.05}
  ASSERT_EQ(r.ids.size(), 2u);
  EXPECT_NEAR(Probability(r, 2), 0.9, 1e-15);
  EXPECT_NEAR(Probability(r, 0), 0.1, 1e-15);
  EXPECT_EQ(SampleFrom(r, zero), 2);
  EXPECT_EQ(SampleFrom(r, top), 0);
  // Greedy drafter: the residual of a point mass is p without d, renormalised.
  const SparseDistribution r1 = Residual(p, PointMass(2));
  EXPECT_EQ(r1.ids, (std::vector<int32_t>{0}));
  EXPECT_EQ(SampleFrom(r1, top), 0);
  // A point mass outside p's support: the residual is p itself.
  const SparseDistribution r2 = Residual(p, PointMass(7));
  EXPECT_EQ(r2.ids, p.ids);
  for (size_t i = 0; i < p.probs.size(); ++i) EXPECT_NEAR(r2.probs[i], p.probs[i], 1e-15);
}

TEST(SpeculativeAcceptTest, ZeroResidualFallsBackToP) {
  // p == q: (p - q)+ has no mass; the fallback is p (rejection has probability 0 here anyway).
  const SparseDistribution p{{4, 1, 2}, {0.5, 0.3, 0.2}};
  const SparseDistribution r = Residual(p, p);
  EXPECT_EQ(r.ids, p.ids);
  EXPECT_EQ(r.probs, p.probs);
  // p <= q everywhere on p's support only because of rounding: still a usable distribution.
  const SparseDistribution q{{4, 1, 2}, {0.5 + 1e-17, 0.3 + 1e-17, 0.2}};
  const SparseDistribution r3 = Residual(p, q);
  EXPECT_FALSE(r3.ids.empty());
  EXPECT_NEAR(std::accumulate(r3.probs.begin(), r3.probs.end(), 0.0), 1.0, 1e-12);
  // A single-token p: the residual of any q is that token.
  const SparseDistribution one = PointMass(9);
  EXPECT_EQ(Residual(one, SparseDistribution{{9, 3}, {0.4, 0.6}}).ids, (std::vector<int32_t>{9}));
  EXPECT_EQ(Residual(one, one).ids, (std::vector<int32_t>{9}));
}

}  // namespace
}  // namespace mtplx::sample
