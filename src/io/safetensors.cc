#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

using nlohmann::json;

Result<TensorEntry> ParseEntry(const std::string& name, const json& value, uint64_t data_size,
                               const std::string& label) {
  auto bad = [&](const std::string& why) {
    return DataLoss(StrCat(label, ": tensor '", name, "': ", why));
  };
  if (!value.is_object()) return bad("header entry is not an object");
  const auto dtype_it = value.find("dtype");
  const auto shape_it = value.find("shape");
  const auto offsets_it = value.find("data_offsets");
  if (dtype_it == value.end() || !dtype_it->is_string()) return bad("missing dtype");
  if (shape_it == value.end() || !shape_it->is_array()) return bad("missing shape");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    return bad("data_offsets must be [begin, end]");
  TensorEntry entry;
  const auto dtype = ParseDType(dtype_it->get<std::string>());
  if (!dtype) return bad(StrCat("unsupported dtype '", dtype_it->get<std::string>(), "'"));
  entry.dtype = *dtype;
  uint64_t elements = 1;
  for (const auto& dim : *shape_it) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0) return bad("shape has a bad dimension");
    const auto d = dim.get<uint64_t>();
    if (d != 0 && elements > (1ull << 62) / d) return bad("shape is too large");
    elements *= d;
    entry.shape.push_back(static_cast<int64_t>(d));
  }
  // The byte count must not wrap around (2^62 F32 elements would "need" 0 bytes).
  if (elements > UINT64_MAX / DTypeSize(entry.dtype)) return bad("shape is too large");
  for (const auto& off : *offsets_it)
    if (!off.is_number_unsigned() && !(off.is_number_integer() && off.get<int64_t>() >= 0))
      return bad("data_offsets must be non-negative integers");
  entry.begin = (*offsets_it)[0].get<uint64_t>();
  entry.end = (*offsets_it)[1].get<uint64_t>();
  if (entry.end < entry.begin) return bad("data_offsets end before begin");
  if (entry.end > data_size)
    return bad(StrCat("data_offsets [", entry.begin, ", ", entry.end, "] run past the data (",
                      data_size, " bytes); the file is truncated or corrupt"));
  if (entry.end - entry.begin != elements * DTypeSize(entry.dtype))
    return bad(StrCat("shape ", ShapeString(entry.shape), " of ", DTypeName(entry.dtype), " needs ",
                      elements * DTypeSize(entry.dtype), " bytes but data_offsets span ",
                      entry.end - entry.begin));
  return entry;
}

Status CheckNoOverlap(const SafetensorsHeader& header, const std::string& label) {
  std::vector<std::pair<const std::string*, const TensorEntry*>> order;
  for (const auto& [name, entry] : header.tensors)
    if (entry.end > entry.begin) order.emplace_back(&name, &entry);  // empty tensors own no bytes
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
  const std::string* widest = nullptr;
  uint64_t covered_to = 0;
  for (const auto& [name, entry] : order) {
    if (widest && entry->begin < covered_to)
      return DataLoss(
          StrCat(label, ": tensors '", *widest, "' and '", *name, "' overlap in the data section"));
    if (entry->end > covered_to) {
      covered_to = entry->end;
      widest = name;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view text, uint64_t data_size,
                                                 const std::string& label) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return DataLoss(StrCat(label, ": header is not valid JSON"));
  if (!root.is_object()) return DataLoss(StrCat(label, ": header is not a JSON object"));
  SafetensorsHeader header;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object())
        return DataLoss(StrCat(label, ": __metadata__ is not an object"));
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        if (m.value().is_string()) header.metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    MTPLX_ASSIGN_OR_RETURN(TensorEntry entry, ParseEntry(it.key(), it.value(), data_size, label));
    header.tensors.emplace(it.key(), std::move(entry));
  }
  MTPLX_RETURN_IF_ERROR(CheckNoOverlap(header, label));
  return header;
}

Result<SafetensorsHeader> SafetensorsFile::ReadHeader(const std::string& path,
                                                      uint64_t* data_offset, uint64_t* data_size) {
  MTPLX_ASSIGN_OR_RETURN(const uint64_t file_size, FileSize(path));
  if (file_size < 8) return DataLoss(StrCat(path, ": too short to be a safetensors file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(StrCat(path, ": cannot open"));
  unsigned char length_bytes[8];
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];
  if (header_size > kMaxHeaderBytes || header_size > file_size - 8)
    return DataLoss(StrCat(path, ": header length ", header_size,
                           " is larger than the file allows; not a safetensors file or truncated"));
  std::string text(header_size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_size));
  if (!in) return DataLoss(StrCat(path, ": cannot read header"));
  *data_offset = 8 + header_size;
  *data_size = file_size - *data_offset;
  return ParseSafetensorsHeader(text, *data_size, path);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path,
                                                               ProgressBar* progress) {
  uint64_t data_offset = 0, data_size = 0;
  MTPLX_ASSIGN_OR_RETURN(SafetensorsHeader header, ReadHeader(path, &data_offset, &data_size));
  auto file = std::make_unique<SafetensorsFile>();
  file->path_ = path;
  file->header_ = std::move(header);
  MTPLX_ASSIGN_OR_RETURN(file->data_,
                         ResidentBuffer::ReadFile(path, data_offset, data_size, progress));
  return file;
}

Result<TensorView> SafetensorsFile::Get(const std::string& name) const {
  const auto it = header_.tensors.find(name);
  if (it == header_.tensors.end()) return NotFound(StrCat(path_, ": no tensor '", name, "'"));
  TensorView view;
  view.dtype = it->second.dtype;
  view.shape = it->second.shape;
  view.data = data_.data() + it->second.begin;
  return view;
}

uint8_t* SafetensorsFile::MutableData(const std::string& name) {
  const auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : data_.data() + it->second.begin;
}

}  // namespace mtplx::io
