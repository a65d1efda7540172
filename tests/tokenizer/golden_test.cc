// Compares our encoder with Hugging Face tokenizers on the goldens that
// tools/tokenizer/make_goldens.py wrote into tests/data/tokenizer/.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "support/test_support.h"
#include "tokenizer/synthetic_tokenizer.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer {
namespace {

struct Golden {
  std::string text;
  std::vector<int32_t> ids;    // added tokens matched (allow_special = true)
  std::vector<int32_t> plain;  // added tokens as text (allow_special = false)
};

std::vector<Golden> LoadGoldens(const std::string& name) {
  const Result<std::string> text = ReadTextFile(mtplx::testing::TestDataPath("tokenizer/" + name));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return {};
  std::vector<std::string> lines = StrSplit(*text, '\n');
  std::vector<Golden> goldens;
  const nlohmann::json header = nlohmann::json::parse(lines.at(0));
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const nlohmann::json record = nlohmann::json::parse(lines[i]);
    Golden golden{record.at("text"), record.at("ids"), {}};
    golden.plain =
        record.contains("plain") ? record.at("plain").get<std::vector<int32_t>>() : golden.ids;
    goldens.push_back(std::move(golden));
  }
  EXPECT_EQ(goldens.size(), header.at("count").get<size_t>()) << name;
  return goldens;
}

// Checks every golden and reports the first few differences in full.
void ExpectMatchesGoldens(const Tokenizer& tokenizer, const std::string& name, size_t min_count) {
  const std::vector<Golden> goldens = LoadGoldens(name);
  ASSERT_GE(goldens.size(), min_count);
  int failures = 0;
  for (size_t i = 0; i < goldens.size(); ++i) {
    const Golden& golden = goldens[i];
    const std::vector<int32_t> ids = tokenizer.Encode(golden.text, /*allow_special=*/true);
    const std::vector<int32_t> plain = tokenizer.Encode(golden.text, /*allow_special=*/false);
    const bool ok = ids == golden.ids && plain == golden.plain;
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << name << " record " << i + 1
                    << " differs; text as JSON: " << nlohmann::json(golden.text).dump()
                    << "\n  expected " << nlohmann::json(golden.ids).dump() << "\n  got      "
                    << nlohmann::json(ids).dump();
    }
  }
  EXPECT_EQ(failures, 0) << "of " << goldens.size();
}

TEST(GoldenTest, Qwen3MatchesHuggingFace) {
  ExpectMatchesGoldens(testing::Qwen3Tokenizer(), "qwen3_goldens.jsonl", 2000);
}

// Same vocabulary behind ByteLevel(use_regex, add_prefix_space), no normalizer, "a b" merges;
// make_goldens.py builds the same variant in Python.
TEST(GoldenTest, Gpt2StylePipelineMatchesHuggingFace) {
  Result<std::string> text =
      ReadTextFile(mtplx::testing::TestDataPath("tokenizers/qwen3/tokenizer.json"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  nlohmann::json json = nlohmann::json::parse(*text);
  json["normalizer"] = nullptr;
  json["pre_tokenizer"] = {{"type", "ByteLevel"},
                           {"add_prefix_space", true},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  for (nlohmann::json& merge : json["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  Result<Tokenizer> tokenizer = Tokenizer::FromJsonString(json.dump());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  ExpectMatchesGoldens(*tokenizer, "gpt2_style_goldens.jsonl", 250);
}

TEST(GoldenTest, SyntheticMatchesHuggingFace) {
  Result<std::string> json = BuildSyntheticTokenizerJson();
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  Result<Tokenizer> tokenizer = Tokenizer::FromJsonString(*json);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  ExpectMatchesGoldens(*tokenizer, "synthetic_goldens.jsonl", 500);
}

TEST(GoldenTest, RealSizeSyntheticMatchesHuggingFace) {
  ExpectMatchesGoldens(testing::RealSizeSyntheticTokenizer(), "synthetic_large_goldens.jsonl", 250);
}

}  // namespace
}  // namespace mtplx::tokenizer
