#include "engine/generator.h"

#include <algorithm>
#include <cmath>

#include "base/strings.h"
#include "engine/sequence.h"

namespace mtplx::engine {

std::vector<RowRange> ChunkRows(int64_t begin, int64_t end) {
  std::vector<RowRange> chunks;
  for (int64_t at = begin; at < end; at += kPrefillChunk)
    chunks.push_back({at, std::min(kPrefillChunk, end - at)});
  return chunks;
}

std::vector<RowRange> PrefillPartition(int64_t start, int64_t n, std::span<const int64_t> cuts) {
  std::vector<RowRange> parts;
  const int64_t body_end = n - 1;
  auto cut = std::upper_bound(cuts.begin(), cuts.end(), start);
  for (int64_t at = start; at < body_end;) {
    int64_t end = std::min(body_end, (at / kPrefillChunk + 1) * kPrefillChunk);
    while (cut != cuts.end() && *cut <= at) ++cut;
    if (cut != cuts.end() && *cut < end) end = *cut;
    parts.push_back({at, end - at});
    at = end;
  }
  parts.push_back({n - 1, 1});
  return parts;
}

TokenLogprob LogprobOf(std::span<const float> logits, int32_t token, int top) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_z = max + std::log(sum);
  TokenLogprob out;
  out.token = token;
  out.logprob = static_cast<double>(logits[token]) - log_z;
  const size_t k = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i)
    out.top.emplace_back(ids[i], static_cast<double>(logits[ids[i]]) - log_z);
  return out;
}

Result<std::vector<TokenLogprob>> ScorePrompt(const model::Model& model,
                                              std::span<const int32_t> tokens, int top) {
  std::vector<TokenLogprob> out;
  if (tokens.size() < 2) return out;
  const int64_t context = model.config().max_position_embeddings;
  if (static_cast<int64_t>(tokens.size()) > context)
    return OutOfRange(StrCat("the prompt has ", tokens.size(),
                             " tokens but the model's context window is ", context));
  auto state = model.NewState();
  model::ForwardOptions all;
  model::ForwardOutput fwd;
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (const RowRange& r : ChunkRows(0, n - 1)) {
    MTPLX_RETURN_IF_ERROR(model.Forward(*state, tokens.subspan(r.begin, r.count), all, &fwd));
    for (int64_t i = 0; i < r.count; ++i) {
      const std::span<const float> row(fwd.logits.data() + i * fwd.vocab, fwd.vocab);
      out.push_back(LogprobOf(row, tokens[r.begin + i + 1], top));
    }
  }
  return out;
}

double GenerateStats::DecodeTokensPerSecond() const {
  return decode_seconds > 0 ? static_cast<double>(completion_tokens) / decode_seconds : 0.0;
}

double GenerateStats::PrefillTokensPerSecond() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0.0;
}

Result<GenerateResult> GeneratePlain(const model::Model& model, const GenerateRequest& request,
                                     const TokenCallback& on_token) {
  MTPLX_ASSIGN_OR_RETURN(auto sequence, Sequence::Plain(model, request, on_token));
  MTPLX_ASSIGN_OR_RETURN(SpeculativeResult run, RunAlone(model, *sequence));
  return std::move(run.result);
}

}  // namespace mtplx::engine
