// Model: a loaded Qwen 3.5 / 3.6 / Qwen3-Next checkpoint and its forward pass.
//
// One call runs M new positions of a sequence against its state and returns logits and the
// final hidden state for every row (the verify pass of speculative decoding needs exactly this).
// The model is immutable after loading; all per-sequence data lives in SequenceState, so one
// model can serve many sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/weights.h"
#include "state/sequence_state.h"

namespace mtplx::model {

struct LoadOptions {
  int threads = 0;  // 0: one per core
  bool show_progress = true;
  bool lock_memory = true;
};

enum class DeltaNetPath {
  kAuto,       // recurrent for short batches (decode, verify), chunked for long prefill
  kRecurrent,  // token by token: the reference definition
  kChunked,    // chunks of 64 tokens
};

struct ForwardOptions {
  // Which rows get logits: all of them, or only the last (prefill of a long prompt).
  bool all_logits = true;
  DeltaNetPath delta_path = DeltaNetPath::kAuto;
};

struct ForwardOutput {
  int64_t rows = 0;
  int64_t logit_rows = 0;
  std::vector<float> logits;          // [logit_rows, vocab]
  std::vector<float> hidden;          // [rows, hidden] after the final norm (fed to lm_head)
  std::vector<float> pre_norm_hidden; // [rows, hidden] residual stream before the final norm
};

// Rows at or above this count use the chunked DeltaNet path under DeltaNetPath::kAuto.
inline constexpr int64_t kChunkedPrefillMinRows = 64;

class Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const std::string& dir, const LoadOptions& options);

  const io::ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const std::string& dir() const { return dir_; }
  uint64_t weight_bytes() const { return checkpoint_->resident_bytes(); }
  bool weights_locked() const { return checkpoint_->all_locked(); }
  ThreadPool* pool() const { return pool_.get(); }

  std::unique_ptr<state::SequenceState> NewState() const;

  // Runs `tokens` at positions state.position() ... and advances the state.
  Status Forward(state::SequenceState& state, std::span<const int32_t> tokens,
                 const ForwardOptions& options, ForwardOutput* out) const;

 private:
  Model() = default;

  std::string dir_;
  io::ModelConfig config_;
  std::unique_ptr<io::Checkpoint> checkpoint_;
  ModelWeights weights_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<float> rope_inv_freq_;
};

}  // namespace mtplx::model
