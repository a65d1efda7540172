#include "tokenizer/tokenizer_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer {
namespace {

using Json = nlohmann::json;

// A byte-level BPE tokenizer.json with the 256 byte tokens, the given merges (raw bytes) and
// pre-tokenizer Sequence[Split(literal "-"), ByteLevel].
Json TinyTokenizer(const std::vector<std::pair<std::string, std::string>>& merges) {
  Json vocab = Json::object();
  for (int byte = 0; byte < 256; ++byte) {
    vocab[BytesToByteLevel(std::string(1, static_cast<char>(byte)))] = byte;
  }
  Json merge_list = Json::array();
  for (const auto& [left, right] : merges) {
    vocab[BytesToByteLevel(left + right)] = static_cast<int>(vocab.size());
    merge_list.push_back(BytesToByteLevel(left) + " " + BytesToByteLevel(right));
  }
  return {{"added_tokens", Json::array({{{"id", 300}, {"content", "<eos>"}, {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"String", "-"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}}};
}

TEST(TokenizerJsonTest, ReadsStringMergesAndLiteralSplits) {
  Result<Tokenizer> tokenizer = Tokenizer::FromJsonString(
      TinyTokenizer({{"a", "-"}, {"a", "b"}, {"ab", "c"}, {" ", "x"}}).dump());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ(tokenizer->vocab_size(), 301);
  // "abc" merges fully; the literal "-" split keeps "a-" from merging.
  EXPECT_EQ(tokenizer->Encode("abc", false), (std::vector<int32_t>{258}));
  EXPECT_EQ(tokenizer->Encode("a-b", false), (std::vector<int32_t>{'a', '-', 'b'}));
  EXPECT_EQ(tokenizer->Encode(" x<eos>", true), (std::vector<int32_t>{259, 300}));
  EXPECT_EQ(tokenizer->Decode(std::vector<int32_t>{258, 259, 300}), "abc x<eos>");
}

TEST(TokenizerJsonTest, ReadsPairMergesAndSequenceNormalizer) {
  Json json = TinyTokenizer({{"a", "b"}});
  json["model"]["merges"] = Json::array({Json::array({"a", "b"})});
  json["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
  Result<TokenizerSpec> spec = ParseTokenizerJson(json.dump());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->nfc);
  ASSERT_EQ(spec->merges.size(), 1u);
  EXPECT_EQ(spec->merges[0], (std::pair<std::string, std::string>("a", "b")));
  ASSERT_EQ(spec->split_steps.size(), 1u);
  EXPECT_TRUE(spec->split_steps[0].literal);
}

TEST(TokenizerJsonTest, ByteLevelWithRegexUsesTheGpt2Pattern) {
  Json json = TinyTokenizer({});
  json["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}};
  Result<TokenizerSpec> spec = ParseTokenizerJson(json.dump());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->split_steps.size(), 1u);  // use_regex defaults to true
  EXPECT_TRUE(spec->add_prefix_space);
  Result<Tokenizer> tokenizer = Tokenizer::FromSpec(*spec);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ(tokenizer->Decode(tokenizer->Encode("hi", false)), " hi");
}

// Each mutation of a valid file must fail with the given code instead of loading wrongly.
TEST(TokenizerJsonTest, RejectsWhatItCannotHonour) {
  struct Case {
    const char* name;
    void (*mutate)(Json*);
    StatusCode code;
  };
  const Case cases[] = {
      {"lowercase",
       [](Json* j) {
         (*j)["normalizer"] = {{"type", "Lowercase"}};
       },
       StatusCode::kUnimplemented},
      {"removed",
       [](Json* j) { (*j)["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
       StatusCode::kUnimplemented},
      {"no byte level", [](Json* j) { (*j)["pre_tokenizer"] = nullptr; },
       StatusCode::kUnimplemented},
      {"lstrip", [](Json* j) { (*j)["added_tokens"][0]["lstrip"] = true; },
       StatusCode::kUnimplemented},
      {"byte fallback", [](Json* j) { (*j)["model"]["byte_fallback"] = true; },
       StatusCode::kUnimplemented},
      {"wordpiece decoder",
       [](Json* j) {
         (*j)["decoder"] = {{"type", "WordPiece"}};
       },
       StatusCode::kUnimplemented},
      {"bad regex",
       [](Json* j) {
         (*j)["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}};
       },
       StatusCode::kInvalidArgument},
      {"missing byte", [](Json* j) { (*j)["model"]["vocab"].erase("Ā"); },
       StatusCode::kInvalidArgument},
      {"unknown merge", [](Json* j) { (*j)["model"]["merges"].push_back("x zz"); },
       StatusCode::kInvalidArgument},
      {"three-part merge", [](Json* j) { (*j)["model"]["merges"].push_back("a b c"); },
       StatusCode::kInvalidArgument},
      {"negative id", [](Json* j) { (*j)["model"]["vocab"]["zz"] = -3; },
       StatusCode::kInvalidArgument},
      {"float id", [](Json* j) { (*j)["model"]["vocab"]["zz"] = 1.24e105; },
       StatusCode::kInvalidArgument},
      {"huge unsigned id", [](Json* j) { (*j)["model"]["vocab"]["zz"] = uint64_t{1} << 63; },
       StatusCode::kInvalidArgument},
      {"float added id", [](Json* j) { (*j)["added_tokens"][0]["id"] = 300.5; },
       StatusCode::kInvalidArgument},
      {"missing model", [](Json* j) { j->erase("model"); }, StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    Json json = TinyTokenizer({{"a", "b"}});
    c.mutate(&json);
    Result<Tokenizer> tokenizer = Tokenizer::FromJsonString(json.dump());
    EXPECT_EQ(tokenizer.status().code(), c.code)
        << c.name << ": " << (tokenizer.ok() ? "loaded" : tokenizer.status().ToString());
  }
}

}  // namespace
}  // namespace mtplx::tokenizer
