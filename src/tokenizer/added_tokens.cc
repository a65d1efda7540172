#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>

namespace mtplx::tokenizer {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  int distinct_first_bytes = 0;
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) continue;
    const auto first = static_cast<unsigned char>(token.content[0]);
    if (by_first_byte_[first].empty()) {
      ++distinct_first_bytes;
      single_first_byte_ = first;
    }
    by_first_byte_[first].push_back(static_cast<uint32_t>(tokens_.size()));
    tokens_.push_back(token);
  }
  any_ = !tokens_.empty();
  if (distinct_first_bytes != 1) single_first_byte_ = -1;
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [this](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

size_t AddedTokenMatcher::NextCandidate(std::string_view text, size_t from) const {
  if (single_first_byte_ >= 0) {
    const void* hit = std::memchr(text.data() + from, single_first_byte_, text.size() - from);
    return hit ? static_cast<const char*>(hit) - text.data() : text.size();
  }
  for (size_t pos = from; pos < text.size(); ++pos) {
    if (!by_first_byte_[static_cast<unsigned char>(text[pos])].empty()) return pos;
  }
  return text.size();
}

AddedTokenMatcher::Match AddedTokenMatcher::FindNext(std::string_view text, size_t from) const {
  if (!any_) return {text.size(), nullptr};
  for (size_t pos = NextCandidate(text, from); pos < text.size();
       pos = NextCandidate(text, pos + 1)) {
    for (const uint32_t index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const AddedToken& token = tokens_[index];
      if (text.compare(pos, token.content.size(), token.content) == 0) return {pos, &token};
    }
  }
  return {text.size(), nullptr};
}

}  // namespace mtplx::tokenizer
