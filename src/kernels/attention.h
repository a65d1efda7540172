// Causal grouped-query attention of M query rows against a KV cache.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace mtplx::kernels {

struct AttentionDims {
  int64_t heads;     // query heads
  int64_t kv_heads;  // key/value heads; query head h reads kv head h / (heads / kv_heads)
  int64_t head_dim;
};

// How a KV cache stores its rows. bf16 halves the bytes a long context streams per decoded token
// (attention reads every cached row each step); rows are rounded to nearest even when written and
// widened exactly when read, so every kernel computes the same bits from the same cache.
enum class KvType : uint8_t { kF32 = 0, kBf16 = 1 };

inline int64_t KvElementBytes(KvType type) { return type == KvType::kBf16 ? 2 : 4; }
const char* KvTypeName(KvType type);  // "f32" or "bf16"

// A head-major KV cache: keys and values are [kv_heads, capacity, head_dim] elements of `type`,
// so each head's positions lie in one contiguous plane.
struct KvPlanes {
  const void* keys;
  const void* values;
  int64_t capacity;  // positions per plane
  KvType type = KvType::kF32;
};

// Stores n floats as `type` (bf16: rounded to nearest even).
void StoreKvRow(const float* from, int64_t n, KvType type, void* to);
// Widens n elements of `type` to floats (exact).
void LoadKvRow(const void* from, int64_t n, KvType type, float* to);

// How queries meet a bf16 cache's keys, and softmax weights its values.
//   kExact: in f32 fused multiply-adds on the widened cache (the reference numerics).
//   kBf16:  queries and weights rounded to bf16 (to nearest even), the cache's own precision, and
//           multiplied two products a lane per instruction (AVX512_BF16's vdpbf16ps): half the
//           multiply instructions, which bound a verify pass over a long context (its rows share
//           the cache's reads, not the arithmetic). Each product then carries the rounding its
//           cache element already has; a score moves by about 2^-9 |q| |k| / sqrt(head_dim).
//           Taken on CPUs with AVX512_BF16, a bf16 cache and head_dim a multiple of 32 (up to
//           256); elsewhere kExact runs.
enum class AttentionProducts : uint8_t { kExact, kBf16 };

// True when kBf16 products run on this CPU (AVX512_BF16, not capped by MTPLX_KERNELS).
bool Bf16AttentionProductsAvailable();

// q: [M, heads, head_dim]; kv holds positions 0..first_position + M - 1 of every head.
// Query row m sits at position first_position + m and attends to keys 0..first_position + m.
// out: [M, heads, head_dim]. Each output row is computed the same way whatever M is. The fast
// path (AVX-512, head_dim a multiple of 16) attends the queries that share a key/value head
// together (GQA packing: every head of the group, every row), so each key block is read from
// memory once for all of them; it scores 16 keys per block with one shared reduction tree and
// runs softmax and the value sum on vectors, the sum in tiles of positions that stay in cache
// while every query and every slice of the head reads them. CPUs with AVX2 and FMA but not that
// kernel (head_dim a multiple of 8) take an AVX2 one of the same shape (kernels/attention_avx2.h:
// up to eight (query, key) pairs a block, the value sum 16 elements of the head at a time). Others
// take a packed kernel of plain loops (the same GQA packing and tiles; target_clones vectorizes
// it per CPU).
// A bf16 cache is widened as it is read: both paths compute exactly what they compute on an f32
// cache holding the widened values. With kBf16 products every output row is still computed the
// same way whatever M is.
void CausalAttention(const AttentionDims& dims, const float* q, int64_t rows,
                     int64_t first_position, const KvPlanes& kv, float scale, float* out,
                     ThreadPool* pool, AttentionProducts products = AttentionProducts::kExact);

// The plain scalar twin: per-key dot products, softmax, then the weighted value sum. With kBf16
// products on a bf16 cache (on any CPU: it defines them) the queries and the weights exp(score -
// max) are rounded to bf16 and the sum is divided by the rounded weights' total.
void CausalAttentionReference(const AttentionDims& dims, const float* q, int64_t rows,
                              int64_t first_position, const KvPlanes& kv, float scale, float* out,
                              ThreadPool* pool,
                              AttentionProducts products = AttentionProducts::kExact);

}  // namespace mtplx::kernels
