#include "model/model.h"

#include <cmath>
#include <cstring>

#include "base/strings.h"
#include "kernels/affine_quant.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers.h"
#include "model/loader.h"

namespace mtplx::model {
namespace {

std::vector<float> RopeInverseFrequencies(const io::ModelConfig& c) {
  // inv_freq_j = theta^(-2j / rotary_dim), computed as the reference does (f32 exponent).
  std::vector<float> inv(c.rope.rotary_dim / 2);
  for (size_t j = 0; j < inv.size(); ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(c.rope.rotary_dim);
    inv[j] = static_cast<float>(1.0 / std::pow(c.rope.theta, static_cast<double>(exponent)));
  }
  return inv;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& dir, const LoadOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->dir_ = dir;
  MTPLX_ASSIGN_OR_RETURN(model->config_, io::LoadModelConfig(dir));
  if (model->config_.attention_bias)
    return Unimplemented(StrCat(dir, "/config.json: attention_bias=true is not supported"));
  io::CheckpointOptions checkpoint_options;
  checkpoint_options.show_progress = options.show_progress;
  checkpoint_options.lock_memory = options.lock_memory;
  MTPLX_ASSIGN_OR_RETURN(model->checkpoint_, io::Checkpoint::Open(dir, checkpoint_options));
  MTPLX_ASSIGN_OR_RETURN(model->weights_, BindWeights(model->config_, *model->checkpoint_));
  model->pool_ = std::make_unique<ThreadPool>(options.threads);
  model->rope_inv_freq_ = RopeInverseFrequencies(model->config_);
  return model;
}

std::unique_ptr<state::SequenceState> Model::NewState() const {
  const io::ModelConfig& c = config_;
  state::StateLayout layout;
  for (int64_t i = 0; i < c.num_layers; ++i) layout.is_attention.push_back(c.IsFullAttention(i));
  layout.kv_width = c.num_kv_heads * c.head_dim;
  layout.conv_channels = c.ConvDim();
  layout.conv_history = c.conv_kernel - 1;
  layout.recurrent_size = c.linear_value_heads * c.linear_key_dim * c.linear_value_dim;
  return std::make_unique<state::SequenceState>(std::move(layout));
}

Status Model::Forward(state::SequenceState& state, std::span<const int32_t> tokens,
                      const ForwardOptions& options, ForwardOutput* out) const {
  const io::ModelConfig& c = config_;
  const int64_t m = static_cast<int64_t>(tokens.size()), h = c.hidden_size;
  if (m == 0) return InvalidArgument("forward: no tokens");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return OutOfRange(StrCat("forward: token id ", t, " is outside the vocabulary (size ",
                               c.vocab_size, ")"));
  if (state.position() + m > c.max_position_embeddings)
    return OutOfRange(StrCat("forward: position ", state.position() + m,
                             " exceeds max_position_embeddings ", c.max_position_embeddings));

  std::vector<float> x(m * h), normed(m * h), mixed(m * h);
  for (int64_t r = 0; r < m; ++r) kernels::DequantizeRow(weights_.embed, tokens[r], x.data() + r * h);

  const LayerContext ctx{c, pool_.get(), rope_inv_freq_, state.position(), m};
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& lw = weights_.layers[l];
    for (int64_t r = 0; r < m; ++r)
      kernels::RmsNorm(x.data() + r * h, lw.input_norm.data(), h, eps, normed.data() + r * h);
    if (lw.is_attention) {
      GatedAttention(ctx, lw.attention, state.attention(l), normed.data(), mixed.data());
    } else {
      GatedDeltaNet(ctx, lw.delta, state.delta(l), options.delta_path, normed.data(), mixed.data());
    }
    for (int64_t i = 0; i < m * h; ++i) x[i] += mixed[i];
    for (int64_t r = 0; r < m; ++r)
      kernels::RmsNorm(x.data() + r * h, lw.post_norm.data(), h, eps, normed.data() + r * h);
    if (lw.is_moe) {
      SparseMoe(ctx, lw.moe, normed.data(), mixed.data());
    } else {
      DenseMlp(ctx, lw.mlp, normed.data(), mixed.data());
    }
    for (int64_t i = 0; i < m * h; ++i) x[i] += mixed[i];
  }
  state.Advance(m);

  out->rows = m;
  out->pre_norm_hidden = x;
  out->hidden.resize(m * h);
  for (int64_t r = 0; r < m; ++r)
    kernels::RmsNorm(x.data() + r * h, weights_.final_norm.data(), h, eps, out->hidden.data() + r * h);
  out->logit_rows = options.all_logits ? m : 1;
  out->logits.resize(out->logit_rows * c.vocab_size);
  const float* head_in = out->hidden.data() + (m - out->logit_rows) * h;
  kernels::MatMul(weights_.lm_head, head_in, out->logit_rows, out->logits.data(), pool_.get());
  return Status::Ok();
}

}  // namespace mtplx::model
