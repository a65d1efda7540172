// Tokenizers shared by the tokenizer tests, loaded once per test binary.
#pragma once

#include "tokenizer/tokenizer.h"

namespace mtplx::tokenizer::testing {

// The real Qwen3 tokenizer in tests/data/tokenizers/qwen3 (151,643 BPE ids + 26 added).
const Tokenizer& Qwen3Tokenizer();

// BuildSyntheticTokenizerJson({.added_token_base = 248044}), loaded (248,077 ids).
const Tokenizer& RealSizeSyntheticTokenizer();

}  // namespace mtplx::tokenizer::testing
