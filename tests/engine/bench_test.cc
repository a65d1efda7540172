// `mtplx bench`'s measurements on the tiny synthetic model at tiny sizes: every quantity present,
// finite and positive, sizes past the context window skipped, and the projection formula.
#include "engine/bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx::engine {
namespace {

std::unique_ptr<model::Model> Load(const std::string& dir) {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 2;
  auto m = model::Model::Load(dir, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

BenchOptions TinyOptions() {
  BenchOptions o;
  o.context = 16;
  o.rounds = 2;
  o.min_sample_seconds = 0.0;
  o.decode_sample_seconds = 0.0;
  o.prefill_sizes = {8, 40};
  o.bandwidth_bytes = uint64_t{2} << 20;
  return o;
}

bool FinitePositive(double v) { return std::isfinite(v) && v > 0; }

// A report's notices less the one about the machine's memory rate moving between the two
// bandwidth probes: that one depends on the host (a 2 MiB probe is cache-bound and jittery here).
std::vector<std::string> RunNotices(const BenchReport& r) {
  std::vector<std::string> out;
  for (const std::string& notice : r.notices)
    if (notice.find("memory read rate moved") == std::string::npos) out.push_back(notice);
  return out;
}

// The dense-tiny checkpoint with its MTP head switched off in config.json.
std::string WithoutMtp() {
  namespace fs = std::filesystem;
  const fs::path dir = testing::MakeTempDir("bench-no-mtp");
  for (const auto& entry : fs::directory_iterator(testing::SyntheticModel("dense-tiny")))
    fs::copy(entry.path(), dir / entry.path().filename());
  std::ifstream in(dir / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["text_config"]["mtp_num_hidden_layers"] = 0;
  std::ofstream(dir / "config.json") << config.dump();
  return dir.string();
}

TEST(BenchTest, EveryQuantityIsFiniteAndPositive) {
  auto m = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(m);
  auto r = RunBench(*m, TinyOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->threads, 2);
  EXPECT_EQ(r->context, 16);
  EXPECT_TRUE(FinitePositive(r->bandwidth.read_gbs));
  EXPECT_TRUE(FinitePositive(r->bandwidth.triad_gbs));
  EXPECT_TRUE(FinitePositive(r->read_gbs_after_steps));
  EXPECT_TRUE(FinitePositive(r->decode_tok_s));
  EXPECT_GT(r->weight_bytes_per_token, 0u);
  EXPECT_GT(r->state_bytes_per_token, 0u);
  EXPECT_EQ(r->bytes_per_token(), r->weight_bytes_per_token + r->state_bytes_per_token);
  EXPECT_TRUE(FinitePositive(r->bandwidth_utilization()));
  ASSERT_EQ(r->verify_cost.size(), 8u);
  EXPECT_EQ(r->verify_cost[0], 1.0);
  for (double v : r->verify_cost) EXPECT_TRUE(FinitePositive(v)) << v;
  if (m->weights().layers[0].mlp.up.quantized) {
    ASSERT_EQ(r->verify_bound.size(), 8u);
    ASSERT_EQ(r->arithmetic_seconds.size(), 8u);
    EXPECT_EQ(r->verify_bound[0], 1.0);
    for (double v : r->verify_bound) EXPECT_TRUE(FinitePositive(v)) << v;
  } else {
    EXPECT_TRUE(r->verify_bound.empty());
  }
  ASSERT_TRUE(r->draft_cost_ratio.has_value());
  EXPECT_TRUE(FinitePositive(*r->draft_cost_ratio));
  ASSERT_EQ(r->prefill_tok_s.size(), 2u);
  EXPECT_EQ(r->prefill_tok_s[0].first, 8);
  EXPECT_EQ(r->prefill_tok_s[1].first, 40);
  for (const auto& [tokens, tok_s] : r->prefill_tok_s) EXPECT_TRUE(FinitePositive(tok_s));
  EXPECT_GT(r->resident_bytes, 0u);
  EXPECT_TRUE(RunNotices(*r).empty());
  for (int depth = 1; depth <= 3; ++depth) {
    const auto s = ProjectedSpeedup(std::vector<double>{0.94, 0.81, 0.7}, r->verify_cost,
                                    *r->draft_cost_ratio, depth);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(FinitePositive(*s));
  }
}

TEST(BenchTest, DecodeBytesCountTheTrunkButNotTheEmbeddingTableOrMtp) {
  for (const char* preset : {"dense-tiny", "moe-tiny"}) {
    auto m = Load(testing::SyntheticModel(preset));
    ASSERT_TRUE(m);
    const auto& w = m->weights();
    const uint64_t decode = m->DecodeWeightBytes();
    EXPECT_GT(decode, w.lm_head.StorageBytes()) << preset;
    // The embedding table (but one row) and the MTP head are in the checkpoint, not in a step.
    EXPECT_LT(decode, m->weight_bytes() - w.mtp.fc.StorageBytes()) << preset;
  }
}

TEST(BenchTest, PrefillPastTheContextWindowIsSkippedWithANotice) {
  auto m = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(m);
  BenchOptions o = TinyOptions();
  o.rounds = 1;
  o.prefill_sizes = {m->config().max_position_embeddings + 1};
  auto r = RunBench(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->prefill_tok_s.empty());
  const std::vector<std::string> notices = RunNotices(*r);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("skipped"), std::string::npos);
}

TEST(BenchTest, WithoutAnMtpHeadThereIsNoDraftCost) {
  auto m = Load(WithoutMtp());
  ASSERT_TRUE(m);
  ASSERT_FALSE(m->has_mtp());
  BenchOptions o = TinyOptions();
  o.rounds = 1;
  o.prefill_sizes = {};
  auto r = RunBench(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->draft_cost_ratio.has_value());
  const std::vector<std::string> notices = RunNotices(*r);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("no MTP head"), std::string::npos);
  EXPECT_TRUE(FinitePositive(r->decode_tok_s));
}

// Steps only (what `tune` prices a server's batched steps with): no bandwidth probe, arithmetic
// or prefill; v(R) for every R, from 1 and never falling, and a draft round.
TEST(BenchTest, StepCostsAreTheStepSamplesAlone) {
  auto m = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(m);
  BenchOptions o = TinyOptions();
  o.steps_only = true;
  auto r = RunBench(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bandwidth.read_gbs, 0.0);
  EXPECT_TRUE(r->arithmetic_seconds.empty());
  EXPECT_TRUE(r->prefill_tok_s.empty());
  EXPECT_EQ(r->verify_cost.size(), static_cast<size_t>(o.max_verify_rows));
  EXPECT_TRUE(FinitePositive(r->decode_tok_s));
  auto costs = MeasureStepCosts(*m, 5, /*rounds=*/1, /*decode_seconds=*/0.0);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  ASSERT_EQ(costs->verify.size(), 5u);
  EXPECT_DOUBLE_EQ(costs->verify[0], 1.0);
  EXPECT_TRUE(std::is_sorted(costs->verify.begin(), costs->verify.end()));
  EXPECT_TRUE(FinitePositive(costs->draft));
  EXPECT_FALSE(MeasureStepCosts(*m, 0, 1, 0.0).ok());
}

// A synthetic context reads the same bytes per step as a prefilled one (zero rows stand in for
// the first context - 1 tokens); a bf16 KV cache reads half the attention bytes of an f32 one.
TEST(BenchTest, SyntheticContextsAndBf16CachesCountTheirStateBytes) {
  const std::string dir = testing::SyntheticModel("dense-tiny");
  BenchOptions o = TinyOptions();
  o.rounds = 1;
  o.prefill_sizes = {};
  o.context = 48;
  auto m = Load(dir);
  ASSERT_TRUE(m);
  auto prefilled = RunBench(*m, o);
  ASSERT_TRUE(prefilled.ok()) << prefilled.status().ToString();
  o.synthetic_context = true;
  auto synthetic = RunBench(*m, o);
  ASSERT_TRUE(synthetic.ok()) << synthetic.status().ToString();
  EXPECT_TRUE(synthetic->synthetic_context);
  EXPECT_EQ(synthetic->state_bytes_per_token, prefilled->state_bytes_per_token);
  EXPECT_TRUE(FinitePositive(synthetic->decode_tok_s));
  ASSERT_TRUE(synthetic->draft_cost_ratio.has_value());

  model::LoadOptions bf16;
  bf16.show_progress = false;
  bf16.threads = 2;
  bf16.kv_type = kernels::KvType::kBf16;
  auto half = model::Model::Load(dir, bf16);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  auto r = RunBench(**half, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const state::StateLayout layout = m->NewState()->layout();
  int64_t attention_layers = 0;
  for (bool a : layout.is_attention) attention_layers += a ? 1 : 0;
  const uint64_t f32_kv =
      static_cast<uint64_t>(attention_layers * o.context * 2 * layout.kv_width * sizeof(float));
  // The DeltaNet state is f32 either way: only the KV half is saved.
  EXPECT_EQ(prefilled->state_bytes_per_token - r->state_bytes_per_token, f32_kv / 2);
}

// A decode sample runs for decode_sample_seconds even where fewer steps fit before the context
// window: the state rewinds to `context` instead of stepping past the window.
TEST(BenchTest, ADecodeSampleLongerThanTheRoomLeftRewinds) {
  auto m = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(m);
  BenchOptions o = TinyOptions();
  o.context = m->config().max_position_embeddings - 3;
  o.synthetic_context = true;
  o.max_verify_rows = 2;
  o.prefill_sizes.clear();
  o.decode_sample_seconds = 0.02;  // hundreds of this model's steps
  auto r = RunBench(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(FinitePositive(r->decode_tok_s));
}

TEST(BenchTest, InvalidOptionsAreRefused) {
  auto m = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(m);
  BenchOptions o = TinyOptions();
  o.rounds = 0;
  EXPECT_FALSE(RunBench(*m, o).ok());
  o = TinyOptions();
  o.prefill_sizes = {0};
  EXPECT_FALSE(RunBench(*m, o).ok());
}

// v*(m) = max(S, A(m)) / max(S, A(1)): flat while the stream S dominates, then the arithmetic.
TEST(VerifyBoundTest, IsTheStreamUntilTheArithmeticExceedsIt) {
  BenchReport r;
  r.bandwidth.read_gbs = 1.0;
  r.weight_bytes_per_token = 1'000'000'000;  // S = 1 s
  r.arithmetic_seconds = {0.25, 0.5, 1.0, 1.5, 3.0};
  EXPECT_EQ(VerifyBound(r), (std::vector<double>{1.0, 1.0, 1.0, 1.5, 3.0}));
  r.weight_bytes_per_token = 100'000'000;  // S = 0.1 s: compute-bound from one row
  EXPECT_EQ(VerifyBound(r), (std::vector<double>{1.0, 2.0, 4.0, 6.0, 12.0}));
  r.arithmetic_seconds.clear();
  EXPECT_TRUE(VerifyBound(r).empty());
}

TEST(BandwidthMovedNoticeTest, NamesBothRatesOnlyWhenTheyDifferByMoreThanTheMargin) {
  EXPECT_FALSE(BandwidthMovedNotice(34.0, 36.0).has_value());
  EXPECT_FALSE(BandwidthMovedNotice(40.0, 45.8).has_value());  // within the 15 % margin
  EXPECT_FALSE(BandwidthMovedNotice(40.0, 34.0).has_value());
  EXPECT_FALSE(BandwidthMovedNotice(0.0, 58.0).has_value());  // a probe that did not run
  EXPECT_FALSE(BandwidthMovedNotice(34.0, 0.0).has_value());
  const auto up = BandwidthMovedNotice(34.0, 58.2);
  ASSERT_TRUE(up.has_value());
  EXPECT_NE(up->find("34.0 GB/s before"), std::string::npos) << *up;
  EXPECT_NE(up->find("58.2 after"), std::string::npos) << *up;
  const auto down = BandwidthMovedNotice(60.0, 33.5);
  ASSERT_TRUE(down.has_value());
  EXPECT_NE(down->find("33.5 after"), std::string::npos) << *down;
}

TEST(ProjectedSpeedupTest, FollowsTheFormula) {
  const std::vector<double> v = {1.0, 1.1, 1.3, 1.6};
  // Depth 1: E = 1 + 0.9; cost = v(2) + c.
  EXPECT_DOUBLE_EQ(*ProjectedSpeedup(std::vector<double>{0.9, 0.8}, v, 0.2, 1), 1.9 / 1.3);
  // Depth 2: E = 1 + 0.9 + 0.9 * 0.8; cost = v(3) + 2c.
  EXPECT_DOUBLE_EQ(*ProjectedSpeedup(std::vector<double>{0.9, 0.8}, v, 0.2, 2),
                   (1 + 0.9 + 0.72) / (1.3 + 0.4));
  // Depth 3 reuses the last acceptance: E = 1 + 0.9 + 0.72 + 0.576.
  EXPECT_DOUBLE_EQ(*ProjectedSpeedup(std::vector<double>{0.9, 0.8}, v, 0.2, 3),
                   (1 + 0.9 + 0.72 + 0.576) / (1.6 + 0.6));
  // Perfect, free drafts and free verify rows: D + 1 tokens per AR step.
  EXPECT_DOUBLE_EQ(*ProjectedSpeedup(std::vector<double>{1.0}, std::vector<double>(4, 1.0), 0.0, 3),
                   4.0);
}

TEST(ProjectedSpeedupTest, NeedsTheVerifyCostOfDepthPlusOneRows) {
  const std::vector<double> v = {1.0, 1.1};
  EXPECT_TRUE(ProjectedSpeedup(std::vector<double>{0.9}, v, 0.1, 1).has_value());
  EXPECT_FALSE(ProjectedSpeedup(std::vector<double>{0.9}, v, 0.1, 2).has_value());
  EXPECT_FALSE(ProjectedSpeedup(std::vector<double>{}, v, 0.1, 1).has_value());
  EXPECT_FALSE(ProjectedSpeedup(std::vector<double>{0.9}, v, 0.1, 0).has_value());
}

}  // namespace
}  // namespace mtplx::engine
