// mtplx_runtime.json: the reference product's required keys, and the defaults the engine reads
// back from it.
#include "pack/runtime_manifest.h"

#include <gtest/gtest.h>

#include "base/file.h"
#include "io/generation_config.h"
#include "pack/convert.h"
#include "support/test_support.h"

namespace mtplx::pack {
namespace {

RuntimeInfo Info() {
  RuntimeInfo info;
  info.model_family = "qwen3_5";
  info.arch_id = ArchId(info.model_family, true);
  info.has_mtp = true;
  info.mtp_tensor_count = 15;
  info.mtp_depth_default = 3;
  info.sampler = {0.7, 0.8, 11};
  info.bits = 4;
  info.group_size = 64;
  info.mtp_bits = 8;
  info.mtp_group_size = 64;
  info.source_name = "src";
  info.source_sha256 = {{"model.safetensors", std::string(64, 'a')}};
  info.forged_at = UtcTimestamp();
  info.verified_on = "test";
  return info;
}

TEST(RuntimeManifestTest, HasTheRequiredAndContractKeys) {
  const auto m = BuildRuntimeManifest(Info());
  for (const char* key :
       {"mtplx_version", "arch_id", "mtp_depth_max", "recommended_profile", "exactness_baseline",
        "verified_on", "mtp_depth_default", "sampler", "mtp_contract", "capabilities",
        "mtp_tensor_count", "precision_variant", "forge_provenance"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(m["mtplx_version"], MtplxVersion());
  EXPECT_EQ(m["arch_id"], "qwen3_5-mtp");
  EXPECT_EQ(m["mtp_depth_max"], kMaxMtpDepth);
  EXPECT_GT(m["mtp_depth_max"].get<int>(), 0);
  EXPECT_EQ(m["mtp_depth_default"], 3);
  const auto& contract = m["mtp_contract"];
  EXPECT_EQ(contract["base_hidden_variant"], "post_norm");
  EXPECT_EQ(contract["hidden_variant"], "post_norm");
  EXPECT_EQ(contract["concat_order"], "embedding_hidden");
  EXPECT_EQ(contract["mtp_position_mode"], "cache");
  EXPECT_EQ(contract["mtp_quant_bits"], 8);
  EXPECT_EQ(contract["mtp_quant_group_size"], 64);
  EXPECT_EQ(contract["mtp_quant_mode"], "affine");
  EXPECT_EQ(m["capabilities"]["vision"], false);
  EXPECT_EQ(m["capabilities"]["mtp"], true);
  const auto& provenance = m["forge_provenance"];
  EXPECT_EQ(provenance["source_name"], "src");
  EXPECT_EQ(provenance["source_sha256"]["model.safetensors"], std::string(64, 'a'));
  EXPECT_EQ(provenance["mtplx_version"], MtplxVersion());
  const std::string at = provenance["forged_at"];
  EXPECT_EQ(at.size(), 20u);
  EXPECT_EQ(at.back(), 'Z');
}

TEST(RuntimeManifestTest, ArchIds) {
  EXPECT_EQ(ArchId("qwen3_5", true), "qwen3_5-mtp");
  EXPECT_EQ(ArchId("qwen3_5_moe", true), "qwen3_5_moe-mtp");
  EXPECT_EQ(ArchId("qwen3_next", true), "qwen3-next-mtp");
  EXPECT_EQ(ArchId("qwen3_5", false), "qwen3_5");
}

TEST(RuntimeManifestTest, GenerationDefaultsReadTheSamplerAndDepth) {
  const std::string dir = testing::MakeTempDir("mtplx-manifest");
  ASSERT_TRUE(
      WriteTextFile(dir + "/mtplx_runtime.json", BuildRuntimeManifest(Info()).dump(2)).ok());
  auto defaults = io::LoadGenerationDefaults(dir);
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->source, "mtplx_runtime.json");
  EXPECT_DOUBLE_EQ(defaults->temperature, 0.7);
  EXPECT_DOUBLE_EQ(defaults->top_p, 0.8);
  EXPECT_EQ(defaults->top_k, 11);
  EXPECT_EQ(defaults->mtp_depth, 3);
  EXPECT_EQ(defaults->presence_penalty, 0.0);  // none written, none read
  EXPECT_FALSE(BuildRuntimeManifest(Info())["sampler"].contains("presence_penalty"));
}

TEST(RuntimeManifestTest, PenaltiesRoundTripAndAreClampedOnRead) {
  RuntimeInfo info = Info();
  info.sampler.presence_penalty = 0.5;
  info.sampler.frequency_penalty = -0.25;
  auto manifest = BuildRuntimeManifest(info);
  EXPECT_EQ(manifest["sampler"]["presence_penalty"], 0.5);
  const std::string dir = testing::MakeTempDir("mtplx-manifest-penalty");
  ASSERT_TRUE(WriteTextFile(dir + "/mtplx_runtime.json", manifest.dump(2)).ok());
  auto defaults = io::LoadGenerationDefaults(dir);
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_DOUBLE_EQ(defaults->presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(defaults->frequency_penalty, -0.25);
  manifest["sampler"]["presence_penalty"] = 7.0;  // a hand-edited pack: out of the OpenAI range
  ASSERT_TRUE(WriteTextFile(dir + "/mtplx_runtime.json", manifest.dump(2)).ok());
  defaults = io::LoadGenerationDefaults(dir);
  ASSERT_TRUE(defaults.ok());
  EXPECT_DOUBLE_EQ(defaults->presence_penalty, 2.0);
}

TEST(RuntimeManifestTest, SamplerFlagParses) {
  auto s = ParseSampler("0.6,0.95,20");
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->temperature, 0.6);
  EXPECT_DOUBLE_EQ(s->top_p, 0.95);
  EXPECT_EQ(s->top_k, 20);
  EXPECT_EQ(s->presence_penalty, 0.0);
  auto with_penalties = ParseSampler("0.6,0.95,20,0.5,-0.25");
  ASSERT_TRUE(with_penalties.ok());
  EXPECT_DOUBLE_EQ(with_penalties->presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(with_penalties->frequency_penalty, -0.25);
  for (const char* bad :
       {"", "0.6,0.95", "0.6,0.95,20,2.5", "0.6,0.95,20,0.5,1,1", "a,0.9,20", "0.6,1.5,20",
        "-1,0.9,2", "0.6,0.9,2.5", "0.6,0.95,20,x", "0.6,0.95,20,0,-3"}) {
    auto r = ParseSampler(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--sampler"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace mtplx::pack
