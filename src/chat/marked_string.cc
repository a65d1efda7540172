#include "chat/marked_string.h"

#include <algorithm>

namespace mtplx::chat {

MarkedString::MarkedString(std::string text, bool from_user) : text_(std::move(text)) {
  if (from_user) AddSpan(0, text_.size());
}

bool MarkedString::AllUser() const {
  return text_.empty() || (user_.size() == 1 && user_[0].begin == 0 && user_[0].end == size());
}

void MarkedString::AddSpan(size_t begin, size_t end) {
  if (begin >= end) return;
  // Spans only ever arrive in order, so merging with the last one keeps the list canonical.
  if (!user_.empty() && user_.back().end >= begin) {
    user_.back().end = std::max(user_.back().end, end);
    return;
  }
  user_.push_back({begin, end});
}

void MarkedString::Append(std::string_view text, bool from_user) {
  const size_t begin = text_.size();
  text_.append(text);
  if (from_user) AddSpan(begin, text_.size());
}

void MarkedString::Append(const MarkedString& other) {
  const size_t offset = text_.size();
  text_.append(other.text_);
  for (const ByteSpan& span : other.user_) AddSpan(offset + span.begin, offset + span.end);
}

void MarkedString::MarkAllUser() {
  user_.clear();
  AddSpan(0, text_.size());
}

MarkedString MarkedString::Substr(size_t begin, size_t end) const {
  end = std::min(end, text_.size());
  begin = std::min(begin, end);
  MarkedString out;
  out.text_ = text_.substr(begin, end - begin);
  for (const ByteSpan& span : user_) {
    const size_t lo = std::max(span.begin, begin);
    const size_t hi = std::min(span.end, end);
    if (lo < hi) out.AddSpan(lo - begin, hi - begin);
  }
  return out;
}

}  // namespace mtplx::chat
