// Exact native-MTP speculative generation.
//
// Each cycle: the primary token (a pending bonus or correction, else sampled) -> K drafts from
// the MTP head, keeping each draft's distribution q -> one trunk forward over the K+1 rows ->
// accept draft i with probability min(1, p/q) (greedy: iff it equals the target argmax) -> on
// rejection the correction comes from normalise((p - q)+); when all are accepted a bonus token
// comes from row K -> the trunk keeps exactly the committed rows (attention truncated, DeltaNet
// rebuilt from the verify tape) and the MTP history is re-fed with (target hidden, committed
// token) pairs, never draft hiddens. See docs/speculative.md.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "engine/generator.h"
#include "model/model.h"
#include "sample/sampler.h"

namespace mtplx::engine {

struct SpeculativeOptions {
  int depth = 2;  // drafts per cycle, 1..4 (the most, when adaptive)
  // Each cycle's depth (0..depth) follows live acceptance and measured costs (DepthController);
  // otherwise every cycle drafts `depth`.
  bool adaptive = false;
  int adaptive_start = 0;  // the depth adaptation starts from (0: `depth`)
  // T(d) in plain steps for d = 0..depth (DepthController); empty: a generic estimate.
  std::vector<double> cycle_costs;
  // Draft sampler; by default the target's. Forced greedy when the target is greedy.
  bool draft_same_as_target = true;
  sample::SamplingParams draft;
  // Feed the MTP head the trunk's pre-final-norm residual instead of the post-norm hidden.
  bool pre_norm_hidden = false;
  // Another proposer may replace draft i of a cycle (a point-mass proposal, e.g. prompt lookup
  // or a test oracle): called with the tokens emitted so far and the MTP's own draft; returns
  // the token to propose. Exactness holds for any proposer.
  std::function<int32_t(const std::vector<int32_t>& emitted, int draft_index, int32_t mtp_draft)>
      proposer;
};

struct SpeculativeStats {
  int depth = 0;
  int64_t cycles = 0;
  int64_t verify_calls = 0;
  int64_t bonus_tokens = 0;
  int64_t corrections = 0;
  int64_t early_stops = 0;  // cycles whose drafts stopped short of the depth they started with
  std::vector<int64_t> proposed_by_depth;  // drafts evaluated at depth d (all before accepted)
  std::vector<int64_t> accepted_by_depth;
  std::vector<int64_t> tokens_per_cycle;  // histogram: [n] = cycles that committed n tokens
  std::vector<int64_t> cycles_by_depth;   // histogram: [d] = cycles that drafted d tokens
  double draft_seconds = 0, verify_seconds = 0, accept_seconds = 0, commit_seconds = 0;

  std::vector<double> AcceptanceByDepth() const;        // conditional
  std::vector<double> AcceptanceUnconditional() const;  // accepted at d / cycles
  double MeanTokensPerCycle() const;
  double MeanDepth() const;  // drafts per cycle, averaged over cycles
};

struct SpeculativeResult {
  GenerateResult result;
  SpeculativeStats speculative;
};

class Sequence;

// Runs one sequence (engine/sequence.h) to its end on its own.
Result<SpeculativeResult> RunAlone(const model::Model& model, Sequence& sequence);

// Speculative generation of one request (a Sequence run alone).
Result<SpeculativeResult> GenerateSpeculative(const model::Model& model,
                                              const GenerateRequest& request,
                                              const SpeculativeOptions& options,
                                              const TokenCallback& on_token);

}  // namespace mtplx::engine
