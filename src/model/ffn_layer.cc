#include <algorithm>
#include <numeric>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"

namespace mtplx::model {
namespace {

// SwiGLU over `rows` rows of x [rows, hidden] into y [rows, hidden].
void SwiGluMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, int64_t rows,
               float* y) {
  const int64_t inter = w.gate.rows;
  std::vector<float> gate(rows * inter), up(rows * inter);
  ctx.MatMul(w.gate, x, rows, gate.data());
  ctx.MatMul(w.up, x, rows, up.data());
  kernels::SwiGlu(gate.data(), up.data(), rows * inter, gate.data());
  ctx.MatMul(w.down, gate.data(), rows, y);
}

}  // namespace

void DenseMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, float* y) {
  SwiGluMlp(ctx, w, x, ctx.rows, y);
}

void SparseMoe(const LayerContext& ctx, const MoeWeights& w, const float* x, float* y) {
  const io::ModelConfig& c = ctx.config;
  const int64_t h = c.hidden_size, experts = c.num_experts, top_k = c.experts_per_token;
  std::vector<float> router(ctx.rows * experts);
  // The router and the shared-expert gate stay exact: they make discrete choices.
  kernels::MatMul(w.router, x, ctx.rows, router.data(), ctx.pool);
  std::vector<float> expert_out(h), shared_gate(1);
  std::fill(y, y + ctx.rows * h, 0.0f);
  for (int64_t r = 0; r < ctx.rows; ++r) {
    const float* xr = x + r * h;
    float* yr = y + r * h;
    float* probs = router.data() + r * experts;
    kernels::SoftmaxInPlace(probs, experts);
    // Top-k by probability; ties broken by the lower expert index.
    std::vector<int64_t> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int64_t a, int64_t b) {
      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    });
    float total = 0.0f;
    for (int64_t i = 0; i < top_k; ++i) total += probs[order[i]];
    for (int64_t i = 0; i < top_k; ++i) {
      const float weight = c.norm_topk_prob ? probs[order[i]] / total : probs[order[i]];
      SwiGluMlp(ctx, w.experts[order[i]], xr, 1, expert_out.data());
      for (int64_t j = 0; j < h; ++j) yr[j] += weight * expert_out[j];
    }
    if (w.has_shared) {
      SwiGluMlp(ctx, w.shared, xr, 1, expert_out.data());
      kernels::MatMul(w.shared_gate, xr, 1, shared_gate.data(), nullptr);
      const float s = kernels::SigmoidScalar(shared_gate[0]);
      for (int64_t j = 0; j < h; ++j) yr[j] += s * expert_out[j];
    }
  }
}

}  // namespace mtplx::model
