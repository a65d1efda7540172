#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"

namespace mtplx::model {

void GatedAttention(const LayerContext& ctx, const AttentionWeights& w,
                    state::AttentionCache& cache, const float* x, float* y, int64_t history_rows) {
  const io::ModelConfig& c = ctx.config;
  const int64_t m = ctx.rows, d = c.head_dim, heads = c.num_heads, kv_heads = c.num_kv_heads;
  const int64_t q_width = w.q_proj.rows;  // heads * d * (gated ? 2 : 1)
  const int64_t kv_width = kv_heads * d;
  const int64_t out_rows = m - history_rows, q_first = ctx.first_position + history_rows;
  std::vector<float> qg(out_rows * q_width), k(m * kv_width), v(m * kv_width);
  if (history_rows == 0) {
    ctx.MatMulSameInput({&w.q_proj, &w.k_proj, &w.v_proj}, x, m, {qg.data(), k.data(), v.data()});
  } else {
    ctx.MatMul(w.q_proj, x + history_rows * c.hidden_size, out_rows, qg.data());
    ctx.MatMulSameInput({&w.k_proj, &w.v_proj}, x, m, {k.data(), v.data()});
  }

  // Split per head [query | gate], normalise and rotate.
  const int64_t stride = c.attn_output_gate ? 2 * d : d;
  std::vector<float> q(out_rows * heads * d), gate(c.attn_output_gate ? out_rows * heads * d : 0);
  for (int64_t r = 0; r < out_rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = qg.data() + r * q_width + h * stride;
      float* qh = q.data() + (r * heads + h) * d;
      kernels::RmsNorm(src, w.q_norm.data(), d, static_cast<float>(c.rms_norm_eps), qh);
      kernels::ApplyRope(qh, c.rope.rotary_dim, ctx.rope_inv_freq.data(), q_first + r);
      if (c.attn_output_gate) std::memcpy(gate.data() + (r * heads + h) * d, src + d, d * 4);
    }
  }
  for (int64_t r = 0; r < m; ++r) {
    const int64_t pos = ctx.first_position + r;
    for (int64_t h = 0; h < kv_heads; ++h) {
      float* kh = k.data() + r * kv_width + h * d;
      kernels::RmsNorm(kh, w.k_norm.data(), d, static_cast<float>(c.rms_norm_eps), kh);
      kernels::ApplyRope(kh, c.rope.rotary_dim, ctx.rope_inv_freq.data(), pos);
    }
  }
  // Append to the cache, then attend over positions [0, pos].
  state::WriteAttentionRows(cache, ctx.first_position, m, k.data(), v.data(), kv_heads, d);
  std::vector<float> o(out_rows * heads * d);
  kernels::CausalAttention({heads, kv_heads, d}, q.data(), out_rows, q_first,
                           {cache.keys.data(), cache.values.data(), cache.capacity},
                           1.0f / std::sqrt(static_cast<float>(d)), o.data(), ctx.pool);
  if (c.attn_output_gate)
    for (size_t i = 0; i < o.size(); ++i) o[i] *= kernels::SigmoidScalar(gate[i]);
  ctx.MatMul(w.o_proj, o.data(), out_rows, y);
}

}  // namespace mtplx::model
