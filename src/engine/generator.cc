#include "engine/generator.h"

#include <algorithm>
#include <cmath>

#include "base/process_stats.h"
#include "base/strings.h"
#include "base/timer.h"

namespace mtplx::engine {
namespace {

// Prefills the prompt tokens from `start` up to the last in chunks, then runs the last one alone
// and returns its logits (none when the request was cancelled on the way).
Result<std::vector<float>> Prefill(const model::Model& model, state::SequenceState& state,
                                   const GenerateRequest& request, int64_t start,
                                   CheckpointRecorder& recorder) {
  const std::vector<int32_t>& prompt = request.prompt;
  model::ForwardOptions body;
  body.all_logits = false;
  model::ForwardOutput out;
  const int64_t h = model.config().hidden_size;
  for (const RowRange& r :
       PrefillPartition(start, static_cast<int64_t>(prompt.size()), request.prefill_cuts)) {
    if (request.Cancelled()) return std::vector<float>();
    MTPLX_RETURN_IF_ERROR(model.Forward(
        state, std::span<const int32_t>(prompt.data() + r.begin, r.count), body, &out));
    recorder.AfterChunk(r.begin + r.count, state, out.hidden.data() + (r.count - 1) * h, h);
  }
  return std::move(out.logits);
}

}  // namespace

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
  if (request.prompt.empty()) return InvalidArgument("the prompt is empty");
  const int64_t context = model.config().max_position_embeddings;
  if (static_cast<int64_t>(request.prompt.size()) >= context)
    return OutOfRange(StrCat("the prompt has ", request.prompt.size(),
                             " tokens but the model's context window is ", context));
  GenerateResult result;
  result.stats.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  int64_t start = 0;
  auto state = model.NewState();
  if (request.prefix) {
    MTPLX_RETURN_IF_ERROR(CheckPromptExtends(*request.prefix, request.prompt));
    MTPLX_RETURN_IF_ERROR(request.prefix->RestoreTrunk(*state));
    start = request.prefix->size();
  }
  Timer timer;
  CheckpointRecorder recorder(request.checkpoint_at);
  MTPLX_ASSIGN_OR_RETURN(std::vector<float> logits,
                         Prefill(model, *state, request, start, recorder));
  result.stats.prefill_seconds = timer.Seconds();
  timer.Reset();
  const uint64_t faults_before = ReadProcessStats().major_faults;

  sample::CounterRng rng(request.seed);
  std::vector<int32_t> counts(model.config().vocab_size, 0);
  model::ForwardOptions step;
  model::ForwardOutput out;
  result.finish_reason = logits.empty() ? "cancelled" : "length";
  while (!logits.empty() && static_cast<int>(result.tokens.size()) < request.max_tokens) {
    const int32_t token = sample::Sample(logits, request.sampling, rng, counts);
    if (request.top_logprobs >= 0)
      result.logprobs.push_back(LogprobOf(logits, token, request.top_logprobs));
    result.tokens.push_back(token);
    ++counts[token];
    if (std::find(request.stop_ids.begin(), request.stop_ids.end(), token) !=
        request.stop_ids.end()) {
      result.finish_reason = "stop";
      break;
    }
    if (on_token && !on_token(token)) {
      result.finish_reason = "cancelled";
      break;
    }
    if (static_cast<int>(result.tokens.size()) >= request.max_tokens) break;
    if (state->position() + 1 >= context) break;
    if (request.Cancelled()) {
      result.finish_reason = "cancelled";
      break;
    }
    MTPLX_RETURN_IF_ERROR(model.Forward(*state, std::span<const int32_t>(&token, 1), step, &out));
    logits.swap(out.logits);
  }
  result.stats.completion_tokens = static_cast<int64_t>(result.tokens.size());
  result.stats.decode_seconds = timer.Seconds();
  const ProcessStats after = ReadProcessStats();
  result.stats.major_faults_during_decode = after.major_faults - faults_before;
  result.stats.resident_bytes = after.resident_bytes;
  result.capture = recorder.Finish(request.prompt, *state, nullptr, false);
  return result;
}

}  // namespace mtplx::engine
