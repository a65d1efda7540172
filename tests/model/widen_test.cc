// `mtplx synth --from DIR --widen K`: the wide model computes the same function. Its logits (and
// the MTP head's draft logits) equal the original's, and greedy speculative decoding gives the
// same tokens with the same acceptance, for the bundled 8-bit model (codes kept, scales / K) and
// a bf16 Hugging Face checkpoint (weights / K, exact).
#include "synth/widen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "base/file.h"
#include "engine/speculative.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

std::unique_ptr<model::Model> Load(const std::string& dir) {
  model::LoadOptions o;
  o.show_progress = false;
  o.threads = 1;
  o.activations = kernels::Activations::kF32;  // exact: int8 activation codes round differently
  auto m = model::Model::Load(dir, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::string Widen(const std::string& from, int factor, int bits, bool hf = false) {
  synth::WidenOptions o;
  o.hf_layout = hf;
  o.from_dir = from;
  o.out_dir = testing::MakeTempDir("mtplx-widen") + "/wide";
  o.factor = factor;
  o.bits = bits;
  o.progress = false;
  const Status s = synth::WriteWidenedCheckpoint(o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o.out_dir;
}

const std::vector<int32_t> kTokens = {735, 277, 411, 68,  66,  425, 78,  7,   15,  410,  268, 576,
                                      37,  650, 260, 606, 546, 471, 260, 606, 546, 1603, 268};

// max |a - b| / max |a| over every logit of every row.
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return diff / scale;
}

struct Outputs {
  std::vector<float> logits, draft_logits;
};

// Trunk logits of every row, and the MTP head's logits for (hidden of row r, token r + 1).
Outputs RunModel(const model::Model& m, const std::vector<int32_t>& tokens) {
  Outputs out;
  auto state = m.NewState();
  model::ForwardOutput fwd;
  EXPECT_TRUE(m.Forward(*state, tokens, {}, &fwd).ok());
  out.logits = fwd.logits;
  if (!m.has_mtp()) return out;
  auto mtp = m.NewMtpState();
  model::ForwardOutput draft;
  const std::vector<int32_t> next(tokens.begin() + 1, tokens.end());
  EXPECT_TRUE(m.ForwardMtp(*mtp, next, fwd.hidden.data(), {}, &draft).ok());
  out.draft_logits = draft.logits;
  return out;
}

void ExpectSameFunction(const std::string& original, const std::string& wide, int factor,
                        double tolerance) {
  auto a = Load(original), b = Load(wide);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->config().hidden_size, a->config().hidden_size * factor);
  EXPECT_EQ(b->config().num_heads, a->config().num_heads * factor);
  EXPECT_EQ(b->config().linear_value_heads, a->config().linear_value_heads * factor);
  EXPECT_EQ(b->config().intermediate_size, a->config().intermediate_size * factor);
  EXPECT_GT(b->weight_bytes(), a->weight_bytes() * factor * factor / 2);
  std::vector<int32_t> tokens = kTokens;
  for (int32_t& t : tokens) t %= static_cast<int32_t>(a->config().vocab_size);
  const Outputs x = RunModel(*a, tokens), y = RunModel(*b, tokens);
  EXPECT_LE(RelativeDifference(x.logits, y.logits), tolerance);
  ASSERT_EQ(a->has_mtp(), b->has_mtp());
  if (a->has_mtp()) {
    EXPECT_LE(RelativeDifference(x.draft_logits, y.draft_logits), tolerance);
  }
  // Greedy speculation: the same tokens, accepted the same way.
  engine::GenerateRequest request;
  request.prompt = tokens;
  request.sampling.temperature = 0;
  request.max_tokens = 48;
  engine::SpeculativeOptions spec;
  spec.depth = 2;
  if (!a->has_mtp()) return;
  auto ra = engine::GenerateSpeculative(*a, request, spec, nullptr);
  auto rb = engine::GenerateSpeculative(*b, request, spec, nullptr);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->result.tokens, rb->result.tokens);
  EXPECT_EQ(ra->speculative.accepted_by_depth, rb->speculative.accepted_by_depth);
}

TEST(WidenTest, TheBundled8BitModelWidenedKeepsItsFunction) {
  const std::string original = testing::TrainedModelDir();
  for (int factor : {2, 4}) {
    SCOPED_TRACE(factor);
    ExpectSameFunction(original, Widen(original, factor, 8), factor, 1e-4);
  }
}

TEST(WidenTest, ABf16CheckpointWidenedKeepsItsFunction) {
  const std::string original = testing::SyntheticModel("dense-tiny", "hf");
  ExpectSameFunction(original, Widen(original, 2, 0), 2, 1e-4);
}

// The Hugging Face export (what llama.cpp's converter reads): names without the MLX prefix, norms
// zero-centred, conv1d [C, 1, K], the MTP head inline, weights in bf16 (so the 8-bit values round
// to bf16: close, not exact).
TEST(WidenTest, TheBundledModelExportsToTheHuggingFaceLayout) {
  const std::string original = testing::TrainedModelDir();
  const std::string wide = Widen(original, 2, 0, /*hf=*/true);
  EXPECT_TRUE(FileExists(wide + "/model.safetensors"));
  EXPECT_FALSE(FileExists(wide + "/mtp.safetensors"));  // inline
  auto ck = io::Checkpoint::Open(wide, {.show_progress = false, .lock_memory = false});
  ASSERT_TRUE(ck.ok());
  EXPECT_TRUE((*ck)->Has("model.embed_tokens.weight"));
  EXPECT_TRUE((*ck)->Has("lm_head.weight"));
  EXPECT_TRUE((*ck)->Has("mtp.fc.weight"));
  const TensorView conv = *(*ck)->Get("model.layers.0.linear_attn.conv1d.weight");
  EXPECT_EQ(conv.shape[1], 1);
  ExpectSameFunction(original, wide, 2, 2e-2);
}

TEST(WidenTest, RequantizingToFewerBitsStillRuns) {
  // 8-bit codes cannot be kept at 4 bits: the values are requantized (a different, lossy model).
  const std::string wide = Widen(testing::TrainedModelDir(), 2, 4);
  auto m = Load(wide);
  ASSERT_TRUE(m);
  const Outputs out = RunModel(*m, kTokens);
  for (float v : out.logits) ASSERT_TRUE(std::isfinite(v));
}

TEST(WidenTest, RefusesWhatItCannotWiden) {
  synth::WidenOptions o;
  o.from_dir = testing::TrainedModelDir();
  o.out_dir = testing::MakeTempDir("mtplx-widen") + "/wide";
  o.progress = false;
  o.factor = 3;
  EXPECT_NE(synth::WriteWidenedCheckpoint(o).message().find("power of two"), std::string::npos);
  o.factor = 2;
  o.bits = 7;
  EXPECT_NE(synth::WriteWidenedCheckpoint(o).message().find("--bits 7"), std::string::npos);
  o.bits = 8;
  o.from_dir = testing::SyntheticModel("moe-tiny", "hf");
  EXPECT_NE(synth::WriteWidenedCheckpoint(o).message().find("MoE"), std::string::npos);
  o.from_dir = "/nonexistent";
  EXPECT_NE(synth::WriteWidenedCheckpoint(o).message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace mtplx
