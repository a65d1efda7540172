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

// Leaf 1 eax values as the CPUs report them (stepping in bits 0-3).
TEST(CpuTest, DecodesTheSignatureTheWayVendorsNumberIt) {
  const CpuFamilyModel naples = DecodeCpuSignature(0x00800F12);  // EPYC 7001: 17h, model 01h
  EXPECT_EQ(naples.family, 0x17u);
  EXPECT_EQ(naples.model, 0x01u);
  const CpuFamilyModel rome = DecodeCpuSignature(0x00830F10);  // EPYC 7002: 17h, model 31h
  EXPECT_EQ(rome.family, 0x17u);
  EXPECT_EQ(rome.model, 0x31u);
  const CpuFamilyModel dhyana = DecodeCpuSignature(0x00900F01);  // Hygon C86: 18h, model 00h
  EXPECT_EQ(dhyana.family, 0x18u);
  EXPECT_EQ(dhyana.model, 0x00u);
  const CpuFamilyModel skylake_sp = DecodeCpuSignature(0x00050654);  // family 6: extended model
  EXPECT_EQ(skylake_sp.family, 0x06u);
  EXPECT_EQ(skylake_sp.model, 0x55u);
  // Family 5 (Pentium): the extended fields are ignored even if set.
  const CpuFamilyModel pentium = DecodeCpuSignature(0x00F10543);
  EXPECT_EQ(pentium.family, 0x05u);
  EXPECT_EQ(pentium.model, 0x04u);
}

}  // namespace
}  // namespace mtplx::kernels
