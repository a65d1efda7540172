#include "synth/plan.h"

#include <cmath>

#include "base/strings.h"
#include "pack/quant_policy.h"
#include "synth/presets.h"

namespace mtplx::synth {
namespace {

using Json = nlohmann::ordered_json;

int64_t Get(const Json& text, const char* key, int64_t fallback = 0) {
  return text.contains(key) && text[key].is_number_integer() ? text[key].get<int64_t>() : fallback;
}

class Builder {
 public:
  Builder(Plan& plan, const PlanOptions& options, const Json& text, bool next)
      : plan_(plan), options_(options), text_(text), next_(next), mlx_(options.format == "mlx") {
    h_ = Get(text, "hidden_size");
  }

  const Logical* L(const std::string& name, int64_t rows, int64_t cols, Init init = Init::kLinear,
                   float gain = 1.0f) {
    plan_.logicals.push_back(Logical{name, rows, cols, init, gain});
    return &plan_.logicals.back();
  }

  // Trunk / head / MTP prefixes of the chosen format.
  std::string Trunk() const {
    if (next_) return "model.";
    return mlx_ ? "language_model.model." : "model.language_model.";
  }
  std::string Head() const { return next_ || !mlx_ ? "lm_head" : "language_model.lm_head"; }
  std::string Mtp() const { return next_ || !mlx_ ? "mtp." : "language_model.mtp."; }

  // A linear / embedding weight: quantized in MLX format when bits > 0, by the rule mlx-lm
  // applies (pack/quant_policy.h).
  void Linear(const std::string& module, std::vector<int64_t> shape, std::vector<Part> parts) {
    Physical p;
    p.name = module + (EndsWith(module, "gate_up_proj") || EndsWith(module, "experts.down_proj")
                           ? ""
                           : ".weight");
    p.shape = std::move(shape);
    p.parts = std::move(parts);
    if (mlx_) {
      const pack::QuantChoice q =
          pack::ChooseQuantization(module, p.cols(), options_.bits, options_.group_size);
      if (q.bits) {
        p.bits = q.bits;
        p.group_size = q.group_size;
      }
      if (q.is_override) overrides_[module] = {{"group_size", q.group_size}, {"bits", q.bits}};
    }
    plan_.physicals.push_back(std::move(p));
  }

  void Vector(const std::string& name, const Logical* l, bool zero_centred,
              DType dtype = DType::kBF16) {
    Physical p;
    p.name = name;
    p.shape = {l->cols};
    p.parts = {{l}};
    p.dtype = dtype;
    p.add_one = zero_centred && mlx_;
    plan_.physicals.push_back(std::move(p));
  }

  void Norm(const std::string& phys, const std::string& logical) {
    Vector(phys, L(logical, 1, h_, Init::kNormDelta), true);
  }

  void Attention(const std::string& phys, const std::string& log) {
    const int64_t heads = Get(text_, "num_attention_heads"), kv = Get(text_, "num_key_value_heads");
    const int64_t d = Get(text_, "head_dim");
    Linear(phys + "q_proj", {2 * heads * d, h_}, {{L(log + "q_proj", 2 * heads * d, h_)}});
    Linear(phys + "k_proj", {kv * d, h_}, {{L(log + "k_proj", kv * d, h_)}});
    Linear(phys + "v_proj", {kv * d, h_}, {{L(log + "v_proj", kv * d, h_)}});
    Linear(phys + "o_proj", {h_, heads * d}, {{L(log + "o_proj", h_, heads * d)}});
    Vector(phys + "q_norm.weight", L(log + "q_norm", 1, d, Init::kNormDelta), true);
    Vector(phys + "k_norm.weight", L(log + "k_norm", 1, d, Init::kNormDelta), true);
  }

  void DeltaNet(const std::string& phys, const std::string& log, bool f32_extras) {
    const int64_t hk = Get(text_, "linear_num_key_heads"),
                  hv = Get(text_, "linear_num_value_heads");
    const int64_t dk = Get(text_, "linear_key_head_dim"), dv = Get(text_, "linear_value_head_dim");
    const int64_t k = Get(text_, "linear_conv_kernel_dim");
    const int64_t conv_dim = 2 * hk * dk + hv * dv, value_dim = hv * dv;
    if (next_) {
      Linear(phys + "in_proj_qkvz", {conv_dim + value_dim, h_},
             {{L(log + "in_proj_qkvz", conv_dim + value_dim, h_)}});
      Linear(phys + "in_proj_ba", {2 * hv, h_}, {{L(log + "in_proj_ba", 2 * hv, h_)}});
    } else {
      Linear(phys + "in_proj_qkv", {conv_dim, h_}, {{L(log + "in_proj_qkv", conv_dim, h_)}});
      Linear(phys + "in_proj_z", {value_dim, h_}, {{L(log + "in_proj_z", value_dim, h_)}});
      Linear(phys + "in_proj_b", {hv, h_}, {{L(log + "in_proj_b", hv, h_)}});
      Linear(phys + "in_proj_a", {hv, h_}, {{L(log + "in_proj_a", hv, h_)}});
    }
    Physical conv;
    conv.name = phys + "conv1d.weight";
    conv.shape = {conv_dim, k};
    conv.file_shape =
        mlx_ ? std::vector<int64_t>{conv_dim, k, 1} : std::vector<int64_t>{conv_dim, 1, k};
    conv.parts = {{L(log + "conv1d", conv_dim, k, Init::kConv)}};
    plan_.physicals.push_back(conv);
    const DType extra = f32_extras ? DType::kF32 : DType::kBF16;
    Vector(phys + "A_log", L(log + "A_log", 1, hv, Init::kALog), false, extra);
    Vector(phys + "dt_bias", L(log + "dt_bias", 1, hv, Init::kDtBias), false);
    Vector(phys + "norm.weight", L(log + "norm", 1, dv, Init::kGatedNorm), false, extra);
    Linear(phys + "out_proj", {h_, value_dim}, {{L(log + "out_proj", h_, value_dim)}});
  }

  void Mlp(const std::string& phys, const std::string& log, int64_t inter) {
    Linear(phys + "gate_proj", {inter, h_}, {{L(log + "gate_proj", inter, h_)}});
    Linear(phys + "up_proj", {inter, h_}, {{L(log + "up_proj", inter, h_)}});
    Linear(phys + "down_proj", {h_, inter}, {{L(log + "down_proj", h_, inter)}});
  }

  // Experts: logical per-expert weights; physical layout by format and `fused`.
  void Experts(const std::string& phys, const std::string& log, bool fused) {
    const int64_t e = Get(text_, "num_experts"), inter = Get(text_, "moe_intermediate_size");
    std::vector<const Logical*> gate, up, down;
    for (int64_t i = 0; i < e; ++i) {
      const std::string n = StrCat(log, "experts.", i, ".");
      gate.push_back(L(n + "gate_proj", inter, h_));
      up.push_back(L(n + "up_proj", inter, h_));
      down.push_back(L(n + "down_proj", h_, inter));
    }
    if (mlx_) {  // switch_mlp stacks
      std::vector<Part> g, u, d;
      for (int64_t i = 0; i < e; ++i) {
        g.push_back({gate[i]});
        u.push_back({up[i]});
        d.push_back({down[i]});
      }
      Linear(phys + "switch_mlp.gate_proj", {e, inter, h_}, g);
      Linear(phys + "switch_mlp.up_proj", {e, inter, h_}, u);
      Linear(phys + "switch_mlp.down_proj", {e, h_, inter}, d);
    } else if (fused) {
      std::vector<Part> gu, d;
      for (int64_t i = 0; i < e; ++i) {
        gu.push_back({gate[i]});
        gu.push_back({up[i]});
        d.push_back({down[i]});
      }
      Linear(phys + "experts.gate_up_proj", {e, 2 * inter, h_}, gu);
      Linear(phys + "experts.down_proj", {e, h_, inter}, d);
    } else {
      for (int64_t i = 0; i < e; ++i) {
        const std::string n = StrCat(phys, "experts.", i, ".");
        Linear(n + "gate_proj", {inter, h_}, {{gate[i]}});
        Linear(n + "up_proj", {inter, h_}, {{up[i]}});
        Linear(n + "down_proj", {h_, inter}, {{down[i]}});
      }
    }
  }

  void Moe(const std::string& phys, const std::string& log, bool fused) {
    const int64_t e = Get(text_, "num_experts"),
                  shared = Get(text_, "shared_expert_intermediate_size");
    Linear(phys + "gate", {e, h_}, {{L(log + "gate", e, h_, Init::kLinear, 4.0f)}});
    Experts(phys, log, fused);
    Mlp(phys + "shared_expert.", log + "shared_expert.", shared);
    Linear(phys + "shared_expert_gate", {1, h_}, {{L(log + "shared_expert_gate", 1, h_)}});
  }

  void Layer(const std::string& phys, const std::string& log, bool attention, bool moe,
             bool fused_experts, bool f32_extras) {
    Norm(phys + "input_layernorm.weight", log + "input_layernorm");
    if (attention) {
      Attention(phys + "self_attn.", log + "self_attn.");
    } else {
      DeltaNet(phys + "linear_attn.", log + "linear_attn.", f32_extras);
    }
    Norm(phys + "post_attention_layernorm.weight", log + "post_attention_layernorm");
    if (moe) {
      Moe(phys + "mlp.", log + "mlp.", fused_experts);
    } else {
      Mlp(phys + "mlp.", log + "mlp.", Get(text_, "intermediate_size"));
    }
  }

  const Json& Overrides() const { return overrides_; }
  int64_t hidden() const { return h_; }

 private:
  Plan& plan_;
  const PlanOptions& options_;
  const Json& text_;
  bool next_;
  bool mlx_;
  int64_t h_ = 0;
  Json overrides_ = Json::object();
};

bool IsMoeLayer(const Json& text, bool next, int64_t layer) {
  if (Get(text, "num_experts") <= 0) return false;
  if (!next) return true;
  for (const auto& v : text["mlp_only_layers"])
    if (v.get<int64_t>() == layer) return false;
  return (layer + 1) % Get(text, "decoder_sparse_step", 1) == 0;
}

bool IsFullAttention(const Json& text, int64_t layer) {
  if (text.contains("layer_types")) return text["layer_types"][layer] == "full_attention";
  return (layer + 1) % Get(text, "full_attention_interval", 4) == 0;
}

}  // namespace

Result<Plan> BuildPlan(const PlanOptions& options) {
  if (options.format != "hf" && options.format != "mlx")
    return InvalidArgument(StrCat("unknown format '", options.format, "' (choose hf or mlx)"));
  if (options.bits != 0 && options.format != "mlx")
    return InvalidArgument("--bits needs --format mlx (Hugging Face checkpoints are bf16)");
  MTPLX_RETURN_IF_ERROR(pack::CheckQuantOptions(options.bits, options.group_size));
  Plan plan;
  MTPLX_ASSIGN_OR_RETURN(plan.config, PresetConfig(options.preset));
  const bool next = plan.config["architectures"][0] == "Qwen3NextForCausalLM";
  const Json& text = next ? plan.config : plan.config["text_config"];
  const bool tied = text.value("tie_word_embeddings", false);
  const bool f32_extras = options.preset == "dense-tiny";  // like Qwen3.5-0.8B
  Builder b(plan, options, text, next);
  const int64_t vocab = Get(text, "vocab_size"), h = b.hidden();
  const float head_gain = 2.0f;
  b.Linear(b.Trunk() + "embed_tokens", {vocab, h},
           {{b.L("embed_tokens", vocab, h, Init::kLinear, head_gain)}});
  for (int64_t i = 0; i < Get(text, "num_hidden_layers"); ++i)
    b.Layer(StrCat(b.Trunk(), "layers.", i, "."), StrCat("layers.", i, "."),
            IsFullAttention(text, i), IsMoeLayer(text, next, i), /*fused_experts=*/!next,
            f32_extras);
  b.Norm(b.Trunk() + "norm.weight", "norm");
  if (!tied) b.Linear(b.Head(), {vocab, h}, {{b.L("lm_head", vocab, h, Init::kLinear, head_gain)}});
  // MTP head: Qwen3.5-MoE stores per-expert MTP experts; Qwen3.6 fuses them like the trunk.
  const std::string m = b.Mtp();
  b.Linear(m + "fc", {h, 2 * h}, {{b.L("mtp.fc", h, 2 * h)}});
  b.Norm(m + "pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_embedding");
  b.Norm(m + "pre_fc_norm_hidden.weight", "mtp.pre_fc_norm_hidden");
  b.Norm(m + "norm.weight", "mtp.norm");
  b.Layer(m + "layers.0.", "mtp.layers.0.", true, Get(text, "num_experts") > 0,
          options.fused_mtp_experts, f32_extras);
  if (options.format == "mlx") {
    plan.config.erase("vision_config");
    if (options.bits > 0) {
      Json q = {{"group_size", options.group_size}, {"bits", options.bits}, {"mode", "affine"}};
      for (const auto& [key, value] : b.Overrides().items()) q[key] = value;
      plan.config["quantization"] = q;
      plan.config["quantization_config"] = q;
    }
  }
  return plan;
}

}  // namespace mtplx::synth
