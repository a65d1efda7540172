// Reads a Hugging Face tokenizer.json into plain data (no JSON types escape this module).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/added_tokens.h"

namespace mtplx::tokenizer {

// One regex split of the pre-tokenizer, applied with the "Isolated" behaviour.
struct SplitStep {
  std::string pattern;
  bool literal = false;  // a Split with {"String": ...} instead of {"Regex": ...}
};

// The parts of a byte-level BPE tokenizer.json that affect encoding and decoding.
struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;       // token text as written → id
  std::vector<std::pair<std::string, std::string>> merges;  // token texts, in rank order
  std::vector<AddedToken> added_tokens;
  bool nfc = false;                    // normalizer NFC (alone or inside a Sequence)
  std::vector<SplitStep> split_steps;  // applied in order, each to the pieces of the previous
  bool add_prefix_space = false;       // ByteLevel pre-tokenizer option
};

// Accepts model BPE (byte_fallback off, no dropout, no subword prefix/suffix), normalizer
// null/NFC/Sequence of those, pre-tokenizer Split(Isolated)/ByteLevel or a Sequence of them,
// and decoder ByteLevel. Anything else is kUnimplemented, malformed JSON kInvalidArgument.
// The post_processor is ignored: it only adds template tokens when asked for, and we never do.
Result<TokenizerSpec> ParseTokenizerJson(std::string_view json_text);

}  // namespace mtplx::tokenizer
