// Pre-tokenization by regular expression, with Hugging Face's "Isolated" split behaviour: every
// match is a piece and so is every stretch of text between matches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct pcre2_real_code_8;

namespace mtplx::tokenizer {

// The GPT-2 pattern that a ByteLevel pre-tokenizer with use_regex=true applies.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A compiled PCRE2 pattern (UTF + UCP, JIT when available). Immutable after construction and
// safe to use from several threads at once.
class RegexSplitter {
 public:
  // Compiles a pattern written for Hugging Face tokenizers (Oniguruma syntax, which PCRE2
  // accepts for the patterns in use). literal=true matches the text verbatim.
  static Result<RegexSplitter> Compile(std::string_view pattern, bool literal = false);

  RegexSplitter(RegexSplitter&& other) noexcept;
  RegexSplitter& operator=(RegexSplitter&& other) noexcept;
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;
  ~RegexSplitter();

  // Appends the pieces of text to *pieces, in order; they cover text exactly. Invalid UTF-8 is
  // never matched, so it ends up in the pieces between matches.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  explicit RegexSplitter(pcre2_real_code_8* code) : code_(code) {}

  pcre2_real_code_8* code_ = nullptr;
};

}  // namespace mtplx::tokenizer
