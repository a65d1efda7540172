// The chi-square helpers of test_stats.h against closed forms: for df = 1 the survival function
// is erfc(sqrt(x / 2)); for even df = 2k it is exp(-x/2) * sum_{i<k} (x/2)^i / i!.
#include "sample/test_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mtplx::test_stats {
namespace {

double EvenDfSurvival(double x, int df) {
  const double h = 0.5 * x;
  double term = 1.0, sum = 0.0;
  for (int i = 0; i < df / 2; ++i) {
    if (i > 0) term *= h / i;
    sum += term;
  }
  return std::exp(-h) * sum;
}

TEST(TestStatsTest, ChiSquareSurvivalMatchesClosedForms) {
  for (double x : {1e-6, 0.01, 0.5, 1.0, 2.0, 3.841458820694124, 10.0, 30.0, 80.0}) {
    const double want = std::erfc(std::sqrt(0.5 * x));
    EXPECT_NEAR(ChiSquareSurvival(x, 1), want, 1e-13 + 1e-11 * want) << x;
  }
  for (int df : {2, 4, 10, 40, 200}) {
    for (double x : {0.1, 1.0, 5.0, 0.5 * df, 1.0 * df, 1.5 * df, 2.0 * df + 30.0}) {
      const double want = EvenDfSurvival(x, df);
      EXPECT_NEAR(ChiSquareSurvival(x, df), want, 1e-13 + 1e-10 * want) << df << " " << x;
    }
  }
  // Table quantiles (alpha = 0.05, 0.001).
  EXPECT_NEAR(ChiSquareSurvival(18.307038053275146, 10), 0.05, 1e-9);
  EXPECT_NEAR(ChiSquareSurvival(124.34211340400407, 100), 0.05, 1e-9);
  EXPECT_NEAR(ChiSquareSurvival(16.266236196238129, 3), 0.001, 1e-10);
  EXPECT_EQ(ChiSquareSurvival(0.0, 5), 1.0);
}

TEST(TestStatsTest, GoodnessOfFitPoolsAndFlagsImpossibleCells) {
  // Perfect fit: statistic 0.
  ChiSquareResult r = ChiSquareGoodnessOfFit({250, 250, 500}, {0.25, 0.25, 0.5});
  EXPECT_EQ(r.statistic, 0.0);
  EXPECT_EQ(r.df, 2);
  EXPECT_EQ(r.p_value, 1.0);
  // An observation where the probability is 0 makes the hypothesis impossible.
  r = ChiSquareGoodnessOfFit({250, 250, 499, 1}, {0.25, 0.25, 0.5, 0.0});
  EXPECT_EQ(r.impossible, 1);
  EXPECT_EQ(r.p_value, 0.0);
  // Sparse cells (expected 1 and 2) are pooled into one (expected 3, < 5) and merged.
  r = ChiSquareGoodnessOfFit({1, 2, 497, 500}, {0.001, 0.002, 0.497, 0.5});
  EXPECT_EQ(r.df, 1);
  // A clearly wrong hypothesis is rejected.
  r = ChiSquareGoodnessOfFit({400, 600}, {0.5, 0.5});
  EXPECT_LT(r.p_value, 1e-9);
}

TEST(TestStatsTest, HomogeneityAndTotalVariation) {
  ChiSquareResult r = ChiSquareHomogeneity({100, 200, 300}, {100, 200, 300});
  EXPECT_EQ(r.statistic, 0.0);
  EXPECT_EQ(r.df, 2);
  r = ChiSquareHomogeneity({100, 200, 300}, {200, 400, 600});  // different totals, same shape
  EXPECT_NEAR(r.statistic, 0.0, 1e-12);
  r = ChiSquareHomogeneity({300, 300}, {200, 400});
  EXPECT_LT(r.p_value, 1e-6);
  // 2x2 table by hand: a = (30, 70), b = (50, 50): chi2 = 8.333...
  r = ChiSquareHomogeneity({30, 70}, {50, 50}, 0.0);
  EXPECT_NEAR(r.statistic,
              200.0 * (30.0 * 50 - 70.0 * 50) * (30.0 * 50 - 70.0 * 50) / (100.0 * 100 * 80 * 120),
              1e-12);
  EXPECT_NEAR(TotalVariation({25, 75}, {0.5, 0.5}), 0.25, 1e-15);
}

}  // namespace
}  // namespace mtplx::test_stats
