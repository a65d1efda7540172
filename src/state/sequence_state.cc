#include "state/sequence_state.h"

#include <algorithm>
#include <cstring>

#include "base/strings.h"

namespace mtplx::state {
namespace {

// Copies `positions` rows of each head plane from one capacity to another.
void CopyPlanes(const float* from, int64_t from_capacity, float* to, int64_t to_capacity,
                int64_t positions, int64_t kv_heads, int64_t head_dim) {
  if (positions <= 0) return;
  for (int64_t h = 0; h < kv_heads; ++h)
    std::memcpy(to + h * to_capacity * head_dim, from + h * from_capacity * head_dim,
                static_cast<size_t>(positions * head_dim) * sizeof(float));
}

void Relayout(std::vector<float>& planes, int64_t old_capacity, int64_t capacity, int64_t kv_heads,
              int64_t head_dim) {
  std::vector<float> grown(static_cast<size_t>(kv_heads * capacity * head_dim), 0.0f);
  CopyPlanes(planes.data(), old_capacity, grown.data(), capacity, old_capacity, kv_heads, head_dim);
  planes.swap(grown);
}

void Resize(AttentionCache& cache, int64_t capacity, int64_t kv_heads, int64_t head_dim) {
  Relayout(cache.keys, cache.capacity, capacity, kv_heads, head_dim);
  Relayout(cache.values, cache.capacity, capacity, kv_heads, head_dim);
  cache.capacity = capacity;
}

}  // namespace

void GrowAttentionCache(AttentionCache& cache, int64_t positions, int64_t kv_heads,
                        int64_t head_dim) {
  if (positions <= cache.capacity) return;
  Resize(cache, std::max(positions, cache.capacity + cache.capacity / 2), kv_heads, head_dim);
}

void WriteAttentionRows(AttentionCache& cache, int64_t first_position, int64_t rows, const float* k,
                        const float* v, int64_t kv_heads, int64_t head_dim) {
  GrowAttentionCache(cache, first_position + rows, kv_heads, head_dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < kv_heads; ++h) {
      const int64_t to = (h * cache.capacity + first_position + r) * head_dim;
      const int64_t from = (r * kv_heads + h) * head_dim;
      std::memcpy(cache.keys.data() + to, k + from, static_cast<size_t>(head_dim) * sizeof(float));
      std::memcpy(cache.values.data() + to, v + from,
                  static_cast<size_t>(head_dim) * sizeof(float));
    }
}

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
    a.capacity = 0;
  }
  for (auto& d : delta_) {
    d.conv.assign(layout_.conv_history * layout_.conv_channels, 0.0f);
    d.recurrent.assign(layout_.recurrent_size, 0.0f);
  }
}

int64_t SequenceState::HeadDim() const {
  return layout_.kv_heads > 0 ? layout_.kv_width / layout_.kv_heads : 0;
}

void SequenceState::ReserveKv(int64_t length) {
  for (auto& a : attention_)
    if (a.capacity < length) Resize(a, length, layout_.kv_heads, HeadDim());
}

SequenceSnapshot SequenceState::Snapshot() const {
  SequenceSnapshot snapshot;
  snapshot.position = position_;
  const int64_t kv_heads = layout_.kv_heads, head_dim = HeadDim();
  for (const auto& a : attention_) {
    // Exactly the used rows: a snapshot's capacity is its position.
    const int64_t used = std::min(position_, a.capacity);
    AttentionCache copy;
    copy.capacity = used;
    copy.keys.resize(static_cast<size_t>(kv_heads * used * head_dim));
    copy.values.resize(copy.keys.size());
    CopyPlanes(a.keys.data(), a.capacity, copy.keys.data(), used, used, kv_heads, head_dim);
    CopyPlanes(a.values.data(), a.capacity, copy.values.data(), used, used, kv_heads, head_dim);
    snapshot.attention.push_back(std::move(copy));
  }
  snapshot.delta = delta_;
  return snapshot;
}

SequenceSnapshot SequenceState::SnapshotAttentionPrefix(int64_t positions) const {
  SequenceSnapshot snapshot;
  snapshot.position = std::clamp<int64_t>(positions, 0, position_);
  const int64_t kv_heads = layout_.kv_heads, head_dim = HeadDim();
  for (const auto& a : attention_) {
    const int64_t used = std::min(snapshot.position, a.capacity);
    AttentionCache copy;
    copy.capacity = used;
    copy.keys.resize(static_cast<size_t>(kv_heads * used * head_dim));
    copy.values.resize(copy.keys.size());
    CopyPlanes(a.keys.data(), a.capacity, copy.keys.data(), used, used, kv_heads, head_dim);
    CopyPlanes(a.values.data(), a.capacity, copy.values.data(), used, used, kv_heads, head_dim);
    snapshot.attention.push_back(std::move(copy));
  }
  return snapshot;  // no DeltaNet states: they belong to the current position only
}

Status SequenceState::RestorePrefix(const SequenceSnapshot& source, int64_t positions,
                                    const std::vector<DeltaNetState>* delta) {
  if (positions < 0 || positions > source.position)
    return OutOfRange(
        StrCat("cannot restore ", positions, " positions from a snapshot of ", source.position));
  if (source.attention.size() != attention_.size())
    return InvalidArgument("the snapshot belongs to a state of another layout");
  if (!delta && !delta_.empty() &&
      (positions != source.position || source.delta.size() != delta_.size()))
    return FailedPrecondition(StrCat("restoring ", positions, " of ", source.position,
                                     " positions needs the DeltaNet states at ", positions));
  if (delta && delta->size() != delta_.size())
    return InvalidArgument("the DeltaNet checkpoint belongs to a state of another layout");
  position_ = positions;
  const int64_t kv_heads = layout_.kv_heads, head_dim = HeadDim();
  for (size_t i = 0; i < attention_.size(); ++i) {
    auto& a = attention_[i];
    const auto& s = source.attention[i];
    const int64_t rows = std::min(positions, s.capacity);
    if (a.capacity < rows) Resize(a, rows, kv_heads, head_dim);
    CopyPlanes(s.keys.data(), s.capacity, a.keys.data(), a.capacity, rows, kv_heads, head_dim);
    CopyPlanes(s.values.data(), s.capacity, a.values.data(), a.capacity, rows, kv_heads, head_dim);
  }
  if (delta)
    delta_ = *delta;
  else if (!delta_.empty())
    delta_ = source.delta;
  return Status::Ok();
}

void SequenceState::Restore(const SequenceSnapshot& snapshot) {
  position_ = snapshot.position;
  const int64_t kv_heads = layout_.kv_heads, head_dim = HeadDim();
  for (size_t i = 0; i < attention_.size(); ++i) {
    auto& a = attention_[i];
    const auto& s = snapshot.attention[i];
    if (a.capacity < s.capacity) Resize(a, s.capacity, kv_heads, head_dim);
    CopyPlanes(s.keys.data(), s.capacity, a.keys.data(), a.capacity, s.capacity, kv_heads,
               head_dim);
    CopyPlanes(s.values.data(), s.capacity, a.values.data(), a.capacity, s.capacity, kv_heads,
               head_dim);
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
