// Streaming safetensors writer: declare every tensor first, then write their bytes in the
// declared order. Memory use stays at one tensor (or one row block) at a time, so multi-GB
// checkpoints can be written on a small machine.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace mtplx::io {

class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(std::string path) : path_(std::move(path)) {}
  ~SafetensorsWriter();

  void Declare(const std::string& name, DType dtype, std::vector<int64_t> shape);
  void SetMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Writes the header; after this, Append the tensors' bytes in declaration order.
  Status Begin();
  // Appends bytes of the current tensor (may be called several times per tensor).
  Status Append(const void* data, uint64_t bytes);
  Status Finish();

  uint64_t data_bytes() const { return total_; }
  const std::vector<std::string>& names() const { return order_; }

 private:
  struct Planned {
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin;
    uint64_t end;
  };
  std::string path_;
  std::vector<std::string> order_;
  std::map<std::string, Planned> planned_;
  std::map<std::string, std::string> metadata_;
  uint64_t total_ = 0;
  uint64_t written_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace mtplx::io
