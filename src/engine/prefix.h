// A reusable prompt prefix: the states after a run of prompt tokens, so that a later request
// whose prompt extends it prefills only the new tokens. This is the server's prompt cache (the
// system prompt and earlier turns of a conversation) and the engine's snapshot/restore path.
//
// It holds snapshots, never live states: every request restores its own copies, so one prefix
// serves any number of requests, plain or speculative, and outputs are the same as for any other
// request with that partition (greedy speculative output still equals plain output).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "state/sequence_state.h"

namespace mtplx::engine {

struct PrefixState {
  std::vector<int32_t> tokens;
  state::SequenceSnapshot trunk;  // after all of `tokens`
  // The MTP head's state with its history fed with (hidden of p, token p+1) for every p but the
  // last, and the hidden of the last position, paired with the first new token on use.
  std::optional<state::SequenceSnapshot> mtp;
  std::vector<float> last_hidden;
  bool pre_norm_hidden = false;  // which trunk hidden the MTP pairs hold
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

}  // namespace mtplx::engine
