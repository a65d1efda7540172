#include "io/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

// Sidecar files that may carry the MTP head next to the trunk shards.
const char* const kMtpSidecars[] = {"mtp.safetensors", "mtp/weights.safetensors",
                                    "model-mtp.safetensors"};

Result<std::vector<std::string>> FilesFromIndex(const std::string& dir,
                                                const std::string& index_path) {
  MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path));
  const auto root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("weight_map") ||
      !root.at("weight_map").is_object())
    return DataLoss(StrCat(index_path, ": not a valid index (no weight_map object)"));
  std::set<std::string> names;
  for (const auto& [tensor, file] : root.at("weight_map").items()) {
    if (!file.is_string()) return DataLoss(StrCat(index_path, ": bad entry for '", tensor, "'"));
    const std::string f = file.get<std::string>();
    if (f.find("..") != std::string::npos || StartsWith(f, "/"))
      return DataLoss(StrCat(index_path, ": file name '", f, "' leaves the model folder"));
    names.insert(f);
  }
  std::vector<std::string> files;
  for (const auto& f : names) {
    const std::string path = JoinPath(dir, f);
    if (!FileExists(path))
      return NotFound(StrCat(path, ": listed in ", Basename(index_path), " but missing"));
    files.push_back(path);
  }
  return files;
}

Result<std::string> MtpFileFromConfig(const std::string& dir) {
  const std::string config = JoinPath(dir, "config.json");
  if (!FileExists(config)) return std::string();
  MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(config));
  const auto root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return std::string();
  const auto extra = root.find("mlx_lm_extra_tensors");
  if (extra == root.end() || !extra->is_object() || !extra->contains("mtp_file") ||
      !extra->at("mtp_file").is_string())
    return std::string();
  const std::string file = extra->at("mtp_file").get<std::string>();
  if (file.find("..") != std::string::npos || StartsWith(file, "/"))
    return DataLoss(StrCat(config, ": mtp_file '", file, "' leaves the model folder"));
  return file;
}

}  // namespace

Result<std::vector<std::string>> ListCheckpointFiles(const std::string& dir) {
  if (!IsDirectory(dir)) return NotFound(StrCat(dir, ": model folder not found"));
  std::vector<std::string> files;
  const std::string index = JoinPath(dir, "model.safetensors.index.json");
  if (FileExists(index)) {
    MTPLX_ASSIGN_OR_RETURN(files, FilesFromIndex(dir, index));
  } else {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && EndsWith(name, ".safetensors")) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  }
  MTPLX_ASSIGN_OR_RETURN(std::string configured, MtpFileFromConfig(dir));
  std::vector<std::string> sidecars;
  if (!configured.empty()) sidecars.push_back(configured);
  for (const char* s : kMtpSidecars) sidecars.push_back(s);
  for (const auto& s : sidecars) {
    const std::string path = JoinPath(dir, s);
    if (FileExists(path) && std::find(files.begin(), files.end(), path) == files.end())
      files.push_back(path);
  }
  if (files.empty()) return NotFound(StrCat(dir, ": no .safetensors files"));
  return files;
}

Status CheckModelFolder(const std::string& dir, bool need_tokenizer) {
  static const char* const kHolds =
      "a model folder holds config.json, tokenizer.json (with tokenizer_config.json or "
      "chat_template.jinja) and the weights as *.safetensors: a Hugging Face checkpoint or a "
      "pack written by `mtplx convert`";
  if (dir.empty()) return InvalidArgument("no model folder given");
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec))
    return NotFound(StrCat("the model folder '", dir, "' does not exist"));
  if (!IsDirectory(dir))
    return InvalidArgument(StrCat("'", dir, "' is a file, not a model folder; ", kHolds));
  if (!FileExists(JoinPath(dir, "config.json")))
    return NotFound(StrCat("'", dir, "' is not a model folder: it has no config.json; ", kHolds));
  if (need_tokenizer && !FileExists(JoinPath(dir, "tokenizer.json")))
    return NotFound(StrCat("'", dir, "' has no tokenizer.json; ", kHolds));
  return Status::Ok();
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir,
                                                     const CheckpointOptions& options) {
  MTPLX_ASSIGN_OR_RETURN(std::vector<std::string> paths, ListCheckpointFiles(dir));
  uint64_t total = 0;
  for (const auto& p : paths) {
    MTPLX_ASSIGN_OR_RETURN(uint64_t size, FileSize(p));
    total += size;
  }
  auto checkpoint = std::make_unique<Checkpoint>();
  checkpoint->dir_ = dir;
  ProgressBar progress("loading weights", total, "B", options.show_progress);
  for (const auto& p : paths) {
    MTPLX_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(p, &progress));
    for (const auto& [name, entry] : file->header().tensors) {
      if (checkpoint->index_.count(name))
        return DataLoss(StrCat("tensor '", name, "' appears in both ",
                               checkpoint->files_[checkpoint->index_[name]]->path(), " and ", p));
      checkpoint->index_[name] = checkpoint->files_.size();
    }
    if (options.lock_memory) file->buffer().Lock();
    checkpoint->files_.push_back(std::move(file));
  }
  progress.Finish();
  return checkpoint;
}

Result<TensorView> Checkpoint::Get(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return NotFound(StrCat(dir_, ": missing tensor '", name, "'"));
  return files_[it->second]->Get(name);
}

uint8_t* Checkpoint::MutableData(const std::string& name) {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : files_[it->second]->MutableData(name);
}

std::string Checkpoint::FileOf(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? dir_ : files_[it->second]->path();
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : index_) names.push_back(name);
  return names;
}

uint64_t Checkpoint::resident_bytes() const {
  uint64_t total = 0;
  for (const auto& f : files_) total += f->resident_bytes();
  return total;
}

bool Checkpoint::all_locked() const {
  for (const auto& f : files_)
    if (!f->buffer().locked()) return false;
  return true;
}

std::string Checkpoint::format_metadata() const {
  if (files_.empty()) return "";
  const auto& meta = files_[0]->header().metadata;
  const auto it = meta.find("format");
  return it == meta.end() ? "" : it->second;
}

}  // namespace mtplx::io
