// SequenceState: layout, snapshots that restore bit-exactly, and the truncation rules that keep
// speculative decoding honest (attention caches may drop positions, DeltaNet states may not).
#include "state/sequence_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/float16.h"

namespace mtplx::state {
namespace {

// Qwen3.5-like: three DeltaNet layers, then one full-attention layer, twice.
StateLayout HybridLayout() {
  StateLayout layout;
  layout.is_attention = {false, false, false, true, false, false, false, true};
  layout.kv_width = 6;  // 2 kv heads x 3
  layout.kv_heads = 2;
  layout.conv_channels = 5;
  layout.conv_history = 3;     // kernel 4
  layout.recurrent_size = 12;  // 1 head x 3 x 4
  return layout;
}

StateLayout AttentionOnlyLayout() {
  StateLayout layout;
  layout.is_attention = {true, true, true};
  layout.kv_width = 4;
  return layout;
}

// An f32 cache's bytes as floats: a pointer to write through, a copy to compare.
float* F32(std::vector<uint8_t>& bytes) { return reinterpret_cast<float*>(bytes.data()); }
const float* F32(const std::vector<uint8_t>& bytes) {
  return reinterpret_cast<const float*>(bytes.data());
}
std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Fills every buffer with values distinct per layer and seed (including -0.0f and a NaN payload,
// which a value comparison would not tell apart).
void Fill(SequenceState& state, float seed) {
  const StateLayout& layout = state.layout();
  for (size_t l = 0; l < layout.is_attention.size(); ++l) {
    const float base = seed + 1000.0f * static_cast<float>(l);
    const int64_t layer = static_cast<int64_t>(l);
    if (layout.is_attention[l]) {
      AttentionCache& a = state.attention(layer);
      for (size_t i = 0; i < Floats(a.keys).size(); ++i) {
        F32(a.keys)[i] = base + static_cast<float>(i);
        F32(a.values)[i] = -(base + static_cast<float>(i)) * 0.5f;
      }
      if (!a.keys.empty()) F32(a.keys)[0] = -0.0f;
    } else {
      DeltaNetState& d = state.delta(layer);
      for (size_t i = 0; i < d.conv.size(); ++i) d.conv[i] = base + 0.25f * static_cast<float>(i);
      for (size_t i = 0; i < d.recurrent.size(); ++i)
        d.recurrent[i] = base - 0.125f * static_cast<float>(i);
      uint32_t nan_bits = 0x7fc00000u + static_cast<uint32_t>(seed);
      std::memcpy(&d.recurrent[0], &nan_bits, sizeof(float));
    }
  }
}

// Copies of every buffer, layer by layer (used rows only for KV).
struct Dump {
  int64_t position = 0;
  std::vector<std::vector<float>> keys, values, conv, recurrent;
};

Dump Take(const SequenceState& state) {
  Dump dump;
  dump.position = state.position();
  const StateLayout& layout = state.layout();
  const int64_t dim = layout.kv_width / layout.kv_heads;
  for (size_t l = 0; l < layout.is_attention.size(); ++l) {
    const int64_t layer = static_cast<int64_t>(l);
    if (layout.is_attention[l]) {
      // The used rows of each head's plane, head after head.
      const AttentionCache& a = state.attention(layer);
      const int64_t used = std::min(state.position(), a.capacity) * dim;
      std::vector<float> keys, values;
      for (int64_t h = 0; h < layout.kv_heads; ++h) {
        const auto plane = static_cast<std::ptrdiff_t>(h * a.capacity * dim);
        keys.insert(keys.end(), F32(a.keys) + plane, F32(a.keys) + plane + used);
        values.insert(values.end(), F32(a.values) + plane, F32(a.values) + plane + used);
      }
      dump.keys.push_back(std::move(keys));
      dump.values.push_back(std::move(values));
    } else {
      dump.conv.push_back(state.delta(layer).conv);
      dump.recurrent.push_back(state.delta(layer).recurrent);
    }
  }
  return dump;
}

void ExpectSameBits(const Dump& a, const Dump& b) {
  EXPECT_EQ(a.position, b.position);
  ASSERT_EQ(a.keys.size(), b.keys.size());
  for (size_t i = 0; i < a.keys.size(); ++i) {
    EXPECT_TRUE(SameBits(a.keys[i], b.keys[i])) << "keys of attention layer #" << i;
    EXPECT_TRUE(SameBits(a.values[i], b.values[i])) << "values of attention layer #" << i;
  }
  ASSERT_EQ(a.conv.size(), b.conv.size());
  for (size_t i = 0; i < a.conv.size(); ++i) {
    EXPECT_TRUE(SameBits(a.conv[i], b.conv[i])) << "conv of DeltaNet layer #" << i;
    EXPECT_TRUE(SameBits(a.recurrent[i], b.recurrent[i])) << "recurrent of DeltaNet layer #" << i;
  }
}

TEST(SequenceStateTest, LayoutConstruction) {
  SequenceState state(HybridLayout());
  EXPECT_EQ(state.position(), 0);
  EXPECT_TRUE(state.HasRecurrentLayers());
  EXPECT_EQ(state.layout().is_attention.size(), 8u);
  for (int64_t layer : {0, 1, 2, 4, 5, 6}) {
    const DeltaNetState& d = state.delta(layer);
    EXPECT_EQ(d.conv, std::vector<float>(15, 0.0f)) << layer;
    EXPECT_EQ(d.recurrent, std::vector<float>(12, 0.0f)) << layer;
  }
  for (int64_t layer : {3, 7}) {
    EXPECT_TRUE(state.attention(layer).keys.empty()) << layer;
    EXPECT_TRUE(state.attention(layer).values.empty()) << layer;
  }
  // Every layer owns its own buffers.
  EXPECT_NE(&state.attention(3), &state.attention(7));
  EXPECT_NE(&state.delta(0), &state.delta(6));
  state.delta(5).recurrent[2] = 7.0f;
  EXPECT_EQ(state.delta(4).recurrent[2], 0.0f);
  EXPECT_EQ(state.delta(6).recurrent[2], 0.0f);

  SequenceState attention_only(AttentionOnlyLayout());
  EXPECT_FALSE(attention_only.HasRecurrentLayers());

  SequenceState empty(StateLayout{});
  EXPECT_FALSE(empty.HasRecurrentLayers());
  EXPECT_EQ(empty.Bytes(), 0u);
  EXPECT_TRUE(empty.Truncate(0).ok());
}

TEST(SequenceStateTest, AdvanceAndReserveKv) {
  SequenceState state(HybridLayout());
  state.Advance(3);
  state.Advance(2);
  EXPECT_EQ(state.position(), 5);
  state.ReserveKv(5);
  for (int64_t layer : {3, 7}) {
    EXPECT_EQ(Floats(state.attention(layer).keys), std::vector<float>(30, 0.0f));
    EXPECT_EQ(Floats(state.attention(layer).values), std::vector<float>(30, 0.0f));
  }
  F32(state.attention(3).keys)[29] = 1.0f;  // head 1, position 4, element 2 of [2 heads, 5, 3]
  state.ReserveKv(2);                       // never shrinks
  EXPECT_EQ(Floats(state.attention(3).keys).size(), 30u);
  EXPECT_EQ(F32(state.attention(3).keys)[29], 1.0f);
  state.ReserveKv(8);  // grows, keeping old rows (re-laid out per head) and zeroing new ones
  ASSERT_EQ(Floats(state.attention(3).keys).size(), 48u);
  EXPECT_EQ(state.attention(3).capacity, 8);
  for (size_t i = 0; i < 48; ++i)
    EXPECT_EQ(F32(state.attention(3).keys)[i], i == (1 * 8 + 4) * 3 + 2 ? 1.0f : 0.0f) << i;
  // DeltaNet states keep their fixed size.
  EXPECT_EQ(state.delta(0).conv.size(), 15u);
}

// Rows appended a few at a time land in each head's plane, survive every growth of the planes,
// and come back from a snapshot restored into a fresh state.
TEST(SequenceStateTest, AppendedRowsKeepTheirPlaceAcrossGrowth) {
  const int64_t heads = 2, dim = 3;
  auto value = [](int64_t pos, int64_t h, int64_t i) {
    return static_cast<float>(pos * 100 + h * 10 + i);
  };
  SequenceState state(HybridLayout());
  AttentionCache& cache = state.attention(7);
  int64_t position = 0;
  for (int64_t rows : {1, 3, 1, 7, 2, 20, 1}) {
    std::vector<float> k, v;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < dim; ++i) {
          k.push_back(value(position + r, h, i));
          v.push_back(-value(position + r, h, i));
        }
    WriteAttentionRows(cache, position, rows, k.data(), v.data(), heads, dim);
    position += rows;
    state.Advance(rows);
    ASSERT_GE(cache.capacity, position);
    for (int64_t pos = 0; pos < position; ++pos)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < dim; ++i) {
          const int64_t at = (h * cache.capacity + pos) * dim + i;
          ASSERT_EQ(F32(cache.keys)[at], value(pos, h, i)) << pos << " " << h << " " << i;
          ASSERT_EQ(F32(cache.values)[at], -value(pos, h, i)) << pos << " " << h << " " << i;
        }
  }
  const SequenceSnapshot snapshot = state.Snapshot();
  EXPECT_EQ(snapshot.attention[1].capacity, position);
  SequenceState fresh(HybridLayout());
  fresh.Restore(snapshot);
  const AttentionCache& restored = fresh.attention(7);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < position * dim; ++i)
      ASSERT_EQ(F32(restored.keys)[h * restored.capacity * dim + i],
                F32(cache.keys)[h * cache.capacity * dim + i]);
}

TEST(SequenceStateTest, SnapshotRestoreIsBitExact) {
  SequenceState state(HybridLayout());
  state.ReserveKv(4);
  state.Advance(4);
  Fill(state, 1.0f);
  const Dump before = Take(state);
  const SequenceSnapshot snapshot = state.Snapshot();
  EXPECT_EQ(snapshot.position, 4);
  ASSERT_EQ(snapshot.attention.size(), 2u);
  ASSERT_EQ(snapshot.delta.size(), 6u);
  EXPECT_EQ(Floats(snapshot.attention[0].keys).size(), 24u);  // exactly the used rows

  // Speculate: more tokens, everything changes.
  state.ReserveKv(9);
  state.Advance(5);
  Fill(state, 77.0f);
  EXPECT_EQ(state.position(), 9);

  state.Restore(snapshot);
  ExpectSameBits(Take(state), before);
  // Restoring twice (after more changes) gives the same state again.
  state.Advance(1);
  Fill(state, 5.0f);
  state.Restore(snapshot);
  ExpectSameBits(Take(state), before);
}

TEST(SequenceStateTest, SnapshotRestoresIntoAFreshState) {
  SequenceState source(HybridLayout());
  source.ReserveKv(3);
  source.Advance(3);
  Fill(source, 11.0f);
  const SequenceSnapshot snapshot = source.Snapshot();

  SequenceState target(HybridLayout());  // no KV rows reserved yet
  target.Restore(snapshot);
  ExpectSameBits(Take(target), Take(source));
  EXPECT_GE(Floats(target.attention(3).keys).size(), 18u);
}

TEST(SequenceStateTest, SnapshotIsIndependentOfTheState) {
  SequenceState state(HybridLayout());
  state.ReserveKv(2);
  state.Advance(2);
  Fill(state, 3.0f);
  const SequenceSnapshot snapshot = state.Snapshot();
  const SequenceSnapshot copy = snapshot;
  Fill(state, 4.0f);  // mutating the state leaves the snapshot alone
  ASSERT_EQ(snapshot.delta.size(), copy.delta.size());
  for (size_t i = 0; i < copy.delta.size(); ++i)
    EXPECT_TRUE(SameBits(snapshot.delta[i].recurrent, copy.delta[i].recurrent));
  EXPECT_EQ(snapshot.attention[1].values, copy.attention[1].values);
}

TEST(SequenceStateTest, SnapshotOfAShortCacheTakesWhatThereIs) {
  // Position ahead of the reserved rows (a caller that advanced without writing KV).
  SequenceState state(AttentionOnlyLayout());
  state.ReserveKv(2);
  state.Advance(5);
  const SequenceSnapshot snapshot = state.Snapshot();
  EXPECT_EQ(Floats(snapshot.attention[0].keys).size(), 8u);
  SequenceState other(AttentionOnlyLayout());
  other.Restore(snapshot);
  EXPECT_EQ(other.position(), 5);
}

TEST(SequenceStateTest, TruncateAttentionOnly) {
  SequenceState state(AttentionOnlyLayout());
  state.ReserveKv(6);
  state.Advance(6);
  Fill(state, 2.0f);
  const std::vector<float> keys = Floats(state.attention(1).keys);
  ASSERT_TRUE(state.Truncate(6).ok());  // no-op
  EXPECT_EQ(state.position(), 6);
  ASSERT_TRUE(state.Truncate(4).ok());
  EXPECT_EQ(state.position(), 4);
  // The kept rows are untouched.
  const std::vector<float> kept = Floats(state.attention(1).keys);
  EXPECT_TRUE(std::equal(keys.begin(), keys.begin() + 16, kept.begin()));
  ASSERT_TRUE(state.Truncate(0).ok());
  EXPECT_EQ(state.position(), 0);
  // A snapshot after truncation holds only the kept rows.
  state.Advance(1);
  EXPECT_EQ(Floats(state.Snapshot().attention[2].keys).size(), 4u);
}

TEST(SequenceStateTest, TruncateOutOfRange) {
  for (const StateLayout& layout : {AttentionOnlyLayout(), HybridLayout()}) {
    SequenceState state(layout);
    state.ReserveKv(3);
    state.Advance(3);
    for (int64_t bad : {4, 100, -1}) {
      const Status status = state.Truncate(bad);
      EXPECT_EQ(status.code(), StatusCode::kOutOfRange) << bad;
      EXPECT_NE(status.message().find("position 3"), std::string::npos) << status.message();
      EXPECT_EQ(state.position(), 3);
    }
  }
}

TEST(SequenceStateTest, TruncateRefusedWithRecurrentLayers) {
  SequenceState state(HybridLayout());
  state.ReserveKv(5);
  state.Advance(5);
  Fill(state, 9.0f);
  const Dump before = Take(state);
  for (int64_t target : {4, 0}) {
    const Status status = state.Truncate(target);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << target;
    EXPECT_NE(status.message().find("snapshot"), std::string::npos) << status.message();
  }
  ExpectSameBits(Take(state), before);  // a refused truncation changes nothing
  // Truncating to the current position is a legal no-op.
  EXPECT_TRUE(state.Truncate(5).ok());
  ExpectSameBits(Take(state), before);
  // A fresh state can be "truncated" to 0.
  SequenceState fresh(HybridLayout());
  EXPECT_TRUE(fresh.Truncate(0).ok());
}

TEST(SequenceStateTest, Reset) {
  SequenceState state(HybridLayout());
  state.ReserveKv(4);
  state.Advance(4);
  Fill(state, 6.0f);
  state.Reset();
  EXPECT_EQ(state.position(), 0);
  for (int64_t layer : {3, 7}) {
    EXPECT_TRUE(state.attention(layer).keys.empty());
    EXPECT_TRUE(state.attention(layer).values.empty());
  }
  for (int64_t layer : {0, 1, 2, 4, 5, 6}) {
    EXPECT_EQ(state.delta(layer).conv, std::vector<float>(15, 0.0f));
    EXPECT_EQ(state.delta(layer).recurrent, std::vector<float>(12, 0.0f));
  }
  // Reset state behaves like a fresh one.
  SequenceState fresh(HybridLayout());
  ExpectSameBits(Take(state), Take(fresh));
  state.ReserveKv(1);
  EXPECT_EQ(Floats(state.attention(3).keys), std::vector<float>(6, 0.0f));
}

TEST(SequenceStateTest, Bytes) {
  SequenceState state(HybridLayout());
  const uint64_t delta_bytes = 6 * (15 + 12) * sizeof(float);
  EXPECT_EQ(state.Bytes(), delta_bytes);
  state.ReserveKv(10);
  uint64_t kv_bytes = 0;
  for (int64_t layer : {3, 7})
    kv_bytes += state.attention(layer).keys.capacity() + state.attention(layer).values.capacity();
  EXPECT_GE(kv_bytes, 2u * 2u * 60u * sizeof(float));
  EXPECT_EQ(state.Bytes(), delta_bytes + kv_bytes);

  SequenceState attention_only(AttentionOnlyLayout());
  EXPECT_EQ(attention_only.Bytes(), 0u);
  attention_only.ReserveKv(3);
  EXPECT_GE(attention_only.Bytes(), 3u * 2u * 12u * sizeof(float));
}

// A bf16 layout: rows are stored rounded to nearest even (two bytes an element), widen back
// exactly, survive snapshots, and a snapshot of the other type is refused.
TEST(SequenceStateTest, Bf16CachesStoreRoundedRows) {
  StateLayout layout = HybridLayout();
  layout.kv_type = kernels::KvType::kBf16;
  EXPECT_EQ(layout.kv_bytes_per_position(), 2 * 6 * 2);
  SequenceState state(layout);
  const int64_t heads = 2, dim = 3, rows = 5;
  std::vector<float> k, v;
  for (int64_t i = 0; i < rows * heads * dim; ++i) {
    k.push_back(1.0f + static_cast<float>(i) / 3.0f);
    v.push_back(-0.1f * static_cast<float>(i));
  }
  AttentionCache& cache = state.attention(3);
  WriteAttentionRows(cache, 0, rows, k.data(), v.data(), heads, dim);
  state.Advance(rows);
  EXPECT_EQ(cache.type, kernels::KvType::kBf16);
  EXPECT_EQ(cache.keys.size(), static_cast<size_t>(heads * cache.capacity * dim * 2));
  std::vector<float> row(dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t at = static_cast<size_t>((h * cache.capacity + r) * dim * 2);
      kernels::LoadKvRow(cache.keys.data() + at, dim, cache.type, row.data());
      for (int64_t i = 0; i < dim; ++i)
        ASSERT_EQ(row[i], RoundToBf16(k[(r * heads + h) * dim + i])) << r << " " << h << " " << i;
      kernels::LoadKvRow(cache.values.data() + at, dim, cache.type, row.data());
      for (int64_t i = 0; i < dim; ++i)
        ASSERT_EQ(row[i], RoundToBf16(v[(r * heads + h) * dim + i])) << r << " " << h << " " << i;
    }
  const SequenceSnapshot snapshot = state.Snapshot();
  EXPECT_EQ(snapshot.attention[0].type, kernels::KvType::kBf16);
  SequenceState copy(layout);
  ASSERT_TRUE(copy.RestorePrefix(snapshot, rows, nullptr).ok());
  EXPECT_EQ(copy.Snapshot().attention[0].keys, snapshot.attention[0].keys);
  SequenceState f32(HybridLayout());
  const Status refused = f32.RestorePrefix(snapshot, rows, nullptr);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("bf16"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace mtplx::state
