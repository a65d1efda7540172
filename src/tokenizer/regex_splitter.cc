#include "tokenizer/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <utility>

#include "base/check.h"
#include "base/strings.h"
#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {
namespace {

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

std::string ErrorMessage(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) return StrCat("error ", code);
  return reinterpret_cast<const char*>(buffer);
}

// Byte length of the character at pos, or 1 for an invalid byte.
size_t CharLength(std::string_view text, size_t pos) {
  const size_t length = ValidSequenceLength(text, pos);
  return length == 0 ? 1 : length;
}

// Runs one match from start. Returns false when there is no further match; on success sets
// [*match_start, *match_end). If the JIT or interpreter gives up on a pathological input, the
// next character is reported as a one-character match so that splitting always terminates.
bool NextMatch(const pcre2_code* code, pcre2_match_data* data, std::string_view text, size_t start,
               size_t* match_start, size_t* match_end) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(code, subject, text.size(), start, 0, data, nullptr);
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_JIT, data, nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    *match_start = start;
    *match_end = start + CharLength(text, start);
    return true;
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
  *match_start = ovector[0];
  *match_end = ovector[1];
  return true;
}

}  // namespace

Result<RegexSplitter> RegexSplitter::Compile(std::string_view pattern, bool literal) {
  // PCRE2 rejects UCP together with LITERAL; a literal has no character classes anyway.
  const uint32_t options =
      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return InvalidArgument(StrCat("cannot compile split pattern at offset ", error_offset, ": ",
                                  ErrorMessage(error_code)));
  }
  // JIT is an optimization only; without it (unsupported CPU, no executable memory) the
  // interpreter gives the same matches.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return RegexSplitter(code);
}

RegexSplitter::RegexSplitter(RegexSplitter&& other) noexcept
    : code_(std::exchange(other.code_, nullptr)) {}

RegexSplitter& RegexSplitter::operator=(RegexSplitter&& other) noexcept {
  if (this != &other) {
    pcre2_code_free(code_);
    code_ = std::exchange(other.code_, nullptr);
  }
  return *this;
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(code_); }

void RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  MatchData data(pcre2_match_data_create_from_pattern(code_, nullptr));
  MTPLX_CHECK(data != nullptr, "pcre2_match_data_create_from_pattern failed");
  size_t emitted = 0;  // text before this offset is already in *pieces
  size_t start = 0;
  size_t match_start = 0;
  size_t match_end = 0;
  while (start < text.size() &&
         NextMatch(code_, data.get(), text, start, &match_start, &match_end)) {
    if (match_end == match_start) {
      // Empty matches produce no piece (as in Hugging Face); step over one character.
      start = match_start + CharLength(text, match_start);
      continue;
    }
    if (match_start > emitted) pieces->push_back(text.substr(emitted, match_start - emitted));
    pieces->push_back(text.substr(match_start, match_end - match_start));
    emitted = start = match_end;
  }
  if (emitted < text.size()) pieces->push_back(text.substr(emitted));
}

}  // namespace mtplx::tokenizer
