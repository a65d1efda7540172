#include "pack/convert.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "io/checkpoint.h"
#include "io/generation_config.h"
#include "io/model_config.h"
#include "pack/convert_plan.h"
#include "pack/quant_policy.h"
#include "pack/staging.h"
#include "pack/tensor_writer.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kMtpFile = "mtp.safetensors";
// Files a pack carries over from the source; tokenizer.json is required, the rest optional.
constexpr const char* kCopiedFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                        "chat_template.jinja", "generation_config.json",
                                        "special_tokens_map.json"};

int MtpGroupSize(const ConvertOptions& o) {
  return o.mtp_group_size == -1 ? o.group_size : o.mtp_group_size;
}

Status CheckOptions(const ConvertOptions& o) {
  if (o.src_dir.empty() || o.out_dir.empty())
    return InvalidArgument("convert needs a source folder and an output folder");
  MTPLX_RETURN_IF_ERROR(CheckQuantOptions(o.bits, o.group_size));
  if (o.mtp_bits != -1 || o.mtp_group_size != -1)
    MTPLX_RETURN_IF_ERROR(CheckQuantOptions(o.mtp_bits == -1 ? o.bits : o.mtp_bits, MtpGroupSize(o),
                                            "--mtp-bits", "--mtp-group-size"));
  if (o.mtp_depth < 1 || o.mtp_depth > kMaxMtpDepth)
    return InvalidArgument(StrCat("--mtp-depth ", o.mtp_depth, " is not in 1..", kMaxMtpDepth));
  // With --force the destination is deleted: it must not be (or hold) the source.
  std::error_code ec;
  const fs::path src = fs::weakly_canonical(o.src_dir, ec);
  const fs::path out = fs::weakly_canonical(o.out_dir, ec);
  const std::string src_text = src.string() + "/", out_text = out.string() + "/";
  if (StartsWith(src_text, out_text))
    return InvalidArgument(
        StrCat(o.out_dir, ": the output folder is (or holds) the source folder ", o.src_dir));
  return Status::Ok();
}

Result<Json> ReadJsonObject(const std::string& path) {
  MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded() || !value.is_object())
    return InvalidArgument(StrCat(path, ": not a valid JSON object"));
  return value;
}

// The source's config, checked the way the loader will read it.
Result<io::ModelConfig> LoadSourceConfig(const std::string& src) {
  if (!IsDirectory(src)) return NotFound(StrCat(src, ": source folder not found"));
  const std::string path = JoinPath(src, "config.json");
  if (!FileExists(path))
    return NotFound(StrCat(path, ": missing (a Hugging Face checkpoint folder has config.json)"));
  MTPLX_ASSIGN_OR_RETURN(io::ModelConfig config, io::LoadModelConfig(src));
  if (config.quant.present)
    return InvalidArgument(StrCat(path,
                                  ": has a quantization table; mtplx convert reads "
                                  "unquantized Hugging Face checkpoints"));
  const std::string tokenizer = JoinPath(src, "tokenizer.json");
  if (!FileExists(tokenizer))
    return NotFound(StrCat(tokenizer, ": missing (a model pack needs the tokenizer)"));
  return config;
}

// config.json of the pack: the source's, without the vision tower, plus the quantization table
// (mlx-lm's keys, copied to quantization_config for HF tooling) and the MTP sidecar contract.
Json PackConfig(Json config, const ConvertOptions& o, int mtp_bits, const ConvertPlan& plan) {
  config.erase("vision_config");
  if (o.bits > 0) {
    Json q = {{"group_size", o.group_size}, {"bits", o.bits}, {"mode", "affine"}};
    for (const auto& [module, spec] : plan.overrides)
      if (spec.bits != o.bits || spec.group_size != o.group_size || !StartsWith(module, "mtp."))
        q[module] = {{"group_size", spec.group_size}, {"bits", spec.bits}};
    config["quantization"] = q;
    config["quantization_config"] = q;
  }
  if (!plan.mtp.empty()) {
    config["mlx_lm_extra_tensors"] = {{"mtp_file", kMtpFile}};
    // The sidecar keeps HF's zero-centred norms; say so rather than leave it to heuristics.
    if (!config.contains("mtplx_mtp_norm_encoding") && !config.contains("mtp_norm_encoding"))
      config["mtplx_mtp_norm_encoding"] = "delta";
    if (mtp_bits > 0)
      config["mtplx_mtp_quantization"] = {
          {"bits", mtp_bits}, {"group_size", MtpGroupSize(o)}, {"mode", "affine"}};
  }
  return config;
}

std::vector<TensorJob> Jobs(const std::deque<PlannedTensor>& tensors) {
  std::vector<TensorJob> jobs;
  for (const PlannedTensor& t : tensors) {
    TensorSource source;
    source.row = [&t](int64_t r, float* out) { t.Row(r, out); };
    source.raw = t.Raw();
    jobs.push_back({&t, std::move(source)});
  }
  return jobs;
}

int64_t CountFileTensors(const std::deque<PlannedTensor>& tensors, int64_t* quantized) {
  int64_t n = 0;
  for (const PlannedTensor& t : tensors) {
    n += static_cast<int64_t>(t.FileNames().size());
    if (t.bits) ++*quantized;
  }
  return n;
}

// Reads the source, writes the weights into `dir`, and fills the tensor counts of `summary`.
// The source image is released on return, before the pack is verified.
Result<ConvertPlan> WriteWeights(const ConvertOptions& o, const io::ModelConfig& config,
                                 int mtp_bits, const std::string& dir, ConvertSummary& summary) {
  io::CheckpointOptions load;
  load.show_progress = o.show_progress;
  load.lock_memory = false;
  MTPLX_ASSIGN_OR_RETURN(std::unique_ptr<io::Checkpoint> checkpoint,
                         io::Checkpoint::Open(o.src_dir, load));
  summary.tensors_in = static_cast<int64_t>(checkpoint->Names().size());
  MTPLX_ASSIGN_OR_RETURN(
      ConvertPlan plan,
      BuildConvertPlan(config, *checkpoint, {o.bits, o.group_size}, {mtp_bits, MtpGroupSize(o)}));
  uint64_t total = 0;
  for (const auto* list : {&plan.trunk, &plan.mtp})
    for (const PlannedTensor& t : *list) total += t.Bytes();
  ThreadPool pool(o.threads);
  ProgressBar progress("converting", total, "B", o.show_progress);
  ShardOptions shards;
  shards.shard_bytes = o.shard_bytes;
  shards.always_index = true;  // the reference product requires the index in a complete pack
  MTPLX_ASSIGN_OR_RETURN(WrittenShards written,
                         WriteShardedTensors(dir, Jobs(plan.trunk), shards, pool, progress));
  summary.files = written.files;
  summary.files.push_back("model.safetensors.index.json");
  if (!plan.mtp.empty()) {
    MTPLX_RETURN_IF_ERROR(
        WriteTensorFile(JoinPath(dir, kMtpFile), Jobs(plan.mtp), "mlx", pool, progress));
    summary.files.push_back(kMtpFile);
  }
  progress.Finish();
  summary.tensors_out = CountFileTensors(plan.trunk, &summary.quantized);
  summary.mtp_tensors = CountFileTensors(plan.mtp, &summary.quantized);
  summary.tensors_out += summary.mtp_tensors;
  summary.dropped = plan.dropped;
  plan.views.clear();  // they point into the checkpoint, which goes now
  for (auto* list : {&plan.trunk, &plan.mtp})
    for (PlannedTensor& t : *list) t.parts.clear();
  return plan;
}

Status CopySourceFiles(const std::string& src, const std::string& dir,
                       std::vector<std::string>& files) {
  for (const char* name : kCopiedFiles) {
    const std::string from = JoinPath(src, name);
    if (!FileExists(from)) continue;
    std::error_code ec;
    fs::copy_file(from, JoinPath(dir, name), fs::copy_options::overwrite_existing, ec);
    if (ec)
      return InvalidArgument(StrCat(from, ": cannot copy into the pack (", ec.message(), ")"));
    files.push_back(name);
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> HashSources(const std::string& src, bool progress_on,
                                                       uint64_t* bytes) {
  MTPLX_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ListCheckpointFiles(src));
  *bytes = 0;
  for (const auto& path : paths) {
    MTPLX_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
    *bytes += size;
  }
  ProgressBar progress("hashing source", *bytes, "B", progress_on);
  std::map<std::string, std::string> digests;
  for (const auto& path : paths) {
    MTPLX_ASSIGN_OR_RETURN(std::string digest, Sha256File(path, &progress));
    digests[fs::path(path).lexically_relative(src).string()] = digest;
  }
  progress.Finish();
  return digests;
}

Result<SamplerDefaults> SamplerFor(const ConvertOptions& o) {
  if (o.sampler) return *o.sampler;
  MTPLX_ASSIGN_OR_RETURN(io::GenerationDefaults defaults, io::LoadGenerationDefaults(o.src_dir));
  return SamplerDefaults{defaults.temperature, defaults.top_p, defaults.top_k,
                         defaults.presence_penalty, defaults.frequency_penalty};
}

// "hf" for "/data/runs/v1/hf/" or "runs/v1/hf".
std::string FolderName(const std::string& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().string();
}

RuntimeInfo Runtime(const ConvertOptions& o, const io::ModelConfig& config, const ConvertPlan& plan,
                    const ConvertSummary& summary, const SamplerDefaults& sampler, int mtp_bits) {
  RuntimeInfo info;
  info.model_family = io::ModelFamilyName(config.family);
  info.has_mtp = !plan.mtp.empty();
  info.arch_id = ArchId(info.model_family, info.has_mtp);
  info.mtp_tensor_count = static_cast<int>(summary.mtp_tensors);
  info.mtp_depth_default = o.mtp_depth;
  info.sampler = sampler;
  info.bits = o.bits;
  info.group_size = o.group_size;
  info.mtp_bits = info.has_mtp ? mtp_bits : 0;
  info.mtp_group_size = MtpGroupSize(o);
  info.precision_variant = plan.source_dtype;
  info.source_name = FolderName(o.src_dir);
  return info;
}

// A number that spans the whole text.
template <typename T>
bool ParseWhole(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

uint64_t FolderBytes(const std::string& dir, bool safetensors_only) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() &&
        (!safetensors_only || entry.path().extension() == ".safetensors"))
      total += entry.file_size();
  return total;
}

}  // namespace

const std::vector<ConvertPreset>& ConvertPresets() {
  static const std::vector<ConvertPreset> presets = {
      {"optimized-speed", 6, 64, 0, 64, 2, SamplerDefaults{}},
      {"moe-a3b", 4, 64, 4, 32, 2, SamplerDefaults{}},
  };
  return presets;
}

Result<ConvertPreset> FindConvertPreset(const std::string& name) {
  std::string known;
  for (const ConvertPreset& p : ConvertPresets()) {
    if (name == p.name) return p;
    known += known.empty() ? p.name : StrCat(", ", p.name);
  }
  return InvalidArgument(StrCat("unknown --preset '", name, "' (there are: ", known, ")"));
}

Result<SamplerDefaults> ParseSampler(const std::string& text) {
  const std::vector<std::string> parts = StrSplit(text, ',');
  const Status bad = InvalidArgument(
      StrCat("--sampler '", text,
             "' is not T,P,K[,PRESENCE[,FREQUENCY]] with temperature >= 0, 0 < top_p <= 1, "
             "top_k >= 0 and penalties in [-2, 2] (e.g. 0.6,0.95,20 or 0.6,0.95,20,0.5)"));
  if (parts.size() < 3 || parts.size() > 5) return bad;
  SamplerDefaults s;
  if (!ParseWhole(parts[0], s.temperature) || !ParseWhole(parts[1], s.top_p) ||
      !ParseWhole(parts[2], s.top_k))
    return bad;
  if (parts.size() > 3 && !ParseWhole(parts[3], s.presence_penalty)) return bad;
  if (parts.size() > 4 && !ParseWhole(parts[4], s.frequency_penalty)) return bad;
  if (!std::isfinite(s.temperature) || !(s.temperature >= 0) || !(s.top_p > 0 && s.top_p <= 1) ||
      s.top_k < 0)
    return bad;
  for (double penalty : {s.presence_penalty, s.frequency_penalty})
    if (!(penalty >= -2 && penalty <= 2)) return bad;
  return s;
}

Result<ConvertSummary> ConvertCheckpoint(const ConvertOptions& o) {
  MTPLX_RETURN_IF_ERROR(CheckOptions(o));
  const int mtp_bits = o.mtp_bits == -1 ? o.bits : o.mtp_bits;
  MTPLX_ASSIGN_OR_RETURN(io::ModelConfig config, LoadSourceConfig(o.src_dir));
  MTPLX_ASSIGN_OR_RETURN(Json source_config, ReadJsonObject(JoinPath(o.src_dir, "config.json")));
  MTPLX_ASSIGN_OR_RETURN(SamplerDefaults sampler, SamplerFor(o));
  MTPLX_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::Create(o.out_dir, o.force));
  const std::string& dir = staging.path();

  ConvertSummary summary;
  summary.out_dir = staging.destination();
  MTPLX_ASSIGN_OR_RETURN(ConvertPlan plan, WriteWeights(o, config, mtp_bits, dir, summary));
  MTPLX_RETURN_IF_ERROR(WriteTextFile(JoinPath(dir, "config.json"),
                                      PackConfig(source_config, o, mtp_bits, plan).dump(2) + "\n"));
  summary.files.push_back("config.json");
  MTPLX_RETURN_IF_ERROR(CopySourceFiles(o.src_dir, dir, summary.files));

  RuntimeInfo info = Runtime(o, config, plan, summary, sampler, mtp_bits);
  MTPLX_ASSIGN_OR_RETURN(info.source_sha256,
                         HashSources(o.src_dir, o.show_progress, &summary.bytes_in));
  info.forged_at = UtcTimestamp();
  info.verified_on = "not verified (--no-verify)";
  const std::string manifest = JoinPath(dir, "mtplx_runtime.json");
  MTPLX_RETURN_IF_ERROR(WriteTextFile(manifest, BuildRuntimeManifest(info).dump(2) + "\n"));
  summary.files.push_back("mtplx_runtime.json");
  if (o.verify) {
    MTPLX_ASSIGN_OR_RETURN(info.verified_on, o.verify(dir));
    MTPLX_RETURN_IF_ERROR(WriteTextFile(manifest, BuildRuntimeManifest(info).dump(2) + "\n"));
  }
  summary.verified_on = info.verified_on;
  summary.arch_id = info.arch_id;
  summary.bytes_out = FolderBytes(dir, true);
  summary.pack_bytes = FolderBytes(dir, false);
  MTPLX_RETURN_IF_ERROR(staging.Commit());
  return summary;
}

}  // namespace mtplx::pack
