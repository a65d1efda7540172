// The splitter holds back only what the next piece could still change: a suffix that may be the
// start of a tag, whitespace that may turn out to sit right before </think> (or, at the very
// start, right before <think>), and nothing else. Every decision depends on the text alone, so any
// chunking of the same text splits it the same way.
#include "api/reasoning.h"

#include <algorithm>

namespace mtplx::api {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kSpace = " \t\r\n";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t PartialTagSuffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (StartsWith(tag, text.substr(text.size() - n))) return n;
  }
  return 0;
}

std::string_view TrimRight(std::string_view text) {
  const size_t end = text.find_last_not_of(kSpace);
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool starts_open, bool enabled)
    : enabled_(enabled), inside_(enabled && starts_open), seen_block_(inside_) {
  drop_newline_ = inside_;
  at_start_ = enabled && !starts_open;
}

ReasoningPiece ReasoningSplitter::Push(std::string_view text) {
  if (!enabled_) return {"", std::string(text)};
  held_.append(text);
  ReasoningPiece out;
  Run(/*at_end=*/false, out);
  return out;
}

ReasoningPiece ReasoningSplitter::Finish() {
  ReasoningPiece out;
  if (!enabled_) return out;
  Run(/*at_end=*/true, out);
  return out;
}

void ReasoningSplitter::Run(bool at_end, ReasoningPiece& out) {
  while (inside_ ? StepInside(at_end, out) : StepOutside(at_end, out)) {
  }
}

void ReasoningSplitter::Open() {
  inside_ = true;
  seen_block_ = true;
  drop_newline_ = true;
  at_start_ = false;
}

bool ReasoningSplitter::StepInside(bool at_end, ReasoningPiece& out) {
  if (drop_newline_) {
    if (held_.empty()) return false;
    if (held_.front() == '\n') held_.erase(0, 1);
    drop_newline_ = false;
  }
  const size_t close = held_.find(kClose);
  if (close != std::string::npos) {
    out.reasoning.append(TrimRight(std::string_view(held_).substr(0, close)));
    held_.erase(0, close + kClose.size());
    inside_ = false;
    skip_space_ = true;
    return true;
  }
  if (at_end) {
    out.reasoning.append(TrimRight(held_));
    held_.clear();
    return false;
  }
  // Hold a possible start of </think>, and the whitespace before it: if </think> follows, that
  // whitespace belongs to neither side.
  const std::string_view settled =
      TrimRight(std::string_view(held_).substr(0, held_.size() - PartialTagSuffix(held_, kClose)));
  out.reasoning.append(settled);
  held_.erase(0, settled.size());
  return false;
}

bool ReasoningSplitter::StepOutside(bool at_end, ReasoningPiece& out) {
  if (seen_block_) {
    // After the block everything is content, less the whitespace right after </think>.
    if (skip_space_) {
      held_.erase(0, std::min(held_.find_first_not_of(kSpace), held_.size()));
      if (held_.empty()) return false;
      skip_space_ = false;
    }
    out.content.append(held_);
    held_.clear();
    return false;
  }
  if (at_start_) {
    // A reply that opens with whitespace and then <think>: the whitespace is neither side.
    const size_t visible = held_.find_first_not_of(kSpace);
    if (visible == std::string::npos && !at_end) return false;
    if (visible != std::string::npos) {
      const std::string_view rest = std::string_view(held_).substr(visible);
      if (StartsWith(rest, kOpen)) {
        held_.erase(0, visible + kOpen.size());
        Open();
        return true;
      }
      if (rest.size() < kOpen.size() && StartsWith(kOpen, rest) && !at_end) return false;
    }
    at_start_ = false;
  }
  const size_t open = held_.find(kOpen);
  if (open != std::string::npos) {
    out.content.append(held_, 0, open);
    held_.erase(0, open + kOpen.size());
    Open();
    return true;
  }
  const size_t keep = at_end ? 0 : PartialTagSuffix(held_, kOpen);
  out.content.append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

}  // namespace mtplx::api
