#include "io/model_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

using nlohmann::json;

// Reads typed keys from a JSON object, recording the first error with the key's name.
class Reader {
 public:
  Reader(const json& obj, std::string label) : obj_(obj), label_(std::move(label)) {}

  bool Has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

  int64_t Int(const char* key, std::optional<int64_t> fallback = std::nullopt) {
    if (!Has(key)) {
      if (!fallback) Fail(StrCat("missing required key '", key, "'"));
      return fallback.value_or(0);
    }
    const json& v = obj_.at(key);
    if (!v.is_number_integer()) {
      Fail(StrCat("key '", key, "' must be an integer"));
      return 0;
    }
    return v.get<int64_t>();
  }

  double Number(const char* key, double fallback) {
    if (!Has(key)) return fallback;
    const json& v = obj_.at(key);
    if (!v.is_number()) {
      Fail(StrCat("key '", key, "' must be a number"));
      return fallback;
    }
    return v.get<double>();
  }

  bool Bool(const char* key, bool fallback) {
    if (!Has(key)) return fallback;
    const json& v = obj_.at(key);
    if (!v.is_boolean()) {
      Fail(StrCat("key '", key, "' must be true or false"));
      return fallback;
    }
    return v.get<bool>();
  }

  std::string String(const char* key, const std::string& fallback = "") {
    if (!Has(key)) return fallback;
    const json& v = obj_.at(key);
    if (!v.is_string()) {
      Fail(StrCat("key '", key, "' must be a string"));
      return fallback;
    }
    return v.get<std::string>();
  }

  std::vector<int64_t> IntList(const char* key) {
    std::vector<int64_t> out;
    if (!Has(key)) return out;
    const json& v = obj_.at(key);
    if (!v.is_array()) {
      Fail(StrCat("key '", key, "' must be a list"));
      return out;
    }
    for (const auto& e : v) {
      if (!e.is_number_integer()) {
        Fail(StrCat("key '", key, "' must hold integers"));
        return {};
      }
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = InvalidArgument(StrCat(label_, ": ", message));
  }
  const Status& status() const { return status_; }

 private:
  const json& obj_;
  std::string label_;
  Status status_;
};

Result<ModelFamily> FamilyFor(const std::string& architecture, const std::string& model_type,
                              const std::string& label) {
  const std::string a = architecture;
  if (a == "Qwen3_5ForConditionalGeneration" || a == "Qwen3_5ForCausalLM")
    return ModelFamily::kQwen35;
  if (StartsWith(a, "Qwen3_5Moe")) return ModelFamily::kQwen35Moe;
  if (a == "Qwen3NextForCausalLM") return ModelFamily::kQwen3Next;
  if (a.empty()) {
    if (model_type == "qwen3_5" || model_type == "qwen3_5_text") return ModelFamily::kQwen35;
    if (model_type == "qwen3_5_moe" || model_type == "qwen3_5_moe_text")
      return ModelFamily::kQwen35Moe;
    if (model_type == "qwen3_next") return ModelFamily::kQwen3Next;
  }
  return Unimplemented(StrCat(label, ": unsupported architecture '", a, "' (model_type '",
                              model_type, "'); mtplx runs Qwen3_5ForConditionalGeneration, ",
                              "Qwen3_5ForCausalLM, Qwen3_5Moe*, Qwen3NextForCausalLM"));
}

void ParseRope(const json& text, Reader& r, ModelConfig& c) {
  const json* params = nullptr;
  if (text.contains("rope_parameters") && text.at("rope_parameters").is_object())
    params = &text.at("rope_parameters");
  else if (text.contains("rope_scaling") && text.at("rope_scaling").is_object())
    params = &text.at("rope_scaling");
  c.rope.theta = r.Number("rope_theta", c.family == ModelFamily::kQwen3Next ? 5e6 : 1e7);
  c.rope.partial_rotary_factor = r.Number("partial_rotary_factor", 0.25);
  if (params) {
    Reader p(*params, "rope_parameters");
    c.rope.type = p.String("rope_type", p.String("type", "default"));
    c.rope.theta = p.Number("rope_theta", c.rope.theta);
    c.rope.partial_rotary_factor = p.Number("partial_rotary_factor", c.rope.partial_rotary_factor);
    c.rope.mrope_section = p.IntList("mrope_section");
    c.rope.mrope_interleaved = p.Bool("mrope_interleaved", false);
    if (!p.status().ok()) r.Fail(p.status().message());
  }
  const double rotary = static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor;
  if (!(rotary > -9.0e18 && rotary < 9.0e18)) {  // outside int64: the cast would be undefined
    r.Fail("partial_rotary_factor gives an invalid rotary dimension");
    return;
  }
  c.rope.rotary_dim = static_cast<int64_t>(rotary);
}

void ParseLayerTypes(const json& text, Reader& r, ModelConfig& c) {
  constexpr int64_t kMaxLayers = 1 << 16;  // real models have < 100; refuse before allocating
  if (c.num_layers > kMaxLayers) {
    r.Fail(StrCat("num_hidden_layers ", c.num_layers, " is implausibly large"));
    return;
  }
  if (text.contains("layer_types") && text.at("layer_types").is_array()) {
    for (const auto& t : text.at("layer_types")) {
      const std::string s = t.is_string() ? t.get<std::string>() : "";
      if (s == "linear_attention") {
        c.layer_types.push_back(LayerKind::kLinearAttention);
      } else if (s == "full_attention" || s == "attention") {
        c.layer_types.push_back(LayerKind::kFullAttention);
      } else {
        r.Fail(StrCat("layer_types holds unknown layer type '", t.dump(), "'"));
        return;
      }
    }
    if (static_cast<int64_t>(c.layer_types.size()) != c.num_layers)
      r.Fail(StrCat("layer_types has ", c.layer_types.size(), " entries but num_hidden_layers is ",
                    c.num_layers));
    return;
  }
  const int64_t interval = r.Int("full_attention_interval", 4);
  if (interval <= 0) {
    r.Fail("full_attention_interval must be positive");
    return;
  }
  for (int64_t i = 0; i < c.num_layers; ++i)
    c.layer_types.push_back((i + 1) % interval == 0 ? LayerKind::kFullAttention
                                                    : LayerKind::kLinearAttention);
}

std::optional<QuantSpec> ParseQuantSpec(const json& v, const QuantSpec& defaults) {
  QuantSpec spec = defaults;
  if (v.contains("bits") && v.at("bits").is_number_integer()) spec.bits = v.at("bits").get<int>();
  if (v.contains("group_size") && v.at("group_size").is_number_integer())
    spec.group_size = v.at("group_size").get<int>();
  if (v.contains("mode") && v.at("mode").is_string()) spec.mode = v.at("mode").get<std::string>();
  return spec;
}

void ParseQuantization(const json& root, const json& text, Reader& r, ModelConfig& c) {
  const json* q = nullptr;
  for (const json* scope : {&root, &text})
    for (const char* key : {"quantization", "quantization_config"})
      if (!q && scope->contains(key) && scope->at(key).is_object()) q = &scope->at(key);
  if (!q) return;
  c.quant.present = true;
  c.quant.global = *ParseQuantSpec(*q, QuantSpec{});
  for (auto it = q->begin(); it != q->end(); ++it) {
    if (it.value().is_object()) {
      c.quant.overrides[it.key()] = ParseQuantSpec(it.value(), c.quant.global);
    } else if (it.value().is_boolean() && !it.value().get<bool>()) {
      c.quant.overrides[it.key()] = std::nullopt;
    }
  }
}

// Upper limits far above any real model (the largest Qwen has a 248K vocabulary, hidden size
// 4,096 and 512 experts), so that a crafted config.json is refused before its sizes are multiplied
// together or allocated: within them every product of sizes the loader forms fits in int64.
Status CheckPlausibleSizes(const ModelConfig& c, const std::string& label) {
  constexpr int64_t kDims = int64_t{1} << 20, kHeads = int64_t{1} << 12;
  const struct {
    const char* key;
    int64_t value, most;
  } sizes[] = {
      {"vocab_size", c.vocab_size, int64_t{1} << 24},
      {"hidden_size", c.hidden_size, kDims},
      {"num_attention_heads", c.num_heads, kHeads},
      {"num_key_value_heads", c.num_kv_heads, kHeads},
      {"head_dim", c.head_dim, kHeads},
      {"linear_num_key_heads", c.linear_key_heads, kHeads},
      {"linear_num_value_heads", c.linear_value_heads, kHeads},
      {"linear_key_head_dim", c.linear_key_dim, kHeads},
      {"linear_value_head_dim", c.linear_value_dim, kHeads},
      {"intermediate_size", c.intermediate_size, kDims},
      {"num_experts", c.num_experts, int64_t{1} << 16},
      {"moe_intermediate_size", c.moe_intermediate_size, kDims},
      {"shared_expert_intermediate_size", c.shared_expert_intermediate_size, kDims},
      {"mtp_num_hidden_layers", c.mtp_layers, 64},
      {"max_position_embeddings", c.max_position_embeddings, int64_t{1} << 30},
  };
  for (const auto& size : sizes)
    if (size.value > size.most)
      return InvalidArgument(StrCat(label, ": ", size.key, " ", size.value,
                                    " is implausibly large (at most ", size.most, ")"));
  return Status::Ok();
}

Status Validate(const ModelConfig& c, const std::string& label) {
  auto bad = [&](const std::string& m) { return InvalidArgument(StrCat(label, ": ", m)); };
  MTPLX_RETURN_IF_ERROR(CheckPlausibleSizes(c, label));
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0)
    return bad("vocab_size, hidden_size and num_hidden_layers must be positive");
  if (c.max_position_embeddings <= 0) return bad("max_position_embeddings must be positive");
  if (c.mtp_layers < 0) return bad("mtp_num_hidden_layers must not be negative");
  if (!(c.rope.theta > 0) || !(c.rms_norm_eps >= 0))
    return bad("rope_theta must be positive and rms_norm_eps not negative");
  if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0 || c.num_heads % c.num_kv_heads)
    return bad("num_attention_heads must be a positive multiple of num_key_value_heads");
  if (c.linear_key_heads <= 0 || c.linear_value_heads % c.linear_key_heads ||
      c.linear_key_dim <= 0 || c.linear_value_dim <= 0)
    return bad("linear_num_value_heads must be a positive multiple of linear_num_key_heads");
  if (c.conv_kernel < 1 || c.conv_kernel > 16) return bad("linear_conv_kernel_dim out of range");
  if (c.rope.rotary_dim % 2 || c.rope.rotary_dim > c.head_dim || c.rope.rotary_dim < 0)
    return bad("partial_rotary_factor gives an invalid rotary dimension");
  if (!c.rope.mrope_section.empty()) {
    int64_t sum = 0;
    for (int64_t s : c.rope.mrope_section)
      if (s < 0 || __builtin_add_overflow(sum, s, &sum))
        return bad("mrope_section entries must be small non-negative integers");
    if (sum != c.rope.rotary_dim / 2)
      return bad(
          StrCat("mrope_section sums to ", sum, " but rotary_dim/2 is ", c.rope.rotary_dim / 2));
  }
  const bool any_moe = c.num_experts > 0;
  if (any_moe && (c.experts_per_token <= 0 || c.experts_per_token > c.num_experts ||
                  c.moe_intermediate_size <= 0))
    return bad("MoE needs num_experts_per_tok in [1, num_experts] and moe_intermediate_size");
  for (int64_t i = 0; i < c.num_layers; ++i)
    if (!c.IsMoeLayer(i) && c.intermediate_size <= 0)
      return bad(StrCat("layer ", i, " is dense but intermediate_size is missing"));
  if (c.quant.present) {
    for (const auto& spec : {std::optional<QuantSpec>(c.quant.global)}) {
      if (spec->mode != "affine")
        return Unimplemented(
            StrCat(label, ": quantization mode '", spec->mode, "' is not supported (affine only)"));
    }
    for (const auto& [module, spec] : c.quant.overrides)
      if (spec && spec->mode != "affine")
        return Unimplemented(StrCat(label, ": quantization mode '", spec->mode, "' of '", module,
                                    "' is not supported (affine only)"));
  }
  return Status::Ok();
}

}  // namespace

const char* ModelFamilyName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kQwen35:
      return "qwen3_5";
    case ModelFamily::kQwen35Moe:
      return "qwen3_5_moe";
    case ModelFamily::kQwen3Next:
      return "qwen3_next";
  }
  return "unknown";
}

bool ModelConfig::IsMoeLayer(int64_t layer) const {
  if (num_experts <= 0) return false;
  if (family == ModelFamily::kQwen35Moe) return true;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
    return false;
  return decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
}

std::optional<QuantSpec> ModelConfig::QuantFor(const std::string& module_path) const {
  if (!quant.present) return std::nullopt;
  const auto it = quant.overrides.find(module_path);
  if (it != quant.overrides.end()) return it->second;
  return quant.global;
}

Result<ModelConfig> ParseModelConfig(std::string_view json_text, const std::string& label) {
  const json root = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object())
    return InvalidArgument(StrCat(label, ": not a valid JSON object"));
  const bool nested = root.contains("text_config") && root.at("text_config").is_object();
  const json& text = nested ? root.at("text_config") : root;
  Reader top(root, label);
  Reader r(text, nested ? label + " (text_config)" : label);

  ModelConfig c;
  if (root.contains("architectures") && root.at("architectures").is_array() &&
      !root.at("architectures").empty() && root.at("architectures")[0].is_string())
    c.architecture = root.at("architectures")[0].get<std::string>();
  c.model_type = top.String("model_type");
  MTPLX_ASSIGN_OR_RETURN(c.family, FamilyFor(c.architecture, c.model_type, label));

  c.vocab_size = r.Int("vocab_size");
  c.hidden_size = r.Int("hidden_size");
  c.num_layers = r.Int("num_hidden_layers");
  c.num_heads = r.Int("num_attention_heads");
  c.num_kv_heads = r.Int("num_key_value_heads", c.num_heads);
  c.head_dim = r.Int("head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.attn_output_gate = r.Bool("attn_output_gate", true);
  c.attention_bias = r.Bool("attention_bias", false);
  c.linear_key_heads = r.Int("linear_num_key_heads");
  c.linear_value_heads = r.Int("linear_num_value_heads");
  c.linear_key_dim = r.Int("linear_key_head_dim", 128);
  c.linear_value_dim = r.Int("linear_value_head_dim", 128);
  c.conv_kernel = r.Int("linear_conv_kernel_dim", 4);
  c.intermediate_size = r.Int("intermediate_size", 0);
  c.num_experts = r.Int("num_experts", 0);
  c.experts_per_token = r.Int("num_experts_per_tok", 0);
  c.moe_intermediate_size = r.Int("moe_intermediate_size", 0);
  c.shared_expert_intermediate_size = r.Int("shared_expert_intermediate_size", 0);
  // Qwen3.5-MoE always renormalises the top-k weights; Qwen3-Next reads the key.
  c.norm_topk_prob = c.family == ModelFamily::kQwen35Moe ? true : r.Bool("norm_topk_prob", true);
  c.decoder_sparse_step = r.Int("decoder_sparse_step", 1);
  c.mlp_only_layers = r.IntList("mlp_only_layers");
  c.rms_norm_eps = r.Number("rms_norm_eps", 1e-6);
  c.max_position_embeddings = r.Int("max_position_embeddings", 262144);
  c.tie_word_embeddings = r.Bool("tie_word_embeddings", top.Bool("tie_word_embeddings", false));
  c.mtp_layers = r.Int("mtp_num_hidden_layers", r.Int("num_nextn_predict_layers", 1));
  c.mtp_dedicated_embeddings = r.Bool("mtp_use_dedicated_embeddings", false);
  c.mtp_norm_encoding = top.String("mtplx_mtp_norm_encoding", top.String("mtp_norm_encoding"));
  ParseLayerTypes(text, r, c);
  ParseRope(text, r, c);
  ParseQuantization(root, text, r, c);
  if (!top.status().ok()) return top.status();
  if (!r.status().ok()) return r.status();
  MTPLX_RETURN_IF_ERROR(Validate(c, label));
  return c;
}

Result<ModelConfig> LoadModelConfig(const std::string& model_dir) {
  const std::string path = JoinPath(model_dir, "config.json");
  if (!FileExists(path)) return NotFound(StrCat(path, ": missing (is this a model folder?)"));
  MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseModelConfig(text, path);
}

}  // namespace mtplx::io
