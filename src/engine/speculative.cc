#include "engine/speculative.h"

#include <algorithm>
#include <optional>

#include "base/process_stats.h"
#include "base/strings.h"
#include "base/timer.h"
#include "engine/depth_controller.h"
#include "sample/speculative_accept.h"

namespace mtplx::engine {
namespace {

using sample::SparseDistribution;

// The cycle loop of one request. Holds the trunk and MTP states and the bookkeeping that links
// cycles: the pending token and the (hidden, token) pairs the MTP history still has to absorb.
class SpeculativeRun {
 public:
  SpeculativeRun(const model::Model& model, const GenerateRequest& request,
                 const SpeculativeOptions& options, const TokenCallback& on_token)
      : model_(model),
        request_(request),
        options_(options),
        on_token_(on_token),
        hidden_size_(model.config().hidden_size),
        vocab_(model.config().vocab_size),
        rng_(request.seed),
        counts_(vocab_, 0),
        trunk_(model.NewState()),
        mtp_(model.NewMtpState()),
        recorder_(request.checkpoint_at) {
    draft_params_ = options.draft_same_as_target ? request.sampling : options.draft;
    if (request.sampling.greedy()) draft_params_.temperature = 0.0;
    stats_.depth = options.depth;
    stats_.proposed_by_depth.assign(options.depth + 1, 0);
    stats_.accepted_by_depth.assign(options.depth + 1, 0);
    stats_.tokens_per_cycle.assign(options.depth + 2, 0);
    stats_.cycles_by_depth.assign(options.depth + 1, 0);
    if (options.adaptive)
      controller_.emplace(
          options.depth, options.adaptive_start > 0 ? options.adaptive_start : options.depth,
          options.cycle_costs.empty() ? EstimateCycleCosts(0.15, true, options.depth)
                                      : options.cycle_costs);
  }

  Result<SpeculativeResult> Run();

 private:
  Status Prefill();
  Status Cycle();
  Status Draft(int32_t primary, int depth, std::vector<int32_t>& drafts,
               std::vector<SparseDistribution>& q);
  // Emits a token; false when generation ends with it.
  bool Emit(int32_t token);
  const float* Hidden(const model::ForwardOutput& out, int64_t row) const {
    const auto& h = options_.pre_norm_hidden ? out.pre_norm_hidden : out.hidden;
    return h.data() + row * hidden_size_;
  }
  void AddMtpPair(const float* hidden, int32_t token) {
    pair_hidden_.insert(pair_hidden_.end(), hidden, hidden + hidden_size_);
    pair_tokens_.push_back(token);
  }
  // Feeds the queued pairs to the MTP head without outputs: only its cache grows.
  Status IngestMtpPairs();
  SparseDistribution TargetDistribution(const float* logits) const {
    return sample::Shape(std::span<const float>(logits, vocab_), request_.sampling, counts_);
  }

  const model::Model& model_;
  const GenerateRequest& request_;
  const SpeculativeOptions& options_;
  const TokenCallback& on_token_;
  const int64_t hidden_size_, vocab_;
  sample::SamplingParams draft_params_;
  sample::CounterRng rng_;
  std::vector<int32_t> counts_;
  // Reused by every cycle, so their buffers are recycled instead of reallocated.
  state::VerifyCapture capture_;
  model::ForwardOutput draft_out_, target_;
  std::unique_ptr<state::SequenceState> trunk_, mtp_;
  GenerateResult result_;
  SpeculativeStats stats_;
  bool finished_ = false;
  std::optional<int32_t> pending_;
  std::vector<float> last_logits_;    // target logits of the last committed position
  std::vector<float> last_hidden_;    // trunk hidden of the last committed position
  std::vector<float> pair_hidden_;    // MTP history still to feed: hidden rows ...
  std::vector<int32_t> pair_tokens_;  // ... and the token that followed each
  CheckpointRecorder recorder_;
  std::optional<DepthController> controller_;  // when the depth adapts
};

bool SpeculativeRun::Emit(int32_t token) {
  result_.tokens.push_back(token);
  ++counts_[token];
  if (std::find(request_.stop_ids.begin(), request_.stop_ids.end(), token) !=
      request_.stop_ids.end()) {
    result_.finish_reason = "stop";
    return !(finished_ = true);
  }
  if (on_token_ && !on_token_(token)) {
    result_.finish_reason = "cancelled";
    return !(finished_ = true);
  }
  if (static_cast<int>(result_.tokens.size()) >= request_.max_tokens ||
      trunk_->position() + 1 >= model_.config().max_position_embeddings) {
    result_.finish_reason = "length";
    return !(finished_ = true);
  }
  return true;
}

Status SpeculativeRun::IngestMtpPairs() {
  if (pair_tokens_.empty()) return Status::Ok();
  model::ForwardOptions history;
  history.no_logits = true;
  history.mtp_output_rows = 0;
  model::ForwardOutput out;
  MTPLX_RETURN_IF_ERROR(model_.ForwardMtp(*mtp_, pair_tokens_, pair_hidden_.data(), history, &out));
  pair_tokens_.clear();
  pair_hidden_.clear();
  return Status::Ok();
}

// Same partition as plain generation (body, then the last token alone) so greedy outputs match.
// From a cached prefix, the states are restored and its last hidden pairs with the first new
// prompt token. The MTP head ingests the prompt's pairs chunk by chunk here, as prompt work: the
// first cycle then drafts from one new pair, like every other cycle.
Status SpeculativeRun::Prefill() {
  const auto& prompt = request_.prompt;
  const int64_t n = static_cast<int64_t>(prompt.size());
  int64_t start = 0;
  if (const PrefixState* prefix = request_.prefix) {
    MTPLX_RETURN_IF_ERROR(CheckPromptExtends(*prefix, prompt));
    if (!prefix->mtp || prefix->pre_norm_hidden != options_.pre_norm_hidden)
      return InvalidArgument("the cached prefix was built without this MTP configuration");
    MTPLX_RETURN_IF_ERROR(prefix->RestoreTrunk(*trunk_));
    MTPLX_RETURN_IF_ERROR(prefix->RestoreMtp(*mtp_));
    start = prefix->size();
    AddMtpPair(prefix->last_hidden.data(), prompt[start]);
  }
  model::ForwardOptions body;
  body.all_logits = false;
  model::ForwardOutput out;
  for (const RowRange& part : PrefillPartition(start, n, request_.prefill_cuts)) {
    if (request_.Cancelled()) return Status::Ok();  // Run() sees it too and stops
    const bool last = part.begin == n - 1;
    body.no_logits = !last;
    MTPLX_RETURN_IF_ERROR(model_.Forward(
        *trunk_, std::span<const int32_t>(prompt.data() + part.begin, part.count), body, &out));
    if (last) break;
    recorder_.AfterChunk(part.begin + part.count, *trunk_, Hidden(out, part.count - 1),
                         hidden_size_);
    for (int64_t r = 0; r < part.count; ++r) AddMtpPair(Hidden(out, r), prompt[part.begin + r + 1]);
    MTPLX_RETURN_IF_ERROR(IngestMtpPairs());
  }
  MTPLX_RETURN_IF_ERROR(IngestMtpPairs());  // a cached prefix's pair when one token is new
  last_logits_ = out.logits;
  last_hidden_.assign(Hidden(out, 0), Hidden(out, 0) + hidden_size_);
  return Status::Ok();
}

// K drafts from the MTP head; its first step also absorbs the history pairs of earlier cycles.
// Depth 0 (a plain step) only queues the pair: the head catches up when drafting resumes.
Status SpeculativeRun::Draft(int32_t primary, int depth, std::vector<int32_t>& drafts,
                             std::vector<SparseDistribution>& q) {
  AddMtpPair(last_hidden_.data(), primary);
  if (depth == 0) return Status::Ok();
  const int64_t mtp_start = mtp_->position();
  const int64_t committed_mtp = mtp_start + static_cast<int64_t>(pair_tokens_.size());
  model::ForwardOptions last_row;
  last_row.all_logits = false;
  last_row.draft_head = true;
  last_row.mtp_output_rows = 1;  // the history rows only extend the MTP cache
  model::ForwardOutput& draft_out = draft_out_;
  MTPLX_RETURN_IF_ERROR(
      model_.ForwardMtp(*mtp_, pair_tokens_, pair_hidden_.data(), last_row, &draft_out));
  pair_tokens_.clear();
  pair_hidden_.clear();
  for (int j = 0; j < depth; ++j) {
    if (j > 0) {
      const std::vector<float> feed(draft_out.hidden.end() - hidden_size_, draft_out.hidden.end());
      MTPLX_RETURN_IF_ERROR(model_.ForwardMtp(*mtp_, std::span<const int32_t>(&drafts.back(), 1),
                                              feed.data(), last_row, &draft_out));
    }
    const std::span<const float> logits(draft_out.logits.data(), draft_out.vocab);
    if (options_.proposer) {
      std::vector<int32_t> emitted = result_.tokens;
      emitted.insert(emitted.end(), drafts.begin(), drafts.end());
      drafts.push_back(options_.proposer(emitted, j, sample::Argmax(logits)));
      q.push_back(sample::PointMass(drafts.back()));
    } else if (draft_params_.greedy()) {
      drafts.push_back(sample::Argmax(logits));
      q.push_back(sample::PointMass(drafts.back()));
    } else {
      // Penalised like the target would be at that position (the drafts so far count as
      // generated): q then tracks p closely. Any q keeps the output exact; this one is accepted
      // more often.
      const std::span<const int32_t> counts(counts_.data(), logits.size());
      q.push_back(sample::Shape(logits, draft_params_, counts));
      drafts.push_back(sample::SampleFrom(q.back(), rng_.Uniform()));
    }
    ++counts_[drafts.back()];
  }
  for (int32_t d : drafts) --counts_[d];  // only committed tokens count
  // Draft rows past the first are not history: history holds target hiddens only.
  MTPLX_RETURN_IF_ERROR(mtp_->Truncate(committed_mtp));
  return Status::Ok();
}

Status SpeculativeRun::Cycle() {
  // 1. Primary.
  int32_t primary;
  if (pending_) {
    primary = *pending_;
    pending_.reset();
  } else {
    primary = sample::Sample(last_logits_, request_.sampling, rng_, counts_);
    if (!Emit(primary)) return Status::Ok();
  }
  const int remaining = request_.max_tokens - static_cast<int>(result_.tokens.size());
  const int depth =
      std::min(controller_ ? controller_->Next() : options_.depth, std::max(remaining, 0));

  // 2. Draft.
  Timer timer;
  std::vector<int32_t> drafts;
  std::vector<SparseDistribution> q;
  MTPLX_RETURN_IF_ERROR(Draft(primary, depth, drafts, q));
  stats_.draft_seconds += timer.Seconds();

  // 3. Verify [primary, d1..dK] in one trunk forward.
  timer.Reset();
  std::vector<int32_t> rows = {primary};
  rows.insert(rows.end(), drafts.begin(), drafts.end());
  model::ForwardOptions verify;
  verify.capture = &capture_;
  model::ForwardOutput& target = target_;
  MTPLX_RETURN_IF_ERROR(model_.Forward(*trunk_, rows, verify, &target));
  ++stats_.verify_calls;
  stats_.verify_seconds += timer.Seconds();

  // 4. Accept.
  timer.Reset();
  int accepted = 0;
  for (int i = 0; i < depth && !finished_; ++i) {
    ++stats_.proposed_by_depth[i + 1];
    const float* row = target.logits.data() + i * vocab_;
    if (request_.sampling.greedy()) {
      const int32_t best = sample::Argmax(std::span<const float>(row, vocab_));
      if (drafts[i] == best) {
        ++accepted;
        ++stats_.accepted_by_depth[i + 1];
        if (!Emit(drafts[i])) break;
        continue;
      }
      ++stats_.corrections;
      if (Emit(best)) pending_ = best;
      break;
    }
    const SparseDistribution p = TargetDistribution(row);
    if (sample::AcceptDraft(p, q[i], drafts[i], rng_.Uniform())) {
      ++accepted;
      ++stats_.accepted_by_depth[i + 1];
      if (!Emit(drafts[i])) break;
      continue;
    }
    ++stats_.corrections;
    const int32_t correction = sample::SampleFrom(sample::Residual(p, q[i]), rng_.Uniform());
    if (Emit(correction)) pending_ = correction;
    break;
  }
  if (accepted == depth && !finished_) {
    const float* row = target.logits.data() + depth * vocab_;
    const int32_t bonus =
        sample::Sample(std::span<const float>(row, vocab_), request_.sampling, rng_, counts_);
    ++stats_.bonus_tokens;
    if (Emit(bonus)) pending_ = bonus;
  }
  stats_.accept_seconds += timer.Seconds();

  // 5. Commit the rows [primary, d1..d_accepted]; queue their MTP history pairs.
  timer.Reset();
  const int keep = accepted + 1;
  MTPLX_RETURN_IF_ERROR(model_.CommitVerify(*trunk_, capture_, keep));
  for (int j = 0; j < accepted; ++j) AddMtpPair(Hidden(target, j), drafts[j]);
  last_hidden_.assign(Hidden(target, keep - 1), Hidden(target, keep - 1) + hidden_size_);
  ++stats_.cycles;
  ++stats_.tokens_per_cycle[keep];
  ++stats_.cycles_by_depth[depth];
  if (controller_) controller_->Observe(depth, accepted);
  stats_.commit_seconds += timer.Seconds();
  return Status::Ok();
}

Result<SpeculativeResult> SpeculativeRun::Run() {
  Timer timer;
  result_.stats.prompt_tokens = static_cast<int64_t>(request_.prompt.size());
  MTPLX_RETURN_IF_ERROR(Prefill());
  result_.stats.prefill_seconds = timer.Seconds();
  timer.Reset();
  const uint64_t faults_before = ReadProcessStats().major_faults;
  result_.finish_reason = "length";
  if (request_.max_tokens <= 0) finished_ = true;
  while (!finished_) {
    if (request_.Cancelled()) {
      result_.finish_reason = "cancelled";
      break;
    }
    MTPLX_RETURN_IF_ERROR(Cycle());
  }
  result_.stats.completion_tokens = static_cast<int64_t>(result_.tokens.size());
  result_.stats.decode_seconds = timer.Seconds();
  const ProcessStats after = ReadProcessStats();
  result_.stats.major_faults_during_decode = after.major_faults - faults_before;
  result_.stats.resident_bytes = after.resident_bytes;
  // The prompt's MTP history is complete: every chunk's pairs were fed during the prefill.
  result_.capture =
      recorder_.Finish(request_.prompt, *trunk_, mtp_.get(), options_.pre_norm_hidden);
  return SpeculativeResult{std::move(result_), std::move(stats_)};
}

}  // namespace

std::vector<double> SpeculativeStats::AcceptanceByDepth() const {
  std::vector<double> out;
  for (int d = 1; d <= depth; ++d)
    out.push_back(proposed_by_depth[d] ? static_cast<double>(accepted_by_depth[d]) /
                                             static_cast<double>(proposed_by_depth[d])
                                       : 0.0);
  return out;
}

std::vector<double> SpeculativeStats::AcceptanceUnconditional() const {
  std::vector<double> out;
  for (int d = 1; d <= depth; ++d)
    out.push_back(cycles ? static_cast<double>(accepted_by_depth[d]) / static_cast<double>(cycles)
                         : 0.0);
  return out;
}

double SpeculativeStats::MeanDepth() const {
  int64_t total = 0, cycles_seen = 0;
  for (size_t d = 0; d < cycles_by_depth.size(); ++d) {
    total += static_cast<int64_t>(d) * cycles_by_depth[d];
    cycles_seen += cycles_by_depth[d];
  }
  return cycles_seen ? static_cast<double>(total) / static_cast<double>(cycles_seen) : 0.0;
}

double SpeculativeStats::MeanTokensPerCycle() const {
  int64_t total = 0;
  for (size_t n = 0; n < tokens_per_cycle.size(); ++n)
    total += static_cast<int64_t>(n) * tokens_per_cycle[n];
  return cycles ? static_cast<double>(total) / static_cast<double>(cycles) : 0.0;
}

Result<SpeculativeResult> GenerateSpeculative(const model::Model& model,
                                              const GenerateRequest& request,
                                              const SpeculativeOptions& options,
                                              const TokenCallback& on_token) {
  if (!model.has_mtp())
    return FailedPrecondition(StrCat(model.dir(), ": the checkpoint has no MTP head"));
  if (options.depth < 1 || options.depth > 4)
    return InvalidArgument(StrCat("MTP depth ", options.depth, " is outside 1..4"));
  if (request.prompt.empty()) return InvalidArgument("the prompt is empty");
  const int64_t context = model.config().max_position_embeddings;
  if (static_cast<int64_t>(request.prompt.size()) + options.depth + 1 >= context)
    return OutOfRange(StrCat("the prompt has ", request.prompt.size(),
                             " tokens but the model's context window is ", context));
  SpeculativeRun run(model, request, options, on_token);
  return run.Run();
}

}  // namespace mtplx::engine
