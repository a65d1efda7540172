// Synthetic Qwen 3.5-style tokenizer files for test checkpoints (spec §6 and §10): a small
// byte-level BPE trained on built-in text, with the real pre-tokenizer, normalizer and the 33
// Qwen 3.5 added tokens, written as Hugging Face tokenizer.json / tokenizer_config.json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/added_tokens.h"

namespace mtplx::tokenizer {

// The Qwen 3.5 pre-tokenizer pattern (spec §6): Qwen3's plus \p{M} marks inside words.
inline constexpr std::string_view kQwen35SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|)"
    R"( ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr int32_t kQwenAddedTokenCount = 33;

struct SyntheticTokenizerOptions {
  // Id of <|endoftext|>, the first added token. Ids 0..255 are the byte tokens in byte order,
  // 256..base-1 are merged tokens, base..base+32 the added tokens. 960 gives the tiny test
  // models' 993 ids; 248044 gives Qwen 3.5's real id layout.
  int32_t added_token_base = 960;
  // Merges to learn; -1 means added_token_base - 256. Training stops early when the built-in
  // corpus runs out of pairs (after a few thousand merges); the ids left between the last
  // merged token and the base are filled with "<unused_ID>" tokens that no merge produces, so
  // Encode never emits them.
  int32_t max_merges = -1;
};

// The 33 Qwen 3.5 added tokens in spec order at base..base+32, with Qwen's special flags
// (<tool_call>, FIM, <think> and friends are not special).
std::vector<AddedToken> QwenAddedTokens(int32_t base);

// A tokenizer.json that both this library and Hugging Face tokenizers load and encode alike.
// Deterministic: the same options always give the same bytes.
Result<std::string> BuildSyntheticTokenizerJson(const SyntheticTokenizerOptions& options = {});

// A matching tokenizer_config.json: Qwen's ChatML chat template, eos "<|im_end|>",
// pad "<|endoftext|>", no bos.
std::string BuildSyntheticTokenizerConfigJson(const SyntheticTokenizerOptions& options = {});

// The chat template text used in the config (Qwen3's, verbatim).
std::string_view QwenChatTemplate();

}  // namespace mtplx::tokenizer
