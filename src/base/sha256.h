// SHA-256 (FIPS 180-4), for provenance records: model packs name the exact source files they
// were made from by digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/progress.h"
#include "base/status.h"

namespace mtplx {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view text) { Update(text.data(), text.size()); }
  // The digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
};

// Digest of a whole file, read in large blocks; `progress` (may be null) advances by bytes read.
Result<std::string> Sha256File(const std::string& path, ProgressBar* progress = nullptr);

}  // namespace mtplx
