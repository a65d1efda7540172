// `mtplx inspect DIR`: what a model folder holds, read from its config, safetensors headers and
// runtime contract without loading any weights: architecture and layers, weights and their
// quantization, the MTP head, whether the contract holds, and the memory one sequence needs at
// a context length. `--json` for scripts.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/session.h"
#include "io/checkpoint.h"
#include "io/model_cache.h"
#include "io/model_config.h"
#include "io/runtime_contract.h"
#include "io/safetensors.h"

namespace mtplx::cli {
namespace {

using Json = nlohmann::json;

struct InspectFlags {
  std::string dir;
  int64_t context = 32768;
  std::string kv_cache = GenerationFlags().kv_cache;
  bool json = false;
};

struct WeightsSummary {
  uint64_t bytes = 0;
  int64_t tensors = 0, mtp_tensors = 0, quantized = 0;
  std::map<std::string, int64_t> dtypes;
  std::vector<std::pair<std::string, uint64_t>> files;
};

Result<WeightsSummary> SummarizeWeights(const std::string& dir) {
  WeightsSummary w;
  MTPLX_ASSIGN_OR_RETURN(const std::vector<std::string> files, io::ListCheckpointFiles(dir));
  for (const std::string& file : files) {
    uint64_t offset = 0, size = 0;
    MTPLX_ASSIGN_OR_RETURN(const io::SafetensorsHeader header,
                           io::SafetensorsFile::ReadHeader(file, &offset, &size));
    w.files.emplace_back(file.substr(file.find_last_of('/') + 1), size);
    w.bytes += size;
    for (const auto& [name, entry] : header.tensors) {
      ++w.tensors;
      ++w.dtypes[DTypeName(entry.dtype)];
      if (name.rfind("mtp.", 0) == 0 || name.find(".mtp.") != std::string::npos) ++w.mtp_tensors;
      if (EndsWith(name, ".scales")) ++w.quantized;
    }
  }
  return w;
}

// One sequence's state: f32 keys and values of every full-attention layer (and the MTP layer)
// per token, and the fixed Gated DeltaNet state (conv history and recurrent matrix) per layer.
struct StateSize {
  uint64_t kv_per_token = 0;
  uint64_t recurrent = 0;
};

StateSize SequenceState(const io::ModelConfig& c, bool has_mtp, kernels::KvType kv_type) {
  StateSize s;
  const uint64_t kv =
      2 * static_cast<uint64_t>(c.num_kv_heads * c.head_dim * kernels::KvElementBytes(kv_type));
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    if (c.IsFullAttention(layer)) {
      s.kv_per_token += kv;
    } else {
      s.recurrent +=
          static_cast<uint64_t>((c.conv_kernel - 1) * c.ConvDim() +
                                c.linear_value_heads * c.linear_key_dim * c.linear_value_dim) *
          sizeof(float);
    }
  }
  if (has_mtp) s.kv_per_token += kv * static_cast<uint64_t>(std::max<int64_t>(1, c.mtp_layers));
  return s;
}

Json Inspect(const InspectFlags& f, std::string& error) {
  Json out;
  out["dir"] = f.dir;
  auto config = io::LoadModelConfig(f.dir);
  if (!config.ok()) {
    error = config.status().message();
    return out;
  }
  const io::ModelConfig& c = *config;
  int64_t full = 0;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) full += c.IsFullAttention(layer);
  out["architecture"] = {{"model_type", c.model_type},
                         {"family", io::ModelFamilyName(c.family)},
                         {"layers", c.num_layers},
                         {"full_attention_layers", full},
                         {"linear_attention_layers", c.num_layers - full},
                         {"hidden_size", c.hidden_size},
                         {"heads", c.num_heads},
                         {"kv_heads", c.num_kv_heads},
                         {"head_dim", c.head_dim},
                         {"experts", c.num_experts},
                         {"vocab_size", c.vocab_size},
                         {"context_window", c.max_position_embeddings}};
  auto weights = SummarizeWeights(f.dir);
  if (!weights.ok()) {
    error = weights.status().message();
    return out;
  }
  const WeightsSummary& w = *weights;
  Json files = Json::array();
  for (const auto& [name, size] : w.files) files.push_back({{"name", name}, {"bytes", size}});
  Json quant = {{"quantized_matrices", w.quantized}};
  if (c.quant.present) {
    quant["bits"] = c.quant.global.bits;
    quant["group_size"] = c.quant.global.group_size;
    quant["mode"] = c.quant.global.mode;
    quant["overrides"] = c.quant.overrides.size();
  }
  out["weights"] = {{"bytes", w.bytes},
                    {"tensors", w.tensors},
                    {"dtypes", w.dtypes},
                    {"files", files},
                    {"quantization", quant}};
  const bool has_mtp = w.mtp_tensors > 0;
  out["mtp"] = {{"present", has_mtp}, {"tensors", w.mtp_tensors}, {"layers", c.mtp_layers}};
  auto contract = io::LoadRuntimeContract(f.dir, io::EngineVersion());
  if (contract.ok() && *contract) {
    if (Status s = io::CheckMtpTensors(**contract, has_mtp, w.mtp_tensors); !s.ok()) contract = s;
  }
  if (!contract.ok()) {
    out["contract"] = {{"valid", false}, {"error", contract.status().message()}};
  } else if (!*contract) {
    out["contract"] = {{"valid", nullptr}, {"note", "no mtplx_runtime.json (a plain checkpoint)"}};
  } else {
    const io::RuntimeContract& k = **contract;
    out["contract"] = {{"valid", true},
                       {"arch_id", k.arch_id},
                       {"mtp_depth_max", k.mtp_depth_max},
                       {"mtp_depth_default", k.mtp_depth_default.value_or(1)},
                       {"served_model_id", k.served_model_id.value_or("")},
                       {"precision_variant", k.precision_variant.value_or("")}};
    out["mtp"]["depth_max"] = k.mtp_depth_max;
    out["mtp"]["depth_default"] = k.mtp_depth_default.value_or(1);
  }
  const StateSize state = SequenceState(c, has_mtp, KvTypeFromFlag(f.kv_cache));
  const int64_t context = std::min<int64_t>(f.context, c.max_position_embeddings);
  const uint64_t sequence = state.kv_per_token * static_cast<uint64_t>(context) + state.recurrent;
  out["memory"] = {{"context", context},
                   {"weights_bytes", w.bytes},
                   {"kv_cache", f.kv_cache},
                   {"kv_bytes_per_token", state.kv_per_token},
                   {"recurrent_bytes", state.recurrent},
                   {"sequence_bytes_at_context", sequence},
                   {"total_bytes_at_context", w.bytes + sequence}};
  out["tokenizer"] = FileExists(JoinPath(f.dir, "tokenizer.json"));
  out["chat_template"] = FileExists(JoinPath(f.dir, "chat_template.jinja")) ||
                         FileExists(JoinPath(f.dir, "tokenizer_config.json"));
  return out;
}

void Print(const Json& j) {
  const Json& a = j["architecture"];
  std::printf("%s\n", j["dir"].get<std::string>().c_str());
  std::printf(
      "  architecture: %s (%s), %lld layers (%lld full attention, %lld Gated DeltaNet), "
      "hidden %lld, vocab %lld, context %lld\n",
      a["model_type"].get<std::string>().c_str(), a["family"].get<std::string>().c_str(),
      static_cast<long long>(a["layers"]), static_cast<long long>(a["full_attention_layers"]),
      static_cast<long long>(a["linear_attention_layers"]),
      static_cast<long long>(a["hidden_size"]), static_cast<long long>(a["vocab_size"]),
      static_cast<long long>(a["context_window"]));
  const Json& w = j["weights"];
  std::string quant = "not quantized";
  if (w["quantization"].contains("bits"))
    quant = StrCat("MLX affine ", w["quantization"]["bits"].get<int>(), "-bit g",
                   w["quantization"]["group_size"].get<int>(), " (",
                   w["quantization"]["quantized_matrices"].get<int64_t>(), " matrices)");
  std::printf("  weights: %s in %zu file(s), %lld tensors, %s\n",
              HumanBytes(w["bytes"].get<uint64_t>()).c_str(), w["files"].size(),
              static_cast<long long>(w["tensors"]), quant.c_str());
  const Json& m = j["mtp"];
  if (m["present"].get<bool>())
    std::printf("  MTP head: yes, %lld tensors%s\n", static_cast<long long>(m["tensors"]),
                m.contains("depth_max") ? StrCat(", depth up to ", m["depth_max"].get<int>(),
                                                 " (default ", m["depth_default"].get<int>(), ")")
                                              .c_str()
                                        : "");
  else
    std::printf("  MTP head: none (runs without speculation)\n");
  const Json& k = j["contract"];
  if (k["valid"].is_null())
    std::printf("  contract: none (no mtplx_runtime.json)\n");
  else if (k["valid"].get<bool>())
    std::printf("  contract: valid (arch %s)\n", k["arch_id"].get<std::string>().c_str());
  else
    std::printf("  contract: INVALID: %s\n", k["error"].get<std::string>().c_str());
  const Json& mem = j["memory"];
  std::printf(
      "  memory at %lld tokens of context: %s (weights %s + one sequence %s: %s a token with a "
      "%s KV cache, %s fixed)\n",
      static_cast<long long>(mem["context"]),
      HumanBytes(mem["total_bytes_at_context"].get<uint64_t>()).c_str(),
      HumanBytes(mem["weights_bytes"].get<uint64_t>()).c_str(),
      HumanBytes(mem["sequence_bytes_at_context"].get<uint64_t>()).c_str(),
      HumanBytes(mem["kv_bytes_per_token"].get<uint64_t>()).c_str(),
      mem["kv_cache"].get<std::string>().c_str(),
      HumanBytes(mem["recurrent_bytes"].get<uint64_t>()).c_str());
}

}  // namespace

Runner AddInspectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "What a model folder holds, without loading it");
  auto f = std::make_shared<InspectFlags>();
  cmd->add_option("dir", f->dir,
                  "The model folder, or ORG/NAME of a cached model (default: the bundled model)");
  cmd->add_option("--context", f->context, "Context length for the memory estimate")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  AddKvCacheFlag(cmd, f->kv_cache);
  cmd->add_flag("--json", f->json, "Print it as JSON");
  return [f] {
    // A folder, ORG/NAME of a model in the caches (`mtplx models`), or the bundled model.
    auto model = ResolveModelDir(f->dir);
    if (!model.ok()) return ReportError(model.status().message());
    f->dir = *model;
    if (Status s = io::CheckModelFolder(f->dir, /*need_tokenizer=*/false); !s.ok())
      return ReportError(s.message());
    std::string error;
    const Json out = Inspect(*f, error);
    if (!error.empty()) return ReportError(error);
    if (f->json)
      std::printf("%s\n", out.dump(2).c_str());
    else
      Print(out);
    // An invalid contract is what the user came to find out: reported, and exit 1.
    return out["contract"]["valid"] == false ? 1 : 0;
  };
}

}  // namespace mtplx::cli
