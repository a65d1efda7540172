// Greedy speculative output equals plain decoding token for token, at every depth, on every
// synthetic preset: both through the (random, rarely right) MTP head and through an oracle
// proposer that is right most of the time, so long accepted runs, bonuses and corrections all
// happen.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/rng.h"
#include "engine/generator.h"
#include "support/synthetic_model.h"

namespace mtplx::engine {
namespace {

std::unique_ptr<model::Model> LoadPreset(const std::string& preset) {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  auto m = model::Model::Load(testing::SyntheticModel(preset), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

GenerateRequest GreedyRequest(int prompt_index, int max_tokens) {
  GenerateRequest r;
  SplitMix64 rng(prompt_index);
  const int length = 1 + static_cast<int>(rng.Next() % 40);
  for (int i = 0; i < length; ++i) r.prompt.push_back(static_cast<int32_t>(rng.Next() % 993));
  r.sampling.temperature = 0.0;
  r.max_tokens = max_tokens;
  r.stop_ids = {962};
  return r;
}

void ExpectGreedyEquality(const std::string& preset, int prompts, bool oracle) {
  auto m = LoadPreset(preset);
  ASSERT_TRUE(m);
  int64_t accepted = 0, proposed = 0, bonuses = 0, corrections = 0;
  for (int p = 0; p < prompts; ++p) {
    const GenerateRequest request = GreedyRequest(p, 24);
    auto plain = GeneratePlain(*m, request, nullptr);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    const std::vector<int32_t>& want = plain->tokens;
    for (int depth = 1; depth <= 4; ++depth) {
      SpeculativeOptions options;
      options.depth = depth;
      SplitMix64 noise(p * 10 + depth);
      if (oracle) {
        // Right 75% of the time: knows the plain continuation.
        options.proposer = [&](const std::vector<int32_t>& emitted, int, int32_t mtp) {
          const size_t next = emitted.size();
          if (next < want.size() && noise.Next() % 4 != 0) return want[next];
          return static_cast<int32_t>(noise.Next() % 993);
        };
      }
      auto spec = GenerateSpeculative(*m, request, options, nullptr);
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      ASSERT_EQ(spec->result.tokens, want)
          << preset << " prompt " << p << " depth " << depth << (oracle ? " oracle" : "");
      EXPECT_EQ(spec->result.finish_reason, plain->finish_reason);
      for (int d = 1; d <= depth; ++d) {
        accepted += spec->speculative.accepted_by_depth[d];
        proposed += spec->speculative.proposed_by_depth[d];
      }
      bonuses += spec->speculative.bonus_tokens;
      corrections += spec->speculative.corrections;
    }
  }
  if (oracle) {  // the oracle really exercised every path
    EXPECT_GT(accepted, proposed / 2);
    EXPECT_GT(bonuses, 10);
    EXPECT_GT(corrections, 10);
  }
}

class GreedyEqualityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GreedyEqualityTest, MtpHeadDrafts) { ExpectGreedyEquality(GetParam(), 50, false); }
TEST_P(GreedyEqualityTest, OracleDrafts) { ExpectGreedyEquality(GetParam(), 50, true); }

INSTANTIATE_TEST_SUITE_P(Presets, GreedyEqualityTest,
                         ::testing::Values("dense-tiny", "moe-tiny", "next-tiny"),
                         testing::PresetTestName<::testing::TestParamInfo<std::string>>);

TEST(SpeculativeTest, RejectsBadDepthAndEmptyPrompt) {
  auto m = LoadPreset("dense-tiny");
  ASSERT_TRUE(m);
  GenerateRequest request = GreedyRequest(1, 4);
  SpeculativeOptions options;
  options.depth = 5;
  EXPECT_FALSE(GenerateSpeculative(*m, request, options, nullptr).ok());
  options.depth = 2;
  request.prompt.clear();
  EXPECT_FALSE(GenerateSpeculative(*m, request, options, nullptr).ok());
}

TEST(SpeculativeTest, StatsAreConsistent) {
  auto m = LoadPreset("dense-tiny");
  ASSERT_TRUE(m);
  GenerateRequest request = GreedyRequest(3, 40);
  request.stop_ids.clear();
  SpeculativeOptions options;
  options.depth = 3;
  auto spec = GenerateSpeculative(*m, request, options, nullptr);
  ASSERT_TRUE(spec.ok());
  const auto& s = spec->speculative;
  EXPECT_EQ(spec->result.tokens.size(), 40u);
  EXPECT_EQ(s.verify_calls, s.cycles);
  int64_t committed = 0;
  for (size_t n = 0; n < s.tokens_per_cycle.size(); ++n) committed += n * s.tokens_per_cycle[n];
  // Every emitted token but the last pending one was committed by some verify.
  EXPECT_GE(committed + 1, static_cast<int64_t>(spec->result.tokens.size()) - 1);
  EXPECT_EQ(s.AcceptanceByDepth().size(), 3u);
}

}  // namespace
}  // namespace mtplx::engine
