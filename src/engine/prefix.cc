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
  prefix.trunk = trunk->Snapshot();
  if (mtp) prefix.mtp = mtp->Snapshot();
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
