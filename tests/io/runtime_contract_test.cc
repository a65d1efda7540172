#include "io/runtime_contract.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace mtplx::io {
namespace {

using Json = nlohmann::json;

Json Bundled() {
  std::ifstream in(testing::TrainedModelDir() + "/mtplx_runtime.json");
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

Result<RuntimeContract> Parse(const Json& j, const std::string& engine = "0.1.0") {
  return ParseRuntimeContract(j.dump(), "pack/mtplx_runtime.json", engine);
}

TEST(RuntimeContractTest, ReadsTheBundledPack) {
  auto c = Parse(Bundled());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->arch_id, "qwen3_5-mtp");
  EXPECT_EQ(c->mtp_depth_max, 5);
  EXPECT_EQ(c->mtp_depth_default, 1);
  EXPECT_EQ(c->mtp_quant_bits, 8);
  EXPECT_EQ(c->mtp_tensor_count, 31);
  EXPECT_EQ(c->has_mtp, true);
  EXPECT_EQ(c->precision_variant, "bf16");
}

TEST(RuntimeContractTest, RefusesNamingTheKey) {
  struct Case {
    std::function<void(Json&)> edit;
    const char* message;
  } cases[] = {
      {[](Json& j) { j.erase("arch_id"); }, "'arch_id' is required and missing"},
      {[](Json& j) { j.erase("mtplx_version"); }, "'mtplx_version' is required"},
      {[](Json& j) { j.erase("mtp_depth_max"); }, "'mtp_depth_max' is required"},
      {[](Json& j) { j.erase("recommended_profile"); }, "'recommended_profile' is required"},
      {[](Json& j) { j.erase("exactness_baseline"); }, "'exactness_baseline' is required"},
      {[](Json& j) { j.erase("verified_on"); }, "'verified_on' is required"},
      {[](Json& j) { j["arch_id"] = 5; }, "'arch_id' must be a non-empty string"},
      {[](Json& j) { j["mtp_depth_max"] = 0; }, "'mtp_depth_max' must be an integer from 1"},
      {[](Json& j) { j["mtp_depth_default"] = 9; },
       "'mtp_depth_default' must be an integer from 1 to 5"},
      {[](Json& j) { j["sampler"]["top_p"] = 1.5; }, "'sampler.top_p' must be a number"},
      {[](Json& j) { j["sampler"]["temperature"] = -1; }, "'sampler.temperature'"},
      {[](Json& j) {
         j["recommended_draft_sampler"] = {{"top_k", -3}};
       },
       "'recommended_draft_sampler.top_k'"},
      {[](Json& j) {
         j["recommended_draft_lm_head"] = {{"bits", 9}};
       },
       "'recommended_draft_lm_head.bits'"},
      {[](Json& j) {
         j["recommended_draft_lm_head"] = {{"bits", 4}, {"group_size", 48}};
       },
       "'recommended_draft_lm_head.group_size' must be 32, 64 or 128"},
      {[](Json& j) { j["mtp_contract"]["hidden_variant"] = "middle"; },
       "'mtp_contract.hidden_variant' must be one of \"post_norm\", \"pre_norm\""},
      {[](Json& j) { j["mtp_contract"]["mtp_quant_bits"] = 7; }, "'mtp_contract.mtp_quant_bits'"},
      {[](Json& j) { j["mtp_contract"]["mtp_quant_group_size"] = 16; },
       "'mtp_contract.mtp_quant_group_size'"},
      {[](Json& j) { j["precision_variant"] = "int3"; }, "'precision_variant' must be one of"},
      {[](Json& j) { j["served_model_id"] = ""; }, "'served_model_id' must be a non-empty string"},
      {[](Json& j) { j["capabilities"]["mtp"] = "yes"; }, "'capabilities.mtp' must be true or"},
      {[](Json& j) { j["min_engine_version"] = "0.2.0"; },
       "'min_engine_version' is 0.2.0: this pack needs a newer mtplx (this is 0.1.0)"},
  };
  for (const Case& c : cases) {
    Json j = Bundled();
    c.edit(j);
    auto parsed = Parse(j);
    ASSERT_FALSE(parsed.ok()) << c.message;
    EXPECT_NE(parsed.status().message().find(c.message), std::string::npos)
        << parsed.status().message();
    EXPECT_NE(parsed.status().message().find("pack/mtplx_runtime.json"), std::string::npos);
  }
  EXPECT_FALSE(ParseRuntimeContract("[1]", "p", "0.1.0").ok());
  EXPECT_FALSE(ParseRuntimeContract("{", "p", "0.1.0").ok());
}

TEST(RuntimeContractTest, AcceptsWhatTheEngineCanRun) {
  Json j = Bundled();
  j["min_engine_version"] = "0.1.0";
  j["served_model_id"] = "mtplx-tiny";
  j["recommended_draft_lm_head"] = {{"bits", 4}, {"group_size", 64}, {"mode", "affine"}};
  j["unknown_future_key"] = {{"x", 1}};  // keys the engine does not use are left alone
  auto c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->served_model_id, "mtplx-tiny");
  EXPECT_TRUE(Parse(j, "0.10.0").ok());
}

TEST(RuntimeContractTest, ComparesVersionsNumerically) {
  EXPECT_LT(CompareVersions("0.9", "0.10.1"), 0);
  EXPECT_EQ(CompareVersions("1.2.0", "1.2"), 0);
  EXPECT_GT(CompareVersions("2.0.0-dev", "1.99.99"), 0);
  EXPECT_EQ(CompareVersions("0.1.0", EngineVersion()), 0);
}

}  // namespace
}  // namespace mtplx::io
