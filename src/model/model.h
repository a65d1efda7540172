// Model: a loaded Qwen 3.5 / 3.6 / Qwen3-Next checkpoint and its forward pass.
//
// One call runs M new positions of a sequence against its state and returns logits and the
// final hidden state for every row (the verify pass of speculative decoding needs exactly this).
// The model is immutable after loading; all per-sequence data lives in SequenceState, so one
// model can serve many sequences.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "base/uninit_array.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "io/runtime_contract.h"
#include "kernels/matmul.h"
#include "model/draft_head.h"
#include "model/weights.h"
#include "state/sequence_state.h"
#include "state/verify_capture.h"

namespace mtplx::model {

struct LoadOptions {
  int threads = 0;  // 0: one per core
  bool show_progress = true;
  bool lock_memory = true;
  // Activation precision of quantized matmuls (see kernels/matmul.h). The library default is
  // the exact reference numerics; the CLI and server default to int8 for speed.
  kernels::Activations activations = kernels::Activations::kF32;
  // Bits of the MTP drafter's own copy of the output head (see draft_head.h); 0: the drafter uses
  // the model's head. Ignored without an MTP head or when the head is already this small.
  int draft_head_bits = 0;
  int draft_head_group_size = 64;
  // Bits of the MTP layer's own matrices (the fc projection and the decoder layer), quantized
  // again at load when they are wider (0: as the checkpoint has them). Drafts only propose: a
  // coarser drafter costs some acceptance, never exactness (see draft_head.h).
  int draft_layer_bits = 0;
  // The draft head covers only ids below this (0: the whole vocabulary). Byte-level BPE assigns
  // ids in merge order, so the low ids are the frequent tokens: the drafter never proposes the
  // rest, and exactness holds because acceptance uses the distribution q it sampled from. Needs
  // a draft head (draft_head_bits > 0). kAutoDraftVocab picks AutoDraftVocab(vocab).
  int64_t draft_vocab = 0;
  // How sequence states store their attention KV caches (kernels/attention.h). bf16 halves the
  // bytes a long context reads per decoded token, at bf16's rounding of k and v (what a bf16
  // checkpoint computes in PyTorch or MLX); f32 is the exact reference.
  kernels::KvType kv_type = kernels::KvType::kF32;
};

inline constexpr int64_t kAutoDraftVocab = -1;
// The default draft vocabulary: the lowest quarter of the ids, but never fewer than 4096, and the
// whole vocabulary below 8192 ids. On the bundled model (8192 ids; 24 held-out code snippets,
// depth 1) 4096 ids gave acceptance 0.764 and 0.90x plain speed, 2048 ids 0.703 and 0.87x.
inline int64_t AutoDraftVocab(int64_t vocab) {
  return vocab >= 8192 ? std::max<int64_t>(vocab / 4, 4096) : 0;
}

enum class DeltaNetPath {
  kAuto,       // recurrent for short batches (decode, verify), chunked for long prefill
  kRecurrent,  // token by token: the reference definition
  kChunked,    // chunks of 64 tokens
};

struct ForwardOptions {
  // Which rows get logits: all of them, or only the last (prefill of a long prompt).
  bool all_logits = true;
  DeltaNetPath delta_path = DeltaNetPath::kAuto;
  // Which rows get logits when all_logits is false: the last `last_logit_rows` rows.
  int64_t last_logit_rows = 1;
  // No logits at all (e.g. feeding the MTP history).
  bool no_logits = false;
  // Logits from the draft head instead of the model's (MTP drafting only).
  bool draft_head = false;
  // Record per-row DeltaNet tapes so CommitVerify can keep a prefix of the rows exactly.
  state::VerifyCapture* capture = nullptr;
  // ForwardMtp only: how many of the last rows need outputs (hidden states, logits); -1 = all.
  // The rows before them only extend the MTP layer's key/value cache, which needs nothing but
  // each row's own input, so their query, attention, output projection and MLP are skipped. The
  // output rows come out bit for bit as in a full forward (the kernels are batch invariant).
  // Honoured when the MTP head is one attention layer (Qwen 3.5's); otherwise every row runs.
  int64_t mtp_output_rows = -1;
};

struct ForwardOutput {
  int64_t rows = 0;
  int64_t logit_rows = 0;
  std::vector<float> logits;           // [logit_rows, vocab]
  int64_t vocab = 0;                   // entries per logits row (the draft head's may be fewer)
  std::vector<float> hidden;           // [rows, hidden] after the final norm (fed to lm_head)
  std::vector<float> pre_norm_hidden;  // [rows, hidden] residual stream before the final norm
};

// One sequence's part of a batched forward (Model::ForwardBatch / ForwardMtpBatch).
struct ForwardItem {
  state::SequenceState* state = nullptr;
  std::span<const int32_t> tokens;
  ForwardOptions options;
  ForwardOutput* out = nullptr;
  const float* hidden = nullptr;  // MTP only: the trunk hidden of each row, [tokens, hidden]
};

struct SequenceRows;  // model/layers.h

// Rows at or above this count use the chunked DeltaNet path under DeltaNetPath::kAuto.
inline constexpr int64_t kChunkedPrefillMinRows = 64;

class Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const std::string& dir, const LoadOptions& options);

  const io::ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const std::string& dir() const { return dir_; }
  // The pack's runtime contract (mtplx_runtime.json), validated at load; none for plain
  // checkpoints.
  const std::optional<io::RuntimeContract>& contract() const { return contract_; }
  uint64_t weight_bytes() const { return checkpoint_->resident_bytes(); }
  // Wall time of Load: reading the files, binding, preparing the draft head, repacking.
  double load_seconds() const { return load_seconds_; }
  // Where that time went, in seconds.
  struct LoadPhases {
    double read = 0.0;        // reading the checkpoint files into memory
    double draft_head = 0.0;  // quantizing the draft head and draft layer
    double repack = 0.0;      // rewriting quantized matrices into panels
  };
  const LoadPhases& load_phases() const { return load_phases_; }
  // Weight bytes one plain decode step reads: every trunk matrix (norms and other small vectors
  // left out), the lm_head (the embedding matrix when tied) and one row of the embedding table;
  // for MoE layers the router, the shared expert and experts_per_token routed experts of average
  // size. The MTP head is not counted: plain decoding never runs it.
  uint64_t DecodeWeightBytes() const;
  // Weight bytes one MTP draft step reads: its fc, its decoder layer, one embedding row and the
  // draft head (or the model's head). 0 without an MTP head.
  uint64_t DraftWeightBytes() const;
  bool weights_locked() const { return checkpoint_->all_locked(); }
  ThreadPool* pool() const { return pool_.get(); }
  kernels::Activations activations() const { return activations_; }
  kernels::KvType kv_type() const { return kv_type_; }
  // The int8 matmul kernels this process runs: "avx512-vnni", "avx2" or "portable".
  static const char* KernelsName();
  // Bits of the drafter's head copy, 0 when the drafter uses the model's head.
  int draft_head_bits() const { return draft_head_ ? draft_head_->bits() : 0; }
  // The bits the MTP layer was quantized again to at load (0: as stored).
  int draft_layer_bits() const { return draft_layer_bits_; }
  // Ids the drafter can propose: [0, draft_vocab()).
  int64_t draft_vocab() const {
    return draft_head_ ? draft_head_->matrix().rows : config_.vocab_size;
  }

  std::unique_ptr<state::SequenceState> NewState() const;

  // Runs `tokens` at positions state.position() ... and advances the state.
  Status Forward(state::SequenceState& state, std::span<const int32_t> tokens,
                 const ForwardOptions& options, ForwardOutput* out) const;
  // Several sequences (distinct states) in one pass: every matrix is read once for all their
  // rows. Each item's outputs and state equal, bit for bit, what Forward gives it alone (the
  // kernels' per-row results do not depend on the other rows). Nothing runs unless every item is
  // valid.
  Status ForwardBatch(std::span<ForwardItem> items) const;

  // After a Forward with options.capture over R rows, keeps the first `keep` rows (1..R): the
  // state becomes bit-identical to having run only those rows.
  Status CommitVerify(state::SequenceState& state, const state::VerifyCapture& capture,
                      int64_t keep) const;

  // The MTP head. Its state holds one attention layer whose cache covers pairs
  // (trunk hidden at position p, token at p + 1) at RoPE position p.
  bool has_mtp() const { return weights_.mtp.present; }
  std::unique_ptr<state::SequenceState> NewMtpState() const;
  // Runs rows (hidden[r], tokens[r]) at positions mtp_state.position() ...; out->hidden holds the
  // head's normed output (the vector its logits come from; fed back for deeper drafts).
  Status ForwardMtp(state::SequenceState& mtp_state, std::span<const int32_t> tokens,
                    const float* hidden, const ForwardOptions& options, ForwardOutput* out) const;
  // ForwardMtp for several sequences' MTP states at once (item.hidden required), as ForwardBatch.
  Status ForwardMtpBatch(std::span<ForwardItem> items) const;

 private:
  uint64_t LayerDecodeBytes(const LayerWeights& layer) const;
  Model() = default;

  // Per-layer buffers a forward pass reuses: every layer writes them in full before reading.
  struct Scratch {
    UninitArray<float> normed, mixed;
  };
  // One decoder layer over the rows of `sequences` (x: [their rows, hidden]). Rows that only
  // extend an attention cache (SequenceRows::history_rows) leave x and `sequences` afterwards.
  void RunDecoderLayer(const LayerWeights& lw, int64_t layer, std::vector<SequenceRows>& sequences,
                       std::vector<float>& x, Scratch& scratch) const;
  Status CheckTokens(const state::SequenceState& state, std::span<const int32_t> tokens) const;
  Status PrepareDraftHead(const LoadOptions& options);
  Status QuantizeDraftLayer(const LoadOptions& options);
  // Puts the quantized matrices into the int8 kernel's panel layout (kernels/panels.h).
  void RepackForInt8Kernel();
  // Final norm (given gains) of each item's rows of x into its out->hidden, then logits as its
  // options ask (one head product for all items that use the same head).
  void Finish(const std::vector<float>& gain, const std::vector<float>& x,
              const std::vector<SequenceRows>& sequences, std::span<ForwardItem> items) const;

  std::string dir_;
  std::optional<io::RuntimeContract> contract_;
  io::ModelConfig config_;
  std::unique_ptr<io::Checkpoint> checkpoint_;
  ModelWeights weights_;
  std::unique_ptr<ThreadPool> pool_;
  kernels::Activations activations_ = kernels::Activations::kF32;
  kernels::KvType kv_type_ = kernels::KvType::kF32;
  std::unique_ptr<DraftHead> draft_head_;
  // Owned copies of the MTP layer's matrices at LoadOptions::draft_layer_bits; weights_.mtp
  // views them.
  std::vector<std::unique_ptr<DraftHead>> draft_layer_;
  int draft_layer_bits_ = 0;
  std::vector<float> rope_inv_freq_;
  double load_seconds_ = 0.0;
  LoadPhases load_phases_;
};

}  // namespace mtplx::model
