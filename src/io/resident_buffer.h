// Memory that holds one resident image of checkpoint data. It is anonymous memory, filled by
// read(2), so the kernel never evicts it to re-read from disk (plain file mappings are dropped
// under memory pressure and decode would then fault pages back in); with lock=true it is also
// mlock'ed when the limit allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/progress.h"
#include "base/status.h"

namespace mtplx::io {

class ResidentBuffer {
 public:
  ResidentBuffer() = default;
  ~ResidentBuffer();
  ResidentBuffer(ResidentBuffer&& other) noexcept;
  ResidentBuffer& operator=(ResidentBuffer&& other) noexcept;
  ResidentBuffer(const ResidentBuffer&) = delete;
  ResidentBuffer& operator=(const ResidentBuffer&) = delete;

  static Result<ResidentBuffer> Allocate(size_t size);
  // Reads [offset, offset + size) of `path` into a new buffer.
  static Result<ResidentBuffer> ReadFile(const std::string& path, uint64_t offset, size_t size,
                                         ProgressBar* progress);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool locked() const { return locked_; }
  // Tries to mlock the buffer; returns false (and leaves it unlocked) when not permitted.
  bool Lock();

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
  bool locked_ = false;
};

}  // namespace mtplx::io
