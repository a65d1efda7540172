// The draft plan of a batched step on injected costs (engine/step_plan.h).
#include "engine/step_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace mtplx::engine {
namespace {

// A decoding sequence at `depth` whose drafts are each accepted with `a`.
PlanSlot Decoding(int depth, double a, bool cuttable = true) {
  PlanSlot s;
  s.rows = depth + 1;
  s.depth = depth;
  s.cuttable = cuttable;
  double odds = 1.0;
  s.expected_tokens = 1.0;
  for (int d = 1; d <= depth; ++d) {
    odds *= a;
    s.expected_tokens += odds;
  }
  s.last_draft_odds = depth > 0 ? odds : 0.0;
  return s;
}

// Cuts as Step does until the plan keeps the step; returns the depths left.
std::vector<int> Plan(std::vector<PlanSlot> slots, const StepCosts& costs, int max_rows,
                      double a = 0.8) {
  for (int cut; (cut = NextCut(slots, costs, max_rows)) >= 0;) {
    const bool cuttable = slots[cut].cuttable;
    slots[cut] = Decoding(slots[cut].depth - 1, a, cuttable);
  }
  std::vector<int> depths;
  for (const PlanSlot& s : slots) depths.push_back(s.depth);
  return depths;
}

// v(R) = max(1.05 + 0.01 R, 0.15 R): rows are nearly free until their arithmetic (0.15 of a step
// each) outgrows the weight stream, as measured on 2 cores for the x8 model.
StepCosts TwoCoreCosts() {
  StepCosts c;
  for (int r = 1; r <= 16; ++r)
    c.verify.push_back(r == 1 ? 1.0 : std::max(1.05 + 0.01 * r, 0.15 * r));
  c.draft = 0.08;
  return c;
}

TEST(StepCostsTest, VerifyExtrapolatesLinearlyPastTheMeasuredRows) {
  StepCosts c;
  c.verify = {1.0, 1.1, 1.3};
  EXPECT_DOUBLE_EQ(c.Verify(2), 1.1);
  EXPECT_DOUBLE_EQ(c.Verify(5), 1.7);
  EXPECT_DOUBLE_EQ(c.Step(3, 2), 1.3);  // no draft price set
  EXPECT_FALSE(StepCosts{}.known());
}

TEST(StepPlanTest, OneSequenceKeepsItsControllersDepth) {
  EXPECT_EQ(Plan({Decoding(3, 0.5)}, TwoCoreCosts(), 16), std::vector<int>({3}));
}

TEST(StepPlanTest, WithoutCostsOnlyTheRowCapCutsTheLeastLikelyDraftsFirst) {
  std::vector<PlanSlot> slots = {Decoding(3, 0.8), Decoding(3, 0.8), Decoding(3, 0.8),
                                 Decoding(3, 0.8)};
  EXPECT_EQ(Plan(slots, {}, 0), std::vector<int>({3, 3, 3, 3}));
  EXPECT_EQ(Plan(slots, {}, 12), std::vector<int>({2, 2, 2, 2}));
  // A sequence whose output depends on its depth (seeded sampling) keeps it.
  slots[0] = Decoding(3, 0.8, /*cuttable=*/false);
  EXPECT_EQ(Plan(slots, {}, 12), std::vector<int>({3, 1, 2, 2}));
}

TEST(StepPlanTest, ABusyComputeBoundStepDropsDraftsThatNoLongerPay) {
  // Four streams at depth 3 make 16 rows (v = 2.4): the planned step verifies fewer rows and
  // expects more tokens per unit of time than the full one.
  const StepCosts costs = TwoCoreCosts();
  const std::vector<PlanSlot> full(4, Decoding(3, 0.8));
  const std::vector<int> depths = Plan(full, costs, 16);
  int rows = 0, rounds = 0;
  double tokens = 0;
  for (int d : depths) {
    const PlanSlot s = Decoding(d, 0.8);
    rows += s.rows;
    rounds = std::max(rounds, d);
    tokens += s.expected_tokens;
  }
  EXPECT_LT(rows, 16);
  double full_tokens = 0;
  for (const PlanSlot& s : full) full_tokens += s.expected_tokens;
  EXPECT_GT(tokens / costs.Step(rows, rounds), full_tokens / costs.Step(16, 3));
  // While the weights stream (rows nearly free), nothing is cut.
  StepCosts streaming;
  for (int r = 1; r <= 16; ++r) streaming.verify.push_back(1.0 + 0.01 * (r - 1));
  streaming.draft = 0.05;
  EXPECT_EQ(Plan(full, streaming, 16), std::vector<int>({3, 3, 3, 3}));
}

TEST(StepPlanTest, PrefillRowsCountButExpectNoTokens) {
  PlanSlot prefill;
  prefill.rows = 512;
  const StepCosts costs = TwoCoreCosts();
  // Next to a long prefill chunk a draft row costs its arithmetic share and adds its odds: the
  // likely first draft stays.
  const std::vector<int> depths = Plan({prefill, Decoding(1, 0.9)}, costs, 0, 0.9);
  EXPECT_EQ(depths[1], 1);
}

}  // namespace
}  // namespace mtplx::engine
