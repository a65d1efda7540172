// Plain autoregressive generation: prefill, decode, stop tokens, stop strings, max tokens and a
// streaming callback. The prompt is prefilled as body + final token, the same partition the
// speculative path uses, so greedy outputs of both cannot diverge at near-ties.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/prefix.h"
#include "model/model.h"
#include "sample/sampler.h"

namespace mtplx::engine {

// Prompt rows per Forward call while prefilling.
inline constexpr int64_t kPrefillChunk = 512;

// A run of consecutive rows [begin, begin + count).
struct RowRange {
  int64_t begin = 0;
  int64_t count = 0;
};

// Rows [begin, end) cut into chunks of kPrefillChunk.
std::vector<RowRange> ChunkRows(int64_t begin, int64_t end);

// The prefill partition plain and speculative generation share, so that greedy outputs cannot
// diverge at near-ties: rows [start, n - 1) in chunks, then the last row alone (its logits start
// decoding). n > start.
std::vector<RowRange> PrefillPartition(int64_t start, int64_t n);

struct GenerateRequest {
  std::vector<int32_t> prompt;
  sample::SamplingParams sampling;
  uint64_t seed = 0;
  int max_tokens = 256;
  std::vector<int32_t> stop_ids;
  // Start from this cached prefix (not owned; the prompt must extend it): only the new prompt
  // tokens are prefilled.
  const PrefixState* prefix = nullptr;
  // Set by another thread (Ctrl-C, a client that went away) to end generation early, between
  // prefill chunks or decode steps: finish_reason "cancelled", the tokens so far kept.
  const std::atomic<bool>* cancel = nullptr;
  bool Cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  uint64_t major_faults_during_decode = 0;  // page faults that read from disk: should be 0
  uint64_t resident_bytes = 0;              // process RSS at the end
  double DecodeTokensPerSecond() const;
  double PrefillTokensPerSecond() const;
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string finish_reason;  // "stop" | "length" | "cancelled"
  GenerateStats stats;
};

// Called with each new token; return false to stop (finish_reason "cancelled").
using TokenCallback = std::function<bool(int32_t token)>;

Result<GenerateResult> GeneratePlain(const model::Model& model, const GenerateRequest& request,
                                     const TokenCallback& on_token);

}  // namespace mtplx::engine
