#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/uninit_array.h"
#include "kernels/gated_delta.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"

namespace mtplx::model {

namespace {

// One sequence's convolution and recurrence: rows [s.begin, s.begin + s.rows) of qkv (pre-conv),
// the per-row gates b and a, into o (before the gated norm).
void MixSequence(const LayerContext& ctx, const DeltaNetWeights& w, const SequenceRows& s,
                 const float* qkv, const float* b, const float* a, float* o) {
  const io::ModelConfig& c = ctx.config;
  const int64_t m = s.rows, hk = c.linear_key_heads, hv = c.linear_value_heads;
  const int64_t dk = c.linear_key_dim, dv = c.linear_value_dim;
  const int64_t key_dim = c.KeyDim(), value_dim = c.ValueDim(), conv_dim = c.ConvDim();
  state::DeltaNetState& st = s.state->delta(ctx.layer);
  state::DeltaCapture* capture = s.capture ? &s.capture->layers[ctx.layer] : nullptr;
  if (capture) {
    capture->initial_conv = st.conv;
    capture->conv_inputs.assign(qkv, qkv + m * conv_dim);
  }
  UninitArray<float> mixed(m * conv_dim);
  kernels::CausalConvSilu(qkv, m, conv_dim, w.conv_taps.data(), c.conv_kernel, st.conv.data(),
                          mixed.data());

  // Split into q, k, v; L2-normalise q and k per head; scale q by Dk^-1/2.
  UninitArray<float> q(m * key_dim), k(m * key_dim), v(m * value_dim), g(m * hv), beta(m * hv);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int64_t r = 0; r < m; ++r) {
    const float* row = mixed.data() + r * conv_dim;
    std::memcpy(q.data() + r * key_dim, row, key_dim * 4);
    std::memcpy(k.data() + r * key_dim, row + key_dim, key_dim * 4);
    std::memcpy(v.data() + r * value_dim, row + 2 * key_dim, value_dim * 4);
    for (int64_t h = 0; h < hk; ++h) {
      float* qh = q.data() + r * key_dim + h * dk;
      kernels::L2Normalize(qh, dk, 1e-6f);
      for (int64_t i = 0; i < dk; ++i) qh[i] *= q_scale;
      kernels::L2Normalize(k.data() + r * key_dim + h * dk, dk, 1e-6f);
    }
    for (int64_t h = 0; h < hv; ++h) {
      beta[r * hv + h] = kernels::SigmoidScalar(b[r * hv + h]);
      g[r * hv + h] = w.neg_exp_a_log[h] * kernels::SoftplusScalar(a[r * hv + h] + w.dt_bias[h]);
    }
  }

  const kernels::GdnDims dims{hk, hv, dk, dv};
  const kernels::GdnInputs in{q.data(), k.data(), v.data(), g.data(), beta.data()};
  const bool chunked =
      !capture && (s.delta_path == DeltaNetPath::kChunked ||
                   (s.delta_path == DeltaNetPath::kAuto && m >= kChunkedPrefillMinRows));
  if (chunked) {
    kernels::GdnChunked(dims, m, in, st.recurrent.data(), o, ctx.pool);
    return;
  }
  float* deltas = nullptr;
  const float* initial = nullptr;
  if (capture) {
    capture->keys.assign(k.begin(), k.end());
    capture->log_decay.assign(g.begin(), g.end());
    capture->deltas.resize(m * value_dim);
    deltas = capture->deltas.data();
    // Keep the starting state by handing its buffer to the capture; the pass starts from it and
    // writes into the capture's previous buffer (reused across verify passes).
    capture->initial_recurrent.resize(st.recurrent.size());
    capture->initial_recurrent.swap(st.recurrent);
    initial = capture->initial_recurrent.data();
  }
  kernels::GdnRecurrent(dims, m, in, st.recurrent.data(), o, ctx.pool, deltas, initial);
}

}  // namespace

void GatedDeltaNet(const LayerContext& ctx, const DeltaNetWeights& w, const float* x, float* y) {
  const io::ModelConfig& c = ctx.config;
  const int64_t m = ctx.rows, hv = c.linear_value_heads, dv = c.linear_value_dim;
  const int64_t value_dim = c.ValueDim(), conv_dim = c.ConvDim();
  UninitArray<float> qkv(m * conv_dim), z(m * value_dim), b(m * hv), a(m * hv);
  ctx.MatMulSameInput({&w.in_qkv, &w.in_z, &w.in_b, &w.in_a}, x, m,
                      {qkv.data(), z.data(), b.data(), a.data()});
  UninitArray<float> o(m * value_dim);
  for (const SequenceRows& s : ctx.sequences) {
    MTPLX_CHECK(s.history_rows == 0, "history-only rows need an attention layer");
    MixSequence(ctx, w, s, qkv.data() + s.begin * conv_dim, b.data() + s.begin * hv,
                a.data() + s.begin * hv, o.data() + s.begin * value_dim);
  }

  // Gated RMSNorm per value head with z, then the output projection.
  UninitArray<float> normed(m * value_dim);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t h = 0; h < hv; ++h) {
      const int64_t off = r * value_dim + h * dv;
      kernels::GatedRmsNorm(o.data() + off, z.data() + off, w.norm.data(), dv,
                            static_cast<float>(c.rms_norm_eps), normed.data() + off);
    }
  ctx.MatMul(w.out_proj, normed.data(), m, y);
}

}  // namespace mtplx::model
