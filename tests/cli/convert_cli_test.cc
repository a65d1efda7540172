// `mtplx convert` end to end: the JSON summary, the refusal to overwrite, and a converted pack
// that `mtplx run` answers from exactly like its source.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

using Outcome = testing::CommandOutcome;

Outcome Mtplx(const std::string& args, bool merge_stderr = true) {
  return testing::RunMtplx(args, merge_stderr);
}

TEST(ConvertCliTest, JsonSummaryAndAPackThatRunsLikeItsSource) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  const std::string out = testing::MakeTempDir("mtplx-convert-cli") + "/pack";
  const Outcome o = Mtplx("convert " + src + " " + out + " --json --mtp-depth 3", false);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.output;
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["arch_id"], "qwen3_5-mtp");
  EXPECT_EQ(j["quantized"], 0);
  EXPECT_EQ(j["mtp_tensors"], 15);
  EXPECT_GT(j["bytes_in"].get<uint64_t>(), 0u);
  EXPECT_GT(j["bytes_out"].get<uint64_t>(), 0u);
  EXPECT_NE(j["verified_on"].get<std::string>().find("self-check"), std::string::npos);
  for (const char* file : {"model.safetensors", "model.safetensors.index.json", "mtp.safetensors",
                           "config.json", "tokenizer.json", "mtplx_runtime.json"})
    EXPECT_TRUE(FileExists(out + "/" + file)) << file;

  // Speculative decoding forced, so the pack's default depth is used; greedy output is exact.
  const std::string run = " run hello --max-tokens 8 --temperature 0 --json --skip-mtp-check";
  const Outcome a = Mtplx(run + " --model " + src, false);
  const Outcome b = Mtplx(run + " --model " + out, false);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto ja = nlohmann::json::parse(a.output), jb = nlohmann::json::parse(b.output);
  EXPECT_EQ(ja["token_ids"], jb["token_ids"]);
  EXPECT_EQ(jb["stats"]["depth"], 3);  // mtp_depth_default from mtplx_runtime.json
  EXPECT_EQ(ja["stats"]["depth"], 2);  // the built-in default
}

TEST(ConvertCliTest, ExistingOutputNeedsForceAndQuantizedPacksRun) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  const std::string out = testing::MakeTempDir("mtplx-convert-cli");  // exists, not empty:
  ASSERT_TRUE(WriteTextFile(out + "/notes.txt", "keep").ok());
  const Outcome refused = Mtplx("convert " + src + " " + out + " --bits 4");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.output.find("--force"), std::string::npos) << refused.output;
  EXPECT_TRUE(FileExists(out + "/notes.txt"));

  const Outcome forced = Mtplx("convert " + src + " " + out + " --bits 4 --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_FALSE(FileExists(out + "/notes.txt"));
  const Outcome run = Mtplx("run hi --max-tokens 6 --json --model " + out, false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(run.output)["token_ids"].size(), 6u);
}

TEST(ConvertCliTest, BadFlagsAndSourcesAreReported) {
  const std::string out = testing::MakeTempDir("mtplx-convert-cli") + "/pack";
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  EXPECT_NE(Mtplx("convert " + src + " " + out + " --bits 7").exit_code, 0);
  const Outcome sampler = Mtplx("convert " + src + " " + out + " --sampler 0.6,0.9");
  EXPECT_EQ(sampler.exit_code, 1);
  EXPECT_NE(sampler.output.find("--sampler"), std::string::npos) << sampler.output;
  const Outcome missing = Mtplx("convert /nonexistent/src " + out);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/src"), std::string::npos) << missing.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace mtplx
