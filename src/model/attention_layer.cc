#include <cmath>
#include <cstring>

#include "base/uninit_array.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"

namespace mtplx::model {
namespace {

// Output rows of every sequence (its rows past its history), in batch order.
int64_t OutputRows(std::span<const SequenceRows> sequences) {
  int64_t n = 0;
  for (const SequenceRows& s : sequences) n += s.output_rows();
  return n;
}

// Query and gate of one sequence's output rows: split per head [query | gate], normalise and
// rotate.
void PrepareQueries(const LayerContext& ctx, const AttentionWeights& w, const SequenceRows& s,
                    const float* qg, float* q, float* gate) {
  const io::ModelConfig& c = ctx.config;
  const int64_t d = c.head_dim, heads = c.num_heads, q_width = w.q_proj.rows;
  const int64_t stride = c.attn_output_gate ? 2 * d : d;
  const int64_t first = s.position + s.history_rows;
  for (int64_t r = 0; r < s.output_rows(); ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = qg + r * q_width + h * stride;
      float* qh = q + (r * heads + h) * d;
      kernels::RmsNorm(src, w.q_norm.data(), d, static_cast<float>(c.rms_norm_eps), qh);
      kernels::ApplyRope(qh, c.rope.rotary_dim, ctx.rope_inv_freq.data(), first + r);
      if (c.attn_output_gate) std::memcpy(gate + (r * heads + h) * d, src + d, d * 4);
    }
  }
}

// One sequence: normalise and rotate its keys, append them and its values to its cache, and
// attend its output rows over positions [0, pos] into o.
void AttendSequence(const LayerContext& ctx, const AttentionWeights& w, const SequenceRows& s,
                    float* k, const float* v, const float* q, float* o) {
  const io::ModelConfig& c = ctx.config;
  const int64_t d = c.head_dim, heads = c.num_heads, kv_heads = c.num_kv_heads;
  const int64_t kv_width = kv_heads * d;
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      float* kh = k + r * kv_width + h * d;
      kernels::RmsNorm(kh, w.k_norm.data(), d, static_cast<float>(c.rms_norm_eps), kh);
      kernels::ApplyRope(kh, c.rope.rotary_dim, ctx.rope_inv_freq.data(), s.position + r);
    }
  }
  state::AttentionCache& cache = s.state->attention(ctx.layer);
  state::WriteAttentionRows(cache, s.position, s.rows, k, v, kv_heads, d);
  // The int8-activation numerics round queries and weights to the bf16 cache's precision too;
  // the f32 (reference) numerics keep exact products.
  const kernels::AttentionProducts products = ctx.activations == kernels::Activations::kInt8
                                                  ? kernels::AttentionProducts::kBf16
                                                  : kernels::AttentionProducts::kExact;
  kernels::CausalAttention({heads, kv_heads, d}, q, s.output_rows(), s.position + s.history_rows,
                           cache.planes(), 1.0f / std::sqrt(static_cast<float>(d)), o, ctx.pool,
                           products);
}

}  // namespace

void GatedAttention(const LayerContext& ctx, const AttentionWeights& w, const float* x, float* y) {
  const io::ModelConfig& c = ctx.config;
  const int64_t m = ctx.rows, d = c.head_dim, heads = c.num_heads, h_size = c.hidden_size;
  const int64_t q_width = w.q_proj.rows;  // heads * d * (gated ? 2 : 1)
  const int64_t kv_width = c.num_kv_heads * d;
  const int64_t out_rows = OutputRows(ctx.sequences);
  UninitArray<float> qg(out_rows * q_width), k(m * kv_width), v(m * kv_width);
  if (out_rows == m) {
    ctx.MatMulSameInput({&w.q_proj, &w.k_proj, &w.v_proj}, x, m, {qg.data(), k.data(), v.data()});
  } else {
    // History rows need no query: gather the output rows for the query projection.
    UninitArray<float> queried(out_rows * h_size);
    int64_t at = 0;
    for (const SequenceRows& s : ctx.sequences) {
      const float* first = x + (s.begin + s.history_rows) * h_size;
      std::copy(first, first + s.output_rows() * h_size, queried.begin() + at * h_size);
      at += s.output_rows();
    }
    ctx.MatMul(w.q_proj, queried.data(), out_rows, qg.data());
    ctx.MatMulSameInput({&w.k_proj, &w.v_proj}, x, m, {k.data(), v.data()});
  }

  UninitArray<float> q(out_rows * heads * d), gate(c.attn_output_gate ? out_rows * heads * d : 0);
  UninitArray<float> o(out_rows * heads * d);
  int64_t out_begin = 0;
  for (const SequenceRows& s : ctx.sequences) {
    float* sq = q.data() + out_begin * heads * d;
    PrepareQueries(ctx, w, s, qg.data() + out_begin * q_width, sq,
                   c.attn_output_gate ? gate.data() + out_begin * heads * d : nullptr);
    AttendSequence(ctx, w, s, k.data() + s.begin * kv_width, v.data() + s.begin * kv_width, sq,
                   o.data() + out_begin * heads * d);
    out_begin += s.output_rows();
  }
  if (c.attn_output_gate)
    for (int64_t i = 0; i < o.size(); ++i) o[i] *= kernels::SigmoidScalar(gate[i]);
  ctx.MatMul(w.o_proj, o.data(), out_rows, y);
}

}  // namespace mtplx::model
