// Rollback of the hybrid state after a verify pass: keeping a prefix of the verified rows must
// leave the state bit-identical to plain decoding of exactly those tokens.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/rng.h"
#include "model/model.h"
#include "support/synthetic_model.h"

namespace mtplx::model {
namespace {

std::unique_ptr<Model> LoadPreset(const std::string& preset) {
  LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  auto model = Model::Load(testing::SyntheticModel(preset), options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

// Bitwise equality of everything that influences future tokens.
void ExpectSameState(const Model& m, const state::SequenceState& a, const state::SequenceState& b,
                     int iteration) {
  ASSERT_EQ(a.position(), b.position()) << iteration;
  // Snapshots hold exactly the used rows of each head, whatever capacity the caches grew to.
  const state::SequenceSnapshot sa = a.Snapshot(), sb = b.Snapshot();
  for (int64_t l = 0, slot = 0; l < m.config().num_layers; ++l) {
    if (m.config().IsFullAttention(l)) {
      ASSERT_EQ(sa.attention[slot].keys, sb.attention[slot].keys)
          << "keys, layer " << l << ", iteration " << iteration;
      ASSERT_EQ(sa.attention[slot].values, sb.attention[slot].values)
          << "values, layer " << l << ", iteration " << iteration;
      ++slot;
    } else {
      ASSERT_EQ(a.delta(l).conv, b.delta(l).conv) << "conv, layer " << l << ", it " << iteration;
      ASSERT_EQ(a.delta(l).recurrent, b.delta(l).recurrent)
          << "recurrent, layer " << l << ", iteration " << iteration;
    }
  }
}

void RollbackFuzz(const std::string& preset, int iterations) {
  auto m = LoadPreset(preset);
  ASSERT_TRUE(m);
  SplitMix64 rng(42);
  auto spec = m->NewState();
  auto plain = m->NewState();
  ForwardOutput out;
  for (int it = 0; it < iterations; ++it) {
    if (spec->position() > 120) {  // keep the context short so the test stays fast
      spec->Reset();
      plain->Reset();
    }
    const int rows = 1 + static_cast<int>(rng.Next() % 5);  // primary + up to 4 drafts
    const int keep = 1 + static_cast<int>(rng.Next() % rows);
    std::vector<int32_t> tokens(rows);
    for (auto& t : tokens) t = static_cast<int32_t>(rng.Next() % 960);
    state::VerifyCapture capture;
    ForwardOptions verify;
    verify.capture = &capture;
    ASSERT_TRUE(m->Forward(*spec, tokens, verify, &out).ok());
    const std::vector<float> verify_logits = out.logits;
    ASSERT_TRUE(m->CommitVerify(*spec, capture, keep).ok());
    const int64_t vocab = m->config().vocab_size;
    for (int r = 0; r < keep; ++r) {
      ASSERT_TRUE(m->Forward(*plain, std::span<const int32_t>(&tokens[r], 1), {}, &out).ok());
      ASSERT_TRUE(
          std::equal(out.logits.begin(), out.logits.end(), verify_logits.begin() + r * vocab))
          << "row " << r << " logits, iteration " << it;
    }
    ExpectSameState(*m, *spec, *plain, it);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(CommitTest, RollbackFuzzDenseTiny) { RollbackFuzz("dense-tiny", 10000); }
TEST(CommitTest, RollbackFuzzMoeTiny) { RollbackFuzz("moe-tiny", 1000); }
TEST(CommitTest, RollbackFuzzNextTiny) { RollbackFuzz("next-tiny", 1000); }

TEST(CommitTest, RejectsBadKeepAndMovedState) {
  auto m = LoadPreset("dense-tiny");
  ASSERT_TRUE(m);
  auto st = m->NewState();
  state::VerifyCapture capture;
  ForwardOptions verify;
  verify.capture = &capture;
  ForwardOutput out;
  const std::vector<int32_t> tokens = {1, 2, 3};
  ASSERT_TRUE(m->Forward(*st, tokens, verify, &out).ok());
  EXPECT_FALSE(m->CommitVerify(*st, capture, 0).ok());
  EXPECT_FALSE(m->CommitVerify(*st, capture, 4).ok());
  ASSERT_TRUE(m->Forward(*st, std::span<const int32_t>(tokens.data(), 1), {}, &out).ok());
  EXPECT_FALSE(m->CommitVerify(*st, capture, 2).ok());
}

}  // namespace
}  // namespace mtplx::model
