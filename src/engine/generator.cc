#include "engine/generator.h"

#include <algorithm>

#include "base/process_stats.h"
#include "base/strings.h"
#include "base/timer.h"

namespace mtplx::engine {
namespace {

// Prefills the prompt tokens from `start` up to the last in chunks, then runs the last one alone
// and returns its logits (none when the request was cancelled on the way).
Result<std::vector<float>> Prefill(const model::Model& model, state::SequenceState& state,
                                   const GenerateRequest& request, int64_t start) {
  const std::vector<int32_t>& prompt = request.prompt;
  model::ForwardOptions body;
  body.all_logits = false;
  model::ForwardOutput out;
  for (const RowRange& r : PrefillPartition(start, static_cast<int64_t>(prompt.size()))) {
    if (request.Cancelled()) return std::vector<float>();
    MTPLX_RETURN_IF_ERROR(model.Forward(
        state, std::span<const int32_t>(prompt.data() + r.begin, r.count), body, &out));
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

std::vector<RowRange> PrefillPartition(int64_t start, int64_t n) {
  std::vector<RowRange> parts = ChunkRows(start, n - 1);
  parts.push_back({n - 1, 1});
  return parts;
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
    state->Restore(request.prefix->trunk);
    start = static_cast<int64_t>(request.prefix->tokens.size());
  }
  Timer timer;
  MTPLX_ASSIGN_OR_RETURN(std::vector<float> logits, Prefill(model, *state, request, start));
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
  return result;
}

}  // namespace mtplx::engine
