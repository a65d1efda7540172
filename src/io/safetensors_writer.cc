#include "io/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/strings.h"

namespace mtplx::io {

SafetensorsWriter::~SafetensorsWriter() {
  if (file_) std::fclose(file_);
}

void SafetensorsWriter::Declare(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  MTPLX_CHECK(!file_, "Declare after Begin");
  MTPLX_CHECK(planned_.count(name) == 0, "tensor declared twice");
  uint64_t bytes = DTypeSize(dtype);
  for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
  planned_[name] = Planned{dtype, std::move(shape), total_, total_ + bytes};
  order_.push_back(name);
  total_ += bytes;
}

Status SafetensorsWriter::Begin() {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (const auto& name : order_) {
    const Planned& p = planned_[name];
    header[name] = {
        {"dtype", DTypeName(p.dtype)}, {"shape", p.shape}, {"data_offsets", {p.begin, p.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) return NotFound(StrCat(path_, ": cannot create (", std::strerror(errno), ")"));
  unsigned char length[8];
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
  if (std::fwrite(length, 1, 8, file_) != 8 || std::fwrite(text.data(), 1, n, file_) != n)
    return DataLoss(StrCat(path_, ": write failed (", std::strerror(errno), ")"));
  return Status::Ok();
}

Status SafetensorsWriter::Append(const void* data, uint64_t bytes) {
  MTPLX_CHECK(file_, "Append before Begin");
  if (written_ + bytes > total_) return Internal(StrCat(path_, ": more bytes than declared"));
  if (bytes == 0) return Status::Ok();  // empty tensors: `data` may be null, which fwrite forbids
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    return DataLoss(StrCat(path_, ": write failed (", std::strerror(errno), ")"));
  written_ += bytes;
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  if (!file_) return Internal(StrCat(path_, ": Finish before Begin"));
  if (written_ != total_)
    return Internal(StrCat(path_, ": wrote ", written_, " of ", total_, " declared bytes"));
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return DataLoss(StrCat(path_, ": close failed (", std::strerror(errno), ")"));
  return Status::Ok();
}

}  // namespace mtplx::io
