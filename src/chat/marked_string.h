// MarkedString: UTF-8 text that remembers which byte ranges came from user input.
//
// Chat templates splice message contents between control tokens ("<|im_start|>user\n" + content
// + "<|im_end|>"). The tokenizer must turn the template's own "<|im_end|>" into the special token
// but must encode the same characters inside a message as plain text, or a user could forge turn
// boundaries. So every string that enters the renderer from a conversation carries a mark, string
// operations carry the marks along, and the rendered prompt reports them as segments.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mtplx::chat {

// A half-open byte range [begin, end) of user text.
struct ByteSpan {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const ByteSpan&) const = default;
};

class MarkedString {
 public:
  MarkedString() = default;
  explicit MarkedString(std::string text, bool from_user = false);

  const std::string& text() const { return text_; }
  size_t size() const { return text_.size(); }
  bool empty() const { return text_.empty(); }

  // Sorted, disjoint, non-empty, non-adjacent spans.
  const std::vector<ByteSpan>& user_spans() const { return user_; }
  bool AnyUser() const { return !user_.empty(); }
  bool AllUser() const;

  void Append(std::string_view text, bool from_user = false);
  void Append(const MarkedString& other);
  // Marks the whole text as user input (for results derived from user text by operations that do
  // not map bytes one to one, such as replace or JSON encoding).
  void MarkAllUser();

  // Bytes [begin, end) with the marks that fall inside them.
  MarkedString Substr(size_t begin, size_t end) const;

  bool operator==(const MarkedString& other) const { return text_ == other.text_; }

 private:
  void AddSpan(size_t begin, size_t end);

  std::string text_;
  std::vector<ByteSpan> user_;
};

}  // namespace mtplx::chat
