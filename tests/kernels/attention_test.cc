// The fast attention kernel against its scalar twin on odd lengths, head sizes and GQA groups,
// and the batch-invariance guarantee: a query row's output never depends on how many rows run.
// The caches are head-major planes with room to spare, as the model's caches have.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/float16.h"
#include "base/rng.h"
#include "base/thread_pool.h"

namespace mtplx::kernels {
namespace {

std::vector<float> RandomValues(int64_t n, uint64_t seed, float scale) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.Uniform(-1.0, 1.0)) * scale;
  return v;
}

TEST(AttentionTest, FastPathMatchesReference) {
  ThreadPool pool(2);
  for (const AttentionDims dims : {AttentionDims{4, 2, 64}, AttentionDims{8, 1, 128},
                                   AttentionDims{2, 2, 256}, AttentionDims{3, 1, 24}})
    for (int64_t first : {0, 1, 14, 15, 16, 47, 62, 126, 300})
      for (int64_t rows : {1, 2, 5}) {
        // Spare capacity: a head's plane is longer than the positions in use.
        const int64_t capacity = first + rows + first % 5, width = dims.kv_heads * dims.head_dim;
        const auto q = RandomValues(rows * dims.heads * dims.head_dim, first + rows, 2.0f);
        const auto k = RandomValues(capacity * width, 7 + first, 2.0f);
        const auto v = RandomValues(capacity * width, 9 + first, 1.0f);
        const KvPlanes kv{k.data(), v.data(), capacity};
        const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
        std::vector<float> got(q.size()), want(q.size());
        CausalAttention(dims, q.data(), rows, first, kv, scale, got.data(), &pool);
        CausalAttentionReference(dims, q.data(), rows, first, kv, scale, want.data(), nullptr);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-6f) << "d=" << dims.head_dim << " first=" << first
                                              << " rows=" << rows << " element " << i;
      }
}

TEST(AttentionTest, RowResultsDoNotDependOnBatchSize) {
  ThreadPool pool(2);
  const AttentionDims dims{4, 2, 64};
  // Rows 121..136 straddle a value tile (64 positions): a row's sum continues across tiles.
  const int64_t first = 120, max_rows = 16, width = dims.kv_heads * dims.head_dim;
  const auto q = RandomValues(max_rows * dims.heads * dims.head_dim, 3, 2.0f);
  const auto k = RandomValues((first + max_rows) * width, 4, 2.0f);
  const auto v = RandomValues((first + max_rows) * width, 5, 1.0f);
  const KvPlanes kv{k.data(), v.data(), first + max_rows};
  const int64_t row_size = dims.heads * dims.head_dim;
  for (int64_t rows = 1; rows <= max_rows; ++rows) {
    std::vector<float> batch(rows * row_size);
    CausalAttention(dims, q.data(), rows, first, kv, 0.125f, batch.data(), &pool);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> single(row_size);
      CausalAttention(dims, q.data() + r * row_size, 1, first + r, kv, 0.125f, single.data(),
                      nullptr);
      for (int64_t i = 0; i < row_size; ++i)
        ASSERT_EQ(batch[r * row_size + i], single[i]) << "rows=" << rows << " row " << r;
    }
  }
}

// A cache stored as bf16: its elements, and the same values widened back to f32.
struct Bf16Cache {
  std::vector<uint16_t> bits;
  std::vector<float> widened;
};

Bf16Cache ToBf16(const std::vector<float>& values) {
  Bf16Cache c{std::vector<uint16_t>(values.size()), std::vector<float>(values.size())};
  StoreKvRow(values.data(), static_cast<int64_t>(values.size()), KvType::kBf16, c.bits.data());
  LoadKvRow(c.bits.data(), static_cast<int64_t>(values.size()), KvType::kBf16, c.widened.data());
  return c;
}

TEST(AttentionTest, KvRowsRoundToNearestEvenAndWidenExactly) {
  const std::vector<float> values = {1.0f,        -0.0f,    3.14159f, 1.00390625f,
                                     1.01171875f, 65504.0f, 1e-30f,   -2.5e7f};
  const Bf16Cache c = ToBf16(values);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(c.bits[i], F32ToBf16(values[i])) << i;
    EXPECT_EQ(c.widened[i], RoundToBf16(values[i])) << i;
  }
  std::vector<float> copy(values.size());
  std::vector<float> stored(values.size());
  StoreKvRow(values.data(), static_cast<int64_t>(values.size()), KvType::kF32, stored.data());
  LoadKvRow(stored.data(), static_cast<int64_t>(values.size()), KvType::kF32, copy.data());
  EXPECT_EQ(copy, values);
  KvType type = KvType::kF32;
  EXPECT_TRUE(ParseKvType("bf16", &type));
  EXPECT_EQ(type, KvType::kBf16);
  EXPECT_STREQ(KvTypeName(type), "bf16");
  EXPECT_FALSE(ParseKvType("f16", &type));
}

// On a bf16 cache both kernels compute exactly what they compute on an f32 cache holding the
// widened values (the fast path, the packed path at head_dim 24, and the reference), and the
// fast path stays within the f32 tolerance of the reference.
TEST(AttentionTest, Bf16CachesAttendAsTheirWidenedValues) {
  ThreadPool pool(2);
  for (const AttentionDims dims : {AttentionDims{4, 2, 64}, AttentionDims{8, 1, 128},
                                   AttentionDims{2, 2, 256}, AttentionDims{3, 1, 24}})
    for (int64_t first : {0, 15, 47, 300})
      for (int64_t rows : {1, 4}) {
        const int64_t capacity = first + rows + 3, width = dims.kv_heads * dims.head_dim;
        const auto q = RandomValues(rows * dims.heads * dims.head_dim, first + rows, 2.0f);
        const Bf16Cache k = ToBf16(RandomValues(capacity * width, 7 + first, 2.0f));
        const Bf16Cache v = ToBf16(RandomValues(capacity * width, 9 + first, 1.0f));
        const KvPlanes half{k.bits.data(), v.bits.data(), capacity, KvType::kBf16};
        const KvPlanes full{k.widened.data(), v.widened.data(), capacity, KvType::kF32};
        const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
        std::vector<float> got(q.size()), same(q.size()), want(q.size()), want_full(q.size());
        CausalAttention(dims, q.data(), rows, first, half, scale, got.data(), &pool);
        CausalAttention(dims, q.data(), rows, first, full, scale, same.data(), &pool);
        CausalAttentionReference(dims, q.data(), rows, first, half, scale, want.data(), nullptr);
        CausalAttentionReference(dims, q.data(), rows, first, full, scale, want_full.data(),
                                 nullptr);
        ASSERT_EQ(got, same) << "d=" << dims.head_dim << " first=" << first << " rows=" << rows;
        ASSERT_EQ(want, want_full) << "d=" << dims.head_dim << " first=" << first;
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-6f) << "d=" << dims.head_dim << " first=" << first
                                              << " rows=" << rows << " element " << i;
      }
}

TEST(AttentionTest, Bf16RowResultsDoNotDependOnBatchSize) {
  ThreadPool pool(2);
  const AttentionDims dims{4, 2, 64};
  const int64_t first = 120, max_rows = 9, width = dims.kv_heads * dims.head_dim;
  const auto q = RandomValues(max_rows * dims.heads * dims.head_dim, 3, 2.0f);
  const Bf16Cache k = ToBf16(RandomValues((first + max_rows) * width, 4, 2.0f));
  const Bf16Cache v = ToBf16(RandomValues((first + max_rows) * width, 5, 1.0f));
  const KvPlanes kv{k.bits.data(), v.bits.data(), first + max_rows, KvType::kBf16};
  const int64_t row_size = dims.heads * dims.head_dim;
  std::vector<float> batch(max_rows * row_size);
  CausalAttention(dims, q.data(), max_rows, first, kv, 0.125f, batch.data(), &pool);
  for (int64_t r = 0; r < max_rows; ++r) {
    std::vector<float> single(row_size);
    CausalAttention(dims, q.data() + r * row_size, 1, first + r, kv, 0.125f, single.data(),
                    nullptr);
    for (int64_t i = 0; i < row_size; ++i)
      ASSERT_EQ(batch[r * row_size + i], single[i]) << "row " << r;
  }
}

}  // namespace
}  // namespace mtplx::kernels
