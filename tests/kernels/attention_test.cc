// The fast attention kernel (AVX-512, AVX2 or the packed one of plain loops: whichever this CPU
// and MTPLX_KERNELS pick; CMake registers the suite again under each cap) against its scalar twin
// on odd lengths, head sizes and GQA groups, on f32 and bf16 caches, and the batch-invariance
// guarantee: a query row's output never depends on how many rows run.
// The caches are head-major planes with room to spare, as the model's caches have.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
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

// Every case runs on an f32 cache and on a bf16 one. On bf16 both kernels compute exactly what
// they compute on an f32 cache holding the widened values (the fast path, the packed path at
// head_dim 24, and the reference), and the fast path stays within the f32 tolerance of the
// reference either way.
TEST(AttentionTest, FastPathMatchesReference) {
  ThreadPool pool(2);
  // Head sizes 48 and 80 end in a value slice of fewer than four 16-float vectors.
  for (const AttentionDims dims :
       {AttentionDims{4, 2, 64}, AttentionDims{8, 1, 128}, AttentionDims{2, 2, 256},
        AttentionDims{3, 1, 24}, AttentionDims{4, 1, 48}, AttentionDims{8, 2, 80}})
    for (int64_t first : {0, 1, 14, 15, 16, 47, 62, 126, 300})
      for (int64_t rows : {1, 2, 5}) {
        // Spare capacity: a head's plane is longer than the positions in use.
        const int64_t capacity = first + rows + first % 5, width = dims.kv_heads * dims.head_dim;
        const auto q = RandomValues(rows * dims.heads * dims.head_dim, first + rows, 2.0f);
        const auto k = RandomValues(capacity * width, 7 + first, 2.0f);
        const auto v = RandomValues(capacity * width, 9 + first, 1.0f);
        const Bf16Cache k16 = ToBf16(k), v16 = ToBf16(v);
        const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
        auto attend = [&](const KvPlanes& kv, bool fast) {
          std::vector<float> out(q.size());
          if (fast) {
            CausalAttention(dims, q.data(), rows, first, kv, scale, out.data(), &pool);
          } else {
            CausalAttentionReference(dims, q.data(), rows, first, kv, scale, out.data(), nullptr);
          }
          return out;
        };
        const KvPlanes f32{k.data(), v.data(), capacity};
        const KvPlanes bf16{k16.bits.data(), v16.bits.data(), capacity, KvType::kBf16};
        const KvPlanes widened{k16.widened.data(), v16.widened.data(), capacity};
        const std::string where = "d=" + std::to_string(dims.head_dim) +
                                  " first=" + std::to_string(first) +
                                  " rows=" + std::to_string(rows);
        for (const KvPlanes& kv : {f32, bf16}) {
          const std::vector<float> got = attend(kv, true), want = attend(kv, false);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 2e-6f) << where << " element " << i;
        }
        ASSERT_EQ(attend(bf16, true), attend(widened, true)) << where;
        ASSERT_EQ(attend(bf16, false), attend(widened, false)) << where;
      }
}

// Also at the 9B layer's shape (GQA groups of 4, head size 256), where a decode row's four
// queries score each key block together and a verify pass's rows partly together, partly alone;
// up to 160 queries a key/value head, so a head's queries span several tasks, and with 8 threads
// a pass of a few rows is split for the threads. Without grouping (3 / 3 heads of 96) a pass's
// rows fill blocks of every size, 1 to 4 queries, which score 8, 4 or 2 keys at a time on AVX2.
TEST(AttentionTest, RowResultsDoNotDependOnBatchSize) {
  ThreadPool two(2), eight(8);
  for (ThreadPool* pool : {&two, &eight})
    for (const AttentionDims dims :
         {AttentionDims{4, 2, 64}, AttentionDims{16, 4, 256}, AttentionDims{3, 3, 96}}) {
      // Rows 121..160 straddle a value tile (64 positions): a row's sum continues across tiles.
      const int64_t first = 120, max_rows = 40, width = dims.kv_heads * dims.head_dim;
      const auto q = RandomValues(max_rows * dims.heads * dims.head_dim, 3, 2.0f);
      const auto k = RandomValues((first + max_rows) * width, 4, 2.0f);
      const auto v = RandomValues((first + max_rows) * width, 5, 1.0f);
      const Bf16Cache k16 = ToBf16(k), v16 = ToBf16(v);
      const int64_t row_size = dims.heads * dims.head_dim;
      for (const KvPlanes& kv :
           {KvPlanes{k.data(), v.data(), first + max_rows},
            KvPlanes{k16.bits.data(), v16.bits.data(), first + max_rows, KvType::kBf16}})
        for (const AttentionProducts products :
             {AttentionProducts::kExact, AttentionProducts::kBf16})
          for (int64_t rows = 1; rows <= max_rows; ++rows) {
            std::vector<float> batch(rows * row_size);
            CausalAttention(dims, q.data(), rows, first, kv, 0.125f, batch.data(), pool, products);
            for (int64_t r = 0; r < rows; ++r) {
              std::vector<float> single(row_size);
              CausalAttention(dims, q.data() + r * row_size, 1, first + r, kv, 0.125f,
                              single.data(), nullptr, products);
              for (int64_t i = 0; i < row_size; ++i)
                ASSERT_EQ(batch[r * row_size + i], single[i])
                    << KvTypeName(kv.type) << " d=" << dims.head_dim << " rows=" << rows << " row "
                    << r << " threads=" << pool->size()
                    << (products == AttentionProducts::kBf16 ? " bf16 products" : "");
            }
          }
    }
}

// bf16 products (queries and weights rounded to bf16, vdpbf16ps) against their scalar definition
// on odd lengths and the head sizes the path takes, and within the rounding's reach of the exact
// reference: a score moves by about 2^-9 |q| |k| / sqrt(d), an output by about 2^-9 of its size.
// The two sum a score's products in different orders, so a weight that lies on a bf16 rounding
// boundary can round the other way (one bf16 step, 2^-8 of it): a few outputs differ by more
// than the f32 tolerance, none by more than such a step.
TEST(AttentionTest, Bf16ProductsMatchTheirReference) {
  if (!Bf16AttentionProductsAvailable()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  ThreadPool pool(2);
  int64_t outputs = 0, beyond_f32_tolerance = 0;
  float moved = 0.0f;
  for (const AttentionDims dims : {AttentionDims{4, 2, 64}, AttentionDims{8, 1, 128},
                                   AttentionDims{16, 4, 256}, AttentionDims{3, 3, 96}})
    for (int64_t first : {0, 1, 14, 15, 16, 31, 47, 62, 126, 300, 1000})
      for (int64_t rows : {1, 2, 5, 6}) {
        const int64_t capacity = first + rows + first % 5, width = dims.kv_heads * dims.head_dim;
        const auto q = RandomValues(rows * dims.heads * dims.head_dim, first + rows, 2.0f);
        const Bf16Cache k = ToBf16(RandomValues(capacity * width, 7 + first, 2.0f));
        const Bf16Cache v = ToBf16(RandomValues(capacity * width, 9 + first, 1.0f));
        const KvPlanes kv{k.bits.data(), v.bits.data(), capacity, KvType::kBf16};
        const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
        std::vector<float> got(q.size()), want(q.size()), exact(q.size());
        CausalAttention(dims, q.data(), rows, first, kv, scale, got.data(), &pool,
                        AttentionProducts::kBf16);
        CausalAttentionReference(dims, q.data(), rows, first, kv, scale, want.data(), nullptr,
                                 AttentionProducts::kBf16);
        CausalAttentionReference(dims, q.data(), rows, first, kv, scale, exact.data(), nullptr);
        const std::string where = "d=" + std::to_string(dims.head_dim) +
                                  " first=" + std::to_string(first) +
                                  " rows=" + std::to_string(rows);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-3f) << where << " element " << i;
          beyond_f32_tolerance += std::fabs(got[i] - want[i]) > 2e-6f;
          moved = std::max(moved, std::fabs(got[i] - exact[i]));
        }
        outputs += static_cast<int64_t>(got.size());
      }
  RecordProperty("beyond_f32_tolerance", std::to_string(beyond_f32_tolerance) + " of " +
                                             std::to_string(outputs) +
                                             ", largest move from exact " + std::to_string(moved));
  EXPECT_LT(beyond_f32_tolerance, outputs / 200) << "of " << outputs;
  EXPECT_LT(moved, 0.01f);  // values in [-1, 1]
  EXPECT_GT(moved, 0.0f);   // the rounding took effect
}

// On an f32 cache, or a CPU without AVX512_BF16, kBf16 runs the exact kernel.
TEST(AttentionTest, Bf16ProductsNeedABf16Cache) {
  ThreadPool pool(2);
  const AttentionDims dims{4, 2, 64};
  const int64_t first = 40, rows = 3, capacity = first + rows;
  const auto q = RandomValues(rows * dims.heads * dims.head_dim, 1, 2.0f);
  const auto k = RandomValues(capacity * dims.kv_heads * dims.head_dim, 2, 2.0f);
  const auto v = RandomValues(capacity * dims.kv_heads * dims.head_dim, 3, 1.0f);
  const KvPlanes kv{k.data(), v.data(), capacity};
  std::vector<float> bf16(q.size()), exact(q.size());
  CausalAttention(dims, q.data(), rows, first, kv, 0.125f, bf16.data(), &pool,
                  AttentionProducts::kBf16);
  CausalAttention(dims, q.data(), rows, first, kv, 0.125f, exact.data(), &pool);
  EXPECT_EQ(bf16, exact);
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
  EXPECT_STREQ(KvTypeName(KvType::kBf16), "bf16");
  EXPECT_STREQ(KvTypeName(KvType::kF32), "f32");
}

}  // namespace
}  // namespace mtplx::kernels
