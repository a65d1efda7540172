// The quantization rule shared by `convert` and `synth`: mlx-lm's choices for Qwen 3.5.
#include "pack/quant_policy.h"

#include <gtest/gtest.h>

namespace mtplx::pack {
namespace {

TEST(QuantPolicyTest, LinearsTakeTheRequestedBitsAndGroup) {
  const QuantChoice q = ChooseQuantization("language_model.model.layers.0.mlp.up_proj", 256, 4, 64);
  EXPECT_EQ(q.bits, 4);
  EXPECT_EQ(q.group_size, 64);
  EXPECT_FALSE(q.is_override);
  const QuantChoice embed = ChooseQuantization("language_model.model.embed_tokens", 128, 3, 32);
  EXPECT_EQ(embed.bits, 3);
  EXPECT_EQ(embed.group_size, 32);
}

TEST(QuantPolicyTest, NothingIsQuantizedAtZeroBits) {
  EXPECT_EQ(ChooseQuantization("model.layers.0.mlp.gate", 256, 0, 64).bits, 0);
  EXPECT_EQ(ChooseQuantization("mtp.fc", 256, 0, 64).bits, 0);
}

TEST(QuantPolicyTest, MoeGatesStayAtEightBitsGroupSixtyFour) {
  for (const char* module : {"language_model.model.layers.3.mlp.gate",
                             "model.layers.0.mlp.shared_expert_gate", "mtp.layers.0.mlp.gate"}) {
    const QuantChoice q = ChooseQuantization(module, 128, 4, 32);
    EXPECT_EQ(q.bits, kGateBits) << module;
    EXPECT_EQ(q.group_size, kGateGroupSize) << module;
    EXPECT_TRUE(q.is_override) << module;
  }
  // gate_proj is an MLP projection, not a router.
  EXPECT_FALSE(ChooseQuantization("model.layers.0.mlp.gate_proj", 128, 4, 64).is_override);
}

TEST(QuantPolicyTest, WidthsThatDoNotDivideIntoGroupsStayDense) {
  EXPECT_EQ(ChooseQuantization("model.layers.0.mlp.down_proj", 96, 4, 64).bits, 0);
  EXPECT_EQ(ChooseQuantization("model.layers.0.mlp.down_proj", 96, 4, 32).bits, 4);
  EXPECT_EQ(ChooseQuantization("model.layers.0.mlp.gate", 96, 4, 32).bits, 0);  // g64 gate
}

TEST(QuantPolicyTest, OptionsOutsideMlxAffineAreRefused) {
  EXPECT_TRUE(CheckQuantOptions(0, 64).ok());
  EXPECT_TRUE(CheckQuantOptions(6, 128).ok());
  const Status bits = CheckQuantOptions(7, 64);
  EXPECT_FALSE(bits.ok());
  EXPECT_NE(bits.message().find("--bits 7"), std::string::npos) << bits.message();
  const Status group = CheckQuantOptions(4, 48, "--bits", "--group-size");
  EXPECT_NE(group.message().find("--group-size 48"), std::string::npos) << group.message();
  EXPECT_NE(CheckQuantOptions(1, 64, "--mtp-bits").message().find("--mtp-bits 1"),
            std::string::npos);
}

}  // namespace
}  // namespace mtplx::pack
