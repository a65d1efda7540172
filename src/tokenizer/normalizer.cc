#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "base/check.h"
#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {
namespace {

// Code points below U+0300 are NFC and never compose with a predecessor; their UTF-8 lead
// bytes are all below 0xCC. Text without such a byte is therefore already NFC.
constexpr uint8_t kFirstLeadAtOrAbove0300 = 0xCC;

bool MayNeedNormalization(std::string_view text) {
  for (const char c : text) {
    if (static_cast<uint8_t>(c) >= kFirstLeadAtOrAbove0300) return true;
  }
  return false;
}

// NFC of a valid UTF-8 run, appended to *out.
void AppendNfcOfValidRun(std::string_view run, std::string* out) {
  if (!MayNeedNormalization(run)) {
    out->append(run);
    return;
  }
  utf8proc_uint8_t* normalized = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                   static_cast<utf8proc_ssize_t>(run.size()), &normalized,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  // The run was validated, so only allocation failure can get here.
  MTPLX_CHECK(length >= 0, "utf8proc_map failed on valid UTF-8");
  out->append(reinterpret_cast<const char*>(normalized), static_cast<size_t>(length));
  std::free(normalized);
}

// Length of the longest valid UTF-8 prefix of text[pos..].
size_t ValidRunLength(std::string_view text, size_t pos) {
  size_t end = pos;
  while (end < text.size()) {
    const size_t length = ValidSequenceLength(text, end);
    if (length == 0) break;
    end += length;
  }
  return end - pos;
}

}  // namespace

bool NormalizeNfc(std::string_view text, std::string* out) {
  if (!MayNeedNormalization(text)) return false;
  std::string result;
  result.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t valid = ValidRunLength(text, pos);
    AppendNfcOfValidRun(text.substr(pos, valid), &result);
    pos += valid;
    if (pos < text.size()) {
      const size_t invalid = MaximalSubpartLength(text, pos);
      result.append(text.substr(pos, invalid));
      pos += invalid;
    }
  }
  if (result == text) return false;
  *out = std::move(result);
  return true;
}

}  // namespace mtplx::tokenizer
