// Which CPUs split 256-bit instructions into 128-bit halves, by cpuid vendor, family and model.
#include "kernels/cpu.h"

#include <gtest/gtest.h>

namespace mtplx::kernels {
namespace {

TEST(CpuTest, ZenAndZenPlusSplitWideVectors) {
  EXPECT_TRUE(SplitsWideVectors("AuthenticAMD", 0x17, 0x01));  // Naples, Summit Ridge
  EXPECT_TRUE(SplitsWideVectors("AuthenticAMD", 0x17, 0x08));  // Pinnacle Ridge (Zen+)
  EXPECT_TRUE(SplitsWideVectors("AuthenticAMD", 0x17, 0x18));  // Picasso (Zen+)
  EXPECT_TRUE(SplitsWideVectors("AuthenticAMD", 0x17, 0x20));  // Dali
  EXPECT_TRUE(SplitsWideVectors("HygonGenuine", 0x18, 0x00));  // Dhyana, a Zen core
}

TEST(CpuTest, FullWidthCoresDoNot) {
  EXPECT_FALSE(SplitsWideVectors("AuthenticAMD", 0x17, 0x31));  // Rome (Zen 2)
  EXPECT_FALSE(SplitsWideVectors("AuthenticAMD", 0x17, 0x71));  // Matisse (Zen 2)
  EXPECT_FALSE(SplitsWideVectors("AuthenticAMD", 0x19, 0x01));  // Milan (Zen 3)
  EXPECT_FALSE(SplitsWideVectors("AuthenticAMD", 0x1a, 0x02));  // Zen 5
  EXPECT_FALSE(SplitsWideVectors("AuthenticAMD", 0x15, 0x02));  // Piledriver: no AVX2 kernel
  EXPECT_FALSE(SplitsWideVectors("GenuineIntel", 0x06, 0x55));  // Skylake-SP
  EXPECT_FALSE(SplitsWideVectors("HygonGenuine", 0x17, 0x01));
}

}  // namespace
}  // namespace mtplx::kernels
