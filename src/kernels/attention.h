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

// A head-major KV cache: keys and values are [kv_heads, capacity, head_dim], so each head's
// positions lie in one contiguous plane.
struct KvPlanes {
  const float* keys;
  const float* values;
  int64_t capacity;  // positions per plane
};

// q: [M, heads, head_dim]; kv holds positions 0..first_position + M - 1 of every head.
// Query row m sits at position first_position + m and attends to keys 0..first_position + m.
// out: [M, heads, head_dim]. Each output row is computed the same way whatever M is. The fast
// path (AVX-512, head_dim a multiple of 16) attends the queries that share a key/value head
// together (GQA packing: every head of the group, every row), so each key block is read from
// memory once for all of them; it scores 16 keys per block with one shared reduction tree and
// runs softmax and the value sum on vectors, the sum in tiles of positions that stay in cache
// while every query and every slice of the head reads them. Other CPUs and shapes take a packed
// kernel of plain loops (the same GQA packing and tiles; target_clones vectorizes it per CPU).
void CausalAttention(const AttentionDims& dims, const float* q, int64_t rows,
                     int64_t first_position, const KvPlanes& kv, float scale, float* out,
                     ThreadPool* pool);

// The plain scalar twin: per-key dot products, softmax, then the weighted value sum.
void CausalAttentionReference(const AttentionDims& dims, const float* q, int64_t rows,
                              int64_t first_position, const KvPlanes& kv, float scale, float* out,
                              ThreadPool* pool);

}  // namespace mtplx::kernels
