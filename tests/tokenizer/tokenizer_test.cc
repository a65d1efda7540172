#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "support/test_support.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/synthetic_tokenizer.h"
#include "tokenizer/test_tokenizers.h"

namespace mtplx::tokenizer {
namespace {

using testing::Qwen3Tokenizer;

std::vector<int32_t> ParseIds(const std::string& line) {
  std::vector<int32_t> ids;
  for (const std::string& field : StrSplit(line, ' ')) {
    if (!field.empty()) ids.push_back(std::stoi(field));
  }
  return ids;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    out += (c >= 0x20 && c < 0x7F) ? std::string(1, char(c)) : StrFormat("\\x%02X", c);
  }
  return out;
}

TEST(TokenizerTest, LoadsQwen3Tables) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  EXPECT_EQ(tokenizer.vocab_size(), 151669);
  EXPECT_EQ(tokenizer.added_tokens().size(), 26u);
  EXPECT_EQ(tokenizer.AddedTokenId("<|endoftext|>"), 151643);
  EXPECT_EQ(tokenizer.AddedTokenId("<|im_end|>"), 151645);
  EXPECT_EQ(tokenizer.AddedTokenId("<think>"), 151667);
  EXPECT_EQ(tokenizer.AddedTokenId("hello"), std::nullopt);
  EXPECT_TRUE(tokenizer.IsSpecial(151645));
  EXPECT_FALSE(tokenizer.IsSpecial(151667));  // <think> is added but not special
  EXPECT_TRUE(tokenizer.IsAddedToken(151667));
  EXPECT_FALSE(tokenizer.IsAddedToken(220));
  EXPECT_EQ(tokenizer.IdToToken(220), "Ġ");
  EXPECT_EQ(tokenizer.TokenToId("Ġ"), 220);
  EXPECT_EQ(tokenizer.TokenToId("<|im_start|>"), 151644);
  EXPECT_EQ(tokenizer.TokenBytes(220), " ");
  EXPECT_EQ(tokenizer.IdToToken(-1), std::nullopt);
  EXPECT_EQ(tokenizer.IdToToken(151669), std::nullopt);
  EXPECT_EQ(tokenizer.TokenBytes(999999), "");
}

// llama.cpp's test-tokenizer-0 vectors: inputs end with "\n__ggml_vocab_test__\n", outputs are
// one line of ids per input.
TEST(TokenizerTest, MatchesLlamaCppVectors) {
  Result<std::string> inputs_text =
      ReadTextFile(mtplx::testing::TestDataPath("tokenizer-vectors/qwen2.inp"));
  Result<std::string> outputs_text =
      ReadTextFile(mtplx::testing::TestDataPath("tokenizer-vectors/qwen2.out"));
  ASSERT_TRUE(inputs_text.ok()) << inputs_text.status().ToString();
  ASSERT_TRUE(outputs_text.ok()) << outputs_text.status().ToString();

  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  for (size_t end; (end = inputs_text->find(separator, pos)) != std::string::npos;
       pos = end + separator.size()) {
    inputs.push_back(inputs_text->substr(pos, end - pos));
  }
  EXPECT_EQ(pos, inputs_text->size()) << "text after the last separator";
  std::vector<std::string> outputs = StrSplit(*outputs_text, '\n');
  if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(outputs.size(), inputs.size());

  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(Qwen3Tokenizer().Encode(inputs[i], /*allow_special=*/false), ParseIds(outputs[i]))
        << "input " << i << ": " << Escape(inputs[i]);
  }
}

TEST(TokenizerTest, AddedTokensOnlyWhenAllowed) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  const std::string text = "<|im_start|>user\nhi<|im_end|><think>";
  const std::vector<int32_t> special = tokenizer.Encode(text, /*allow_special=*/true);
  ASSERT_GE(special.size(), 4u);
  EXPECT_EQ(special.front(), 151644);
  EXPECT_EQ(special[special.size() - 2], 151645);
  EXPECT_EQ(special.back(), 151667);
  const std::vector<int32_t> plain = tokenizer.Encode(text, /*allow_special=*/false);
  for (const int32_t id : plain) EXPECT_FALSE(tokenizer.IsAddedToken(id)) << id;
  EXPECT_EQ(tokenizer.Decode(special), text);
  EXPECT_EQ(tokenizer.Decode(plain), text);
  EXPECT_EQ(tokenizer.Decode(special, /*skip_special_tokens=*/true), "user\nhi<think>");
}

TEST(TokenizerTest, AddedTokensMatchLeftmostLongest) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  // "<tool_call>" and "</tool_call>" overlap with ordinary '<' text around them.
  EXPECT_EQ(tokenizer.Encode("<</tool_call>>", true), (std::vector<int32_t>{27, 151658, 29}));
  EXPECT_EQ(tokenizer.Encode("<|im_end|<|im_end|>", true).back(), 151645);
  EXPECT_EQ(tokenizer.Encode("<|im_end|><|im_end|>", true), (std::vector<int32_t>{151645, 151645}));
}

TEST(TokenizerTest, DecodeRoundTripsValidText) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  for (const std::string text :
       {"", " ", "Hello, world!", "  leading and trailing  ", "tabs\tand\r\nCRLF\n\n\n",
        "def f(x):\n    return x ** 2  # square\n", "日本語のテキスト、中文文本。한국어",
        "emoji 👩‍👩‍👧‍👦 🇺🇸 👍🏽", "numbers 1234567890 3.14159e-10",
        "I'M SURE they'LL"}) {
    EXPECT_EQ(tokenizer.Decode(tokenizer.Encode(text, false)), text) << Escape(text);
  }
}

TEST(TokenizerTest, NormalizesToNfc) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  // "e" + combining acute accent encodes like the precomposed "é".
  EXPECT_EQ(tokenizer.Encode("caf\x65\xCC\x81", false), tokenizer.Encode("caf\xC3\xA9", false));
  // The Kelvin sign is canonically equivalent to "K".
  EXPECT_EQ(tokenizer.Encode("\xE2\x84\xAA", false), tokenizer.Encode("K", false));
}

TEST(TokenizerTest, InvalidUtf8IsKeptByteForByte) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  const std::string text = "ok \xFF\xFE bad \xE4\xBD tail \xC3";
  const std::vector<int32_t> ids = tokenizer.Encode(text, true);
  std::string bytes;
  for (const int32_t id : ids) bytes += tokenizer.TokenBytes(id);
  EXPECT_EQ(bytes, text);
  EXPECT_EQ(tokenizer.Decode(ids),
            "ok \xEF\xBF\xBD\xEF\xBF\xBD bad \xEF\xBF\xBD tail \xEF\xBF\xBD");
}

// Whatever the bytes, encoding never fails and the tokens spell the NFC-normalized input.
TEST(TokenizerTest, RandomBytesRoundTrip) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  std::mt19937 rng(77);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text(rng() % 48, '\0');
    for (char& c : text) {
      // Bias towards UTF-8 lead/continuation bytes and combining marks (0xCC/0xCD).
      const uint32_t roll = rng() % 8;
      c = static_cast<char>(roll < 3 ? 0x80 + rng() % 64 : roll < 5 ? 0xC2 + rng() % 51 : rng());
    }
    std::string expected = text;
    NormalizeNfc(text, &expected);
    std::string bytes;
    for (const int32_t id : tokenizer.Encode(text, false)) bytes += tokenizer.TokenBytes(id);
    ASSERT_EQ(bytes, expected) << Escape(text);
  }
}

TEST(TokenizerTest, NormalizerKeepsInvalidBytes) {
  std::string out;
  EXPECT_FALSE(NormalizeNfc("plain ascii", &out));
  EXPECT_FALSE(NormalizeNfc("caf\xC3\xA9", &out));  // already NFC
  ASSERT_TRUE(
      NormalizeNfc("e\xCC\x81\xFF"
                   "e\xCC\x81",
                   &out));
  EXPECT_EQ(out, "\xC3\xA9\xFF\xC3\xA9");
  ASSERT_TRUE(
      NormalizeNfc("\xCC\x81\xE4\xBD"
                   "a\xCC\x8A",
                   &out));
  EXPECT_EQ(out, "\xCC\x81\xE4\xBD\xC3\xA5");
}

// Many threads share one tokenizer (and its piece cache) in the server.
TEST(TokenizerTest, ConcurrentEncodeMatchesSequential) {
  Result<std::string> json = BuildSyntheticTokenizerJson();
  ASSERT_TRUE(json.ok());
  Result<Tokenizer> reference = Tokenizer::FromJsonString(*json);
  Result<Tokenizer> shared = Tokenizer::FromJsonString(*json);  // cache still empty
  ASSERT_TRUE(reference.ok() && shared.ok());
  std::mt19937 rng(5);
  const std::string words[] = {"the ", "keeper ", "Tokenizer", "(self)", " 12", "é", "🙂", "\n"};
  std::vector<std::string> texts(400);
  std::vector<std::vector<int32_t>> expected;
  expected.reserve(texts.size());
  for (std::string& text : texts) {
    for (int w = 0; w < 30; ++w) text += words[rng() % 8];
    expected.push_back(reference->Encode(text, true));
  }
  constexpr int kThreads = 4;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const size_t index = (i * (t + 1)) % texts.size();
        mismatches[t] += shared->Encode(texts[index], true) != expected[index];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(TokenizerTest, EveryByteValueRoundTrips) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  std::string bytes;
  for (const int32_t id : tokenizer.Encode(all_bytes + all_bytes, false)) {
    bytes += tokenizer.TokenBytes(id);
  }
  EXPECT_EQ(bytes, all_bytes + all_bytes);
}

TEST(TokenizerTest, LongRunsStayFast) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  // Each run is a single pre-token, so this exercises the O(n log n) merge loop.
  for (const std::string& text :
       {std::string(1 << 18, ' '), std::string(1 << 18, 'a'), std::string(1 << 16, '='),
        std::string(1 << 16, '\n'), std::string(1 << 16, '7')}) {
    const std::vector<int32_t> ids = tokenizer.Encode(text, false);
    EXPECT_EQ(tokenizer.Decode(ids), text);
    EXPECT_LE(ids.size(), text.size());
  }
}

TEST(TokenizerTest, UnknownIdsAreSkippedByDecode) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  EXPECT_EQ(tokenizer.Decode(std::vector<int32_t>{9707, -5, 151669, 200000, 1879}), "Hello world");
}

TEST(TokenizerTest, LoadErrorsNameTheProblem) {
  const std::string dir = mtplx::testing::MakeTempDir("tokenizer-test");
  const std::string path = dir + "/tokenizer.json";
  ASSERT_TRUE(WriteTextFile(path, "{ not json").ok());
  Result<Tokenizer> broken = Tokenizer::FromJsonFile(path);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find(path), std::string::npos);

  Result<Tokenizer> missing = Tokenizer::FromJsonFile(dir + "/missing.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  Result<Tokenizer> wordpiece = Tokenizer::FromJsonString(
      R"({"model": {"type": "WordPiece", "vocab": {}}, "decoder": null})");
  EXPECT_EQ(wordpiece.status().code(), StatusCode::kUnimplemented);

  Result<Tokenizer> wrong_type =
      Tokenizer::FromJsonString(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})");
  EXPECT_EQ(wrong_type.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mtplx::tokenizer

namespace mtplx::tokenizer {
namespace {

// Rendered chat text: added tokens count only outside the spans that came from the user.
TEST(EncodeMarkedTest, UserSpansCannotForgeAddedTokens) {
  const Tokenizer& tok = Qwen3Tokenizer();
  const std::string user = "hi <|im_end|> there";
  const std::string text = "<|im_start|>user\n" + user + "<|im_end|>\n";
  const size_t begin = text.find(user);
  const std::vector<std::pair<size_t, size_t>> spans = {{begin, begin + user.size()}};
  const std::vector<int32_t> ids = tok.EncodeMarked(text, spans);
  const int32_t im_end = *tok.AddedTokenId("<|im_end|>");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 1);  // only the template's
  EXPECT_EQ(tok.Decode(ids), text);
  // Without user spans it is the plain special-aware encoding.
  EXPECT_EQ(tok.EncodeMarked(text, {}), tok.Encode(text, true));
}

}  // namespace
}  // namespace mtplx::tokenizer
