// libFuzzer target for ParseSafetensorsHeader.
//
// Input: an optional first line "<decimal data-section size>\n", then the header JSON. Without
// that line the data section is as long as the input. A header the parser accepts must satisfy
// what SafetensorsFile::Get relies on: every tensor lies inside the data section, spans exactly
// shape x dtype bytes, and no two non-empty tensors overlap; anything else aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "io/safetensors.h"

namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Strips a leading "<digits>\n" and returns its value (saturating), else the text length.
uint64_t TakeDataSize(std::string_view& text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && i < 24 && text[i] >= '0' && text[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    value = value > (UINT64_MAX - digit) / 10 ? UINT64_MAX : value * 10 + digit;
    ++i;
  }
  if (i == 0 || i >= text.size() || text[i] != '\n') return text.size();
  text.remove_prefix(i + 1);
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const uint64_t data_size = TakeDataSize(text);
  const auto header = mtplx::io::ParseSafetensorsHeader(text, data_size, "fuzz.safetensors");
  if (!header.ok()) {
    Require(header.status().message().find("fuzz.safetensors") != std::string_view::npos);
    return 0;
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header->tensors) {
    Require(entry.begin <= entry.end && entry.end <= data_size);
    // Left to right the product stays below 2^62 until a zero dimension, then stays zero.
    unsigned __int128 bytes = mtplx::DTypeSize(entry.dtype);
    for (int64_t d : entry.shape) {
      Require(d >= 0);
      bytes *= static_cast<unsigned __int128>(d);
    }
    Require(bytes == entry.end - entry.begin);
    if (entry.end > entry.begin) ranges.emplace_back(entry.begin, entry.end);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) Require(ranges[i - 1].second <= ranges[i].first);
  return 0;
}
