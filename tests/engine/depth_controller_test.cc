// The adaptive depth controller on simulated cycles: it goes as deep as pays, falls back to plain
// decoding when drafts are rejected, and probes deeper again when acceptance recovers.
#include "engine/depth_controller.h"

#include <gtest/gtest.h>

#include "base/rng.h"

namespace mtplx::engine {
namespace {

// A machine where a trunk forward of m rows costs verify(m) and a draft step `draft`; drafts are
// accepted with probability `acceptance` each (independently). Runs `cycles` cycles and returns
// the depth the controller settled on (the most frequent of the last 50).
struct Simulation {
  double (*verify)(int rows);
  double draft;
  double acceptance;
};

std::vector<double> Costs(const Simulation& sim) {
  std::vector<double> costs;
  for (int d = 0; d <= DepthController::kMaxDepth; ++d)
    costs.push_back((sim.verify(d + 1) + d * sim.draft) / sim.verify(1));
  return costs;
}

// How many of a cycle's `depth` drafts are accepted (in order, up to the first rejection) when
// the first is accepted with probability `first` and each later one with `later`.
int DraftsAccepted(SplitMix64& rng, int depth, double first, double later) {
  int accepted = 0;
  while (accepted < depth &&
         static_cast<double>(rng.Next() % 10000) / 10000 < (accepted == 0 ? first : later))
    ++accepted;
  return accepted;
}

int Settle(DepthController& c, const Simulation& sim, int cycles, uint64_t seed = 1) {
  SplitMix64 rng(seed);
  std::vector<int> last(DepthController::kMaxDepth + 1, 0);
  for (int i = 0; i < cycles; ++i) {
    const int depth = c.Next();
    c.Observe(depth, DraftsAccepted(rng, depth, sim.acceptance, sim.acceptance));
    if (i >= cycles - 50) ++last[depth];
  }
  return static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());
}

double MemoryBound(int rows) { return 1.0 + 0.02 * (rows - 1); }  // rows nearly free
double ComputeBound(int rows) { return 1.0 * rows; }              // every row costs a step

const Simulation kMemoryBoundGood{MemoryBound, 0.05, 0.9};
const Simulation kMemoryBoundBad{MemoryBound, 0.05, 0.0};
const Simulation kComputeBound{ComputeBound, 0.05, 0.6};

TEST(DepthControllerTest, GoesDeepWhenRowsAreCheapAndDraftsAccepted) {
  DepthController c(4, 1, Costs(kMemoryBoundGood));
  EXPECT_EQ(Settle(c, kMemoryBoundGood, 400), 4);
  EXPECT_GT(c.acceptance(1), 0.8);
}

TEST(DepthControllerTest, FallsBackToPlainDecodingWhenDraftsFail) {
  DepthController c(3, 3, Costs(kMemoryBoundBad));
  EXPECT_EQ(Settle(c, kMemoryBoundBad, 400), 0);
  EXPECT_LT(c.acceptance(1), 0.1);
}

TEST(DepthControllerTest, ComputeBoundRowsKeepItShallow) {
  // Every extra row costs a whole step: a draft pays only if nearly always accepted.
  DepthController c(4, 2, Costs(kComputeBound));
  EXPECT_EQ(Settle(c, kComputeBound, 400), 0);
}

TEST(DepthControllerTest, NoticesAcceptanceThatRecovers) {
  DepthController c(3, 3, Costs(kMemoryBoundBad));
  EXPECT_EQ(Settle(c, kMemoryBoundBad, 300), 0);
  // Probes of depth 1 see the drafts accepted again and climb back.
  EXPECT_GE(Settle(c, {MemoryBound, 0.05, 0.95}, 600, 2), 2);
}

// Runs `cycles` cycles where the first draft is accepted with probability `first` and every
// later one with `later`; returns how many of the last `tail` cycles drafted `depth` or more.
int CyclesAtDepth(DepthController& c, SplitMix64& rng, int cycles, double first, double later,
                  int tail, int depth) {
  int count = 0;
  for (int i = 0; i < cycles; ++i) {
    const int d = c.Next();
    c.Observe(d, DraftsAccepted(rng, d, first, later));
    if (i >= cycles - tail && d >= depth) ++count;
  }
  return count;
}

// A stretch of text where only the first draft lands cuts the depth to 1; there the deeper
// drafts are never seen. When all drafts land again the controller must not keep their low point
// until rare probes get past every draft before them: within a few dozen cycles it is back deep.
TEST(DepthControllerTest, ReturnsDeepSoonAfterAHardStretch) {
  // Cycle costs near those `mtplx tune` measured for the x8 model on a Zen 3 host.
  const std::vector<double> costs{1.0, 1.2, 1.43, 1.62, 1.85, 2.1};
  DepthController c(5, 5, costs);
  SplitMix64 rng(3);
  EXPECT_GE(CyclesAtDepth(c, rng, 300, 0.9, 0.9, 100, 3), 90) << "easy text";
  EXPECT_LE(CyclesAtDepth(c, rng, 60, 0.9, 0.05, 20, 2), 5) << "hard text";
  EXPECT_GE(CyclesAtDepth(c, rng, 80, 0.9, 0.9, 40, 3), 30) << "easy text again";
}

TEST(DepthControllerTest, ExpectedTokensAndCostsFollowTheFormula) {
  DepthController c(4, 2, {1.0, 1.2, 1.4});
  for (int i = 0; i < 200; ++i) c.Observe(2, 2);  // always accepted
  EXPECT_NEAR(c.expected_tokens(2), 3.0, 0.1);
  EXPECT_NEAR(c.expected_tokens(0), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(c.odds(2), c.acceptance(1) * c.acceptance(2));
  EXPECT_DOUBLE_EQ(c.expected_tokens(2), 1.0 + c.odds(1) + c.odds(2));
  EXPECT_DOUBLE_EQ(c.cycle_cost(2), 1.4);
  EXPECT_DOUBLE_EQ(c.cycle_cost(4), 1.8);  // extrapolated: 0.2 a draft
}

TEST(DepthControllerTest, TheScheduleDependsOnlyOnTheAcceptanceSeen) {
  // No clock: two controllers fed the same outcomes choose the same depths.
  DepthController a(3, 2, Costs(kMemoryBoundGood)), b(3, 2, Costs(kMemoryBoundGood));
  SplitMix64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const int da = a.Next(), db = b.Next();
    ASSERT_EQ(da, db) << i;
    const int accepted = static_cast<int>(rng.Next() % (da + 1));
    a.Observe(da, accepted);
    b.Observe(db, accepted);
  }
}

TEST(DepthControllerTest, CostEstimatesFollowTheMemoryRegime) {
  const auto streamed = EstimateCycleCosts(0.1, CostRegime::kStreamed, 3);
  const auto arithmetic = EstimateCycleCosts(0.1, CostRegime::kStreamedArithmetic, 3);
  const auto cached = EstimateCycleCosts(0.1, CostRegime::kCached, 3);
  ASSERT_EQ(streamed.size(), 4u);
  EXPECT_DOUBLE_EQ(streamed[0], 1.0);
  EXPECT_DOUBLE_EQ(arithmetic[0], 1.0);
  EXPECT_LT(streamed[3], arithmetic[3]);
  EXPECT_LT(arithmetic[3], cached[3]);
  EXPECT_LT(streamed[1], 1.25);
}

// On plain AVX2 a verify row costs more once the rows no longer keep their sums in registers
// (Zen 3, x8 model: v(4..6) 1.30-1.45, 1.49-1.66, 1.86-2.05), so a deeper cycle's price climbs
// faster; priced linearly, adaptive depth sat at depth 5 where depth 3 paid more.
TEST(DepthControllerTest, PlainAvx2RowsCostMoreTheMoreThereAre) {
  const auto costs = EstimateCycleCosts(0.07, CostRegime::kStreamedArithmetic, 5);
  ASSERT_EQ(costs.size(), 6u);
  for (int d = 3; d <= 5; ++d) EXPECT_GT(costs[d] - costs[d - 1], costs[d - 1] - costs[d - 2]) << d;
  // v(6) as measured, beside five draft rounds.
  EXPECT_NEAR(costs[5] - 5 * (0.07 * 1.2 + 0.01), 1.94, 0.01);
}

// On Zen 1 the second row hides under the weight stream and each later one costs about half a
// step (x8 model at 4, 6 and 8 bits: v(3..5) 1.57-1.87, 1.94-2.54, 2.30-3.02); priced as on Zen 3,
// adaptive depth drafted two deep there and ran 14 % below depth 1 (32.7 against 37.9 tok/s).
TEST(DepthControllerTest, HalfWidthRowsCostHalfAStep) {
  const double draft = 0.07 * 1.2 + 0.01;
  const auto costs = EstimateCycleCosts(0.07, CostRegime::kStreamedHalfWidth, 4);
  ASSERT_EQ(costs.size(), 5u);
  EXPECT_NEAR(costs[1] - draft, 1.2, 1e-9);
  EXPECT_NEAR(costs[2] - 2 * draft, 1.7, 1e-9);
  for (int d = 3; d <= 4; ++d) EXPECT_GT(costs[d] - costs[d - 1], 0.5) << d;
  const auto zen3 = EstimateCycleCosts(0.07, CostRegime::kStreamedArithmetic, 4);
  for (int d = 1; d <= 4; ++d) EXPECT_GT(costs[d], zen3[d]) << d;
}

TEST(DepthControllerTest, TheRegimeFollowsTheWeightsAndTheKernel) {
  EXPECT_EQ(CostRegimeOf(true, true, false), CostRegime::kStreamed);
  EXPECT_EQ(CostRegimeOf(true, false, false), CostRegime::kStreamedArithmetic);
  EXPECT_EQ(CostRegimeOf(true, false, true), CostRegime::kStreamedHalfWidth);
  EXPECT_EQ(CostRegimeOf(false, true, false), CostRegime::kCached);
  EXPECT_EQ(CostRegimeOf(false, false, false), CostRegime::kCached);
  EXPECT_EQ(CostRegimeOf(false, false, true), CostRegime::kCached);
}

// Without a tuned depth, adapting starts where the prior says drafts pay most: deep when the
// weights stream and a verify row is nearly free, shallower when each row costs arithmetic (an
// AVX2 host without VNNI), shallow when that arithmetic runs on 128-bit halves (Zen 1) or the
// model sits in cache, and never at plain decoding, whose cycles would teach the controller
// nothing about the drafts.
TEST(DepthControllerTest, StartsAtThePriorsBestDepth) {
  EXPECT_EQ(PriorBestDepth(4, EstimateCycleCosts(0.1, CostRegime::kStreamed, 4)), 4);
  EXPECT_EQ(PriorBestDepth(2, EstimateCycleCosts(0.1, CostRegime::kStreamed, 2)), 2);
  EXPECT_EQ(PriorBestDepth(4, EstimateCycleCosts(0.1, CostRegime::kStreamedArithmetic, 4)), 2);
  EXPECT_EQ(PriorBestDepth(4, EstimateCycleCosts(0.07, CostRegime::kStreamedHalfWidth, 4)), 1);
  EXPECT_EQ(PriorBestDepth(4, EstimateCycleCosts(0.3, CostRegime::kCached, 4)), 1);
  EXPECT_EQ(PriorBestDepth(4, {1.0, 3.0, 5.0, 7.0, 9.0}), 1);  // drafts never pay
}

// Sampled drafts the head was sure of are kept more often than ones it was not: the controller
// learns the chance of each from the verifies it sees, and where a probability has no counts
// yet the first depth's acceptance, lower for unsure drafts and higher for sure ones, stands in.
TEST(DepthControllerTest, LearnsHowOftenDraftsOfEachProbabilityAreKept) {
  DepthController c(4, 2, EstimateCycleCosts(0.08, CostRegime::kStreamedArithmetic, 4));
  EXPECT_LT(c.DraftKeepChance(0.05), c.acceptance(1));
  EXPECT_GT(c.DraftKeepChance(0.95), c.acceptance(1));
  SplitMix64 rng(3);
  for (int i = 0; i < 400; ++i) {
    const double p = static_cast<double>(rng.Next() % 1000) / 1000;
    // Kept with chance 0.4 + 0.6 p, the shape the x8 model shows at T 0.6.
    c.ObserveDraft(p, static_cast<double>(rng.Next() % 1000) / 1000 < 0.4 + 0.6 * p);
  }
  EXPECT_LT(c.DraftKeepChance(0.05), 0.65);
  EXPECT_GT(c.DraftKeepChance(0.97), 0.85);
  EXPECT_LT(c.DraftKeepChance(0.05), c.DraftKeepChance(0.55));
  EXPECT_LT(c.DraftKeepChance(0.55), c.DraftKeepChance(0.97));
}

// A cycle stops drafting once the chance that one more draft survives no longer pays for the
// draft and the verify row it adds, at the rate a step yields now; it never drafts past the
// most the controller allows.
TEST(DepthControllerTest, DraftsOneMoreOnlyWhenItPays) {
  DepthController c(4, 3, EstimateCycleCosts(0.08, CostRegime::kStreamedArithmetic, 4));
  for (int i = 0; i < 200; ++i) c.Observe(3, 3);  // everything kept so far
  ASSERT_EQ(c.Next(), c.Best());                  // the rate below is the best depth's
  EXPECT_TRUE(c.WorthAnotherDraft(1, 0.95));
  EXPECT_TRUE(c.WorthAnotherDraft(2, 0.9));
  EXPECT_FALSE(c.WorthAnotherDraft(1, 0.1));
  EXPECT_FALSE(c.WorthAnotherDraft(2, 0.05));
  EXPECT_FALSE(c.WorthAnotherDraft(4, 1.0));  // the deepest depth
  EXPECT_FALSE(c.WorthAnotherDraft(0, 1.0));  // a cycle starts with its first draft
  // The bar is the cost of one more draft at today's rate: the more a row costs, the higher.
  const double rate = c.expected_tokens(c.Best()) / c.cycle_cost(c.Best());
  const double bar2 = rate * (c.cycle_cost(2) - c.cycle_cost(1)) / c.acceptance(2);
  EXPECT_TRUE(c.WorthAnotherDraft(1, bar2 * 1.01));
  EXPECT_FALSE(c.WorthAnotherDraft(1, bar2 * 0.99));
}

}  // namespace
}  // namespace mtplx::engine
