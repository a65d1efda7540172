#include "pack/fp16.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/float16.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "io/runtime_contract.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "pack/runtime_manifest.h"
#include "pack/staging.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr float kF16Max = 65504.0f;
constexpr float kF16MinSubnormal = 5.9604645e-8f;
constexpr const char* kManifest = "MTPLX_FP16_CONVERSION_MANIFEST.json";

// bf16 values as fp16; counts values out of fp16's range (never clamped) and nonzero values
// that become zero.
struct Converted {
  std::vector<uint16_t> values;
  int64_t overflows = 0;
  int64_t flushed = 0;
  float largest = 0.0f;
};

Converted Bf16ToF16(const uint16_t* in, size_t n) {
  Converted c;
  c.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float f = Bf16ToF32(in[i]);
    if (std::isfinite(f) && std::fabs(f) > kF16Max) {
      ++c.overflows;
      c.largest = std::max(c.largest, std::fabs(f));
    }
    if (f != 0.0f && std::isfinite(f) && std::fabs(f) < kF16MinSubnormal / 2) ++c.flushed;
    c.values[i] = F32ToF16(f);
  }
  return c;
}

// One safetensors file converted into `out`; its manifest entry is appended to `entries`.
Status ConvertFile(const std::string& in_path, const std::string& out_path, Json& entries,
                   Fp16Summary& summary, std::vector<std::string>& overflows,
                   ProgressBar& progress) {
  uint64_t offset = 0, size = 0;
  MTPLX_ASSIGN_OR_RETURN(const io::SafetensorsHeader header,
                         io::SafetensorsFile::ReadHeader(in_path, &offset, &size));
  std::vector<std::pair<std::string, const io::TensorEntry*>> order;
  for (const auto& [name, entry] : header.tensors) order.emplace_back(name, &entry);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
  io::SafetensorsWriter writer(out_path);
  for (const auto& [key, value] : header.metadata) writer.SetMetadata(key, value);
  for (const auto& [name, entry] : order)
    writer.Declare(name, entry->dtype == DType::kBF16 ? DType::kF16 : entry->dtype, entry->shape);
  MTPLX_RETURN_IF_ERROR(writer.Begin());
  std::ifstream in(in_path, std::ios::binary);
  Json tensors = Json::array();
  int64_t converted = 0, preserved = 0;
  std::vector<char> bytes;
  for (const auto& [name, entry] : order) {
    bytes.resize(entry->end - entry->begin);
    in.seekg(static_cast<std::streamoff>(offset + entry->begin));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!in) return DataLoss(StrCat(in_path, ": cannot read tensor ", name));
    const bool convert = entry->dtype == DType::kBF16;
    if (convert) {
      const Converted c =
          Bf16ToF16(reinterpret_cast<const uint16_t*>(bytes.data()), bytes.size() / 2);
      if (c.overflows)
        overflows.push_back(StrCat(fs::path(in_path).filename().string(), ":", name, " (",
                                   c.overflows, " values, largest ", c.largest, ")"));
      summary.flushed_to_zero += c.flushed;
      MTPLX_RETURN_IF_ERROR(writer.Append(c.values.data(), c.values.size() * 2));
      ++converted;
    } else {
      MTPLX_RETURN_IF_ERROR(writer.Append(bytes.data(), bytes.size()));
      ++preserved;
    }
    progress.Add(bytes.size());
    tensors.push_back({{"name", name},
                       {"converted", convert},
                       {"old_dtype", DTypeName(entry->dtype)},
                       {"new_dtype", convert ? "F16" : DTypeName(entry->dtype)},
                       {"shape", entry->shape}});
  }
  MTPLX_RETURN_IF_ERROR(writer.Finish());
  MTPLX_ASSIGN_OR_RETURN(const std::string in_sha, Sha256File(in_path));
  MTPLX_ASSIGN_OR_RETURN(const std::string out_sha, Sha256File(out_path));
  entries.push_back({{"name", fs::path(in_path).filename().string()},
                     {"tensor_count", order.size()},
                     {"converted_bf16_to_fp16", converted},
                     {"preserved", preserved},
                     {"source_sha256", in_sha},
                     {"source_size_bytes", fs::file_size(in_path)},
                     {"output_sha256", out_sha},
                     {"output_size_bytes", fs::file_size(out_path)},
                     {"tensors", tensors}});
  ++summary.shards;
  summary.tensors_total += static_cast<int64_t>(order.size());
  summary.converted += converted;
  summary.preserved += preserved;
  return Status::Ok();
}

// The contract says what the pack now is; config.json's dtype follows.
Status PatchJsonFiles(const std::string& dir) {
  const std::string runtime = JoinPath(dir, "mtplx_runtime.json");
  if (FileExists(runtime)) {
    MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(runtime));
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_object()) return InvalidArgument(runtime + ": not a JSON object");
    j["precision_variant"] = "fp16";
    j["precision_policy"] = {
        {"variant", "fp16"},
        {"routing", "preferred on CPUs without native bf16 arithmetic"},
        {"note",
         "bf16 tensors cast to fp16 (round to nearest even); packed integer tensors "
         "byte-identical; see MTPLX_FP16_CONVERSION_MANIFEST.json"}};
    MTPLX_RETURN_IF_ERROR(WriteTextFile(runtime, j.dump(2) + "\n"));
    MTPLX_RETURN_IF_ERROR(
        io::ParseRuntimeContract(j.dump(), runtime, io::EngineVersion()).status());
  }
  const std::string config = JoinPath(dir, "config.json");
  if (FileExists(config)) {
    MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(config));
    Json j = Json::parse(text, nullptr, false);
    if (j.is_object()) {
      for (Json* level : {&j, j.contains("text_config") ? &j["text_config"] : nullptr})
        if (level && level->is_object() && level->contains("torch_dtype"))
          (*level)["torch_dtype"] = "float16";
      MTPLX_RETURN_IF_ERROR(WriteTextFile(config, j.dump(2) + "\n"));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Fp16Summary> MakeFp16Sibling(const Fp16Options& o) {
  if (!fs::is_directory(o.source_dir)) return NotFound(StrCat(o.source_dir, " is not a folder"));
  if (!FileExists(JoinPath(o.source_dir, "config.json")))
    return InvalidArgument(StrCat(o.source_dir, " is not a model folder (no config.json)"));
  MTPLX_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::Create(o.output_dir, o.replace));
  uint64_t total = 0;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(o.source_dir)) {
    if (!entry.is_regular_file() || entry.path().filename() == kManifest) continue;
    files.push_back(entry.path());
    if (entry.path().extension() == ".safetensors") total += entry.file_size();
  }
  std::sort(files.begin(), files.end());
  Fp16Summary summary;
  Json shards = Json::array(), copied = Json::array();
  std::vector<std::string> overflows;
  ProgressBar progress("fp16", total, "B", o.progress);
  for (const fs::path& file : files) {
    const std::string out = JoinPath(staging.path(), file.filename().string());
    if (file.extension() == ".safetensors") {
      MTPLX_RETURN_IF_ERROR(ConvertFile(file.string(), out, shards, summary, overflows, progress));
      continue;
    }
    std::error_code ec;
    fs::copy_file(file, out, ec);
    if (ec) return Internal(StrCat("cannot copy ", file.string(), ": ", ec.message()));
    copied.push_back({{"kind", file.extension() == ".json" ? "json" : "other"},
                      {"name", file.filename().string()},
                      {"size_bytes", fs::file_size(file)}});
    summary.files_copied.push_back(file.filename().string());
  }
  progress.Finish();
  if (!overflows.empty())
    return OutOfRange(StrCat(
        "values beyond fp16's range (", kF16Max,
        ") would have to be clamped, so no fp16 sibling was written: ", StrJoin(overflows, "; ")));
  MTPLX_RETURN_IF_ERROR(PatchJsonFiles(staging.path()));
  Json manifest;
  manifest["created_at"] = UtcTimestamp();
  manifest["policy"] =
      "bf16 tensors (weights, scales, biases, norms) to fp16, round to nearest "
      "even; every other tensor byte for byte; values beyond fp16's range "
      "refused, never clamped";
  manifest["source_name"] = fs::path(o.source_dir).filename().string();
  manifest["mtplx_version"] = io::EngineVersion();
  manifest["files_copied"] = copied;
  manifest["safetensors"] = shards;
  manifest["summary"] = {{"shards", summary.shards},
                         {"tensors_total", summary.tensors_total},
                         {"converted_bf16_to_fp16", summary.converted},
                         {"preserved", summary.preserved},
                         {"flushed_to_zero_values", summary.flushed_to_zero}};
  MTPLX_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(staging.path(), kManifest), manifest.dump(2) + "\n"));
  MTPLX_RETURN_IF_ERROR(staging.Commit());
  return summary;
}

}  // namespace mtplx::pack
