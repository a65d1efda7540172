#include "pack/convert_plan.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "base/float16.h"
#include "base/strings.h"
#include "pack/quant_policy.h"

namespace mtplx::pack {
namespace {

using io::ModelConfig;
using io::ModelFamily;

bool IsVisionTensor(const std::string& name) {
  for (const char* prefix : {"model.visual.", "visual.", "vision_tower.", "model.vision_tower."})
    if (StartsWith(name, prefix)) return true;
  return false;
}

bool IsStorableFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

// Reads `cols` elements of a float tensor starting at element `offset` as f32.
void ReadFloats(const TensorView& v, int64_t offset, int64_t cols, float* out) {
  const auto* base = static_cast<const uint8_t*>(v.data);
  switch (v.dtype) {
    case DType::kF32:
      std::memcpy(out, base + 4 * offset, 4 * cols);
      return;
    case DType::kBF16:
      for (int64_t c = 0; c < cols; ++c) {
        uint16_t bits;
        std::memcpy(&bits, base + 2 * (offset + c), 2);
        out[c] = Bf16ToF32(bits);
      }
      return;
    default:  // F16 (the plan admits nothing else)
      for (int64_t c = 0; c < cols; ++c) {
        uint16_t bits;
        std::memcpy(&bits, base + 2 * (offset + c), 2);
        out[c] = F16ToF32(bits);
      }
      return;
  }
}

// The narrowest type that holds 1 + w exactly for every element, computed in f32 as the loader
// does for Hugging Face norms: the source dtype when it can, else F32. Storing the gain rounded
// to bf16 (as mlx-lm does) would change logits of a trained model; this keeps them bit-identical.
DType GainDtype(const TensorView& v) {
  if (v.dtype == DType::kF32) return DType::kF32;
  for (int64_t i = 0; i < v.NumElements(); ++i) {
    const float gain = 1.0f + v.GetFloat(i);
    const float rounded = v.dtype == DType::kBF16 ? RoundToBf16(gain) : RoundToF16(gain);
    if (rounded != gain) return DType::kF32;
  }
  return v.dtype;
}

const char* DtypeLabel(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "fp16";
    default:
      return "fp32";
  }
}

// One part of the plan: where its tensors come from, where they go, and how.
struct Section {
  std::string source_prefix;  // "model.language_model.", "model.", "mtp."
  std::string output_prefix;  // "language_model.model.", "model.", "mtp."
  std::deque<PlannedTensor>* list;
  bool shift_norms;  // store zero-centred norms as 1 + w (the MLX trunk convention)
  QuantRequest quant;
};

class Planner {
 public:
  Planner(const ModelConfig& config, const io::Checkpoint& checkpoint, ConvertPlan& plan)
      : c_(config), checkpoint_(checkpoint), plan_(plan) {}

  Status Layer(const Section& s, const std::string& p, bool attention, bool moe);
  Status Linear(const Section& s, const std::string& module, const std::vector<int64_t>& shape);
  Status Vector(const Section& s, const std::string& name, int64_t size, bool zero_centred);
  Status Conv(const Section& s, const std::string& name);
  Status Experts(const Section& s, const std::string& p);
  // Records a source tensor as read and returns its view after checking dtype (and shape when
  // `expected` is not empty).
  Result<const TensorView*> Use(const std::string& name, const std::vector<int64_t>& expected);
  bool Has(const std::string& name) const { return checkpoint_.Has(name); }
  void Drop(const std::string& name) {
    used_.insert(name);
    plan_.dropped.push_back(name);
  }
  Status CheckNothingLeft() const;

 private:
  Status Attention(const Section& s, const std::string& p);
  Status DeltaNet(const Section& s, const std::string& p);
  Status Mlp(const Section& s, const std::string& p, int64_t inter);
  Status Moe(const Section& s, const std::string& p);
  PlannedTensor& Add(const Section& s, const std::string& name, std::vector<int64_t> shape,
                     DType dtype, std::vector<RowRange> parts);
  void Quantize(const Section& s, PlannedTensor& t);

  const ModelConfig& c_;
  const io::Checkpoint& checkpoint_;
  ConvertPlan& plan_;
  std::set<std::string> used_;
};

Result<const TensorView*> Planner::Use(const std::string& name,
                                       const std::vector<int64_t>& expected) {
  if (!Has(name)) return NotFound(StrCat(checkpoint_.dir(), ": missing tensor '", name, "'"));
  MTPLX_ASSIGN_OR_RETURN(TensorView view, checkpoint_.Get(name));
  const std::string file = checkpoint_.FileOf(name);
  if (!IsStorableFloat(view.dtype))
    return InvalidArgument(StrCat(file, ": tensor '", name, "' is ", DTypeName(view.dtype),
                                  ", expected F32, F16 or BF16"));
  if (!expected.empty() && view.shape != expected)
    return InvalidArgument(StrCat(file, ": tensor '", name, "' has shape ", ShapeString(view.shape),
                                  ", expected ", ShapeString(expected)));
  used_.insert(name);
  plan_.views.push_back(std::move(view));
  return &plan_.views.back();
}

PlannedTensor& Planner::Add(const Section& s, const std::string& name, std::vector<int64_t> shape,
                            DType dtype, std::vector<RowRange> parts) {
  PlannedTensor t;
  t.name = s.output_prefix + name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.parts = std::move(parts);
  s.list->push_back(std::move(t));
  return s.list->back();
}

void Planner::Quantize(const Section& s, PlannedTensor& t) {
  const QuantChoice q = ChooseQuantization(t.Module(), t.cols(), s.quant.bits, s.quant.group_size);
  if (q.bits == 0) return;
  t.bits = q.bits;
  t.group_size = q.group_size;
  // The loader checks every quantized tensor against config.json (override, else global).
  if (q.is_override || s.list == &plan_.mtp) plan_.overrides[t.Module()] = {q.bits, q.group_size};
}

Status Planner::Linear(const Section& s, const std::string& module,
                       const std::vector<int64_t>& shape) {
  const std::string source = s.source_prefix + module + ".weight";
  MTPLX_ASSIGN_OR_RETURN(const TensorView* v, Use(source, shape));
  PlannedTensor& t =
      Add(s, module + ".weight", shape, v->dtype, {{v, 0, v->NumElements() / shape.back()}});
  Quantize(s, t);
  return Status::Ok();
}

Status Planner::Vector(const Section& s, const std::string& name, int64_t size, bool zero_centred) {
  const std::string source = s.source_prefix + name;
  MTPLX_ASSIGN_OR_RETURN(const TensorView* v, Use(source, {}));
  if (v->rank() == 0 || v->NumElements() != size)
    return InvalidArgument(StrCat(checkpoint_.FileOf(source), ": tensor '", source, "' has shape ",
                                  ShapeString(v->shape), ", expected [", size, "]"));
  const bool add_one = zero_centred && s.shift_norms;
  PlannedTensor& t = Add(s, name, v->shape, add_one ? GainDtype(*v) : v->dtype,
                         {{v, 0, v->NumElements() / v->shape.back()}});
  t.add_one = add_one;
  return Status::Ok();
}

Status Planner::Conv(const Section& s, const std::string& name) {
  const int64_t channels = c_.ConvDim(), k = c_.conv_kernel;
  const std::string source = s.source_prefix + name;
  MTPLX_ASSIGN_OR_RETURN(const TensorView* v, Use(source, {}));
  if (v->shape != std::vector<int64_t>{channels, 1, k} &&
      v->shape != std::vector<int64_t>{channels, k})
    return InvalidArgument(StrCat(checkpoint_.FileOf(source), ": tensor '", source, "' has shape ",
                                  ShapeString(v->shape), ", expected [", channels, ", 1, ", k,
                                  "] (Hugging Face conv1d layout)"));
  // MLX stores conv1d as [C, K, 1]: the same bytes, and the loader's origin marker for Qwen3-Next.
  PlannedTensor& t = Add(s, name, {channels, k}, v->dtype, {{v, 0, channels}});
  t.file_shape = {channels, k, 1};
  return Status::Ok();
}

Status Planner::Attention(const Section& s, const std::string& p) {
  const int64_t h = c_.hidden_size, d = c_.head_dim;
  const int64_t q_rows = c_.num_heads * d * (c_.attn_output_gate ? 2 : 1);
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "q_proj", {q_rows, h}));
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "k_proj", {c_.num_kv_heads * d, h}));
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "v_proj", {c_.num_kv_heads * d, h}));
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "o_proj", {h, c_.num_heads * d}));
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "q_norm.weight", d, true));
  return Vector(s, p + "k_norm.weight", d, true);
}

Status Planner::DeltaNet(const Section& s, const std::string& p) {
  const int64_t h = c_.hidden_size, hv = c_.linear_value_heads;
  const int64_t conv_dim = c_.ConvDim(), value_dim = c_.ValueDim();
  if (Has(s.source_prefix + p + "in_proj_qkvz.weight")) {  // Qwen3-Next: grouped by key head
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_qkvz", {conv_dim + value_dim, h}));
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_ba", {2 * hv, h}));
  } else {
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_qkv", {conv_dim, h}));
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_z", {value_dim, h}));
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_b", {hv, h}));
    MTPLX_RETURN_IF_ERROR(Linear(s, p + "in_proj_a", {hv, h}));
  }
  MTPLX_RETURN_IF_ERROR(Conv(s, p + "conv1d.weight"));
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "A_log", hv, false));
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "dt_bias", hv, false));
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "norm.weight", c_.linear_value_dim, false));
  return Linear(s, p + "out_proj", {h, value_dim});
}

Status Planner::Mlp(const Section& s, const std::string& p, int64_t inter) {
  const int64_t h = c_.hidden_size;
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "gate_proj", {inter, h}));
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "up_proj", {inter, h}));
  return Linear(s, p + "down_proj", {h, inter});
}

// Experts become MLX switch_mlp stacks [E, I, H], [E, I, H], [E, H, I], from the HF fused
// gate_up / down stacks (Qwen3.5-MoE trunk, Qwen3.6 MTP) or per-expert tensors (Qwen3-Next,
// Qwen3.5-MoE MTP), as mlx-lm's sanitize does.
Status Planner::Experts(const Section& s, const std::string& p) {
  const int64_t e = c_.num_experts, inter = c_.moe_intermediate_size, h = c_.hidden_size;
  std::vector<RowRange> gate, up, down;
  const std::string experts = s.source_prefix + p + "experts.";
  if (Has(experts + "gate_up_proj")) {
    MTPLX_ASSIGN_OR_RETURN(const TensorView* gu, Use(experts + "gate_up_proj", {e, 2 * inter, h}));
    MTPLX_ASSIGN_OR_RETURN(const TensorView* d, Use(experts + "down_proj", {e, h, inter}));
    for (int64_t i = 0; i < e; ++i) {
      gate.push_back({gu, 2 * inter * i, inter});
      up.push_back({gu, 2 * inter * i + inter, inter});
    }
    down.push_back({d, 0, e * h});
  } else {
    for (int64_t i = 0; i < e; ++i) {
      const std::string n = StrCat(experts, i, ".");
      MTPLX_ASSIGN_OR_RETURN(const TensorView* g, Use(n + "gate_proj.weight", {inter, h}));
      MTPLX_ASSIGN_OR_RETURN(const TensorView* u, Use(n + "up_proj.weight", {inter, h}));
      MTPLX_ASSIGN_OR_RETURN(const TensorView* d, Use(n + "down_proj.weight", {h, inter}));
      gate.push_back({g, 0, inter});
      up.push_back({u, 0, inter});
      down.push_back({d, 0, h});
    }
  }
  const DType dtype = gate[0].view->dtype;
  Quantize(s, Add(s, p + "switch_mlp.gate_proj.weight", {e, inter, h}, dtype, gate));
  Quantize(s, Add(s, p + "switch_mlp.up_proj.weight", {e, inter, h}, dtype, up));
  Quantize(s, Add(s, p + "switch_mlp.down_proj.weight", {e, h, inter}, down[0].view->dtype, down));
  return Status::Ok();
}

Status Planner::Moe(const Section& s, const std::string& p) {
  MTPLX_RETURN_IF_ERROR(Linear(s, p + "gate", {c_.num_experts, c_.hidden_size}));
  MTPLX_RETURN_IF_ERROR(Experts(s, p));
  if (c_.shared_expert_intermediate_size <= 0) return Status::Ok();
  MTPLX_RETURN_IF_ERROR(Mlp(s, p + "shared_expert.", c_.shared_expert_intermediate_size));
  return Linear(s, p + "shared_expert_gate", {1, c_.hidden_size});
}

Status Planner::Layer(const Section& s, const std::string& p, bool attention, bool moe) {
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "input_layernorm.weight", c_.hidden_size, true));
  if (attention) {
    MTPLX_RETURN_IF_ERROR(Attention(s, p + "self_attn."));
  } else {
    MTPLX_RETURN_IF_ERROR(DeltaNet(s, p + "linear_attn."));
  }
  MTPLX_RETURN_IF_ERROR(Vector(s, p + "post_attention_layernorm.weight", c_.hidden_size, true));
  if (moe) return Moe(s, p + "mlp.");
  return Mlp(s, p + "mlp.", c_.intermediate_size);
}

Status Planner::CheckNothingLeft() const {
  for (const std::string& name : checkpoint_.Names()) {
    if (used_.count(name)) continue;
    return InvalidArgument(
        StrCat(checkpoint_.FileOf(name), ": unexpected tensor '", name, "': it is not part of the ",
               io::ModelFamilyName(c_.family), " layout config.json describes (", c_.num_layers,
               " layers, mtp_num_hidden_layers ", c_.mtp_layers, "), so converting would lose it"));
  }
  return Status::Ok();
}

// MLX conversions and quantized checkpoints would be converted twice; say so up front.
Status CheckHuggingFaceSource(const io::Checkpoint& checkpoint) {
  for (const std::string& name : checkpoint.Names()) {
    if (EndsWith(name, ".scales"))
      return InvalidArgument(StrCat(checkpoint.FileOf(name), ": tensor '", name,
                                    "' shows the checkpoint is already quantized; mtplx convert "
                                    "reads unquantized Hugging Face checkpoints"));
    if (StartsWith(name, "language_model."))
      return InvalidArgument(StrCat(checkpoint.FileOf(name), ": tensor '", name,
                                    "' is in MLX naming; mtplx convert reads Hugging Face "
                                    "checkpoints (model.* / model.language_model.* names)"));
  }
  return Status::Ok();
}

bool HasMtpHead(const io::Checkpoint& checkpoint) {
  for (const std::string& name : checkpoint.Names())
    if (StartsWith(name, "mtp.")) return true;
  return false;
}

std::string SourceTrunkPrefix(const io::Checkpoint& checkpoint) {
  for (const std::string& name : checkpoint.Names())
    if (StartsWith(name, "model.language_model.")) return "model.language_model.";
  return "model.";
}

}  // namespace

void PlannedTensor::Row(int64_t r, float* out) const {
  const int64_t n = cols();
  for (const RowRange& part : parts) {
    if (r < part.rows) {
      ReadFloats(*part.view, (part.first_row + r) * n, n, out);
      break;
    }
    r -= part.rows;
  }
  if (add_one)
    for (int64_t c = 0; c < n; ++c) out[c] += 1.0f;
}

const void* PlannedTensor::Raw() const {
  if (bits != 0 || add_one || parts.size() != 1) return nullptr;
  const RowRange& part = parts[0];
  const bool whole = part.first_row == 0 && part.rows * cols() == part.view->NumElements();
  return whole && part.view->dtype == dtype ? part.view->data : nullptr;
}

Result<ConvertPlan> BuildConvertPlan(const ModelConfig& config, const io::Checkpoint& checkpoint,
                                     const QuantRequest& trunk_quant,
                                     const QuantRequest& mtp_quant) {
  MTPLX_RETURN_IF_ERROR(CheckHuggingFaceSource(checkpoint));
  ConvertPlan plan;
  Planner planner(config, checkpoint, plan);
  // MLX names: Qwen 3.5 wraps the text model in language_model.*; Qwen3-Next has no wrapper.
  const bool next = config.family == ModelFamily::kQwen3Next;
  Section trunk{SourceTrunkPrefix(checkpoint), next ? "model." : "language_model.model.",
                &plan.trunk, true, trunk_quant};
  Section head{"", next ? "" : "language_model.", &plan.trunk, true, trunk_quant};
  const int64_t vocab = config.vocab_size, h = config.hidden_size;
  MTPLX_RETURN_IF_ERROR(planner.Linear(trunk, "embed_tokens", {vocab, h}));
  plan.source_dtype = DtypeLabel(plan.views.back().dtype);
  for (int64_t i = 0; i < config.num_layers; ++i)
    MTPLX_RETURN_IF_ERROR(planner.Layer(trunk, StrCat("layers.", i, "."), config.IsFullAttention(i),
                                        config.IsMoeLayer(i)));
  MTPLX_RETURN_IF_ERROR(planner.Vector(trunk, "norm.weight", h, true));
  if (!config.tie_word_embeddings) {
    MTPLX_RETURN_IF_ERROR(planner.Linear(head, "lm_head", {vocab, h}));
  } else if (planner.Has("lm_head.weight")) {
    planner.Drop("lm_head.weight");  // a tied head is the embedding; MLX stores it once
  }
  if (config.mtp_layers > 0 && HasMtpHead(checkpoint)) {
    // The sidecar keeps the HF names and raw (zero-centred) norms, declared in config.json.
    Section mtp{"mtp.", "mtp.", &plan.mtp, false, mtp_quant};
    MTPLX_RETURN_IF_ERROR(planner.Linear(mtp, "fc", {h, 2 * h}));
    for (const char* norm :
         {"pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "norm.weight"})
      MTPLX_RETURN_IF_ERROR(planner.Vector(mtp, norm, h, true));
    MTPLX_RETURN_IF_ERROR(planner.Layer(mtp, "layers.0.", true, config.num_experts > 0));
  }
  for (const std::string& name : checkpoint.Names())
    if (IsVisionTensor(name)) planner.Drop(name);
  MTPLX_RETURN_IF_ERROR(planner.CheckNothingLeft());
  return plan;
}

}  // namespace mtplx::pack
