// Python text semantics the templates depend on: code-point indexing, str.isspace, str.strip,
// str.split, repr() of floats and strings, and json.dumps string escaping.
//
// Python strings are sequences of code points, so len("héllo") is 5 and "héllo"[1] is "é". Our
// strings are UTF-8 bytes; these helpers translate. Invalid UTF-8 (possible only in template text,
// since JSON input is validated) counts one code point per bad byte, which never fails.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/marked_string.h"

namespace mtplx::chat {

// Decodes the code point at `pos`; returns its byte length (>= 1). Bad bytes decode as U+FFFD.
size_t DecodeUtf8(std::string_view text, size_t pos, char32_t* code_point);
void AppendUtf8(char32_t code_point, std::string* out);

// Byte offset of every code point, plus text.size() at the end.
std::vector<size_t> CodePointOffsets(std::string_view text);
size_t CodePointCount(std::string_view text);
bool IsAscii(std::string_view text);

// Python's str.isspace() for one code point.
bool IsPySpace(char32_t code_point);

// The byte range [first, second) that str.strip() keeps. With `chars` (strip(chars)), strips the
// code points listed in chars instead of whitespace.
std::pair<size_t, size_t> PyStripRange(std::string_view text, const std::string* chars, bool left,
                                       bool right);

using ByteRanges = std::vector<std::pair<size_t, size_t>>;
// str.split(sep, maxsplit) and str.split() (sep == nullptr) as byte ranges of the pieces.
ByteRanges PySplit(std::string_view text, const std::string* sep, long long maxsplit);
ByteRanges PyRSplit(std::string_view text, const std::string* sep, long long maxsplit);
// str.splitlines() without keepends.
ByteRanges PySplitLines(std::string_view text);

// repr(float) / str(float): "1.0", "0.1", "1e-05", "1e+16", "inf", "nan".
std::string PyFloatRepr(double value);
// repr(str): 'it\'s' is written "it's"; control and unprintable characters are escaped.
std::string PyStringRepr(std::string_view text);
// json.dumps(str): quoted, escaping '"', '\\' and controls; ensure_ascii escapes non-ASCII too.
void AppendJsonString(std::string_view text, bool ensure_ascii, std::string* out);

// Python's str.upper / lower / title / capitalize. Covered: Latin (Basic, Latin-1, Extended-A,
// Extended Additional), Greek (with final sigma), Cyrillic, Armenian and fullwidth Latin, plus
// the multi-character cases ß→SS and İ→i̇. Other scripts keep their case.
// kJinjaTitle is Jinja's |title: words start after "-", whitespace and opening brackets.
enum class CaseMode { kUpper, kLower, kTitle, kCapitalize, kSwap, kJinjaTitle };
MarkedString PyCaseMap(const MarkedString& text, CaseMode mode);
std::string PyLower(std::string_view text);
// Whether the code point has a case (what str.title and str.islower look at).
bool IsCased(char32_t code_point);
bool IsLowerCase(char32_t code_point);
bool IsUpperCase(char32_t code_point);

}  // namespace mtplx::chat
