// Per-sequence model state: the attention KV cache of each full-attention layer and the conv
// window + recurrent matrix of each Gated DeltaNet layer. All f32.
//
// Attention caches can be truncated (drop the last positions); DeltaNet states cannot, because
// they fold every past token into a fixed-size matrix. Speculative decoding therefore keeps
// snapshots (or per-row captures) for rollback; Truncate refuses an illegal request.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace mtplx::state {

struct StateLayout {
  // One entry per layer: true for full attention, false for Gated DeltaNet.
  std::vector<bool> is_attention;
  int64_t kv_width = 0;        // kv_heads * head_dim
  int64_t conv_channels = 0;   // conv_dim
  int64_t conv_history = 0;    // kernel - 1
  int64_t recurrent_size = 0;  // value_heads * key_dim * value_dim
};

struct AttentionCache {
  std::vector<float> keys;    // [length, kv_width], k after norm and RoPE
  std::vector<float> values;  // [length, kv_width]
};

struct DeltaNetState {
  std::vector<float> conv;       // [conv_history, conv_channels], oldest first
  std::vector<float> recurrent;  // [value_heads, key_dim, value_dim]
};

// A full copy of a state (the cost is explicit: O(context) for KV, fixed for DeltaNet).
struct SequenceSnapshot {
  int64_t position = 0;
  std::vector<AttentionCache> attention;
  std::vector<DeltaNetState> delta;
};

class SequenceState {
 public:
  explicit SequenceState(StateLayout layout);

  const StateLayout& layout() const { return layout_; }
  // Number of tokens the state has consumed (the position of the next token).
  int64_t position() const { return position_; }
  void Advance(int64_t tokens) { position_ += tokens; }

  // Layer-indexed access; the layer must be of the matching kind.
  AttentionCache& attention(int64_t layer) { return attention_[slot_[layer]]; }
  DeltaNetState& delta(int64_t layer) { return delta_[slot_[layer]]; }
  const AttentionCache& attention(int64_t layer) const { return attention_[slot_[layer]]; }
  const DeltaNetState& delta(int64_t layer) const { return delta_[slot_[layer]]; }

  // Grows every KV cache to hold `length` positions (new rows are zero).
  void ReserveKv(int64_t length);

  SequenceSnapshot Snapshot() const;
  void Restore(const SequenceSnapshot& snapshot);
  // Drops positions >= new_position. Legal only for attention-only states, or as a no-op.
  Status Truncate(int64_t new_position);
  void Reset();
  bool HasRecurrentLayers() const { return !delta_.empty(); }
  // Moves the position back after the DeltaNet states were rebuilt for it (see VerifyCapture);
  // attention rows past the position are ignored and overwritten later.
  void RewindAfterCommit(int64_t position) { position_ = position; }

  uint64_t Bytes() const;

 private:
  StateLayout layout_;
  int64_t position_ = 0;
  std::vector<int64_t> slot_;  // layer -> index into attention_ or delta_
  std::vector<AttentionCache> attention_;
  std::vector<DeltaNetState> delta_;
};

}  // namespace mtplx::state
