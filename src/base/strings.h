// Small string helpers (GCC 12 has no std::format).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace mtplx {

// StrCat("a", 1, 'b', 2.5) concatenates anything that streams.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// Printf-style formatting into a std::string.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::vector<std::string> StrSplit(std::string_view text, char sep);
std::string StrJoin(const std::vector<std::string>& parts, std::string_view sep);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);

// "[4, 128]" for a shape.
std::string ShapeString(const std::vector<int64_t>& shape);

// Human-readable byte count: "1.5 GiB".
std::string HumanBytes(uint64_t bytes);

// A size as people write it: "8G", "1.5GiB", "512M", "640k" (binary units; B, K, M, G, T with an
// optional "i" and "B"); a bare number is MiB. False for anything else (negative, empty, junk,
// beyond 2^62 bytes).
bool ParseByteSize(std::string_view text, uint64_t* bytes);

}  // namespace mtplx
