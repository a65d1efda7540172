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

// q: [M, heads, head_dim]; keys/values: [L, kv_heads, head_dim] for positions 0..L-1.
// Query row m sits at position first_position + m and attends to keys 0..first_position + m.
// out: [M, heads, head_dim]. Each output row is computed the same way whatever M is.
void CausalAttention(const AttentionDims& dims, const float* q, int64_t rows,
                     int64_t first_position, const float* keys, const float* values, float scale,
                     float* out, ThreadPool* pool);

}  // namespace mtplx::kernels
