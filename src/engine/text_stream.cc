#include "engine/text_stream.h"

#include <algorithm>

namespace mtplx::engine {

TextStream::TextStream(const tokenizer::Tokenizer* tokenizer, std::vector<std::string> stops)
    : decoder_(tokenizer, /*skip_special_tokens=*/true) {
  for (auto& stop : stops)
    if (!stop.empty()) stops_.push_back(std::move(stop));
  for (const auto& stop : stops_) longest_stop_ = std::max(longest_stop_, stop.size());
}

std::string TextStream::TakeSafe() {
  // Text that a stop string could still start in stays back: at most longest - 1 bytes.
  const size_t held =
      stopped_ || finished_ ? 0 : std::min(text_.size(), longest_stop_ ? longest_stop_ - 1 : 0);
  const size_t safe = text_.size() - held;
  if (safe <= streamed_) return "";
  std::string out = text_.substr(streamed_, safe - streamed_);
  streamed_ = safe;
  return out;
}

std::string TextStream::Push(int32_t token) {
  if (stopped_) return "";
  // Text before `streamed_ - longest + 1` was checked already: no stop string starts there.
  const size_t search_from = streamed_;
  text_ += decoder_.Push(token);
  size_t first = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = text_.find(stop, search_from);
    if (at < first) {
      first = at;
      matched_ = stop;
    }
  }
  if (first != std::string::npos) {
    text_.resize(first);
    stopped_ = true;
  }
  return TakeSafe();
}

std::string TextStream::Finish() {
  if (!stopped_) text_ += decoder_.Flush();
  finished_ = true;  // nothing more can arrive: everything is safe now
  return TakeSafe();
}

}  // namespace mtplx::engine
