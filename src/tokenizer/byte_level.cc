#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {
namespace {

bool MapsToItself(unsigned byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
}

struct Alphabet {
  std::array<char32_t, 256> code_point_of_byte;
  // Every alphabet code point is below U+0144, so a flat table inverts the map.
  std::array<int16_t, 0x144> byte_of_code_point;
};

Alphabet BuildAlphabet() {
  Alphabet alphabet;
  alphabet.byte_of_code_point.fill(-1);
  char32_t next_shifted = 0x100;
  for (unsigned byte = 0; byte < 256; ++byte) {
    const char32_t cp = MapsToItself(byte) ? byte : next_shifted++;
    alphabet.code_point_of_byte[byte] = cp;
    alphabet.byte_of_code_point[cp] = static_cast<int16_t>(byte);
  }
  return alphabet;
}

const Alphabet& GetAlphabet() {
  static const Alphabet alphabet = BuildAlphabet();
  return alphabet;
}

// Decodes one code point of valid UTF-8 at text[pos] (length from ValidSequenceLength).
char32_t DecodeCodePoint(std::string_view text, size_t pos, size_t length) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
             (byte(3) & 0x3F);
  }
}

}  // namespace

char32_t ByteToCodePoint(unsigned char byte) { return GetAlphabet().code_point_of_byte[byte]; }

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) AppendCodePoint(ByteToCodePoint(static_cast<unsigned char>(c)), &out);
  return out;
}

std::optional<std::string> ByteLevelToBytes(std::string_view text) {
  const Alphabet& alphabet = GetAlphabet();
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = ValidSequenceLength(text, pos);
    if (length == 0) return std::nullopt;
    const char32_t cp = DecodeCodePoint(text, pos, length);
    if (cp >= alphabet.byte_of_code_point.size() || alphabet.byte_of_code_point[cp] < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(alphabet.byte_of_code_point[cp]));
    pos += length;
  }
  return out;
}

}  // namespace mtplx::tokenizer
