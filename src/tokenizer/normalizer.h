// Unicode normalization applied before pre-tokenization (Qwen tokenizers use NFC).
#pragma once

#include <string>
#include <string_view>

namespace mtplx::tokenizer {

// NFC-normalizes text into *out and returns true, or returns false (leaving *out untouched)
// when text is already in NFC, which is the common case and costs one scan.
//
// Invalid UTF-8 cannot reach Hugging Face tokenizers (its API takes Rust/Python strings), so
// there is no reference behaviour. We keep the bytes: each maximal valid run is normalized on
// its own and invalid bytes pass through unchanged, so the byte-level encoder still round-trips
// them exactly.
bool NormalizeNfc(std::string_view text, std::string* out);

}  // namespace mtplx::tokenizer
