#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace mtplx::tokenizer {
namespace {

TEST(Utf8Test, ValidSequenceLength) {
  EXPECT_EQ(ValidSequenceLength("a", 0), 1u);
  EXPECT_EQ(ValidSequenceLength("\xC3\xA9", 0), 2u);
  EXPECT_EQ(ValidSequenceLength("\xE4\xBD\xA0", 0), 3u);
  EXPECT_EQ(ValidSequenceLength("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(ValidSequenceLength("\xC0\x80", 0), 0u);          // overlong
  EXPECT_EQ(ValidSequenceLength("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(ValidSequenceLength("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(ValidSequenceLength("\xE4\xBD", 0), 0u);          // truncated
  EXPECT_EQ(ValidSequenceLength("\x80", 0), 0u);
}

TEST(Utf8Test, LossyRepairReplacesMaximalSubparts) {
  EXPECT_EQ(ToValidUtf8Lossy("plain"), "plain");
  // Examples from the Unicode standard's "U+FFFD substitution of maximal subparts".
  EXPECT_EQ(ToValidUtf8Lossy("a\xF1\x80\x80"
                             "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ToValidUtf8Lossy("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x41");
  EXPECT_EQ(ToValidUtf8Lossy("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8Lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Utf8Test, IncompleteTailLength) {
  EXPECT_EQ(IncompleteTailLength(""), 0u);
  EXPECT_EQ(IncompleteTailLength("abc"), 0u);
  EXPECT_EQ(IncompleteTailLength("a\xF0"), 1u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteTailLength("a\xE0\x80"), 0u);  // can never complete: emit now
  EXPECT_EQ(IncompleteTailLength("\x80\x80\x80"), 0u);
  EXPECT_EQ(IncompleteTailLength("\xC3"), 1u);
}

TEST(ByteLevelTest, AlphabetIsTheGpt2Map) {
  EXPECT_EQ(BytesToByteLevel(" "), "Ġ");
  EXPECT_EQ(BytesToByteLevel("\n"), "Ċ");
  EXPECT_EQ(BytesToByteLevel("a!~"), "a!~");
  EXPECT_EQ(BytesToByteLevel("\xC3\xA9"), "Ã©");
  EXPECT_EQ(ByteToCodePoint(0x00), U'\u0100');
  EXPECT_EQ(ByteToCodePoint(0x7F), U'\u0121');
  EXPECT_EQ(ByteToCodePoint(0xAD), U'\u0143');
  EXPECT_EQ(ByteToCodePoint(0xFF), U'\u00FF');
}

TEST(ByteLevelTest, RoundTripsAllBytes) {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  const std::string text = BytesToByteLevel(bytes);
  EXPECT_EQ(ByteLevelToBytes(text), bytes);
  EXPECT_EQ(ByteLevelToBytes("<|im_end|>"), "<|im_end|>");
  EXPECT_EQ(ByteLevelToBytes("\xC5\x84"), std::nullopt);      // U+0144: outside the alphabet
  EXPECT_EQ(ByteLevelToBytes("caf\xC3\xA9"), "caf\xE9");      // U+00E9 stands for byte 0xE9
  EXPECT_EQ(ByteLevelToBytes("\xE2\x82\xAC"), std::nullopt);  // U+20AC is not a symbol
  EXPECT_EQ(ByteLevelToBytes("\xFF"), std::nullopt);          // not UTF-8
}

}  // namespace
}  // namespace mtplx::tokenizer
