#include "engine/prefix.h"

#include <algorithm>

#include "base/strings.h"
#include "engine/generator.h"

namespace mtplx::engine {
namespace {

// Feeds (hidden row r, token r + 1) pairs of one prefill chunk to the MTP head.
Status FeedMtpPairs(const model::Model& model, state::SequenceState& mtp, const float* hidden,
                    std::span<const int32_t> next_tokens) {
  if (next_tokens.empty()) return Status::Ok();
  model::ForwardOptions options;
  options.no_logits = true;
  options.mtp_output_rows = 0;  // only the MTP cache is wanted
  model::ForwardOutput out;
  return model.ForwardMtp(mtp, next_tokens, hidden, options, &out);
}

}  // namespace

Result<PrefixState> BuildPrefix(const model::Model& model, std::span<const int32_t> tokens,
                                const PrefixOptions& options) {
  if (tokens.empty()) return InvalidArgument("a prefix needs at least one token");
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n >= model.config().max_position_embeddings)
    return OutOfRange(StrCat("the prefix has ", n, " tokens but the model's context window is ",
                             model.config().max_position_embeddings));
  PrefixState prefix;
  prefix.tokens.assign(tokens.begin(), tokens.end());
  prefix.pre_norm_hidden = options.pre_norm_hidden;
  const bool with_mtp = options.with_mtp && model.has_mtp();
  auto trunk = model.NewState();
  std::unique_ptr<state::SequenceState> mtp = with_mtp ? model.NewMtpState() : nullptr;
  model::ForwardOptions body;
  body.all_logits = false;
  body.no_logits = true;
  model::ForwardOutput out;
  const int64_t h = model.config().hidden_size;
  for (const auto [begin, count] : ChunkRows(0, n)) {
    MTPLX_RETURN_IF_ERROR(model.Forward(*trunk, tokens.subspan(begin, count), body, &out));
    const std::vector<float>& hidden = options.pre_norm_hidden ? out.pre_norm_hidden : out.hidden;
    if (mtp) {
      // Pairs for every row that has a following token inside the prefix.
      const int64_t pairs = std::min(count, n - 1 - begin);
      MTPLX_RETURN_IF_ERROR(
          FeedMtpPairs(model, *mtp, hidden.data(), tokens.subspan(begin + 1, pairs)));
    }
    if (begin + count == n) {
      prefix.last_hidden.assign(hidden.end() - h, hidden.end());
    }
  }
  prefix.trunk = std::make_shared<const state::SequenceSnapshot>(trunk->Snapshot());
  if (mtp) prefix.mtp = std::make_shared<const state::SequenceSnapshot>(mtp->Snapshot());
  return prefix;
}

Status PrefixState::RestoreTrunk(state::SequenceState& trunk_state) const {
  if (!trunk) return FailedPrecondition("the prefix has no trunk state");
  return trunk_state.RestorePrefix(*trunk, size(), delta.get());
}

Status PrefixState::RestoreMtp(state::SequenceState& mtp_state) const {
  if (!mtp) return FailedPrecondition("the prefix was built without the MTP head");
  return mtp_state.RestorePrefix(*mtp, size() - 1, nullptr);
}

PrefixState PrefixCapture::PrefixAt(size_t index) const {
  const PrefixCheckpoint& c = checkpoints[index];
  PrefixState prefix;
  prefix.tokens.assign(tokens.begin(), tokens.begin() + c.position);
  prefix.trunk = trunk;
  prefix.delta = c.delta;
  prefix.mtp = mtp;
  prefix.last_hidden = c.hidden;
  prefix.pre_norm_hidden = pre_norm_hidden;
  return prefix;
}

Status CheckPromptExtends(const PrefixState& prefix, std::span<const int32_t> prompt) {
  if (prompt.size() <= prefix.tokens.size() ||
      !std::equal(prefix.tokens.begin(), prefix.tokens.end(), prompt.begin())) {
    return InvalidArgument(StrCat("the prompt (", prompt.size(),
                                  " tokens) does not extend the cached prefix (",
                                  prefix.tokens.size(), " tokens) by at least one token"));
  }
  return Status::Ok();
}

}  // namespace mtplx::engine

namespace mtplx::engine {

uint64_t PrefixCapture::Bytes() const {
  auto snapshot_bytes = [](const state::SequenceSnapshot* s) -> uint64_t {
    if (!s) return 0;
    uint64_t total = 0;
    for (const auto& a : s->attention) total += a.keys.size() + a.values.size();
    for (const auto& d : s->delta) total += (d.conv.size() + d.recurrent.size()) * sizeof(float);
    return total;
  };
  uint64_t total = snapshot_bytes(trunk.get()) + snapshot_bytes(mtp.get());
  for (const auto& c : checkpoints) {
    total += c.hidden.size() * sizeof(float);
    if (c.delta)
      for (const auto& d : *c.delta) total += (d.conv.size() + d.recurrent.size()) * sizeof(float);
  }
  return total + tokens.size() * sizeof(int32_t);
}

void CheckpointRecorder::AfterChunk(int64_t end, const state::SequenceState& trunk,
                                    const float* last_hidden, int64_t hidden_size) {
  if (!std::binary_search(positions_.begin(), positions_.end(), end)) return;
  PrefixCheckpoint c;
  c.position = end;
  c.delta = std::make_shared<const DeltaStates>(trunk.delta_states());
  c.hidden.assign(last_hidden, last_hidden + hidden_size);
  captured_.push_back(std::move(c));
}

std::optional<PrefixCapture> CheckpointRecorder::Finish(std::span<const int32_t> prompt,
                                                        const state::SequenceState& trunk,
                                                        const state::SequenceState* mtp,
                                                        bool pre_norm_hidden) {
  if (captured_.empty()) return std::nullopt;
  PrefixCapture capture;
  const int64_t end = captured_.back().position;
  capture.tokens.assign(prompt.begin(), prompt.begin() + end);
  capture.trunk =
      std::make_shared<const state::SequenceSnapshot>(trunk.SnapshotAttentionPrefix(end));
  if (mtp)
    capture.mtp =
        std::make_shared<const state::SequenceSnapshot>(mtp->SnapshotAttentionPrefix(end - 1));
  capture.pre_norm_hidden = pre_norm_hidden;
  capture.checkpoints = std::move(captured_);
  captured_.clear();
  return capture;
}

}  // namespace mtplx::engine
