// The element-wise operations against the C library on their whole input range.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mtplx::kernels {
namespace {

double UlpDistance(float got, float want) {
  const float ulp = std::nextafter(want, std::numeric_limits<float>::infinity()) - want;
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// Every 4096th float in the normal range of expf: within 2 ulp.
TEST(OpsTest, ExpF32IsWithinTwoUlpOfExpf) {
  double worst = 0.0;
  for (const float sign : {1.0f, -1.0f})
    for (uint32_t bits = 0; bits < 0x7F800000u; bits += 0x1000u) {
      const float x = sign * std::bit_cast<float>(bits);
      if (x < -87.3f || x > 88.3f) continue;
      worst = std::max(worst, UlpDistance(ExpF32(x), std::exp(x)));
    }
  EXPECT_LE(worst, 2.0);
}

TEST(OpsTest, ExpF64IsWithinFourUlpOfExp) {
  double worst = 0.0;
  for (double x = -708.0; x <= 709.0; x += 0.0137) {
    const double want = std::exp(x);
    const double ulp = std::nextafter(want, INFINITY) - want;
    worst = std::max(worst, std::fabs(ExpF64(x) - want) / ulp);
  }
  EXPECT_LE(worst, 4.0);
  EXPECT_EQ(ExpF64(-800.0), 0.0);
  EXPECT_EQ(ExpF64(0.0), 1.0);
  const double x[11] = {-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
  double want = 0.0;
  for (double v : x) want += std::exp(v - 7.0);
  EXPECT_NEAR(SumExpShifted(x, 11, 7.0), want, 1e-15 * want);
}

// The sampler's partition: float exponentials against double ones, on odd sizes and tails.
TEST(OpsTest, SumExpScaledF32StaysWithinAMillionth) {
  for (int64_t n : {1, 15, 16, 17, 511, 512, 513, 8191, 8192, 151937}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(0.37 * i) * 12.0);
    const float max = MaxF32(x.data(), n);
    float want_max = x[0];
    for (float v : x) want_max = std::max(want_max, v);
    ASSERT_EQ(max, want_max) << n;
    const float scale = 1.0f / 0.6f;
    double want = 0.0;
    for (float v : x) want += std::exp(static_cast<double>(v) * scale - max * scale);
    EXPECT_NEAR(SumExpScaledF32(x.data(), n, scale, max * scale), want, 1e-6 * want) << n;
  }
}

TEST(OpsTest, FirstAboveMatchesItsReference) {
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.91 * i));
  x[77] = std::numeric_limits<float>::quiet_NaN();  // never above anything
  for (int64_t n : {0, 1, 16, 17, 47, 300})
    for (int64_t from : {0, 1, 15, 16, 33})
      for (float bound : {-2.0f, 0.5f, 0.999f, 2.0f}) {
        if (from > n) continue;
        EXPECT_EQ(FirstAbove(x.data(), from, n, bound),
                  FirstAboveReference(x.data(), from, n, bound))
            << "n=" << n << " from=" << from << " bound=" << bound;
      }
}

TEST(OpsTest, ExpF32EdgeCases) {
  EXPECT_EQ(ExpF32(0.0f), 1.0f);
  EXPECT_EQ(ExpF32(-100.0f), 0.0f);
  EXPECT_EQ(ExpF32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(ExpF32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isfinite(ExpF32(1000.0f)));
}

TEST(OpsTest, SiluSigmoidAndSoftmaxMatchTheirDefinitions) {
  for (float x : {-90.0f, -20.0f, -1.5f, -1e-3f, 0.0f, 0.25f, 3.0f, 40.0f}) {
    EXPECT_NEAR(SigmoidScalar(x), 1.0 / (1.0 + std::exp(-static_cast<double>(x))), 1e-7);
    EXPECT_NEAR(SiluScalar(x), x / (1.0 + std::exp(-static_cast<double>(x))),
                1e-6 * std::max(1.0f, std::fabs(x)));
  }
  float v[5] = {1.0f, -2.0f, 0.5f, 30.0f, -60.0f};
  double want[5], z = 0.0;
  for (int i = 0; i < 5; ++i) z += want[i] = std::exp(static_cast<double>(v[i]) - 30.0);
  SoftmaxInPlace(v, 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(v[i], want[i] / z, 1e-7);
}

}  // namespace
}  // namespace mtplx::kernels
