#include "state/sequence_state.h"

#include <algorithm>

#include "base/strings.h"

namespace mtplx::state {

SequenceState::SequenceState(StateLayout layout) : layout_(std::move(layout)) {
  for (bool is_attention : layout_.is_attention) {
    if (is_attention) {
      slot_.push_back(static_cast<int64_t>(attention_.size()));
      attention_.emplace_back();
    } else {
      slot_.push_back(static_cast<int64_t>(delta_.size()));
      delta_.emplace_back();
    }
  }
  Reset();
}

void SequenceState::Reset() {
  position_ = 0;
  for (auto& a : attention_) {
    a.keys.clear();
    a.values.clear();
  }
  for (auto& d : delta_) {
    d.conv.assign(layout_.conv_history * layout_.conv_channels, 0.0f);
    d.recurrent.assign(layout_.recurrent_size, 0.0f);
  }
}

void SequenceState::ReserveKv(int64_t length) {
  const size_t size = static_cast<size_t>(length * layout_.kv_width);
  for (auto& a : attention_) {
    if (a.keys.size() < size) {
      a.keys.resize(size);
      a.values.resize(size);
    }
  }
}

SequenceSnapshot SequenceState::Snapshot() const {
  SequenceSnapshot snapshot;
  snapshot.position = position_;
  const size_t used = static_cast<size_t>(position_ * layout_.kv_width);
  for (const auto& a : attention_) {
    AttentionCache copy;
    copy.keys.assign(a.keys.begin(), a.keys.begin() + std::min(used, a.keys.size()));
    copy.values.assign(a.values.begin(), a.values.begin() + std::min(used, a.values.size()));
    snapshot.attention.push_back(std::move(copy));
  }
  snapshot.delta = delta_;
  return snapshot;
}

void SequenceState::Restore(const SequenceSnapshot& snapshot) {
  position_ = snapshot.position;
  for (size_t i = 0; i < attention_.size(); ++i) {
    auto& a = attention_[i];
    const auto& s = snapshot.attention[i];
    if (a.keys.size() < s.keys.size()) {
      a.keys.resize(s.keys.size());
      a.values.resize(s.values.size());
    }
    std::copy(s.keys.begin(), s.keys.end(), a.keys.begin());
    std::copy(s.values.begin(), s.values.end(), a.values.begin());
  }
  delta_ = snapshot.delta;
}

Status SequenceState::Truncate(int64_t new_position) {
  if (new_position < 0 || new_position > position_)
    return OutOfRange(
        StrCat("cannot truncate a state at position ", position_, " to ", new_position));
  if (new_position == position_) return Status::Ok();
  if (HasRecurrentLayers())
    return FailedPrecondition(
        "cannot truncate a state with Gated DeltaNet layers: their recurrent state folds every "
        "past token; restore a snapshot instead");
  position_ = new_position;  // KV rows past the position are ignored and overwritten later
  return Status::Ok();
}

uint64_t SequenceState::Bytes() const {
  uint64_t total = 0;
  for (const auto& a : attention_) total += (a.keys.capacity() + a.values.capacity()) * 4;
  for (const auto& d : delta_) total += (d.conv.size() + d.recurrent.size()) * 4;
  return total;
}

}  // namespace mtplx::state
