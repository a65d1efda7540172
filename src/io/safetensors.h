// Reading safetensors files: an 8-byte little-endian header length, a JSON header mapping tensor
// names to {dtype, shape, data_offsets}, then the data section. Every offset, size and dtype is
// validated before use; a bad file yields a Status naming the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "io/resident_buffer.h"
#include "tensor/tensor_view.h"

namespace mtplx::io {

struct TensorEntry {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets relative to the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, TensorEntry> tensors;
  std::map<std::string, std::string> metadata;
};

// Largest header we accept (real checkpoints stay far below this).
inline constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// Parses and validates a header against a data section of `data_size` bytes. `label` names the
// file in error messages.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view json, uint64_t data_size,
                                                 const std::string& label);

class SafetensorsFile {
 public:
  // Reads the header and the whole data section into resident memory.
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path,
                                                       ProgressBar* progress);
  // Reads only the header (for inspection and planning).
  static Result<SafetensorsHeader> ReadHeader(const std::string& path, uint64_t* data_offset,
                                              uint64_t* data_size);

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  bool Has(const std::string& name) const { return header_.tensors.count(name) > 0; }
  // A view of a tensor; NotFound names the file when absent.
  Result<TensorView> Get(const std::string& name) const;
  // Writable pointer to a tensor's bytes (used to permute rows in place at load time).
  uint8_t* MutableData(const std::string& name);
  uint64_t resident_bytes() const { return data_.size(); }
  ResidentBuffer& buffer() { return data_; }

 private:
  std::string path_;
  SafetensorsHeader header_;
  ResidentBuffer data_;
};

}  // namespace mtplx::io
