// Plain autoregressive generation: prefill, decode, stop tokens, stop strings, max tokens and a
// streaming callback. The prompt is prefilled as body + final token, the same partition the
// speculative path uses, so greedy outputs of both cannot diverge at near-ties.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/prefix.h"
#include "grammar/constraint.h"
#include "grammar/grammar.h"
#include "grammar/vocabulary.h"
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
// diverge at near-ties: rows [start, n - 1) cut at every multiple of kPrefillChunk and at every
// position in `cuts` (sorted), then the last row alone (its logits start decoding). n > start.
// Cuts are absolute positions, so a run restored from a prefix that ends at a cut continues
// with exactly the chunks of a cold run of the same prompt.
std::vector<RowRange> PrefillPartition(int64_t start, int64_t n,
                                       std::span<const int64_t> cuts = {});

// A token's log-probability and its best alternatives (natural log of the model's softmax,
// before any sampling transform).
struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0.0;
  std::vector<std::pair<int32_t, double>> top;  // best first
};

// `token`'s log-probability under `logits` and the `top` most likely tokens.
TokenLogprob LogprobOf(std::span<const float> logits, int32_t token, int top);

struct GenerateRequest {
  std::vector<int32_t> prompt;
  sample::SamplingParams sampling;
  uint64_t seed = 0;
  int max_tokens = 256;
  std::vector<int32_t> stop_ids;
  // Start from this cached prefix (not owned; the prompt must extend it): only the new prompt
  // tokens are prefilled.
  const PrefixState* prefix = nullptr;
  // Extra cuts of the prefill partition (turn boundaries), and the cuts at which to capture
  // checkpoints for a prefix cache (GenerateResult::capture); both sorted.
  std::vector<int64_t> prefill_cuts;
  std::vector<int64_t> checkpoint_at;
  // Set by another thread (Ctrl-C, a client that went away) to end generation early, between
  // prefill chunks or decode steps: finish_reason "cancelled", the tokens so far kept.
  const std::atomic<bool>* cancel = nullptr;
  // Log-probabilities of each generated token with this many alternatives (-1: none; plain
  // decoding only).
  int top_logprobs = -1;
  // Drafts may be cut when a batch is full (engine::Step): only when that cannot change the
  // output (greedy, or a seed nobody asked to reproduce).
  bool depth_may_vary = false;
  // Constrained decoding: every token sampled (drafts too) keeps the text a prefix of a
  // sentence of `grammar` over `vocabulary`'s bytes, and stop_ids may come only where the text
  // is complete; the reply ends ("stop") as soon as nothing may follow.
  std::shared_ptr<const grammar::Grammar> grammar;
  std::shared_ptr<const grammar::Vocabulary> vocabulary;
  // The grammar's mask oracle, shared with other requests of the same grammar (else one of its
  // own is made).
  std::shared_ptr<grammar::MaskOracle> oracle;
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
  std::optional<PrefixCapture> capture;  // when checkpoint_at named reachable cuts
  std::vector<TokenLogprob> logprobs;    // when top_logprobs >= 0
};

// Called with each new token; return false to stop (finish_reason "cancelled").
using TokenCallback = std::function<bool(int32_t token)>;

// The log-probability of every token but the first given the ones before it (one forward over
// all rows, in chunks), with `top` alternatives each.
Result<std::vector<TokenLogprob>> ScorePrompt(const model::Model& model,
                                              std::span<const int32_t> tokens, int top);

Result<GenerateResult> GeneratePlain(const model::Model& model, const GenerateRequest& request,
                                     const TokenCallback& on_token);

}  // namespace mtplx::engine
