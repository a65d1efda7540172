#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {
namespace {

using testing::Qwen3Tokenizer;

constexpr const char* kReplacement = "\xEF\xBF\xBD";

// Streams ids one at a time and returns the chunks, the last one from Flush.
std::vector<std::string> StreamAll(const std::vector<int32_t>& ids, bool skip_special = false) {
  StreamDecoder decoder(&Qwen3Tokenizer(), skip_special);
  std::vector<std::string> chunks;
  chunks.reserve(ids.size() + 1);
  for (const int32_t id : ids) chunks.push_back(decoder.Push(id));
  chunks.push_back(decoder.Flush());
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  return chunks;
}

std::string Join(const std::vector<std::string>& chunks) {
  std::string text;
  for (const std::string& chunk : chunks) text += chunk;
  return text;
}

int32_t ByteTokenId(char byte) {
  return *Qwen3Tokenizer().TokenToId(BytesToByteLevel(std::string(1, byte)));
}

TEST(StreamDecoderTest, HoldsBackSplitCharacters) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  // Rare emoji and CJK are split into byte tokens; no chunk may end mid-character.
  const std::string text = "a 😶‍🌫️ b 🦙 c 鿰 d 👩‍👩‍👧‍👦 e 𠜎𠜱";
  const std::vector<int32_t> ids = tokenizer.Encode(text, false);
  const std::vector<std::string> chunks = StreamAll(ids);
  int empty_chunks = 0;
  for (const std::string& chunk : chunks) {
    EXPECT_TRUE(IsValidUtf8(chunk));
    empty_chunks += chunk.empty();
  }
  EXPECT_GT(empty_chunks, 1) << "expected some tokens to end mid-character";
  EXPECT_EQ(Join(chunks), text);
}

TEST(StreamDecoderTest, EmitsEachCharacterAsSoonAsComplete) {
  StreamDecoder decoder(&Qwen3Tokenizer());
  // U+1F999 🦙 = F0 9F A6 99, fed one byte token at a time.
  EXPECT_EQ(decoder.Push(ByteTokenId('\xF0')), "");
  EXPECT_EQ(decoder.Push(ByteTokenId('\x9F')), "");
  EXPECT_EQ(decoder.Push(ByteTokenId('\xA6')), "");
  EXPECT_EQ(decoder.pending_bytes(), 3u);
  EXPECT_EQ(decoder.Push(ByteTokenId('\x99')), "🦙");
  EXPECT_EQ(decoder.pending_bytes(), 0u);
}

TEST(StreamDecoderTest, BrokenSequencesBecomeReplacementCharacters) {
  StreamDecoder decoder(&Qwen3Tokenizer());
  EXPECT_EQ(decoder.Push(ByteTokenId('\xE4')), "");
  EXPECT_EQ(decoder.Push(ByteTokenId('\xBD')), "");
  EXPECT_EQ(decoder.Push(ByteTokenId('A')), std::string(kReplacement) + "A");
  EXPECT_EQ(decoder.Push(ByteTokenId('\xFF')), kReplacement);  // never valid: not held back
  EXPECT_EQ(decoder.Push(ByteTokenId('\xC3')), "");
  EXPECT_EQ(decoder.Flush(), kReplacement);
}

TEST(StreamDecoderTest, MatchesDecodeOnRandomIds) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  std::mt19937 rng(1234);
  // Mostly byte tokens (ids below 256 include all non-ASCII bytes) to stress partial UTF-8.
  std::uniform_int_distribution<int32_t> byte_ids(0, 255);
  std::uniform_int_distribution<int32_t> any_ids(0, tokenizer.vocab_size() + 10);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids(1 + trial % 40);
    for (int32_t& id : ids) id = (rng() % 4 == 0) ? any_ids(rng) : byte_ids(rng);
    for (const bool skip_special : {false, true}) {
      EXPECT_EQ(Join(StreamAll(ids, skip_special)), tokenizer.Decode(ids, skip_special));
    }
  }
}

TEST(StreamDecoderTest, SkipsSpecialTokensButKeepsAddedOnes) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  const std::vector<int32_t> ids = tokenizer.Encode("<think>x</think><|im_end|>", true);
  EXPECT_EQ(Join(StreamAll(ids, /*skip_special=*/true)), "<think>x</think>");
  EXPECT_EQ(Join(StreamAll(ids, /*skip_special=*/false)), "<think>x</think><|im_end|>");
}

TEST(StreamDecoderTest, PushesSpans) {
  const Tokenizer& tokenizer = Qwen3Tokenizer();
  const std::vector<int32_t> ids = tokenizer.Encode("héllo wörld 🦙", false);
  StreamDecoder decoder(&tokenizer);
  EXPECT_EQ(decoder.Push(ids) + decoder.Flush(), "héllo wörld 🦙");
}

}  // namespace
}  // namespace mtplx::tokenizer
