#include "base/strings.h"

#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace mtplx {

std::string StrFormat(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(size > 0 ? size : 0, '\0');
  if (size > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

std::vector<std::string> StrSplit(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string StrJoin(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? StrFormat("%llu B", static_cast<unsigned long long>(bytes))
                   : StrFormat("%.1f %s", value, units[unit]);
}

bool ParseByteSize(std::string_view text, uint64_t* bytes) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t digits = 0;
  bool dot = false;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !dot))) {
    dot = dot || text[digits] == '.';
    ++digits;
  }
  if (digits == 0 || (digits == 1 && dot)) return false;
  const double number = std::strtod(std::string(text.substr(0, digits)).c_str(), nullptr);
  std::string unit(text.substr(digits));
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "MB", "MIB"
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();  // "MI"
  double scale = 0;
  if (unit.empty()) {
    scale = 1024.0 * 1024.0;  // a bare number is MiB
  } else if (unit.size() == 1) {
    const std::string_view units = "BKMGT";
    const size_t power = units.find(unit[0]);
    if (power == std::string_view::npos) return false;
    scale = std::pow(1024.0, static_cast<double>(power));
  } else {
    return false;
  }
  const double value = number * scale;
  if (!(value >= 0) || value > 4.6e18) return false;
  *bytes = static_cast<uint64_t>(value);
  return true;
}

}  // namespace mtplx
