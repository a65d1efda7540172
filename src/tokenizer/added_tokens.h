// Added tokens (<|im_start|>, <think>, ...) and the matcher that finds them in template text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mtplx::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  // Hugging Face's flag: special tokens are dropped by Decode(skip_special_tokens=true).
  // Qwen marks <think>, <tool_call>, FIM tokens etc. as added but not special.
  bool special = false;
};

// Finds added tokens in text the way Hugging Face's AddedVocabulary does: the leftmost match
// wins, and among matches at the same position the longest.
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  struct Match {
    size_t position;
    const AddedToken* token;  // owned by the matcher
  };

  // The first match at or after `from`; token is null when there is none.
  Match FindNext(std::string_view text, size_t from) const;

 private:
  size_t NextCandidate(std::string_view text, size_t from) const;

  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by first byte, longest first, so the first that matches is the longest.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
  // With a single distinct first byte (all Qwen tokens start with '<'), memchr finds candidates.
  int single_first_byte_ = -1;
  bool any_ = false;
};

}  // namespace mtplx::tokenizer
