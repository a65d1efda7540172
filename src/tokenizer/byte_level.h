// The GPT-2 byte-level alphabet: every byte maps to one printable code point so that BPE
// vocabularies can be stored as JSON text. Printable Latin-1 bytes map to themselves; the other
// 68 bytes (controls, space, 0x7F..0xA0, 0xAD) map to U+0100.. in byte order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mtplx::tokenizer {

// The code point that stands for a byte.
char32_t ByteToCodePoint(unsigned char byte);

// Raw bytes → byte-level text ("hi there" → "hiĠthere").
std::string BytesToByteLevel(std::string_view bytes);

// Byte-level text → raw bytes; nullopt when the text is not valid UTF-8 or holds a code point
// outside the 256-symbol alphabet (such tokens are not reachable through byte-level BPE).
std::optional<std::string> ByteLevelToBytes(std::string_view text);

}  // namespace mtplx::tokenizer
