#include "state/sequence_state.h"

#include <algorithm>
#include <cstring>

#include "base/strings.h"

namespace mtplx::state {
namespace {

// Copies `positions` rows (row_bytes each) of each head plane from one capacity to another.
void CopyPlanes(const uint8_t* from, int64_t from_capacity, uint8_t* to, int64_t to_capacity,
                int64_t positions, int64_t kv_heads, int64_t row_bytes) {
  if (positions <= 0) return;
  for (int64_t h = 0; h < kv_heads; ++h)
    std::memcpy(to + h * to_capacity * row_bytes, from + h * from_capacity * row_bytes,
                static_cast<size_t>(positions * row_bytes));
}

int64_t RowBytes(const AttentionCache& cache, int64_t head_dim) {
  return head_dim * kernels::KvElementBytes(cache.type);
}

void Relayout(std::vector<uint8_t>& planes, int64_t old_capacity, int64_t capacity,
              int64_t kv_heads, int64_t row_bytes) {
  std::vector<uint8_t> grown(static_cast<size_t>(kv_heads * capacity * row_bytes), 0);
  CopyPlanes(planes.data(), old_capacity, grown.data(), capacity, old_capacity, kv_heads,
             row_bytes);
  planes.swap(grown);
}

void Resize(AttentionCache& cache, int64_t capacity, int64_t kv_heads, int64_t head_dim) {
  Relayout(cache.keys, cache.capacity, capacity, kv_heads, RowBytes(cache, head_dim));
  Relayout(cache.values, cache.capacity, capacity, kv_heads, RowBytes(cache, head_dim));
  cache.capacity = capacity;
}

// The first `rows` positions of a cache, in a cache of exactly that capacity.
AttentionCache CopyPrefix(const AttentionCache& a, int64_t rows, int64_t kv_heads,
                          int64_t head_dim) {
  AttentionCache copy;
  copy.type = a.type;
  copy.capacity = rows;
  const int64_t row_bytes = RowBytes(a, head_dim);
  copy.keys.resize(static_cast<size_t>(kv_heads * rows * row_bytes));
  copy.values.resize(copy.keys.size());
  CopyPlanes(a.keys.data(), a.capacity, copy.keys.data(), rows, rows, kv_heads, row_bytes);
  CopyPlanes(a.values.data(), a.capacity, copy.values.data(), rows, rows, kv_heads, row_bytes);
  return copy;
}

// Copies the first `rows` positions of `source` into `cache` (grown to hold them if need be).
void CopyRowsInto(const AttentionCache& source, int64_t rows, AttentionCache& cache,
                  int64_t kv_heads, int64_t head_dim) {
  if (cache.capacity < rows) Resize(cache, rows, kv_heads, head_dim);
  const int64_t row_bytes = RowBytes(cache, head_dim);
  CopyPlanes(source.keys.data(), source.capacity, cache.keys.data(), cache.capacity, rows, kv_heads,
             row_bytes);
  CopyPlanes(source.values.data(), source.capacity, cache.values.data(), cache.capacity, rows,
             kv_heads, row_bytes);
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
  const int64_t row_bytes = RowBytes(cache, head_dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < kv_heads; ++h) {
      const int64_t to = (h * cache.capacity + first_position + r) * row_bytes;
      const int64_t from = (r * kv_heads + h) * head_dim;
      kernels::StoreKvRow(k + from, head_dim, cache.type, cache.keys.data() + to);
      kernels::StoreKvRow(v + from, head_dim, cache.type, cache.values.data() + to);
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
    a.type = layout_.kv_type;
    a.keys.clear();
    a.values.clear();
    a.capacity = 0;
  }
  for (auto& d : delta_) {
    d.conv.assign(layout_.conv_history * layout_.conv_channels, 0.0f);
    d.recurrent.assign(layout_.recurrent_size, 0.0f);
  }
}

void SequenceState::ReserveKv(int64_t length) {
  for (auto& a : attention_)
    if (a.capacity < length) Resize(a, length, layout_.kv_heads, layout_.head_dim());
}

SequenceSnapshot SequenceState::Snapshot() const {
  SequenceSnapshot snapshot;
  snapshot.position = position_;
  // Exactly the used rows: a snapshot's capacity is its position.
  for (const auto& a : attention_)
    snapshot.attention.push_back(
        CopyPrefix(a, std::min(position_, a.capacity), layout_.kv_heads, layout_.head_dim()));
  snapshot.delta = delta_;
  return snapshot;
}

SequenceSnapshot SequenceState::SnapshotAttentionPrefix(int64_t positions) const {
  SequenceSnapshot snapshot;
  snapshot.position = std::clamp<int64_t>(positions, 0, position_);
  for (const auto& a : attention_)
    snapshot.attention.push_back(CopyPrefix(a, std::min(snapshot.position, a.capacity),
                                            layout_.kv_heads, layout_.head_dim()));
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
  for (const auto& s : source.attention)
    if (s.type != layout_.kv_type)
      return InvalidArgument(StrCat("the snapshot's KV cache is ", kernels::KvTypeName(s.type),
                                    ", this state's ", kernels::KvTypeName(layout_.kv_type)));
  position_ = positions;
  for (size_t i = 0; i < attention_.size(); ++i)
    CopyRowsInto(source.attention[i], std::min(positions, source.attention[i].capacity),
                 attention_[i], layout_.kv_heads, layout_.head_dim());
  if (delta)
    delta_ = *delta;
  else if (!delta_.empty())
    delta_ = source.delta;
  return Status::Ok();
}

void SequenceState::Restore(const SequenceSnapshot& snapshot) {
  position_ = snapshot.position;
  for (size_t i = 0; i < attention_.size(); ++i)
    CopyRowsInto(snapshot.attention[i], snapshot.attention[i].capacity, attention_[i],
                 layout_.kv_heads, layout_.head_dim());
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
  for (const auto& a : attention_) total += a.keys.capacity() + a.values.capacity();
  for (const auto& d : delta_) total += (d.conv.size() + d.recurrent.size()) * 4;
  return total;
}

}  // namespace mtplx::state
