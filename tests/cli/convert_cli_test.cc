// `mtplx convert` end to end: the JSON summary, the refusal to overwrite, and a converted pack
// that `mtplx run` answers from exactly like its source.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "base/file.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

using Outcome = testing::CommandOutcome;

Outcome Mtplx(const std::string& args, bool merge_stderr = true) {
  return testing::RunMtplx(args, merge_stderr);
}

// The text of a pack file that may carry metadata: a safetensors file's JSON header, any other
// file whole (tokenizer.json is left out: its vocabulary may hold path-like pieces such as
// "/usr/").
std::string MetadataText(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  if (name == "tokenizer.json") return "";
  const Result<std::string> text = ReadTextFile(file.string());
  if (!text.ok()) return "";
  if (file.extension() != ".safetensors") return *text;
  if (text->size() < 8) return "";
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>((*text)[i]);
  return text->substr(8, std::min<uint64_t>(header, text->size() - 8));
}

// Absolute paths (a quote, space, bracket or backtick, then "/name/") in the metadata of every
// file of `dir`: a pack records names and hashes, never where it was made.
std::vector<std::string> AbsolutePathsIn(const std::string& dir) {
  static const std::regex kPath(R"((^|[\s"'(`=])(/[A-Za-z0-9_.-]+/[^\s"')`]*))");
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string text = MetadataText(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), kPath), end; it != end; ++it)
      found.push_back(entry.path().filename().string() + ": " + (*it)[2].str());
  }
  return found;
}

TEST(ConvertCliTest, PacksRecordNoAbsolutePath) {
  // The check itself finds a planted path.
  const std::string planted = testing::MakeTempDir("mtplx-paths");
  ASSERT_TRUE(WriteTextFile(planted + "/mtplx_runtime.json", R"({"source": "/home/u/ckpt"})").ok());
  EXPECT_EQ(AbsolutePathsIn(planted).size(), 1u);

  EXPECT_EQ(AbsolutePathsIn(testing::TrainedModelDir()), std::vector<std::string>{});
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  const std::string out = testing::MakeTempDir("mtplx-convert-cli") + "/pack";
  const Outcome o = Mtplx("convert " + src + " " + out + " --bits 8 --json", false);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(AbsolutePathsIn(out), std::vector<std::string>{});
  const auto manifest = nlohmann::json::parse(*ReadTextFile(out + "/mtplx_runtime.json"));
  EXPECT_EQ(manifest["forge_provenance"]["source_name"],
            std::filesystem::path(src).lexically_normal().filename().string());
  EXPECT_FALSE(manifest["forge_provenance"].contains("source_path"));
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

// --preset sets what the user did not: moe-a3b on a MoE checkpoint gives a 4-bit trunk and a
// 4-bit g32 MTP head at depth 2; an explicit --mtp-depth still wins; the pack runs.
TEST(ConvertCliTest, PresetsAndExplicitFlags) {
  const std::string src = testing::SyntheticModel("moe-tiny", "hf");
  const std::string out = testing::MakeTempDir("mtplx-convert-preset") + "/pack";
  const Outcome made =
      Mtplx("convert " + src + " " + out + " --preset moe-a3b --mtp-depth 3 --json", false);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const auto summary = nlohmann::json::parse(made.output);
  EXPECT_EQ(summary["bits"], 4);
  EXPECT_EQ(summary["group_size"], 64);
  EXPECT_EQ(summary["mtp_bits"], 4);
  EXPECT_EQ(summary["mtp_group_size"], 32);
  const Result<std::string> runtime_text = ReadTextFile(out + "/mtplx_runtime.json");
  ASSERT_TRUE(runtime_text.ok());
  const auto runtime = nlohmann::json::parse(*runtime_text);
  EXPECT_EQ(runtime["mtp_depth_default"], 3);
  EXPECT_EQ(runtime["mtp_contract"]["mtp_quant_group_size"], 32);
  const Outcome run = Mtplx("run hi --max-tokens 4 --json --model " + out, false);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const Outcome unknown = Mtplx("convert " + src + " " + out + "2 --preset fastest");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("optimized-speed"), std::string::npos) << unknown.output;
}

TEST(ConvertCliTest, BadFlagsAndSourcesAreReported) {
  const std::string out = testing::MakeTempDir("mtplx-convert-cli") + "/pack";
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  EXPECT_NE(Mtplx("convert " + src + " " + out + " --bits 7").exit_code, 0);
  const Outcome sampler = Mtplx("convert " + src + " " + out + " --sampler 0.6,0.9");
  EXPECT_EQ(sampler.exit_code, 1);
  EXPECT_NE(sampler.output.find("--sampler"), std::string::npos) << sampler.output;
  for (const char* bad :
       {"nan,0.95,20", "inf,0.95,20", "0.6,nan,20", "0.6,0.95,20,inf", "0.6,0.95,20,0,-inf"}) {
    const Outcome o = Mtplx("convert " + src + " " + out + " --sampler " + bad);
    EXPECT_EQ(o.exit_code, 1) << bad;
    EXPECT_NE(o.output.find("--sampler"), std::string::npos) << bad << o.output;
  }
  const Outcome missing = Mtplx("convert /nonexistent/src " + out);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/src"), std::string::npos) << missing.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace mtplx
