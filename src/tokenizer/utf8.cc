#include "tokenizer/utf8.h"

#include <cstdint>

#include "base/check.h"

namespace mtplx::tokenizer {
namespace {

// Valid ranges for the second byte depend on the lead byte (Unicode Table 3-7); later
// continuation bytes are always 0x80..0xBF.
struct LeadInfo {
  int length;  // 0 for a byte that cannot start a sequence
  uint8_t second_min;
  uint8_t second_max;
};

LeadInfo InfoForLead(uint8_t lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead < 0xC2) return {0, 0, 0};
  if (lead < 0xE0) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};  // excludes surrogates
  if (lead < 0xF0) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead < 0xF4) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};  // caps at U+10FFFF
  return {0, 0, 0};
}

bool IsContinuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// How many bytes from pos match a valid sequence prefix, and the sequence's full length.
size_t MatchingPrefix(std::string_view text, size_t pos, int* full_length) {
  const LeadInfo info = InfoForLead(static_cast<uint8_t>(text[pos]));
  *full_length = info.length;
  if (info.length <= 1) return info.length;
  size_t matched = 1;
  while (matched < static_cast<size_t>(info.length) && pos + matched < text.size()) {
    const uint8_t byte = static_cast<uint8_t>(text[pos + matched]);
    const bool ok =
        matched == 1 ? (byte >= info.second_min && byte <= info.second_max) : IsContinuation(byte);
    if (!ok) break;
    ++matched;
  }
  return matched;
}

}  // namespace

size_t ValidSequenceLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  int full_length = 0;
  const size_t matched = MatchingPrefix(text, pos, &full_length);
  return full_length > 0 && matched == static_cast<size_t>(full_length) ? matched : 0;
}

size_t MaximalSubpartLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  int full_length = 0;
  const size_t matched = MatchingPrefix(text, pos, &full_length);
  return matched == 0 ? 1 : matched;
}

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t length = ValidSequenceLength(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

std::string ToValidUtf8Lossy(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = ValidSequenceLength(text, pos);
    if (length > 0) {
      out.append(text.substr(pos, length));
      pos += length;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += MaximalSubpartLength(text, pos);
    }
  }
  return out;
}

size_t IncompleteTailLength(std::string_view text) {
  // A sequence is at most 4 bytes, so only a lead byte among the last 3 can be incomplete.
  const size_t lookback = text.size() < 3 ? text.size() : 3;
  for (size_t back = 1; back <= lookback; ++back) {
    const size_t pos = text.size() - back;
    if (IsContinuation(static_cast<uint8_t>(text[pos]))) continue;
    int full_length = 0;
    const size_t matched = MatchingPrefix(text, pos, &full_length);
    const bool incomplete = full_length > 1 && matched == back && back < size_t(full_length);
    return incomplete ? back : 0;
  }
  return 0;
}

void AppendCodePoint(char32_t cp, std::string* out) {
  MTPLX_CHECK(cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF), "invalid code point");
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace mtplx::tokenizer
