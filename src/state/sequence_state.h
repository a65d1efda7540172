// Per-sequence model state: the attention KV cache of each full-attention layer and the conv
// window + recurrent matrix of each Gated DeltaNet layer. KV caches hold f32 or bf16 rows (the
// layout's kv_type); everything else is f32.
//
// A KV cache is head-major: each key/value head owns a plane of `capacity` positions, so the
// attention kernel streams one head's keys as one contiguous run. Position-major rows would put
// a whole page (4 KiB at 4 heads x 256 dims) between two keys of the same head, which defeats
// the hardware prefetchers and the TLB at long context.
//
// Attention caches can be truncated (drop the last positions); DeltaNet states cannot, because
// they fold every past token into a fixed-size matrix. Speculative decoding therefore keeps
// snapshots (or per-row captures) for rollback; Truncate refuses an illegal request.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/attention.h"

namespace mtplx::state {

struct StateLayout {
  // One entry per layer: true for full attention, false for Gated DeltaNet.
  std::vector<bool> is_attention;
  int64_t kv_width = 0;        // kv_heads * head_dim
  int64_t kv_heads = 1;        // planes per KV cache
  int64_t conv_channels = 0;   // conv_dim
  int64_t conv_history = 0;    // kernel - 1
  int64_t recurrent_size = 0;  // value_heads * key_dim * value_dim
  kernels::KvType kv_type = kernels::KvType::kF32;

  int64_t head_dim() const { return kv_heads > 0 ? kv_width / kv_heads : 0; }
  // Bytes one cached position takes in one attention layer (its key and its value).
  int64_t kv_bytes_per_position() const { return 2 * kv_width * kernels::KvElementBytes(kv_type); }
};

struct AttentionCache {
  kernels::KvType type = kernels::KvType::kF32;
  // [kv_heads, capacity, head_dim] elements of `type`: k after norm and RoPE, and v.
  std::vector<uint8_t> keys;
  std::vector<uint8_t> values;
  int64_t capacity = 0;  // positions each head's plane holds

  kernels::KvPlanes planes() const { return {keys.data(), values.data(), capacity, type}; }
};

// Grows a cache to hold at least `positions` per head, keeping every row it held (new rows are
// zero); never shrinks. Growth re-lays the planes out, so it is done in steps of at least half
// the capacity: appending costs amortised O(1) per position.
void GrowAttentionCache(AttentionCache& cache, int64_t positions, int64_t kv_heads,
                        int64_t head_dim);
// Writes `rows` positions from first_position on: k and v are [rows, kv_heads, head_dim] floats,
// stored as the cache's type.
void WriteAttentionRows(AttentionCache& cache, int64_t first_position, int64_t rows, const float* k,
                        const float* v, int64_t kv_heads, int64_t head_dim);

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

  // Grows every KV cache to hold at least `length` positions (new rows are zero).
  void ReserveKv(int64_t length);

  SequenceSnapshot Snapshot() const;
  // The attention rows [0, positions) only (positions <= position()), without DeltaNet states:
  // what a prefix cache keeps of a longer sequence, whose recurrent states at earlier positions
  // were captured separately (restore it with RestorePrefix and those states).
  SequenceSnapshot SnapshotAttentionPrefix(int64_t positions) const;
  // The snapshot must come from a state of this layout.
  void Restore(const SequenceSnapshot& snapshot);
  // Restores the first `positions` attention rows of `source` (positions <= source.position)
  // and the DeltaNet states `delta` (one per DeltaNet layer; nullptr: source's own, legal only
  // when positions == source.position or the state has no DeltaNet layers). The snapshot's KV
  // caches must be of this state's kv_type.
  Status RestorePrefix(const SequenceSnapshot& source, int64_t positions,
                       const std::vector<DeltaNetState>* delta);
  // The DeltaNet states alone (fixed size): a checkpoint at the current position.
  const std::vector<DeltaNetState>& delta_states() const { return delta_; }
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
