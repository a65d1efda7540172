#include "engine/session_bank.h"

#include <algorithm>

namespace mtplx::engine {
namespace {

int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<int64_t>(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

}  // namespace

BankLookup SessionBank::Lookup(std::span<const int32_t> prompt, bool need_mtp,
                               bool pre_norm_hidden) {
  int64_t best = 0;
  BankLookup found = LookupMemory(prompt, need_mtp, pre_norm_hidden, &best);
  if (!store_) return found;
  const auto hit = store_->Best(prompt, need_mtp, pre_norm_hidden, best);
  if (!hit) return found;
  auto loaded = store_->Load(hit->info);
  if (!loaded.ok()) return found;  // a bad file: removed, and this prompt is served as it was
  Promote(std::move(loaded).value());
  return LookupMemory(prompt, need_mtp, pre_norm_hidden, &best);
}

void SessionBank::Promote(PrefixCapture capture) {
  Entry entry;
  entry.bytes = capture.Bytes();
  if (entry.bytes > budget_) return;
  EvictToFit(entry.bytes);
  entry.capture = std::move(capture);
  bytes_ += entry.bytes;
  entries_.push_front(std::move(entry));
}

BankLookup SessionBank::LookupMemory(std::span<const int32_t> prompt, bool need_mtp,
                                     bool pre_norm_hidden, int64_t* best_found) {
  BankLookup result;
  const int64_t limit = static_cast<int64_t>(prompt.size()) - 1;
  auto best = entries_.end();
  size_t best_checkpoint = 0;
  int64_t best_position = 0;
  bool mtp_mismatch = false;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const PrefixCapture& c = it->capture;
    const int64_t common = CommonPrefix(c.tokens, prompt);
    if (common == 0) continue;
    result.matched = std::max(result.matched, common);
    if (need_mtp && (!c.mtp || c.pre_norm_hidden != pre_norm_hidden)) {
      mtp_mismatch = true;
      continue;
    }
    // The last checkpoint inside the shared prefix.
    for (size_t i = c.checkpoints.size(); i-- > 0;) {
      const int64_t position = c.checkpoints[i].position;
      if (position > std::min(common, limit)) continue;
      if (position > best_position) {
        best = it;
        best_checkpoint = i;
        best_position = position;
      }
      break;
    }
  }
  *best_found = best_position;
  if (best == entries_.end()) {
    result.miss_reason = entries_.empty()      ? "empty_cache"
                         : result.matched == 0 ? "new_prompt"
                         : mtp_mismatch        ? "mtp_configuration"
                                               : "no_checkpoint_before_divergence";
    return result;
  }
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  result.prefix = best->capture.PrefixAt(best_checkpoint);
  if (best_position < std::min(result.matched, limit))
    result.miss_reason = "partial: the prompt leaves the cache at token " +
                         std::to_string(result.matched) + ", the last checkpoint before it is " +
                         std::to_string(best_position);
  return result;
}

void SessionBank::Insert(PrefixCapture capture, int64_t restored) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const PrefixCapture& old = it->capture;
    const bool extended =
        CommonPrefix(old.tokens, capture.tokens) == static_cast<int64_t>(old.tokens.size());
    if (!extended) {
      ++it;
      continue;
    }
    // The new capture's attention rows hold the old prompt's; its checkpoints up to the restore
    // point are the old ones (the new run started there).
    std::vector<PrefixCheckpoint> carried;
    for (const auto& c : old.checkpoints)
      if (c.position <= restored && c.position < capture.checkpoints.front().position)
        carried.push_back(c);
    const bool compatible = (old.mtp != nullptr) == (capture.mtp != nullptr) &&
                            old.pre_norm_hidden == capture.pre_norm_hidden;
    if (compatible)
      capture.checkpoints.insert(capture.checkpoints.begin(), carried.begin(), carried.end());
    bytes_ -= it->bytes;
    it = entries_.erase(it);
  }
  if (store_) store_->Save(capture);
  Promote(std::move(capture));
}

void SessionBank::EvictToFit(uint64_t incoming) {
  while (!entries_.empty() && bytes_ + incoming > budget_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

void SessionBank::ShrinkTo(uint64_t bytes) {
  while (!entries_.empty() && bytes_ > bytes) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

void SessionBank::Clear() {
  entries_.clear();
  bytes_ = 0;
}

}  // namespace mtplx::engine
