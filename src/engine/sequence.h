// One request's generation as a step-wise state machine, so that many requests can share each
// forward pass (continuous batching) and one request alone runs the very same code.
//
// A sequence prefills its prompt chunk by chunk (PrefillPartition), then decodes in cycles:
//   the primary token (a pending bonus or correction, else sampled) -> up to K drafts from the
//   MTP head, keeping each draft's distribution q -> one trunk forward over the K + 1 rows ->
//   accept draft i with probability min(1, p/q) (greedy: iff it equals the target argmax) -> on
//   rejection the correction comes from normalise((p - q)+); when all are accepted a bonus token
//   comes from row K -> the trunk keeps exactly the committed rows (attention truncated, DeltaNet
//   rebuilt from the verify tape) and the MTP history is re-fed with (target hidden, committed
//   token) pairs, never draft hiddens. See docs/speculative.md.
// Plain decoding is the same cycle with no drafts (depth 0): sample, run the token, sample.
//
// A step (Step below) asks every sequence for its rows: MTP rows in rounds (round 0: queued
// history pairs and the first draft; round j: draft j + 1), then trunk rows (a prefill chunk or
// a verify pass). Each round is one batched forward for all sequences. Nothing a sequence
// computes depends on the others: the kernels give every row the same bits in any batch, each
// sequence has its own states and its own random stream, and its depth schedule depends only on
// its own acceptance. So a request's output is the same served alone or in any batch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/timer.h"
#include "engine/depth_controller.h"
#include "engine/generator.h"
#include "engine/prefix.h"
#include "engine/speculative.h"
#include "engine/step_plan.h"
#include "grammar/constraint.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "state/verify_capture.h"

namespace mtplx::engine {

class Sequence {
 public:
  // Plain decoding (no MTP head needed).
  static Result<std::unique_ptr<Sequence>> Plain(const model::Model& model, GenerateRequest request,
                                                 TokenCallback on_token);
  // Speculative decoding with the model's MTP head.
  static Result<std::unique_ptr<Sequence>> Speculative(const model::Model& model,
                                                       GenerateRequest request,
                                                       const SpeculativeOptions& options,
                                                       TokenCallback on_token);

  bool finished() const { return finished_; }
  bool prefilling() const { return part_ < parts_.size(); }
  const GenerateRequest& request() const { return request_; }
  // Rows this sequence puts into the next trunk forward (after Begin).
  int64_t trunk_rows() const;

  // The step protocol (Step runs it for a batch). Begin: a cancelled request finishes; a
  // decoding one picks its primary token and this cycle's depth (it may finish on the primary).
  void Begin();
  // Cuts this cycle's drafts by one (before the MTP rounds); false when it has none left to cut
  // or its output could depend on the depth.
  bool CutDraft();
  int cycle_depth() const { return cycle_open_ ? depth_ : 0; }
  // This step's part as the draft plan sees it (engine/step_plan.h), after Begin.
  PlanSlot Slot() const;
  bool WantsMtp(int round) const;
  model::ForwardItem MtpItem(int round);
  // After the round's forward ran (its wall time, for the stats).
  Status AfterMtp(int round, double seconds);
  bool WantsTrunk() const;
  model::ForwardItem TrunkItem();
  Status AfterTrunk(double seconds);

  // Once finished: the tokens, stats and prefix capture (the MTP history of the prompt is
  // completed first when a short run left part of it queued).
  Result<SpeculativeResult> TakeResult();

 private:
  Sequence(const model::Model& model, GenerateRequest request, TokenCallback on_token);
  Status Start(const SpeculativeOptions* options);
  void BeginCycle();
  // Emits a token (logits: the distribution it came from, for log-probabilities); false when
  // generation ends with it.
  bool Emit(int32_t token, const float* logits);
  void Finish(const char* reason);
  const float* Hidden(const model::ForwardOutput& out, int64_t row) const {
    const auto& h = pre_norm_hidden_ ? out.pre_norm_hidden : out.hidden;
    return h.data() + row * hidden_size_;
  }
  void AddMtpPair(const float* hidden, int32_t token);
  Status AfterPrefillChunk(double seconds);
  void TakeDraft(int index);
  bool DraftsCanStopEarly() const;
  bool WantsAnotherDraft() const;
  void ObserveDraft(int i, bool kept);
  int Accept();
  Status Commit(int accepted);
  Status IngestQueuedPairs();
  // Sets the logits of tokens the grammar does not allow next to -infinity (no grammar: none).
  void Constrain(float* logits, int64_t count) {
    if (constraint_) constraint_->MaskLogits(std::span<float>(logits, count));
  }
  sample::SparseDistribution TargetDistribution(const float* logits) const {
    return sample::Shape(std::span<const float>(logits, vocab_), request_.sampling, counts_);
  }

  const model::Model& model_;
  GenerateRequest request_;
  TokenCallback on_token_;
  const int64_t hidden_size_, vocab_;
  bool speculative_ = false;
  SpeculativeOptions options_;
  bool pre_norm_hidden_ = false;
  sample::SamplingParams draft_params_;
  sample::CounterRng rng_;
  std::vector<int32_t> counts_;
  std::unique_ptr<state::SequenceState> trunk_, mtp_;
  std::unique_ptr<grammar::TokenConstraint> constraint_;  // when the request has a grammar
  std::optional<DepthController> controller_;
  CheckpointRecorder recorder_;
  GenerateResult result_;
  SpeculativeStats stats_;
  bool finished_ = false;
  Timer clock_;  // since the start, then since decoding began
  uint64_t faults_before_ = 0;

  // Prefill.
  std::vector<RowRange> parts_;
  size_t part_ = 0;
  // Decode.
  std::optional<int32_t> pending_;
  std::vector<float> last_logits_;  // target logits of the last committed position
  std::vector<float> last_hidden_;  // trunk hidden of the last committed position
  int32_t primary_ = 0;
  int depth_ = 0;            // this cycle's drafts
  bool cycle_open_ = false;  // a primary was chosen and awaits its verify
  int64_t committed_mtp_ = 0;
  std::vector<int32_t> drafts_;
  std::vector<sample::SparseDistribution> q_;
  std::vector<double> draft_probabilities_;  // how sure the head was of each draft
  // MTP history still to feed: hidden rows and the token that followed each.
  std::vector<float> pair_hidden_;
  std::vector<int32_t> pair_tokens_;
  // The rows and outputs of the forwards in flight (reused: buffers recycled across cycles).
  std::vector<int32_t> mtp_tokens_, trunk_tokens_;
  std::vector<float> mtp_hidden_;
  state::VerifyCapture capture_;
  model::ForwardOutput mtp_out_, trunk_out_;
};

// One step of every sequence given (none finished): batched MTP rounds, then one batched trunk
// forward. Sequences that finish during the step are left finished. With max_rows > 0, drafts of
// sequences whose output does not depend on them are cut (deepest first) while the step's trunk
// rows exceed it.
Status Step(const model::Model& model, std::span<Sequence* const> sequences, int max_rows = 0,
            const StepCosts& costs = {});

}  // namespace mtplx::engine
