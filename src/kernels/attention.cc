#include "kernels/attention.h"

#include <algorithm>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace mtplx::kernels {

void CausalAttention(const AttentionDims& dims, const float* q, int64_t rows,
                     int64_t first_position, const float* keys, const float* values, float scale,
                     float* out, ThreadPool* pool) {
  const int64_t d = dims.head_dim;
  const int64_t group = dims.heads / dims.kv_heads;
  const int64_t kv_stride = dims.kv_heads * d;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t m = task / dims.heads;
      const int64_t h = task % dims.heads;
      const int64_t kv = h / group;
      const int64_t length = first_position + m + 1;
      const float* qh = q + (m * dims.heads + h) * d;
      scores.resize(length);
      for (int64_t t = 0; t < length; ++t)
        scores[t] = DotF32(qh, keys + t * kv_stride + kv * d, d) * scale;
      SoftmaxInPlace(scores.data(), length);
      float* o = out + (m * dims.heads + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t t = 0; t < length; ++t) {
        const float p = scores[t];
        const float* v = values + t * kv_stride + kv * d;
        for (int64_t i = 0; i < d; ++i) o[i] += p * v[i];
      }
    }
  };
  if (pool) {
    pool->ParallelFor(rows * dims.heads, 1, run);
  } else {
    run(0, rows * dims.heads);
  }
}

}  // namespace mtplx::kernels
