#include "chat/py_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mtplx::chat {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Whether a code point is printable for repr(); an approximation of Python's Unicode table that
// covers controls, format characters, separators, surrogates and private use.
bool IsPyPrintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) {
    return false;
  }
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFFF9 && c <= 0xFFFB) || c >= 0xFFFE) {
    return c >= 0x10000 && c < 0xE0000;  // planes 1-13 are mostly assigned and printable
  }
  return true;
}

void AppendHexEscape(char prefix, char32_t value, int digits, std::string* out) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "\\%c%0*x", prefix, digits, static_cast<unsigned>(value));
  out->append(buffer);
}

bool InSet(char32_t c, const std::vector<char32_t>& set) {
  for (char32_t member : set) {
    if (member == c) return true;
  }
  return false;
}

std::vector<char32_t> DecodeAll(std::string_view text) {
  std::vector<char32_t> out;
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
    out.push_back(c);
  }
  return out;
}

// Byte ranges of the whitespace-separated words, as str.split() sees them.
ByteRanges Words(std::string_view text) {
  ByteRanges words;
  size_t pos = 0;
  size_t start = std::string_view::npos;
  while (pos < text.size()) {
    char32_t c;
    const size_t len = DecodeUtf8(text, pos, &c);
    if (IsPySpace(c)) {
      if (start != std::string_view::npos) words.emplace_back(start, pos);
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = pos;
    }
    pos += len;
  }
  if (start != std::string_view::npos) words.emplace_back(start, text.size());
  return words;
}

}  // namespace

size_t DecodeUtf8(std::string_view text, size_t pos, char32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  }
  size_t length = 0;
  char32_t value = 0;
  char32_t minimum = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, value = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, value = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    *code_point = kReplacement;
    return 1;
  }
  if (pos + length > text.size()) {
    *code_point = kReplacement;
    return 1;
  }
  for (size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) {
      *code_point = kReplacement;
      return 1;
    }
    value = (value << 6) | (byte(pos + i) & 0x3F);
  }
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    *code_point = kReplacement;
    return 1;
  }
  *code_point = value;
  return length;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::vector<size_t> CodePointOffsets(std::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
  }
  offsets.push_back(text.size());
  return offsets;
}

size_t CodePointCount(std::string_view text) {
  if (IsAscii(text)) return text.size();
  return CodePointOffsets(text).size() - 1;
}

bool IsAscii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

bool IsPySpace(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::pair<size_t, size_t> PyStripRange(std::string_view text, const std::string* chars, bool left,
                                       bool right) {
  const std::vector<char32_t> set = chars ? DecodeAll(*chars) : std::vector<char32_t>();
  const auto strippable = [&](char32_t c) { return chars ? InSet(c, set) : IsPySpace(c); };
  const std::vector<size_t> offsets = CodePointOffsets(text);
  size_t first = 0;
  size_t last = offsets.size() - 1;  // index of the end offset
  char32_t c;
  if (left) {
    while (first < last && (DecodeUtf8(text, offsets[first], &c), strippable(c))) ++first;
  }
  if (right) {
    while (last > first && (DecodeUtf8(text, offsets[last - 1], &c), strippable(c))) --last;
  }
  return {offsets[first], offsets[last]};
}

ByteRanges PySplit(std::string_view text, const std::string* sep, long long maxsplit) {
  if (sep == nullptr) {
    ByteRanges words = Words(text);
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) return words;
    // The last piece runs from the next word to the end, keeping trailing whitespace.
    const size_t rest = words[maxsplit].first;
    words.resize(maxsplit);
    words.emplace_back(rest, text.size());
    return words;
  }
  ByteRanges pieces;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<long long>(pieces.size()) < maxsplit) {
    const size_t found = text.find(*sep, start);
    if (found == std::string_view::npos) break;
    pieces.emplace_back(start, found);
    start = found + sep->size();
  }
  pieces.emplace_back(start, text.size());
  return pieces;
}

ByteRanges PyRSplit(std::string_view text, const std::string* sep, long long maxsplit) {
  if (maxsplit < 0) return PySplit(text, sep, maxsplit);
  ByteRanges pieces;
  if (sep == nullptr) {
    const ByteRanges words = Words(text);
    if (static_cast<size_t>(maxsplit) + 1 >= words.size()) return words;
    const size_t keep = words.size() - maxsplit;
    pieces.emplace_back(0, words[keep - 1].second);
    // The leftover piece keeps its leading whitespace, as Python does.
    for (size_t i = keep; i < words.size(); ++i) pieces.push_back(words[i]);
    return pieces;
  }
  size_t end = text.size();
  ByteRanges reversed;
  while (static_cast<long long>(reversed.size()) < maxsplit && end >= sep->size()) {
    const size_t found = text.rfind(*sep, end - sep->size());
    if (found == std::string_view::npos) break;
    reversed.emplace_back(found + sep->size(), end);
    end = found;
  }
  pieces.emplace_back(0, end);
  pieces.insert(pieces.end(), reversed.rbegin(), reversed.rend());
  return pieces;
}

ByteRanges PySplitLines(std::string_view text) {
  ByteRanges lines;
  size_t start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t c;
    const size_t len = DecodeUtf8(text, pos, &c);
    const bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C ||
                          c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!is_break) {
      pos += len;
      continue;
    }
    lines.emplace_back(start, pos);
    pos += len;
    if (c == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < text.size()) lines.emplace_back(start, text.size());
  return lines;
}

std::string PyFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // Shortest round-trip digits in scientific form: "-d.ddde+XX".
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                    std::chars_format::scientific);
  const std::string_view sci(buffer, result.ptr - buffer);
  const size_t e = sci.find('e');
  std::string_view mantissa = sci.substr(0, e);
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  std::string out;
  if (!mantissa.empty() && mantissa[0] == '-') {
    out.push_back('-');
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  const int decpt = exponent + 1;  // digits d1 d2 ... with the point after position decpt
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (digits.size() > 1) out.append(".").append(digits.substr(1));
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (decpt <= 0) return out + "0." + std::string(-decpt, '0') + digits;
  if (static_cast<size_t>(decpt) >= digits.size()) {
    return out + digits + std::string(decpt - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, decpt) + "." + digits.substr(decpt);
}

std::string PyStringRepr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    const size_t len = DecodeUtf8(text, pos, &c);
    if (c == kReplacement && len == 1 && static_cast<unsigned char>(text[pos]) >= 0x80) {
      out.push_back(text[pos]);  // invalid byte: keep it as is
    } else if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (IsPyPrintable(c)) {
      out.append(text.substr(pos, len));
    } else if (c <= 0xFF) {
      AppendHexEscape('x', c, 2, &out);
    } else if (c <= 0xFFFF) {
      AppendHexEscape('u', c, 4, &out);
    } else {
      AppendHexEscape('U', c, 8, &out);
    }
    pos += len;
  }
  out.push_back(quote);
  return out;
}

void AppendJsonString(std::string_view text, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    const size_t len = DecodeUtf8(text, pos, &c);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
          AppendHexEscape('u', c, 4, out);
        } else if (!ensure_ascii || c < 0x80) {
          out->append(text.substr(pos, len));
        } else if (c <= 0xFFFF) {
          AppendHexEscape('u', c, 4, out);
        } else {
          const char32_t v = c - 0x10000;
          AppendHexEscape('u', 0xD800 + (v >> 10), 4, out);
          AppendHexEscape('u', 0xDC00 + (v & 0x3FF), 4, out);
        }
    }
    pos += len;
  }
  out->push_back('"');
}

std::string AsciiUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace mtplx::chat
