// Incremental detokenization for streaming: hands out text only once its UTF-8 is complete, so
// an emoji or CJK character split across tokens is never emitted half-way.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer {

// Concatenating every Push result and the final Flush gives exactly Tokenizer::Decode of all
// ids. Not thread-safe; use one per sequence. The tokenizer must outlive the decoder.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer* tokenizer, bool skip_special_tokens = false);

  // Returns the text completed by this token (often empty mid-character). Invalid byte
  // sequences are emitted as U+FFFD as soon as they are known to be invalid.
  std::string Push(int32_t id);
  std::string Push(std::span<const int32_t> ids);

  // Returns whatever is held back (an incomplete character becomes U+FFFD) and resets.
  std::string Flush();

  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  void Append(int32_t id);
  std::string TakeCompleteText();

  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;
};

}  // namespace mtplx::tokenizer
