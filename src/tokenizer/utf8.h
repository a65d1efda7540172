// UTF-8 helpers for the tokenizer: validation, lossy repair and stream boundaries.
// Tokens are byte strings, so text handed to users must be repaired the way Hugging Face
// tokenizers does it (String::from_utf8_lossy: one U+FFFD per maximal invalid subpart).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mtplx::tokenizer {

// Length of the valid UTF-8 sequence starting at text[pos], or 0 when the bytes there are not
// a complete, well-formed sequence (truncated, overlong, surrogate, > U+10FFFF, stray byte).
size_t ValidSequenceLength(std::string_view text, size_t pos);

// Length of the maximal prefix of text[pos..] that could still begin a valid sequence (the
// "maximal subpart" of the Unicode standard); at least 1 for a non-empty tail.
size_t MaximalSubpartLength(std::string_view text, size_t pos);

bool IsValidUtf8(std::string_view text);

// Replaces each maximal invalid subpart with U+FFFD, like Rust's String::from_utf8_lossy.
std::string ToValidUtf8Lossy(std::string_view text);

// Number of trailing bytes that form an incomplete but so far valid sequence (0..3). A stream
// decoder holds these back until the next token completes or breaks them.
size_t IncompleteTailLength(std::string_view text);

// Appends the UTF-8 encoding of a code point (must be <= 0x10FFFF and not a surrogate).
void AppendCodePoint(char32_t code_point, std::string* out);

}  // namespace mtplx::tokenizer
