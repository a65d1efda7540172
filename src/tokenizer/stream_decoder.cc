#include "tokenizer/stream_decoder.h"

#include "base/check.h"
#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer* tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {
  MTPLX_CHECK(tokenizer_ != nullptr, "StreamDecoder needs a tokenizer");
}

std::string StreamDecoder::Push(int32_t id) {
  Append(id);
  return TakeCompleteText();
}

std::string StreamDecoder::Push(std::span<const int32_t> ids) {
  for (const int32_t id : ids) Append(id);
  return TakeCompleteText();
}

void StreamDecoder::Append(int32_t id) {
  if (!skip_special_tokens_ || !tokenizer_->IsSpecial(id)) {
    pending_.append(tokenizer_->TokenBytes(id));
  }
}

std::string StreamDecoder::Flush() {
  std::string text = ToValidUtf8Lossy(pending_);
  pending_.clear();
  return text;
}

// Emits everything except a trailing sequence that is still a valid prefix. Repairing the
// emitted part on its own gives the same U+FFFDs as repairing the whole text at the end,
// because the held-back tail is a maximal subpart boundary either way.
std::string StreamDecoder::TakeCompleteText() {
  const size_t ready = pending_.size() - IncompleteTailLength(pending_);
  if (ready == 0) return {};
  const std::string_view head(pending_.data(), ready);
  std::string text = IsValidUtf8(head) ? std::string(head) : ToValidUtf8Lossy(head);
  pending_.erase(0, ready);
  return text;
}

}  // namespace mtplx::tokenizer
