// The fast attention kernel against its scalar twin on odd lengths, head sizes and GQA groups,
// and the batch-invariance guarantee: a query row's output never depends on how many rows run.
// The caches are head-major planes with room to spare, as the model's caches have.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

}  // namespace
}  // namespace mtplx::kernels
