#include "tokenizer/synthetic_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "support/test_support.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer {
namespace {

Tokenizer BuildAndLoad(const SyntheticTokenizerOptions& options) {
  Result<std::string> json = BuildSyntheticTokenizerJson(options);
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  Result<Tokenizer> tokenizer = Tokenizer::FromJsonString(json.ok() ? *json : "");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  return std::move(tokenizer).value();
}

// The committed copy is what the Hugging Face goldens were made from; a change to the corpus,
// the trainer or the writer must come with regenerated goldens (tools/tokenizer/README.md).
TEST(SyntheticTokenizerTest, MatchesCommittedFile) {
  Result<std::string> json = BuildSyntheticTokenizerJson();
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  Result<std::string> committed =
      ReadTextFile(mtplx::testing::TestDataPath("tokenizer/synthetic_tokenizer.json"));
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_TRUE(*json == *committed) << "synthetic tokenizer.json changed; regenerate goldens";
  EXPECT_EQ(*BuildSyntheticTokenizerJson(), *json) << "not deterministic";
}

TEST(SyntheticTokenizerTest, IdLayoutFollowsTheSpec) {
  const Tokenizer tokenizer = BuildAndLoad({});
  EXPECT_EQ(tokenizer.vocab_size(), 993);
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_EQ(tokenizer.TokenBytes(byte), std::string(1, static_cast<char>(byte))) << byte;
  }
  for (int32_t id = 256; id < 960; ++id) {
    EXPECT_GE(tokenizer.TokenBytes(id).size(), 2u) << id;  // a learned merge
    EXPECT_FALSE(tokenizer.IsAddedToken(id));
  }
  const std::vector<AddedToken> expected = QwenAddedTokens(960);
  ASSERT_EQ(expected.size(), 33u);
  EXPECT_EQ(tokenizer.added_tokens().size(), 33u);
  for (const AddedToken& token : expected) {
    EXPECT_EQ(tokenizer.AddedTokenId(token.content), token.id) << token.content;
    EXPECT_EQ(tokenizer.IsSpecial(token.id), token.special) << token.content;
  }
  EXPECT_EQ(tokenizer.AddedTokenId("<|endoftext|>"), 960);
  EXPECT_EQ(tokenizer.AddedTokenId("<|im_start|>"), 961);
  EXPECT_EQ(tokenizer.AddedTokenId("<|im_end|>"), 962);
  EXPECT_EQ(tokenizer.AddedTokenId("<|vision_start|>"), 969);
  EXPECT_EQ(tokenizer.AddedTokenId("<|image_pad|>"), 972);
  EXPECT_EQ(tokenizer.AddedTokenId("<think>"), 984);
  EXPECT_EQ(tokenizer.AddedTokenId("<|audio_pad|>"), 992);
  EXPECT_FALSE(tokenizer.IsSpecial(984));
}

TEST(SyntheticTokenizerTest, EncodesWithLearnedMerges) {
  const Tokenizer tokenizer = BuildAndLoad({});
  const std::string text = "The keeper climbs the tower.\ndef length(self) -> float:\n";
  const std::vector<int32_t> ids = tokenizer.Encode(text, false);
  EXPECT_LT(ids.size(), text.size() / 2) << "common corpus words should be merged";
  EXPECT_EQ(tokenizer.Decode(ids), text);
  const std::string chat = "<|im_start|>user\nhi 🙂<|im_end|>\n";
  EXPECT_EQ(tokenizer.Encode(chat, true).front(), 961);
  EXPECT_EQ(tokenizer.Decode(tokenizer.Encode(chat, true)), chat);
}

TEST(SyntheticTokenizerTest, RealSizeVariantPadsWithUnusedTokens) {
  const Tokenizer& tokenizer = testing::RealSizeSyntheticTokenizer();
  EXPECT_EQ(tokenizer.vocab_size(), 248077);
  EXPECT_EQ(tokenizer.AddedTokenId("<|endoftext|>"), 248044);
  EXPECT_EQ(tokenizer.AddedTokenId("<|im_end|>"), 248046);
  EXPECT_EQ(tokenizer.AddedTokenId("<|audio_pad|>"), 248076);
  EXPECT_EQ(tokenizer.IdToToken(248043), "<unused_248043>");
  // The corpus supports about a thousand merges; everything after is a placeholder.
  EXPECT_EQ(tokenizer.IdToToken(5000), "<unused_5000>");
  for (const int32_t id : tokenizer.Encode("<unused_5000> <unused_248043>", true)) {
    EXPECT_LT(id, 5000) << "placeholders are never produced";
  }
}

TEST(SyntheticTokenizerTest, MergeCountIsAParameter) {
  const Tokenizer tokenizer = BuildAndLoad({.added_token_base = 960, .max_merges = 100});
  EXPECT_EQ(tokenizer.vocab_size(), 993);
  EXPECT_NE(tokenizer.IdToToken(355)->substr(0, 8), "<unused_");
  EXPECT_EQ(tokenizer.IdToToken(356), "<unused_356>");
}

TEST(SyntheticTokenizerTest, RejectsImpossibleLayouts) {
  EXPECT_EQ(BuildSyntheticTokenizerJson({.added_token_base = 100}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BuildSyntheticTokenizerJson({.added_token_base = 960, .max_merges = 705}).status().code(),
      StatusCode::kInvalidArgument);
}

TEST(SyntheticTokenizerTest, ConfigNamesQwenTokens) {
  const nlohmann::json config = nlohmann::json::parse(BuildSyntheticTokenizerConfigJson());
  EXPECT_EQ(config.at("eos_token"), "<|im_end|>");
  EXPECT_EQ(config.at("pad_token"), "<|endoftext|>");
  EXPECT_TRUE(config.at("bos_token").is_null());
  EXPECT_EQ(config.at("chat_template"), std::string(QwenChatTemplate()));
  EXPECT_NE(config.at("chat_template").get<std::string>().find("<|im_start|>"), std::string::npos);
  const nlohmann::json& decoder = config.at("added_tokens_decoder");
  EXPECT_EQ(decoder.size(), 33u);
  EXPECT_EQ(decoder.at("962").at("content"), "<|im_end|>");
  EXPECT_EQ(decoder.at("984").at("special"), false);
  const nlohmann::json large =
      nlohmann::json::parse(BuildSyntheticTokenizerConfigJson({.added_token_base = 248044}));
  EXPECT_EQ(large.at("added_tokens_decoder").at("248046").at("content"), "<|im_end|>");
}

}  // namespace
}  // namespace mtplx::tokenizer
