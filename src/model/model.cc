#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "base/check.h"
#include "base/strings.h"
#include "io/runtime_contract.h"
#include "kernels/affine_quant.h"
#include "kernels/gated_delta.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/panels.h"
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

namespace {

// The pack's runtime contract (when it has one) read and checked against its tensors: a pack
// that claims an MTP head it lacks, counts its MTP tensors wrong or states their quantization
// wrong is refused, naming the key.
Status CheckRuntimeContract(const std::optional<io::RuntimeContract>& contract,
                            const ModelWeights& w, const io::Checkpoint& checkpoint) {
  if (!contract) return Status::Ok();
  const io::RuntimeContract& c = *contract;
  auto refuse = [&](const std::string& key, const std::string& why) {
    return InvalidArgument(StrCat(c.path, ": '", key, "' ", why));
  };
  const bool has_mtp = w.mtp.present;
  int64_t mtp_tensors = 0;
  for (const std::string& name : checkpoint.Names())
    if (name.rfind("mtp.", 0) == 0 || name.find(".mtp.") != std::string::npos) ++mtp_tensors;
  MTPLX_RETURN_IF_ERROR(io::CheckMtpTensors(c, has_mtp, mtp_tensors));
  if (c.mtp_quant_bits && has_mtp) {
    const Matrix& probe = w.mtp.layer.attention.q_proj;
    const int stated = *c.mtp_quant_bits == 16 ? 0 : *c.mtp_quant_bits;
    const int actual = probe.quantized ? probe.quant.bits : 0;
    if (stated != actual)
      return refuse("mtp_contract.mtp_quant_bits",
                    StrCat("is ", *c.mtp_quant_bits, " but the MTP layer's weights are ",
                           actual ? StrCat(actual, "-bit") : std::string("not quantized")));
  }
  return Status::Ok();
}

}  // namespace

namespace {

double SecondsSince(std::chrono::steady_clock::time_point& mark) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - mark).count();
  mark = now;
  return seconds;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& dir, const LoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto mark = start;
  std::unique_ptr<Model> model(new Model());
  model->dir_ = dir;
  MTPLX_RETURN_IF_ERROR(io::CheckModelFolder(dir, /*need_tokenizer=*/false));
  MTPLX_ASSIGN_OR_RETURN(model->config_, io::LoadModelConfig(dir));
  if (model->config_.attention_bias)
    return Unimplemented(StrCat(dir, "/config.json: attention_bias=true is not supported"));
  io::CheckpointOptions checkpoint_options;
  checkpoint_options.show_progress = options.show_progress;
  checkpoint_options.lock_memory = options.lock_memory;
  MTPLX_ASSIGN_OR_RETURN(model->checkpoint_, io::Checkpoint::Open(dir, checkpoint_options));
  model->load_phases_.read = SecondsSince(mark);
  MTPLX_ASSIGN_OR_RETURN(model->weights_, BindWeights(model->config_, *model->checkpoint_));
  MTPLX_ASSIGN_OR_RETURN(model->contract_, io::LoadRuntimeContract(dir, io::EngineVersion()));
  MTPLX_RETURN_IF_ERROR(
      CheckRuntimeContract(model->contract_, model->weights_, *model->checkpoint_));
  model->pool_ = std::make_unique<ThreadPool>(options.threads);
  model->activations_ = options.activations;
  model->kv_type_ = options.kv_type;
  MTPLX_RETURN_IF_ERROR(model->PrepareDraftHead(options));
  MTPLX_RETURN_IF_ERROR(model->QuantizeDraftLayer(options));
  model->load_phases_.draft_head = SecondsSince(mark);
  if (options.activations == kernels::Activations::kInt8 && kernels::PanelKernelAvailable())
    model->RepackForInt8Kernel();
  model->load_phases_.repack = SecondsSince(mark);
  model->rope_inv_freq_ = RopeInverseFrequencies(model->config_);
  model->load_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return model;
}

Status Model::PrepareDraftHead(const LoadOptions& options) {
  const Matrix& head = weights_.lm_head;
  if (!has_mtp() || options.draft_head_bits <= 0) return Status::Ok();
  const int64_t wanted =
      options.draft_vocab == kAutoDraftVocab ? AutoDraftVocab(head.rows) : options.draft_vocab;
  const int64_t rows = wanted > 0 ? std::min(wanted, head.rows) : head.rows;
  if (head.quantized && head.quant.bits <= options.draft_head_bits && rows == head.rows)
    return Status::Ok();
  MTPLX_ASSIGN_OR_RETURN(draft_head_,
                         DraftHead::Quantize(head.RowSlice(0, rows), options.draft_head_bits,
                                             options.draft_head_group_size, pool_.get()));
  return Status::Ok();
}

namespace {

// Every matrix of a layer that the int8 activations meet. The router and the shared-expert gate
// are left out: they run with exact activations, so that routing never depends on activation
// rounding.
void AddLayerMatrices(LayerWeights& lw, std::vector<Matrix*>& out) {
  auto add_mlp = [&out](MlpWeights& w) { out.insert(out.end(), {&w.gate, &w.up, &w.down}); };
  AttentionWeights& a = lw.attention;
  DeltaNetWeights& d = lw.delta;
  out.insert(out.end(), {&a.q_proj, &a.k_proj, &a.v_proj, &a.o_proj, &d.in_qkv, &d.in_z, &d.in_b,
                         &d.in_a, &d.out_proj});
  add_mlp(lw.mlp);
  add_mlp(lw.moe.shared);
  for (MlpWeights& e : lw.moe.experts) add_mlp(e);
}

}  // namespace

Status Model::QuantizeDraftLayer(const LoadOptions& options) {
  const int bits = options.draft_layer_bits;
  if (!has_mtp() || bits <= 0) return Status::Ok();
  std::vector<Matrix*> matrices = {&weights_.mtp.fc};
  AddLayerMatrices(weights_.mtp.layer, matrices);
  for (Matrix* m : matrices) {
    if (m->rows == 0 || (m->quantized && m->quant.bits <= bits)) continue;
    // Matrices whose columns do not split into groups stay as they are.
    if (m->cols % options.draft_head_group_size != 0) continue;
    MTPLX_ASSIGN_OR_RETURN(
        auto copy, DraftHead::Quantize(*m, bits, options.draft_head_group_size, pool_.get()));
    *m = copy->matrix();
    draft_layer_.push_back(std::move(copy));
  }
  if (!draft_layer_.empty()) draft_layer_bits_ = bits;
  return Status::Ok();
}

void Model::RepackForInt8Kernel() {
  // Every quantized matrix the forward pass multiplies; the tied embedding and output head share
  // one image, which is repacked once and then marked in both views.
  std::vector<Matrix*> all = {&weights_.embed, &weights_.lm_head, &weights_.mtp.fc};
  for (LayerWeights& lw : weights_.layers) AddLayerMatrices(lw, all);
  AddLayerMatrices(weights_.mtp.layer, all);
  // A model larger than the caches streams every matrix from memory each token.
  const bool streamed = kernels::WeightsStreamFromMemory(DecodeWeightBytes());
  // Views of one image: repacked together, and only when they all see it with the same shape
  // (a view of another shape would go on reading the MLX layout from repacked bytes).
  std::map<const uint32_t*, std::vector<Matrix*>> views;
  for (Matrix* m : all)
    if (m->quantized) views[m->quant.packed].push_back(m);
  for (auto& [image, group] : views) {
    Matrix& first = *group.front();
    const bool same_shape = std::all_of(group.begin(), group.end(), [&](const Matrix* m) {
      return m->rows == first.rows && m->cols == first.cols;
    });
    if (!same_shape || !kernels::PanelEligible(first)) continue;
    // The checkpoint image is this model's own anonymous memory (io::ResidentBuffer), or a
    // draft-layer copy it owns.
    kernels::RepackToPanels(first, pool_.get());
    first.quant.streamed = streamed;
    for (Matrix* m : group) *m = first;
  }
  if (draft_head_) draft_head_->RepackToPanels(pool_.get(), streamed);
}

namespace {

uint64_t MlpBytes(const MlpWeights& w) {
  return w.gate.StorageBytes() + w.up.StorageBytes() + w.down.StorageBytes();
}

}  // namespace

// Bytes of one decoder layer's weights a token reads (MoE: the routed share of the experts).
uint64_t Model::LayerDecodeBytes(const LayerWeights& lw) const {
  uint64_t total = 0;
  {
    if (lw.is_attention) {
      const AttentionWeights& a = lw.attention;
      total += a.q_proj.StorageBytes() + a.k_proj.StorageBytes() + a.v_proj.StorageBytes() +
               a.o_proj.StorageBytes();
    } else {
      const DeltaNetWeights& d = lw.delta;
      total += d.in_qkv.StorageBytes() + d.in_z.StorageBytes() + d.in_b.StorageBytes() +
               d.in_a.StorageBytes() + d.out_proj.StorageBytes();
    }
    if (!lw.is_moe) return total + MlpBytes(lw.mlp);
    const MoeWeights& moe = lw.moe;
    total += moe.router.StorageBytes();
    if (moe.has_shared) total += MlpBytes(moe.shared) + moe.shared_gate.StorageBytes();
    uint64_t experts = 0;
    for (const MlpWeights& e : moe.experts) experts += MlpBytes(e);
    if (!moe.experts.empty())
      total += experts * static_cast<uint64_t>(config_.experts_per_token) / moe.experts.size();
  }
  return total;
}

uint64_t Model::DecodeWeightBytes() const {
  const ModelWeights& w = weights_;
  uint64_t total = w.lm_head.StorageBytes();
  if (w.embed.rows > 0) total += w.embed.StorageBytes() / static_cast<uint64_t>(w.embed.rows);
  for (const LayerWeights& lw : w.layers) total += LayerDecodeBytes(lw);
  return total;
}

uint64_t Model::DraftWeightBytes() const {
  const ModelWeights& w = weights_;
  if (!w.mtp.present) return 0;
  uint64_t total = w.mtp.fc.StorageBytes() + LayerDecodeBytes(w.mtp.layer);
  if (w.embed.rows > 0) total += w.embed.StorageBytes() / static_cast<uint64_t>(w.embed.rows);
  return total + (draft_head_ ? draft_head_->bytes() : w.lm_head.StorageBytes());
}

const char* Model::KernelsName() { return kernels::QuantKernelName(); }

std::unique_ptr<state::SequenceState> Model::NewState() const {
  const io::ModelConfig& c = config_;
  state::StateLayout layout;
  for (int64_t i = 0; i < c.num_layers; ++i) layout.is_attention.push_back(c.IsFullAttention(i));
  layout.kv_width = c.num_kv_heads * c.head_dim;
  layout.kv_heads = c.num_kv_heads;
  layout.conv_channels = c.ConvDim();
  layout.conv_history = c.conv_kernel - 1;
  layout.recurrent_size = c.linear_value_heads * c.linear_key_dim * c.linear_value_dim;
  layout.kv_type = kv_type_;
  return std::make_unique<state::SequenceState>(std::move(layout));
}

Status Model::CheckTokens(const state::SequenceState& state,
                          std::span<const int32_t> tokens) const {
  const io::ModelConfig& c = config_;
  if (tokens.empty()) return InvalidArgument("forward: no tokens");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return OutOfRange(
          StrCat("forward: token id ", t, " is outside the vocabulary (size ", c.vocab_size, ")"));
  const int64_t end = state.position() + static_cast<int64_t>(tokens.size());
  if (end > c.max_position_embeddings)
    return OutOfRange(StrCat("forward: position ", end, " exceeds max_position_embeddings ",
                             c.max_position_embeddings));
  return Status::Ok();
}

void Model::RunDecoderLayer(const LayerWeights& lw, int64_t layer,
                            std::vector<SequenceRows>& sequences, std::vector<float>& x,
                            Scratch& scratch) const {
  const io::ModelConfig& c = config_;
  const int64_t h = c.hidden_size, rows = static_cast<int64_t>(x.size()) / h;
  const float eps = static_cast<float>(c.rms_norm_eps);
  float* normed = scratch.normed.data();
  float* mixed = scratch.mixed.data();
  for (int64_t r = 0; r < rows; ++r)
    kernels::RmsNorm(x.data() + r * h, lw.input_norm.data(), h, eps, normed + r * h);
  const LayerContext ctx{c, pool_.get(), rope_inv_freq_, layer, sequences, rows, activations_};
  if (lw.is_attention) {
    GatedAttention(ctx, lw.attention, normed, mixed);
  } else {
    GatedDeltaNet(ctx, lw.delta, normed, mixed);
  }
  // From here on only the output rows: history rows leave x (each sequence's rows move up to
  // close the gap; a row never moves down, so in place is safe).
  int64_t out_rows = 0;
  for (SequenceRows& s : sequences) {
    if (s.history_rows > 0 || out_rows != s.begin)
      std::copy(x.begin() + (s.begin + s.history_rows) * h, x.begin() + (s.begin + s.rows) * h,
                x.begin() + out_rows * h);
    s.position += s.history_rows;
    s.rows = s.output_rows();
    s.history_rows = 0;
    s.begin = out_rows;
    out_rows += s.rows;
  }
  x.resize(out_rows * h);
  for (int64_t i = 0; i < out_rows * h; ++i) x[i] += mixed[i];
  for (int64_t r = 0; r < out_rows; ++r)
    kernels::RmsNorm(x.data() + r * h, lw.post_norm.data(), h, eps, normed + r * h);
  const LayerContext out_ctx{c,         pool_.get(), rope_inv_freq_, layer,
                             sequences, out_rows,    activations_};
  if (lw.is_moe) {
    SparseMoe(out_ctx, lw.moe, normed, mixed);
  } else {
    DenseMlp(out_ctx, lw.mlp, normed, mixed);
  }
  for (int64_t i = 0; i < out_rows * h; ++i) x[i] += mixed[i];
}

namespace {

// How many of an item's `rows` output rows get logits.
int64_t LogitRows(const ForwardOptions& options, int64_t rows) {
  if (options.no_logits) return 0;
  if (options.all_logits) return rows;
  return std::min<int64_t>(rows, std::max<int64_t>(1, options.last_logit_rows));
}

}  // namespace

void Model::Finish(const std::vector<float>& gain, const std::vector<float>& x,
                   const std::vector<SequenceRows>& sequences, std::span<ForwardItem> items) const {
  const int64_t h = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  for (size_t i = 0; i < items.size(); ++i) {
    const SequenceRows& s = sequences[i];
    ForwardOutput* out = items[i].out;
    out->rows = s.rows;
    out->pre_norm_hidden.assign(x.begin() + s.begin * h, x.begin() + (s.begin + s.rows) * h);
    out->hidden.resize(s.rows * h);
    for (int64_t r = 0; r < s.rows; ++r)
      kernels::RmsNorm(x.data() + (s.begin + r) * h, gain.data(), h, eps,
                       out->hidden.data() + r * h);
    out->logit_rows = LogitRows(items[i].options, s.rows);
    out->vocab = 0;
    out->logits.clear();
  }
  // One product per head: the rows of every item that uses it, gathered.
  for (const bool use_draft_head : {false, true}) {
    if (use_draft_head && !draft_head_) continue;
    const Matrix& head = use_draft_head ? draft_head_->matrix() : weights_.lm_head;
    std::vector<ForwardItem*> users;
    int64_t total = 0;
    for (ForwardItem& item : items) {
      const bool drafts = item.options.draft_head && draft_head_;
      if (drafts != use_draft_head || item.out->logit_rows == 0) continue;
      users.push_back(&item);
      total += item.out->logit_rows;
    }
    if (users.empty()) continue;
    UninitArray<float> in(total * h), logits(total * head.rows);
    int64_t at = 0;
    for (ForwardItem* item : users) {
      const ForwardOutput& out = *item->out;
      std::copy(out.hidden.end() - out.logit_rows * h, out.hidden.end(), in.begin() + at * h);
      at += out.logit_rows;
    }
    kernels::MatMul(head, in.data(), total, logits.data(), pool_.get(), activations_);
    at = 0;
    for (ForwardItem* item : users) {
      ForwardOutput& out = *item->out;
      out.vocab = head.rows;
      out.logits.assign(logits.begin() + at * head.rows,
                        logits.begin() + (at + out.logit_rows) * head.rows);
      at += out.logit_rows;
    }
  }
}

Status Model::Forward(state::SequenceState& state, std::span<const int32_t> tokens,
                      const ForwardOptions& options, ForwardOutput* out) const {
  ForwardItem item{&state, tokens, options, out, nullptr};
  return ForwardBatch(std::span<ForwardItem>(&item, 1));
}

Status Model::ForwardBatch(std::span<ForwardItem> items) const {
  if (items.empty()) return InvalidArgument("forward: no sequences");
  for (const ForwardItem& item : items) {
    if (!item.state || !item.out)
      return InvalidArgument("forward: an item without state or output");
    MTPLX_RETURN_IF_ERROR(CheckTokens(*item.state, item.tokens));
  }
  const io::ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  std::vector<SequenceRows> sequences;
  int64_t total = 0;
  for (ForwardItem& item : items) {
    const int64_t m = static_cast<int64_t>(item.tokens.size());
    if (item.options.capture) {
      item.options.capture->start_position = item.state->position();
      item.options.capture->rows = m;
      // Resized, not rebuilt: a capture reused across verify passes keeps its buffers.
      item.options.capture->layers.resize(c.num_layers);
    }
    SequenceRows s;
    s.state = item.state;
    s.begin = total;
    s.rows = m;
    s.position = item.state->position();
    s.capture = item.options.capture;
    s.delta_path = item.options.delta_path;
    sequences.push_back(s);
    total += m;
  }
  std::vector<float> x(total * h);
  Scratch scratch{UninitArray<float>(total * h), UninitArray<float>(total * h)};
  for (const ForwardItem& item : items)
    for (size_t r = 0; r < item.tokens.size(); ++r)
      kernels::DequantizeRow(weights_.embed, item.tokens[r],
                             x.data() + (sequences[&item - items.data()].begin + r) * h);
  for (int64_t l = 0; l < c.num_layers; ++l)
    RunDecoderLayer(weights_.layers[l], l, sequences, x, scratch);
  for (ForwardItem& item : items) item.state->Advance(static_cast<int64_t>(item.tokens.size()));
  Finish(weights_.final_norm, x, sequences, items);
  return Status::Ok();
}

Status Model::CommitVerify(state::SequenceState& state, const state::VerifyCapture& capture,
                           int64_t keep) const {
  if (keep < 1 || keep > capture.rows)
    return OutOfRange(StrCat("commit: cannot keep ", keep, " of ", capture.rows, " rows"));
  if (state.position() != capture.start_position + capture.rows)
    return FailedPrecondition("commit: the state moved since the captured forward");
  if (keep == capture.rows) return Status::Ok();
  const io::ModelConfig& c = config_;
  const kernels::GdnDims dims{c.linear_key_heads, c.linear_value_heads, c.linear_key_dim,
                              c.linear_value_dim};
  const int64_t channels = c.ConvDim(), history = c.conv_kernel - 1;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.IsFullAttention(l)) continue;
    const state::DeltaCapture& cap = capture.layers[l];
    state::DeltaNetState& st = state.delta(l);
    kernels::GdnReplay(dims, keep, cap.keys.data(), cap.log_decay.data(), cap.deltas.data(),
                       st.recurrent.data(), pool_.get(), cap.initial_recurrent.data());
    // Window = the last K-1 rows of [initial window ; kept inputs].
    for (int64_t r = 0; r < history; ++r) {
      const int64_t source = keep + r;  // index into the concatenated stream
      const float* row = source < history ? cap.initial_conv.data() + source * channels
                                          : cap.conv_inputs.data() + (source - history) * channels;
      std::copy(row, row + channels, st.conv.begin() + r * channels);
    }
  }
  state.RewindAfterCommit(capture.start_position + keep);
  return Status::Ok();
}

std::unique_ptr<state::SequenceState> Model::NewMtpState() const {
  state::StateLayout layout;
  layout.is_attention = {true};
  layout.kv_width = config_.num_kv_heads * config_.head_dim;
  layout.kv_heads = config_.num_kv_heads;
  layout.kv_type = kv_type_;
  return std::make_unique<state::SequenceState>(std::move(layout));
}

Status Model::ForwardMtp(state::SequenceState& mtp_state, std::span<const int32_t> tokens,
                         const float* hidden, const ForwardOptions& options,
                         ForwardOutput* out) const {
  ForwardItem item{&mtp_state, tokens, options, out, hidden};
  return ForwardMtpBatch(std::span<ForwardItem>(&item, 1));
}

Status Model::ForwardMtpBatch(std::span<ForwardItem> items) const {
  if (!has_mtp()) return FailedPrecondition(StrCat(dir_, ": the checkpoint has no MTP head"));
  if (items.empty()) return InvalidArgument("forward: no sequences");
  for (const ForwardItem& item : items) {
    if (!item.state || !item.out || !item.hidden)
      return InvalidArgument("forward: an MTP item without state, output or trunk hidden");
    MTPLX_RETURN_IF_ERROR(CheckTokens(*item.state, item.tokens));
  }
  const io::ModelConfig& c = config_;
  const MtpWeights& mtp = weights_.mtp;
  const int64_t h = c.hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  std::vector<SequenceRows> sequences;
  int64_t total = 0;
  for (const ForwardItem& item : items) {
    const int64_t m = static_cast<int64_t>(item.tokens.size());
    const int64_t out_rows = item.options.mtp_output_rows >= 0 && mtp.layer.is_attention
                                 ? std::min(m, item.options.mtp_output_rows)
                                 : m;
    SequenceRows s;
    s.state = item.state;
    s.begin = total;
    s.rows = m;
    s.position = item.state->position();
    s.history_rows = m - out_rows;
    s.delta_path = item.options.delta_path;
    sequences.push_back(s);
    total += m;
  }
  // fc input per row: [RMSNorm(embedding of the token) | RMSNorm(trunk hidden)].
  UninitArray<float> joined(total * 2 * h), embedding(h);
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& item = items[i];
    for (int64_t r = 0; r < sequences[i].rows; ++r) {
      float* row = joined.data() + (sequences[i].begin + r) * 2 * h;
      kernels::DequantizeRow(weights_.embed, item.tokens[r], embedding.data());
      kernels::RmsNorm(embedding.data(), mtp.pre_fc_norm_embedding.data(), h, eps, row);
      kernels::RmsNorm(item.hidden + r * h, mtp.pre_fc_norm_hidden.data(), h, eps, row + h);
    }
  }
  std::vector<float> x(total * h);
  kernels::MatMul(mtp.fc, joined.data(), total, x.data(), pool_.get(), activations_);
  Scratch scratch{UninitArray<float>(total * h), UninitArray<float>(total * h)};
  RunDecoderLayer(mtp.layer, 0, sequences, x, scratch);
  for (ForwardItem& item : items) item.state->Advance(static_cast<int64_t>(item.tokens.size()));
  Finish(mtp.norm, x, sequences, items);
  return Status::Ok();
}

}  // namespace mtplx::model
