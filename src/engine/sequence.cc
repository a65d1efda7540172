#include "engine/sequence.h"

#include <algorithm>

#include "base/process_stats.h"
#include "base/strings.h"
#include "base/timer.h"
#include "io/runtime_contract.h"
#include "sample/speculative_accept.h"

namespace mtplx::engine {

using sample::SparseDistribution;

Sequence::Sequence(const model::Model& model, GenerateRequest request, TokenCallback on_token)
    : model_(model),
      request_(std::move(request)),
      on_token_(std::move(on_token)),
      hidden_size_(model.config().hidden_size),
      vocab_(model.config().vocab_size),
      rng_(request_.seed),
      counts_(vocab_, 0),
      recorder_(request_.checkpoint_at) {}

Result<std::unique_ptr<Sequence>> Sequence::Plain(const model::Model& model,
                                                  GenerateRequest request, TokenCallback on_token) {
  std::unique_ptr<Sequence> s(new Sequence(model, std::move(request), std::move(on_token)));
  MTPLX_RETURN_IF_ERROR(s->Start(nullptr));
  return s;
}

Result<std::unique_ptr<Sequence>> Sequence::Speculative(const model::Model& model,
                                                        GenerateRequest request,
                                                        const SpeculativeOptions& options,
                                                        TokenCallback on_token) {
  if (!model.has_mtp())
    return FailedPrecondition(StrCat(model.dir(), ": the checkpoint has no MTP head"));
  if (options.depth < 1 || options.depth > io::kMaxMtpDepth)
    return InvalidArgument(
        StrCat("MTP depth ", options.depth, " is outside 1..", io::kMaxMtpDepth));
  std::unique_ptr<Sequence> s(new Sequence(model, std::move(request), std::move(on_token)));
  MTPLX_RETURN_IF_ERROR(s->Start(&options));
  return s;
}

// Validates the request, restores a cached prefix and lays out the prefill. From a cached prefix
// the states are restored and its last hidden pairs with the first new prompt token.
Status Sequence::Start(const SpeculativeOptions* options) {
  const auto& prompt = request_.prompt;
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  const int64_t context = model_.config().max_position_embeddings;
  const int64_t lookahead = options ? options->depth + 1 : 0;
  if (n + lookahead >= context)
    return OutOfRange(
        StrCat("the prompt has ", n, " tokens but the model's context window is ", context));
  speculative_ = options != nullptr;
  if (request_.grammar) {
    if (!request_.vocabulary) return InvalidArgument("a grammar needs the vocabulary's bytes");
    auto oracle = request_.oracle ? request_.oracle
                                  : std::make_shared<grammar::MaskOracle>(request_.grammar,
                                                                          request_.vocabulary);
    constraint_ = std::make_unique<grammar::TokenConstraint>(std::move(oracle), request_.stop_ids);
  }
  trunk_ = model_.NewState();
  if (speculative_) {
    options_ = *options;
    pre_norm_hidden_ = options->pre_norm_hidden;
    draft_params_ = options->draft_same_as_target ? request_.sampling : options->draft;
    if (request_.sampling.greedy()) draft_params_.temperature = 0.0;
    mtp_ = model_.NewMtpState();
    if (options->adaptive)
      controller_.emplace(options->depth,
                          options->adaptive_start > 0 ? options->adaptive_start : options->depth,
                          options->cycle_costs.empty()
                              ? EstimateCycleCosts(0.15, CostRegime::kStreamed, options->depth)
                              : options->cycle_costs);
  }
  const int depths = speculative_ ? options_.depth : 0;
  stats_.depth = depths;
  stats_.proposed_by_depth.assign(depths + 1, 0);
  stats_.accepted_by_depth.assign(depths + 1, 0);
  stats_.tokens_per_cycle.assign(depths + 2, 0);
  stats_.cycles_by_depth.assign(depths + 1, 0);
  int64_t start = 0;
  if (const PrefixState* prefix = request_.prefix) {
    MTPLX_RETURN_IF_ERROR(CheckPromptExtends(*prefix, prompt));
    MTPLX_RETURN_IF_ERROR(prefix->RestoreTrunk(*trunk_));
    if (speculative_) {
      if (!prefix->mtp || prefix->pre_norm_hidden != pre_norm_hidden_)
        return InvalidArgument("the cached prefix was built without this MTP configuration");
      MTPLX_RETURN_IF_ERROR(prefix->RestoreMtp(*mtp_));
    }
    start = prefix->size();
    AddMtpPair(prefix->last_hidden.data(), prompt[start]);
  }
  parts_ = PrefillPartition(start, n, request_.prefill_cuts);
  result_.stats.prompt_tokens = n;
  result_.finish_reason = "length";
  if (request_.max_tokens <= 0) Finish("length");
  return Status::Ok();
}

int64_t Sequence::trunk_rows() const {
  if (finished_) return 0;
  if (prefilling()) return parts_[part_].count;
  return cycle_open_ ? 1 + depth_ : 0;
}

void Sequence::AddMtpPair(const float* hidden, int32_t token) {
  if (!speculative_) return;
  pair_hidden_.insert(pair_hidden_.end(), hidden, hidden + hidden_size_);
  pair_tokens_.push_back(token);
}

void Sequence::Finish(const char* reason) {
  result_.finish_reason = reason;
  finished_ = true;
  cycle_open_ = false;
}

bool Sequence::Emit(int32_t token, const float* logits) {
  if (request_.top_logprobs >= 0 && logits)
    result_.logprobs.push_back(
        LogprobOf(std::span<const float>(logits, vocab_), token, request_.top_logprobs));
  result_.tokens.push_back(token);
  ++counts_[token];
  // Tokens come from masked distributions, so the grammar takes each one; a refusal would be a
  // bug, and ends the reply rather than emit text outside the grammar.
  const bool refused = constraint_ && !constraint_->Accept(token);
  if (std::find(request_.stop_ids.begin(), request_.stop_ids.end(), token) !=
      request_.stop_ids.end()) {
    Finish("stop");
    return false;
  }
  if (refused) {
    result_.tokens.pop_back();
    Finish("stop");
    return false;
  }
  if (on_token_ && !on_token_(token)) {
    Finish("cancelled");
    return false;
  }
  if (constraint_ && constraint_->Done()) {  // the document is complete: nothing may follow
    Finish("stop");
    return false;
  }
  if (static_cast<int>(result_.tokens.size()) >= request_.max_tokens ||
      trunk_->position() + 1 >= model_.config().max_position_embeddings) {
    Finish("length");
    return false;
  }
  return true;
}

void Sequence::Begin() {
  if (finished_) return;
  if (request_.Cancelled()) {
    Finish("cancelled");
    return;
  }
  if (!prefilling()) BeginCycle();
}

// The primary token, then how many drafts: the controller's (or the fixed) depth, never past the
// tokens still wanted or the context window.
void Sequence::BeginCycle() {
  if (pending_) {
    primary_ = *pending_;
    pending_.reset();
  } else {
    Constrain(last_logits_.data(), vocab_);
    primary_ = sample::Sample(last_logits_, request_.sampling, rng_, counts_);
    if (!Emit(primary_, last_logits_.data())) return;
  }
  cycle_open_ = true;
  drafts_.clear();
  q_.clear();
  draft_probabilities_.clear();
  depth_ = 0;
  if (!speculative_) return;
  const int remaining = request_.max_tokens - static_cast<int>(result_.tokens.size());
  const int64_t room = model_.config().max_position_embeddings - trunk_->position() - 1;
  depth_ = controller_ ? controller_->Next() : options_.depth;
  // Sampled drafts end a cycle early when they leave one more not worth its cost
  // (WantsAnotherDraft), so the cycle starts one deeper than the controller's choice and the
  // drafts' own probabilities decide whether the extra draft runs.
  if (DraftsCanStopEarly() && depth_ > 0) depth_ = std::min(depth_ + 1, options_.depth);
  depth_ = static_cast<int>(std::min<int64_t>({depth_, std::max(remaining, 0), room}));
  // The pair of this cycle's primary; a plain step (depth 0) only queues it, and the head
  // catches up when drafting resumes.
  AddMtpPair(last_hidden_.data(), primary_);
  committed_mtp_ = mtp_->position() + static_cast<int64_t>(pair_tokens_.size());
}

bool Sequence::CutDraft() {
  if (!cycle_open_ || depth_ == 0 || !request_.depth_may_vary) return false;
  --depth_;
  return true;
}

PlanSlot Sequence::Slot() const {
  PlanSlot slot;
  slot.rows = trunk_rows();
  slot.depth = cycle_depth();
  slot.cuttable = cycle_open_ && depth_ > 0 && request_.depth_may_vary;
  if (!cycle_open_) return slot;
  // A pinned depth has no live acceptance: a fresh controller's prior stands in.
  static const DepthController kPrior(DepthController::kMaxDepth, 0, {});
  const DepthController& c = controller_ ? *controller_ : kPrior;
  slot.expected_tokens = c.expected_tokens(slot.depth);
  slot.last_draft_odds = slot.depth > 0 ? c.odds(slot.depth) : 0.0;
  return slot;
}

// Adaptive depth with the head's own drafts (a pinned depth is the user's; a proposer's draft has
// no probability). A sampled draft's confidence is its probability under q, a greedy draft's the
// head's softmax maximum.
bool Sequence::DraftsCanStopEarly() const { return controller_ && !options_.proposer; }

// Whether the drafts so far leave one more worth its cost (DepthController::WorthAnotherDraft).
bool Sequence::WantsAnotherDraft() const {
  const int drafted = static_cast<int>(drafts_.size());
  if (!DraftsCanStopEarly() || drafted == 0 ||
      static_cast<int>(draft_probabilities_.size()) != drafted)
    return true;
  double chain = 1.0;
  for (double probability : draft_probabilities_)
    chain *= controller_->DraftKeepChance(probability);
  return controller_->WorthAnotherDraft(drafted, chain);
}

// Teaches the controller how often drafts as sure as draft i are kept.
void Sequence::ObserveDraft(int i, bool kept) {
  if (controller_ && i < static_cast<int>(draft_probabilities_.size()))
    controller_->ObserveDraft(draft_probabilities_[i], kept);
}

bool Sequence::WantsMtp(int round) const {
  if (finished_ || !speculative_) return false;
  if (prefilling()) return round == 0 && !pair_tokens_.empty();
  return cycle_open_ && round < depth_;
}

model::ForwardItem Sequence::MtpItem(int round) {
  model::ForwardItem item;
  item.state = mtp_.get();
  item.out = &mtp_out_;
  if (round == 0) {
    // The queued history pairs (and, decoding, the first draft row after them).
    mtp_tokens_.swap(pair_tokens_);
    mtp_hidden_.swap(pair_hidden_);
    pair_tokens_.clear();
    pair_hidden_.clear();
    item.tokens = mtp_tokens_;
    item.hidden = mtp_hidden_.data();
    if (prefilling()) {
      item.options.no_logits = true;
      item.options.mtp_output_rows = 0;  // only the head's cache grows
      return item;
    }
    item.options.mtp_output_rows = 1;  // the history rows only extend the MTP cache
  } else {
    // Draft j + 1 from draft j and the head's own output for it.
    mtp_tokens_.assign(1, drafts_.back());
    mtp_hidden_.assign(mtp_out_.hidden.end() - hidden_size_, mtp_out_.hidden.end());
    item.tokens = mtp_tokens_;
    item.hidden = mtp_hidden_.data();
  }
  item.options.all_logits = false;
  item.options.draft_head = true;
  return item;
}

void Sequence::TakeDraft(int index) {
  // Drafts follow the grammar too: the head's logits are masked with the state after the
  // tokens before the draft (which the constraint takes tentatively until the verify).
  Constrain(mtp_out_.logits.data(), mtp_out_.vocab);  // the draft head may cover fewer ids
  const std::span<const float> logits(mtp_out_.logits.data(), mtp_out_.vocab);
  int32_t draft = 0;
  double draft_probability = -1.0;  // none for a proposer's drafts
  sample::SparseDistribution q;
  if (options_.proposer) {
    std::vector<int32_t> emitted = result_.tokens;
    emitted.insert(emitted.end(), drafts_.begin(), drafts_.end());
    draft = options_.proposer(emitted, index, sample::Argmax(logits));
    q = sample::PointMass(draft);
  } else if (draft_params_.greedy()) {
    draft = sample::Argmax(logits);
    q = sample::PointMass(draft);
    // q is a point mass, but how sure the head was still predicts the verify.
    if (DraftsCanStopEarly()) draft_probability = sample::TopProbability(logits, logits[draft]);
  } else {
    // Penalised like the target would be at that position (the drafts so far count as
    // generated): q then tracks p closely. Any q keeps the output exact; this one is accepted
    // more often.
    const std::span<const int32_t> counts(counts_.data(), logits.size());
    q = sample::Shape(logits, draft_params_, counts);
    draft = sample::SampleFrom(q, rng_.Uniform());
    draft_probability = sample::Probability(q, draft);
  }
  if (constraint_ && !constraint_->Accept(draft)) {  // a test proposer's draft off the grammar
    depth_ = static_cast<int>(drafts_.size());
    return;
  }
  drafts_.push_back(draft);
  q_.push_back(std::move(q));
  if (draft_probability >= 0.0) draft_probabilities_.push_back(draft_probability);
  ++counts_[draft];
  // A draft that completes the document: nothing may follow it, so drafting stops there.
  if (constraint_ && constraint_->Done()) depth_ = static_cast<int>(drafts_.size());
}

Status Sequence::AfterMtp(int round, double seconds) {
  if (prefilling()) return Status::Ok();  // history fed
  stats_.draft_seconds += seconds;
  TakeDraft(round);
  if (round + 1 < depth_ && !WantsAnotherDraft()) {
    depth_ = round + 1;
    ++stats_.early_stops;
  }
  if (round + 1 < depth_) return Status::Ok();
  for (int32_t d : drafts_) --counts_[d];                  // only committed tokens count
  if (constraint_) constraint_->Rollback(drafts_.size());  // the verify decides
  // Draft rows past the first are not history: history holds target hiddens only.
  return mtp_->Truncate(committed_mtp_);
}

bool Sequence::WantsTrunk() const { return trunk_rows() > 0; }

model::ForwardItem Sequence::TrunkItem() {
  model::ForwardItem item;
  item.state = trunk_.get();
  item.out = &trunk_out_;
  if (prefilling()) {
    const RowRange& part = parts_[part_];
    item.tokens = std::span<const int32_t>(request_.prompt.data() + part.begin, part.count);
    item.options.all_logits = false;
    item.options.no_logits = part_ + 1 < parts_.size();  // only the last row's logits start
    return item;
  }
  trunk_tokens_.assign(1, primary_);
  trunk_tokens_.insert(trunk_tokens_.end(), drafts_.begin(), drafts_.end());
  item.tokens = trunk_tokens_;
  // Without drafts every row is kept: nothing to roll back, no tape needed.
  item.options.capture = depth_ > 0 ? &capture_ : nullptr;
  return item;
}

Status Sequence::AfterPrefillChunk(double seconds) {
  (void)seconds;
  const RowRange part = parts_[part_++];
  if (!prefilling()) {  // the last prompt token: its logits start decoding
    last_logits_ = trunk_out_.logits;
    last_hidden_.assign(Hidden(trunk_out_, 0), Hidden(trunk_out_, 0) + hidden_size_);
    result_.stats.prefill_seconds = clock_.Seconds();
    clock_.Reset();
    faults_before_ = ReadProcessStats().major_faults;
    return Status::Ok();
  }
  recorder_.AfterChunk(part.begin + part.count, *trunk_, Hidden(trunk_out_, part.count - 1),
                       hidden_size_);
  for (int64_t r = 0; r < part.count; ++r)
    AddMtpPair(Hidden(trunk_out_, r), request_.prompt[part.begin + r + 1]);
  return Status::Ok();
}

Status Sequence::AfterTrunk(double seconds) {
  if (prefilling()) return AfterPrefillChunk(seconds);
  ++stats_.verify_calls;
  stats_.verify_seconds += seconds;
  Timer timer;
  const int accepted = Accept();
  stats_.accept_seconds += timer.Seconds();
  return Commit(accepted);
}

// Accepts a prefix of the drafts against the target rows (the first rejection is corrected from
// the residual; all accepted earn a bonus token from the last row); returns how many.
int Sequence::Accept() {
  const model::ForwardOutput& target = trunk_out_;
  cycle_open_ = false;
  int accepted = 0;
  for (int i = 0; i < depth_ && !finished_; ++i) {
    ++stats_.proposed_by_depth[i + 1];
    // The target row is masked with the state after the tokens before it (the primary and the
    // drafts accepted so far, which Emit gave the constraint): p and the residual are then the
    // masked target's, and the output follows it exactly.
    Constrain(trunk_out_.logits.data() + i * vocab_, vocab_);
    const float* row = target.logits.data() + i * vocab_;
    if (request_.sampling.greedy()) {
      const int32_t best = sample::Argmax(std::span<const float>(row, vocab_));
      ObserveDraft(i, drafts_[i] == best);
      if (drafts_[i] == best) {
        ++accepted;
        ++stats_.accepted_by_depth[i + 1];
        if (!Emit(drafts_[i], row)) break;
        continue;
      }
      ++stats_.corrections;
      if (Emit(best, row)) pending_ = best;
      break;
    }
    const SparseDistribution p = TargetDistribution(row);
    const bool kept = sample::AcceptDraft(p, q_[i], drafts_[i], rng_.Uniform());
    ObserveDraft(i, kept);
    if (kept) {
      ++accepted;
      ++stats_.accepted_by_depth[i + 1];
      if (!Emit(drafts_[i], row)) break;
      continue;
    }
    ++stats_.corrections;
    const int32_t correction = sample::SampleFrom(sample::Residual(p, q_[i]), rng_.Uniform());
    if (Emit(correction, row)) pending_ = correction;
    break;
  }
  if (accepted == depth_ && !finished_) {
    Constrain(trunk_out_.logits.data() + depth_ * vocab_, vocab_);
    const float* row = target.logits.data() + depth_ * vocab_;
    const int32_t bonus =
        sample::Sample(std::span<const float>(row, vocab_), request_.sampling, rng_, counts_);
    ++stats_.bonus_tokens;
    if (Emit(bonus, row)) pending_ = bonus;
  }
  return accepted;
}

// Keeps the rows [primary, d1..d_accepted] and queues their MTP history pairs.
Status Sequence::Commit(int accepted) {
  Timer timer;
  const int keep = accepted + 1;
  if (depth_ > 0) MTPLX_RETURN_IF_ERROR(model_.CommitVerify(*trunk_, capture_, keep));
  for (int j = 0; j < accepted; ++j) AddMtpPair(Hidden(trunk_out_, j), drafts_[j]);
  last_hidden_.assign(Hidden(trunk_out_, keep - 1), Hidden(trunk_out_, keep - 1) + hidden_size_);
  ++stats_.cycles;
  ++stats_.tokens_per_cycle[keep];
  ++stats_.cycles_by_depth[depth_];
  if (controller_) controller_->Observe(depth_, accepted);
  stats_.commit_seconds += timer.Seconds();
  return Status::Ok();
}

Status Sequence::IngestQueuedPairs() {
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

Result<SpeculativeResult> Sequence::TakeResult() {
  if (prefilling()) {
    result_.stats.prefill_seconds = clock_.Seconds();  // cancelled during the prefill
    clock_.Reset();
  }
  result_.stats.completion_tokens = static_cast<int64_t>(result_.tokens.size());
  result_.stats.decode_seconds = clock_.Seconds();
  const ProcessStats after = ReadProcessStats();
  result_.stats.major_faults_during_decode =
      faults_before_ ? after.major_faults - faults_before_ : 0;
  result_.stats.resident_bytes = after.resident_bytes;
  if (!prefilling()) {
    // The prompt's MTP history must be complete for the capture: a run that ended before its
    // first draft left pairs queued.
    if (speculative_ && !request_.checkpoint_at.empty()) MTPLX_RETURN_IF_ERROR(IngestQueuedPairs());
    result_.capture = recorder_.Finish(request_.prompt, *trunk_, mtp_.get(), pre_norm_hidden_);
  }
  return SpeculativeResult{std::move(result_), std::move(stats_)};
}

namespace {

// Cuts drafts as engine/step_plan.h decides, one at a time.
void PlanDrafts(std::span<Sequence* const> sequences, int max_rows, const StepCosts& costs) {
  if (max_rows <= 0 && (!costs.known() || sequences.size() < 2)) return;  // nothing to plan
  std::vector<PlanSlot> slots;
  for (;;) {
    slots.clear();
    for (const Sequence* s : sequences) slots.push_back(s->Slot());
    const int cut = NextCut(slots, costs, max_rows);
    if (cut < 0 || !sequences[cut]->CutDraft()) return;
  }
}

}  // namespace

Status Step(const model::Model& model, std::span<Sequence* const> sequences, int max_rows,
            const StepCosts& costs) {
  for (Sequence* s : sequences) s->Begin();
  PlanDrafts(sequences, max_rows, costs);
  std::vector<model::ForwardItem> items;
  std::vector<Sequence*> members;
  for (int round = 0;; ++round) {
    items.clear();
    members.clear();
    for (Sequence* s : sequences)
      if (s->WantsMtp(round)) {
        items.push_back(s->MtpItem(round));
        members.push_back(s);
      }
    if (items.empty()) break;
    Timer timer;
    MTPLX_RETURN_IF_ERROR(model.ForwardMtpBatch(items));
    const double seconds = timer.Seconds();
    for (Sequence* s : members) MTPLX_RETURN_IF_ERROR(s->AfterMtp(round, seconds));
  }
  items.clear();
  members.clear();
  for (Sequence* s : sequences)
    if (s->WantsTrunk()) {
      items.push_back(s->TrunkItem());
      members.push_back(s);
    }
  if (items.empty()) return Status::Ok();
  Timer timer;
  MTPLX_RETURN_IF_ERROR(model.ForwardBatch(items));
  const double seconds = timer.Seconds();
  for (Sequence* s : members) MTPLX_RETURN_IF_ERROR(s->AfterTrunk(seconds));
  return Status::Ok();
}

}  // namespace mtplx::engine
