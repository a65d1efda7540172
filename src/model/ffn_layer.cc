#include <algorithm>
#include <numeric>

#include "base/uninit_array.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"

namespace mtplx::model {
namespace {

// SwiGLU over `rows` rows of x [rows, hidden] into y [rows, hidden].
void SwiGluMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, int64_t rows,
               float* y) {
  const int64_t inter = w.gate.rows;
  UninitArray<float> gate(rows * inter), up(rows * inter);
  ctx.MatMulSameInput({&w.gate, &w.up}, x, rows, {gate.data(), up.data()});
  kernels::SwiGlu(gate.data(), up.data(), rows * inter, gate.data());
  ctx.MatMul(w.down, gate.data(), rows, y);
}

}  // namespace

void DenseMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, float* y) {
  SwiGluMlp(ctx, w, x, ctx.rows, y);
}

namespace {

// The routed experts of one row, best first, with their mixing weights.
struct Route {
  std::vector<int64_t> experts;
  std::vector<float> weights;
};

Route RouteRow(const io::ModelConfig& c, float* probs) {
  const int64_t experts = c.num_experts, top_k = c.experts_per_token;
  kernels::SoftmaxInPlace(probs, experts);
  // Top-k by probability; ties broken by the lower expert index.
  std::vector<int64_t> order(experts);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int64_t a, int64_t b) {
    return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
  });
  Route route;
  route.experts.assign(order.begin(), order.begin() + top_k);
  float total = 0.0f;
  for (int64_t e : route.experts) total += probs[e];
  for (int64_t e : route.experts)
    route.weights.push_back(c.norm_topk_prob ? probs[e] / total : probs[e]);
  return route;
}

}  // namespace

// Each selected expert runs once over all the rows that chose it, so a verify pass reads an
// expert's weights once however many of its rows use it. Rows are mixed in their own rank order
// afterwards, and the matmuls are batch invariant, so a row's result does not depend on which
// other rows share the call.
void SparseMoe(const LayerContext& ctx, const MoeWeights& w, const float* x, float* y) {
  const io::ModelConfig& c = ctx.config;
  const int64_t h = c.hidden_size, top_k = c.experts_per_token, rows = ctx.rows;
  std::vector<float> router(rows * c.num_experts);
  // The router and the shared-expert gate stay exact: they make discrete choices.
  kernels::MatMul(w.router, x, rows, router.data(), ctx.pool);
  std::vector<Route> routes;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> users(c.num_experts);  // (row, rank)
  for (int64_t r = 0; r < rows; ++r) {
    routes.push_back(RouteRow(c, router.data() + r * c.num_experts));
    for (int64_t k = 0; k < top_k; ++k) users[routes[r].experts[k]].emplace_back(r, k);
  }
  std::vector<float> outputs(rows * top_k * h);  // [row, rank, hidden]
  std::vector<float> gathered, expert_out;
  for (int64_t e = 0; e < c.num_experts; ++e) {
    const auto& list = users[e];
    if (list.empty()) continue;
    const int64_t n = static_cast<int64_t>(list.size());
    gathered.resize(n * h);
    expert_out.resize(n * h);
    for (int64_t i = 0; i < n; ++i)
      std::copy(x + list[i].first * h, x + (list[i].first + 1) * h, gathered.begin() + i * h);
    SwiGluMlp(ctx, w.experts[e], gathered.data(), n, expert_out.data());
    for (int64_t i = 0; i < n; ++i) {
      const auto [r, k] = list[i];
      std::copy(expert_out.begin() + i * h, expert_out.begin() + (i + 1) * h,
                outputs.begin() + (r * top_k + k) * h);
    }
  }
  std::vector<float> shared_out, shared_gate;
  if (w.has_shared) {
    shared_out.resize(rows * h);
    shared_gate.resize(rows);
    SwiGluMlp(ctx, w.shared, x, rows, shared_out.data());
    kernels::MatMul(w.shared_gate, x, rows, shared_gate.data(), nullptr);
  }
  std::fill(y, y + rows * h, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * h;
    for (int64_t k = 0; k < top_k; ++k) {
      const float weight = routes[r].weights[k];
      const float* out = outputs.data() + (r * top_k + k) * h;
      for (int64_t j = 0; j < h; ++j) yr[j] += weight * out[j];
    }
    if (w.has_shared) {
      const float s = kernels::SigmoidScalar(shared_gate[r]);
      for (int64_t j = 0; j < h; ++j) yr[j] += s * shared_out[r * h + j];
    }
  }
}

}  // namespace mtplx::model
