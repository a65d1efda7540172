#include "chat/py_text.h"

#include <algorithm>
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
  size_t count = 0;
  for (size_t pos = 0; pos < text.size(); ++count) {
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
  }
  return count;
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

namespace {

// The start of the code point that ends at `end` (> 0), as DecodeUtf8 reads it forwards.
size_t PreviousCodePoint(std::string_view text, size_t end) {
  size_t start = end - 1;
  for (int i = 0; i < 3 && start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80;
       ++i) {
    --start;
  }
  char32_t c;
  // A malformed tail decodes differently forwards; then the last byte stands alone.
  return start + DecodeUtf8(text, start, &c) == end ? start : end - 1;
}

}  // namespace

std::pair<size_t, size_t> PyStripRange(std::string_view text, const std::string* chars, bool left,
                                       bool right) {
  const std::vector<char32_t> set = chars ? DecodeAll(*chars) : std::vector<char32_t>();
  const auto strippable = [&](char32_t c) { return chars ? InSet(c, set) : IsPySpace(c); };
  size_t begin = 0;
  size_t end = text.size();
  char32_t c;
  while (left && begin < end) {
    const size_t length = DecodeUtf8(text, begin, &c);
    if (!strippable(c)) break;
    begin += length;
  }
  while (right && end > begin) {
    const size_t start = std::max(PreviousCodePoint(text, end), begin);
    DecodeUtf8(text, start, &c);
    if (!strippable(c)) break;
    end = start;
  }
  return {begin, end};
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
  const auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
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
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
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

namespace {

// Pairs laid out as alternating upper, lower code points in [first, last].
bool InPairedRange(char32_t c, char32_t first, char32_t last) { return c >= first && c <= last; }

char32_t LowerOfPaired(char32_t c, bool upper_is_even) {
  const bool is_upper = ((c & 1) == 0) == upper_is_even;
  return is_upper ? c + 1 : c;
}

char32_t UpperOfPaired(char32_t c, bool upper_is_even) {
  const bool is_upper = ((c & 1) == 0) == upper_is_even;
  return is_upper ? c : c - 1;
}

struct PairedRange {
  char32_t first;
  char32_t last;
  bool upper_is_even;
};

constexpr PairedRange kPairedRanges[] = {
    {0x100, 0x12F, true},  {0x132, 0x137, true},   {0x139, 0x148, false},  {0x14A, 0x177, true},
    {0x179, 0x17E, false}, {0x460, 0x481, true},   {0x48A, 0x4BF, true},   {0x4C1, 0x4CE, false},
    {0x4D0, 0x52F, true},  {0x1E00, 0x1E95, true}, {0x1EA0, 0x1EFF, true},
};

const PairedRange* FindPaired(char32_t c) {
  for (const PairedRange& range : kPairedRanges) {
    if (InPairedRange(c, range.first, range.last)) return &range;
  }
  return nullptr;
}

// Offset blocks: [first, last] upper case letters whose lower case is c + delta.
struct OffsetRange {
  char32_t first;
  char32_t last;
  char32_t delta;
};

constexpr OffsetRange kOffsetRanges[] = {
    {'A', 'Z', 32},     {0xC0, 0xD6, 32},   {0xD8, 0xDE, 32},     {0x391, 0x3A1, 32},
    {0x3A3, 0x3AB, 32}, {0x388, 0x38A, 37}, {0x38E, 0x38F, 63},   {0x410, 0x42F, 32},
    {0x400, 0x40F, 80}, {0x531, 0x556, 48}, {0xFF21, 0xFF3A, 32},
};

char32_t SimpleLower(char32_t c) {
  for (const OffsetRange& range : kOffsetRanges) {
    if (c >= range.first && c <= range.last) return c + range.delta;
  }
  if (const PairedRange* range = FindPaired(c)) return LowerOfPaired(c, range->upper_is_even);
  switch (c) {
    case 0x178:
      return 0xFF;
    case 0x386:
      return 0x3AC;
    case 0x38C:
      return 0x3CC;
    case 0x4C0:
      return 0x4CF;
    case 0x1E9E:
      return 0xDF;
    default:
      return c;
  }
}

char32_t SimpleUpper(char32_t c) {
  for (const OffsetRange& range : kOffsetRanges) {
    if (c >= range.first + range.delta && c <= range.last + range.delta) return c - range.delta;
  }
  if (const PairedRange* range = FindPaired(c)) return UpperOfPaired(c, range->upper_is_even);
  switch (c) {
    case 0xFF:
      return 0x178;
    case 0xB5:
      return 0x39C;
    case 0x131:
      return 'I';
    case 0x17F:
      return 'S';
    case 0x3C2:
      return 0x3A3;
    case 0x3AC:
      return 0x386;
    case 0x3CC:
      return 0x38C;
    case 0x4CF:
      return 0x4C0;
    default:
      return c;
  }
}

// The case mapping of one code point; `final_sigma` selects ς for a word-final Σ.
void AppendMapped(char32_t c, bool upper, bool final_sigma, std::string* out) {
  if (upper && c == 0xDF) {
    out->append("SS");
  } else if (upper && c == 0x149) {
    out->append("\u02BCN");
  } else if (upper) {
    AppendUtf8(SimpleUpper(c), out);
  } else if (c == 0x130) {
    out->append("i\u0307");
  } else {
    AppendUtf8(c == 0x3A3 && final_sigma ? 0x3C2 : SimpleLower(c), out);
  }
}

}  // namespace

bool IsCased(char32_t c) { return SimpleUpper(c) != c || SimpleLower(c) != c || c == 0xDF; }
bool IsLowerCase(char32_t c) { return SimpleUpper(c) != c || c == 0xDF; }
bool IsUpperCase(char32_t c) { return SimpleLower(c) != c; }

MarkedString PyCaseMap(const MarkedString& text, CaseMode mode) {
  const std::string& source = text.text();
  const std::vector<size_t> offsets = CodePointOffsets(source);
  std::vector<char32_t> code_points(offsets.size() - 1);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) DecodeUtf8(source, offsets[i], &code_points[i]);
  MarkedString out;
  bool previous_cased = false;
  for (size_t i = 0; i < code_points.size(); ++i) {
    const char32_t c = code_points[i];
    bool upper = false;
    switch (mode) {
      case CaseMode::kUpper:
        upper = true;
        break;
      case CaseMode::kLower:
        upper = false;
        break;
      case CaseMode::kTitle:
        upper = !previous_cased;
        break;
      case CaseMode::kCapitalize:
        upper = i == 0;
        break;
      case CaseMode::kSwap:
        upper = IsLowerCase(c);
        break;
      case CaseMode::kJinjaTitle:
        upper = i == 0 || IsPySpace(code_points[i - 1]) ||
                std::u32string_view(U"-({[<").find(code_points[i - 1]) != std::u32string_view::npos;
        break;
    }
    const bool final_sigma = i > 0 && IsCased(code_points[i - 1]) &&
                             (i + 1 == code_points.size() || !IsCased(code_points[i + 1]));
    std::string mapped;
    if (c == kReplacement && offsets[i + 1] - offsets[i] == 1) {
      mapped = source.substr(offsets[i], 1);  // an invalid byte stays as it is
    } else {
      AppendMapped(c, upper, final_sigma, &mapped);
    }
    out.Append(mapped, text.Substr(offsets[i], offsets[i + 1]).AnyUser());
    previous_cased = IsCased(c);
  }
  return out;
}

std::string PyLower(std::string_view text) {
  return PyCaseMap(MarkedString(std::string(text)), CaseMode::kLower).text();
}

}  // namespace mtplx::chat
