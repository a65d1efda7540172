// A reusable prompt prefix: the states after a run of prompt tokens, so that a later request
// whose prompt extends it prefills only the new tokens. This is the server's prompt cache (the
// system prompt and earlier turns of a conversation) and the engine's snapshot/restore path.
//
// It holds snapshots, never live states: every request restores its own copies, so one prefix
// serves any number of requests, plain or speculative. The snapshots may cover more positions
// than the prefix (a cache entry's attention rows serve every checkpoint inside it); a prefix of
// b tokens uses the first b attention rows, the DeltaNet states captured at b, and the first
// b - 1 rows of the MTP history.
//
// A restored prefix gives the same outputs as a cold run when b is a cut of the prefill
// partition (PrefillPartition): the chunks after b are then the same in both.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "state/sequence_state.h"

namespace mtplx::engine {

using DeltaStates = std::vector<state::DeltaNetState>;

struct PrefixState {
  std::vector<int32_t> tokens;
  std::shared_ptr<const state::SequenceSnapshot> trunk;  // >= tokens.size() attention rows
  // The DeltaNet states after `tokens`; null: trunk's own (trunk->position == tokens.size()).
  std::shared_ptr<const DeltaStates> delta;
  // The MTP head's history, fed with (hidden of p, token p+1) for every p but the last
  // (>= tokens.size() - 1 rows); null when the prefix was built without it.
  std::shared_ptr<const state::SequenceSnapshot> mtp;
  // The trunk hidden of the last position, paired with the first new token on use.
  std::vector<float> last_hidden;
  bool pre_norm_hidden = false;  // which trunk hidden the MTP pairs hold

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  Status RestoreTrunk(state::SequenceState& trunk_state) const;
  Status RestoreMtp(state::SequenceState& mtp_state) const;
};

struct PrefixOptions {
  bool with_mtp = true;  // also prepare the MTP history (ignored without an MTP head)
  bool pre_norm_hidden = false;
};

// Runs `tokens` (at least one) through the trunk (and the MTP head) from an empty state.
Result<PrefixState> BuildPrefix(const model::Model& model, std::span<const int32_t> tokens,
                                const PrefixOptions& options = {});

// Checks that `prompt` strictly extends `prefix`: the prefix's tokens, then at least one more.
Status CheckPromptExtends(const PrefixState& prefix, std::span<const int32_t> prompt);

// What a prefill leaves behind for a prefix cache: DeltaNet states and last hiddens captured at
// chosen cuts, and (once generation ends) the attention rows and MTP history they index into.
struct PrefixCheckpoint {
  int64_t position = 0;
  std::shared_ptr<const DeltaStates> delta;
  std::vector<float> hidden;  // trunk hidden at position - 1
};

struct PrefixCapture {
  std::vector<int32_t> tokens;                // the prompt up to the last checkpoint
  std::vector<PrefixCheckpoint> checkpoints;  // ascending positions, the last == tokens.size()
  std::shared_ptr<const state::SequenceSnapshot> trunk;  // tokens.size() attention rows
  std::shared_ptr<const state::SequenceSnapshot> mtp;    // null: built without the MTP head
  bool pre_norm_hidden = false;

  // The prefix at checkpoint `index`.
  PrefixState PrefixAt(size_t index) const;
  uint64_t Bytes() const;
};

// Collects checkpoints while a prompt is prefilled (the plain and speculative runners share it).
class CheckpointRecorder {
 public:
  // `positions`: where to capture (each must end a prefill chunk to be reached).
  explicit CheckpointRecorder(std::vector<int64_t> positions) : positions_(std::move(positions)) {}

  // After the chunk ending at `end` ran: captures when `end` is one of the positions.
  void AfterChunk(int64_t end, const state::SequenceState& trunk, const float* last_hidden,
                  int64_t hidden_size);
  // Once generation is over (the attention rows and MTP history of the prompt are still in the
  // states): the capture, or nothing when no checkpoint was reached.
  std::optional<PrefixCapture> Finish(std::span<const int32_t> prompt,
                                      const state::SequenceState& trunk,
                                      const state::SequenceState* mtp, bool pre_norm_hidden);

 private:
  std::vector<int64_t> positions_;
  std::vector<PrefixCheckpoint> captured_;
};

}  // namespace mtplx::engine
