#include "model/loader.h"

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "base/strings.h"
#include "kernels/affine_quant.h"
#include "kernels/gated_delta.h"

namespace mtplx::model {
namespace {

using io::ModelConfig;
using io::ModelFamily;

class Binder {
 public:
  Binder(const ModelConfig& config, io::Checkpoint& checkpoint)
      : config_(config), checkpoint_(checkpoint) {
    for (const auto& name : checkpoint.Names()) {
      const std::string normalized = NormalizeTensorName(name);
      if (!normalized.empty()) names_[normalized] = name;
    }
  }

  bool Has(const std::string& n) const { return names_.count(n) > 0; }

  const std::string& Original(const std::string& n) const { return names_.at(n); }

  Result<TensorView> Tensor(const std::string& n) const {
    const auto it = names_.find(n);
    if (it == names_.end())
      return NotFound(StrCat(checkpoint_.dir(), ": missing tensor '", n, "'"));
    return checkpoint_.Get(it->second);
  }

  // A weight [leading..., rows, cols] whose tensors are `base` + {".weight" | "", ".scales",
  // ".biases"}; leading dims are flattened into rows.
  Result<Matrix> Bind(const std::string& weight_name, const std::string& module,
                      std::vector<int64_t> expected) const;

  Result<std::vector<float>> Vector(const std::string& name, int64_t size, bool add_one) const;

  uint8_t* MutableData(const std::string& n) { return checkpoint_.MutableData(Original(n)); }

  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return checkpoint_.dir(); }

 private:
  Result<Matrix> BindQuantized(const std::string& weight_name, const std::string& module,
                               const std::vector<int64_t>& expected) const;

  const ModelConfig& config_;
  io::Checkpoint& checkpoint_;
  std::map<std::string, std::string> names_;
};

Status ShapeError(const std::string& file, const std::string& name, const TensorView& t,
                  const std::vector<int64_t>& expected, const char* what = "") {
  return InvalidArgument(StrCat(file, ": tensor '", name, "' has shape ", ShapeString(t.shape), " ",
                                DTypeName(t.dtype), ", expected ", ShapeString(expected), what));
}

Result<Matrix> Binder::Bind(const std::string& weight_name, const std::string& module,
                            std::vector<int64_t> expected) const {
  if (Has(module + ".scales")) return BindQuantized(weight_name, module, expected);
  MTPLX_ASSIGN_OR_RETURN(TensorView t, Tensor(weight_name));
  const std::string file = checkpoint_.FileOf(Original(weight_name));
  if (!IsFloat(t.dtype) || t.dtype == DType::kF64)
    return ShapeError(file, Original(weight_name), t, expected, " of F32, F16 or BF16");
  if (t.shape != expected) return ShapeError(file, Original(weight_name), t, expected);
  Matrix m;
  m.cols = expected.back();
  m.rows = t.NumElements() / std::max<int64_t>(m.cols, 1);
  m.dtype = t.dtype;
  m.data = t.data;
  return m;
}

Result<Matrix> Binder::BindQuantized(const std::string& weight_name, const std::string& module,
                                     const std::vector<int64_t>& expected) const {
  MTPLX_ASSIGN_OR_RETURN(TensorView w, Tensor(weight_name));
  MTPLX_ASSIGN_OR_RETURN(TensorView s, Tensor(module + ".scales"));
  MTPLX_ASSIGN_OR_RETURN(TensorView b, Tensor(module + ".biases"));
  const std::string file = checkpoint_.FileOf(Original(weight_name));
  const std::string name = Original(weight_name);
  const int64_t cols = expected.back();
  std::vector<int64_t> lead(expected.begin(), expected.end() - 1);
  auto with_last = [&](int64_t last) {
    auto shape = lead;
    shape.push_back(last);
    return shape;
  };
  if (w.dtype != DType::kU32 || w.rank() != static_cast<int>(expected.size()) ||
      std::vector<int64_t>(w.shape.begin(), w.shape.end() - 1) != lead)
    return ShapeError(file, name, w, with_last(-1), " of packed U32 codes");
  if (s.shape != b.shape || s.dtype != b.dtype || !IsFloat(s.dtype) || s.dtype == DType::kF64 ||
      s.rank() != w.rank() || s.dim(-1) <= 0)
    return InvalidArgument(StrCat(file, ": scales/biases of '", name, "' have shapes ",
                                  ShapeString(s.shape), " and ", ShapeString(b.shape)));
  const int64_t group = cols / s.dim(-1);
  const int64_t bits = w.dim(-1) * 32 / cols;
  if (cols % s.dim(-1) || (w.dim(-1) * 32) % cols || !kernels::IsSupportedAffineBits(bits) ||
      !kernels::IsSupportedGroupSize(static_cast<int>(group)) || s.shape != with_last(cols / group))
    return Unimplemented(StrCat(
        file, ": tensor '", name, "' packs ", cols, " columns into ", w.dim(-1), " words with ",
        s.dim(-1), " groups; supported: affine bits 2,3,4,5,6,8 and groups 32,64,128"));
  const std::string original_module =
      name.substr(0, name.size() - (EndsWith(name, ".weight") ? 7 : 0));
  if (const auto spec = config_.QuantFor(original_module); spec && config_.quant.present) {
    if (spec->bits != bits || spec->group_size != group)
      return InvalidArgument(StrCat(file, ": tensor '", name, "' is ", bits, "-bit g", group,
                                    " but config.json quantization says ", spec->bits, "-bit g",
                                    spec->group_size));
  }
  Matrix m;
  m.cols = cols;
  m.rows = w.NumElements() / w.dim(-1);
  m.quantized = true;
  m.quant.bits = static_cast<int>(bits);
  m.quant.group_size = static_cast<int>(group);
  m.quant.packed = static_cast<const uint32_t*>(w.data);
  m.quant.scales = s.data;
  m.quant.biases = b.data;
  m.quant.scale_dtype = s.dtype;
  return m;
}

Result<std::vector<float>> Binder::Vector(const std::string& name, int64_t size,
                                          bool add_one) const {
  MTPLX_ASSIGN_OR_RETURN(TensorView t, Tensor(name));
  if (!IsFloat(t.dtype) || t.NumElements() != size)
    return ShapeError(checkpoint_.FileOf(Original(name)), Original(name), t, {size});
  std::vector<float> out = ToFloatVector(t);
  if (add_one)
    for (float& v : out) v += 1.0f;
  return out;
}

// ---- Layer binding -------------------------------------------------------------------------

struct NormPolicy {
  bool trunk_add_one;  // HF origin stores zero-centred norms raw
  bool mtp_add_one;
};

Result<AttentionWeights> BindAttention(const Binder& b, const std::string& p, bool add_one) {
  const ModelConfig& c = b.config();
  const int64_t h = c.hidden_size, d = c.head_dim;
  AttentionWeights a;
  const int64_t q_rows = c.num_heads * d * (c.attn_output_gate ? 2 : 1);
  MTPLX_ASSIGN_OR_RETURN(a.q_proj, b.Bind(p + "q_proj.weight", p + "q_proj", {q_rows, h}));
  MTPLX_ASSIGN_OR_RETURN(a.k_proj,
                         b.Bind(p + "k_proj.weight", p + "k_proj", {c.num_kv_heads * d, h}));
  MTPLX_ASSIGN_OR_RETURN(a.v_proj,
                         b.Bind(p + "v_proj.weight", p + "v_proj", {c.num_kv_heads * d, h}));
  MTPLX_ASSIGN_OR_RETURN(a.o_proj, b.Bind(p + "o_proj.weight", p + "o_proj", {h, c.num_heads * d}));
  MTPLX_ASSIGN_OR_RETURN(a.q_norm, b.Vector(p + "q_norm.weight", d, add_one));
  MTPLX_ASSIGN_OR_RETURN(a.k_norm, b.Vector(p + "k_norm.weight", d, add_one));
  return a;
}

// Reorders rows of a [groups * block, ...] tensor in place: `perm[dst] = src`.
void PermuteRows(uint8_t* data, int64_t rows, int64_t row_bytes, const std::vector<int64_t>& perm) {
  std::vector<uint8_t> copy(data, data + rows * row_bytes);
  for (int64_t dst = 0; dst < rows; ++dst)
    std::memcpy(data + dst * row_bytes, copy.data() + perm[dst] * row_bytes, row_bytes);
}

Status PermuteTensorRows(Binder& b, const std::string& module, const std::vector<int64_t>& perm) {
  for (const char* suffix : {".weight", ".scales", ".biases"}) {
    const std::string name = module + suffix;
    if (!b.Has(name)) continue;
    MTPLX_ASSIGN_OR_RETURN(TensorView t, b.Tensor(name));
    const int64_t rows = t.dim(0);
    if (rows != static_cast<int64_t>(perm.size()))
      return InvalidArgument(StrCat(b.dir(), ": tensor '", b.Original(name), "' has ", rows,
                                    " rows, expected ", perm.size()));
    PermuteRows(b.MutableData(name), rows, static_cast<int64_t>(t.NumBytes()) / rows, perm);
  }
  return Status::Ok();
}

// Qwen3-Next groups in_proj_qkvz / in_proj_ba by key head; un-group to the Qwen3.5 order.
Status UngroupQwen3Next(Binder& b, const std::string& p) {
  const ModelConfig& c = b.config();
  const int64_t hk = c.linear_key_heads, r = c.linear_value_heads / hk;
  const int64_t dk = c.linear_key_dim, dv = c.linear_value_dim;
  const int64_t block = 2 * dk + 2 * r * dv;
  std::vector<int64_t> perm;
  for (int64_t part = 0; part < 4; ++part) {  // q, k, v, z
    for (int64_t g = 0; g < hk; ++g) {
      const int64_t offset = part == 0 ? 0 : part == 1 ? dk : part == 2 ? 2 * dk : 2 * dk + r * dv;
      const int64_t length = part < 2 ? dk : r * dv;
      for (int64_t i = 0; i < length; ++i) perm.push_back(g * block + offset + i);
    }
  }
  MTPLX_RETURN_IF_ERROR(PermuteTensorRows(b, p + "in_proj_qkvz", perm));
  std::vector<int64_t> perm_ba;
  for (int64_t part = 0; part < 2; ++part)
    for (int64_t g = 0; g < hk; ++g)
      for (int64_t i = 0; i < r; ++i) perm_ba.push_back(g * 2 * r + part * r + i);
  return PermuteTensorRows(b, p + "in_proj_ba", perm_ba);
}

Result<DeltaNetWeights> BindDeltaNet(Binder& b, const std::string& p) {
  const ModelConfig& c = b.config();
  const int64_t h = c.hidden_size, hv = c.linear_value_heads;
  const int64_t conv_dim = c.ConvDim(), value_dim = c.ValueDim();
  DeltaNetWeights w;
  if (b.Has(p + "in_proj_qkvz.weight")) {
    MTPLX_RETURN_IF_ERROR(UngroupQwen3Next(b, p));
    MTPLX_ASSIGN_OR_RETURN(Matrix qkvz, b.Bind(p + "in_proj_qkvz.weight", p + "in_proj_qkvz",
                                               {conv_dim + value_dim, h}));
    MTPLX_ASSIGN_OR_RETURN(Matrix ba,
                           b.Bind(p + "in_proj_ba.weight", p + "in_proj_ba", {2 * hv, h}));
    w.in_qkv = qkvz.RowSlice(0, conv_dim);
    w.in_z = qkvz.RowSlice(conv_dim, value_dim);
    w.in_b = ba.RowSlice(0, hv);
    w.in_a = ba.RowSlice(hv, hv);
  } else {
    MTPLX_ASSIGN_OR_RETURN(w.in_qkv,
                           b.Bind(p + "in_proj_qkv.weight", p + "in_proj_qkv", {conv_dim, h}));
    MTPLX_ASSIGN_OR_RETURN(w.in_z, b.Bind(p + "in_proj_z.weight", p + "in_proj_z", {value_dim, h}));
    MTPLX_ASSIGN_OR_RETURN(w.in_b, b.Bind(p + "in_proj_b.weight", p + "in_proj_b", {hv, h}));
    MTPLX_ASSIGN_OR_RETURN(w.in_a, b.Bind(p + "in_proj_a.weight", p + "in_proj_a", {hv, h}));
  }
  MTPLX_ASSIGN_OR_RETURN(w.out_proj, b.Bind(p + "out_proj.weight", p + "out_proj", {h, value_dim}));
  // conv1d is [C, 1, K] (HF) or [C, K, 1] (MLX): the same bytes, row-major [C, K].
  MTPLX_ASSIGN_OR_RETURN(TensorView conv, b.Tensor(p + "conv1d.weight"));
  const int64_t k = c.conv_kernel;
  const bool shape_ok = conv.NumElements() == conv_dim * k && conv.dim(0) == conv_dim &&
                        (conv.shape == std::vector<int64_t>{conv_dim, 1, k} ||
                         conv.shape == std::vector<int64_t>{conv_dim, k, 1} ||
                         conv.shape == std::vector<int64_t>{conv_dim, k});
  if (!shape_ok || !IsFloat(conv.dtype))
    return ShapeError(b.dir(), b.Original(p + "conv1d.weight"), conv, {conv_dim, 1, k});
  w.conv_taps = kernels::ConvTaps(ToFloatVector(conv).data(), conv_dim, k);
  MTPLX_ASSIGN_OR_RETURN(std::vector<float> a_log, b.Vector(p + "A_log", hv, false));
  for (float v : a_log) w.neg_exp_a_log.push_back(-std::exp(v));
  MTPLX_ASSIGN_OR_RETURN(w.dt_bias, b.Vector(p + "dt_bias", hv, false));
  MTPLX_ASSIGN_OR_RETURN(w.norm, b.Vector(p + "norm.weight", c.linear_value_dim, false));
  return w;
}

Result<MlpWeights> BindMlp(const Binder& b, const std::string& p, int64_t inter) {
  const int64_t h = b.config().hidden_size;
  MlpWeights m;
  MTPLX_ASSIGN_OR_RETURN(m.gate, b.Bind(p + "gate_proj.weight", p + "gate_proj", {inter, h}));
  MTPLX_ASSIGN_OR_RETURN(m.up, b.Bind(p + "up_proj.weight", p + "up_proj", {inter, h}));
  MTPLX_ASSIGN_OR_RETURN(m.down, b.Bind(p + "down_proj.weight", p + "down_proj", {h, inter}));
  return m;
}

Status BindExperts(const Binder& b, const std::string& p, MoeWeights& moe) {
  const ModelConfig& c = b.config();
  const int64_t e = c.num_experts, inter = c.moe_intermediate_size, h = c.hidden_size;
  moe.experts.resize(e);
  if (b.Has(p + "experts.gate_up_proj")) {  // HF fused [E, 2I, H] and [E, H, I]
    MTPLX_ASSIGN_OR_RETURN(Matrix gate_up, b.Bind(p + "experts.gate_up_proj",
                                                  p + "experts.gate_up_proj", {e, 2 * inter, h}));
    MTPLX_ASSIGN_OR_RETURN(Matrix down,
                           b.Bind(p + "experts.down_proj", p + "experts.down_proj", {e, h, inter}));
    for (int64_t i = 0; i < e; ++i) {
      moe.experts[i].gate = gate_up.RowSlice(i * 2 * inter, inter);
      moe.experts[i].up = gate_up.RowSlice(i * 2 * inter + inter, inter);
      moe.experts[i].down = down.RowSlice(i * h, h);
    }
    return Status::Ok();
  }
  if (b.Has(p + "switch_mlp.gate_proj.weight")) {  // MLX stacked [E, I, H]
    const std::string s = p + "switch_mlp.";
    MTPLX_ASSIGN_OR_RETURN(Matrix gate,
                           b.Bind(s + "gate_proj.weight", s + "gate_proj", {e, inter, h}));
    MTPLX_ASSIGN_OR_RETURN(Matrix up, b.Bind(s + "up_proj.weight", s + "up_proj", {e, inter, h}));
    MTPLX_ASSIGN_OR_RETURN(Matrix down,
                           b.Bind(s + "down_proj.weight", s + "down_proj", {e, h, inter}));
    for (int64_t i = 0; i < e; ++i) {
      moe.experts[i].gate = gate.RowSlice(i * inter, inter);
      moe.experts[i].up = up.RowSlice(i * inter, inter);
      moe.experts[i].down = down.RowSlice(i * h, h);
    }
    return Status::Ok();
  }
  for (int64_t i = 0; i < e; ++i) {  // per-expert tensors
    MTPLX_ASSIGN_OR_RETURN(moe.experts[i], BindMlp(b, StrCat(p, "experts.", i, "."), inter));
  }
  return Status::Ok();
}

Result<MoeWeights> BindMoe(const Binder& b, const std::string& p) {
  const ModelConfig& c = b.config();
  MoeWeights moe;
  MTPLX_ASSIGN_OR_RETURN(moe.router,
                         b.Bind(p + "gate.weight", p + "gate", {c.num_experts, c.hidden_size}));
  MTPLX_RETURN_IF_ERROR(BindExperts(b, p, moe));
  moe.has_shared = c.shared_expert_intermediate_size > 0;
  if (moe.has_shared) {
    MTPLX_ASSIGN_OR_RETURN(moe.shared,
                           BindMlp(b, p + "shared_expert.", c.shared_expert_intermediate_size));
    MTPLX_ASSIGN_OR_RETURN(moe.shared_gate, b.Bind(p + "shared_expert_gate.weight",
                                                   p + "shared_expert_gate", {1, c.hidden_size}));
  }
  return moe;
}

Result<LayerWeights> BindLayer(Binder& b, const std::string& p, bool is_attention, bool is_moe,
                               bool add_one) {
  const ModelConfig& c = b.config();
  LayerWeights l;
  l.is_attention = is_attention;
  l.is_moe = is_moe;
  MTPLX_ASSIGN_OR_RETURN(l.input_norm,
                         b.Vector(p + "input_layernorm.weight", c.hidden_size, add_one));
  MTPLX_ASSIGN_OR_RETURN(l.post_norm,
                         b.Vector(p + "post_attention_layernorm.weight", c.hidden_size, add_one));
  if (is_attention) {
    MTPLX_ASSIGN_OR_RETURN(l.attention, BindAttention(b, p + "self_attn.", add_one));
  } else {
    MTPLX_ASSIGN_OR_RETURN(l.delta, BindDeltaNet(b, p + "linear_attn."));
  }
  if (is_moe) {
    MTPLX_ASSIGN_OR_RETURN(l.moe, BindMoe(b, p + "mlp."));
  } else {
    MTPLX_ASSIGN_OR_RETURN(l.mlp, BindMlp(b, p + "mlp.", c.intermediate_size));
  }
  return l;
}

bool DetectMlxOrigin(const Binder& b, const io::Checkpoint& checkpoint) {
  for (const auto& name : checkpoint.Names())
    if (StartsWith(name, "language_model.")) return true;
  for (const auto& name : checkpoint.Names()) {
    if (!EndsWith(name, "linear_attn.conv1d.weight")) continue;
    const auto t = checkpoint.Get(name);
    if (t.ok() && t->rank() == 3) return t->dim(2) == 1 && t->dim(1) > 1;
  }
  return checkpoint.format_metadata() == "mlx";
}

// Decides whether the MTP head's zero-centred norms are stored raw (delta) or as gains.
bool MtpNormsAreDelta(const Binder& b, bool mlx_origin) {
  const std::string& encoding = b.config().mtp_norm_encoding;
  if (encoding == "delta") return true;
  if (encoding == "gain" || encoding == "absolute") return false;
  // Raw deltas sit near 0 and trained gains near 1 (q/k gains higher); the reference product
  // found these thresholds separate every release it met.
  auto mean = [&](const std::string& name) {
    const auto t = b.Tensor(name);
    if (!t.ok() || !IsFloat(t->dtype) || t->NumElements() == 0) return mlx_origin ? 1.0 : 0.0;
    double sum = 0;
    for (int64_t i = 0; i < t->NumElements(); ++i) sum += t->GetFloat(i);
    return sum / static_cast<double>(t->NumElements());
  };
  const double low =
      (mean("mtp.pre_fc_norm_hidden.weight") + mean("mtp.pre_fc_norm_embedding.weight") +
       mean("mtp.layers.0.input_layernorm.weight")) /
      3.0;
  const double qk = (mean("mtp.layers.0.self_attn.q_norm.weight") +
                     mean("mtp.layers.0.self_attn.k_norm.weight")) /
                    2.0;
  return low < 0.5 && qk < 1.25;
}

Result<MtpWeights> BindMtp(Binder& b, bool mlx_origin) {
  const ModelConfig& c = b.config();
  MtpWeights mtp;
  if (c.mtp_layers <= 0 || !b.Has("mtp.fc.weight")) return mtp;
  const bool add_one = MtpNormsAreDelta(b, mlx_origin);
  const int64_t h = c.hidden_size;
  MTPLX_ASSIGN_OR_RETURN(mtp.fc, b.Bind("mtp.fc.weight", "mtp.fc", {h, 2 * h}));
  MTPLX_ASSIGN_OR_RETURN(mtp.pre_fc_norm_embedding,
                         b.Vector("mtp.pre_fc_norm_embedding.weight", h, add_one));
  MTPLX_ASSIGN_OR_RETURN(mtp.pre_fc_norm_hidden,
                         b.Vector("mtp.pre_fc_norm_hidden.weight", h, add_one));
  MTPLX_ASSIGN_OR_RETURN(mtp.norm, b.Vector("mtp.norm.weight", h, add_one));
  const bool moe = c.num_experts > 0;
  MTPLX_ASSIGN_OR_RETURN(mtp.layer, BindLayer(b, "mtp.layers.0.", true, moe, add_one));
  mtp.present = true;
  return mtp;
}

}  // namespace

std::string NormalizeTensorName(const std::string& name) {
  for (const char* skip : {"model.visual.", "vision_tower.", "visual.", "model.vision_tower."})
    if (StartsWith(name, skip)) return "";
  for (const char* prefix :
       {"model.language_model.", "language_model.model.", "model.", "language_model."})
    if (StartsWith(name, prefix)) return name.substr(std::strlen(prefix));
  return name;
}

Result<ModelWeights> BindWeights(const ModelConfig& config, io::Checkpoint& checkpoint) {
  Binder b(config, checkpoint);
  ModelWeights w;
  w.mlx_origin = DetectMlxOrigin(b, checkpoint);
  const bool add_one = !w.mlx_origin;
  MTPLX_ASSIGN_OR_RETURN(w.embed, b.Bind("embed_tokens.weight", "embed_tokens",
                                         {config.vocab_size, config.hidden_size}));
  if (config.tie_word_embeddings || !b.Has("lm_head.weight")) {
    if (!config.tie_word_embeddings)
      return NotFound(StrCat(checkpoint.dir(),
                             ": missing tensor 'lm_head.weight' (the config "
                             "says the head is not tied to the embedding)"));
    w.lm_head = w.embed;
  } else {
    MTPLX_ASSIGN_OR_RETURN(
        w.lm_head, b.Bind("lm_head.weight", "lm_head", {config.vocab_size, config.hidden_size}));
  }
  MTPLX_ASSIGN_OR_RETURN(w.final_norm, b.Vector("norm.weight", config.hidden_size, add_one));
  for (int64_t i = 0; i < config.num_layers; ++i) {
    MTPLX_ASSIGN_OR_RETURN(LayerWeights layer,
                           BindLayer(b, StrCat("layers.", i, "."), config.IsFullAttention(i),
                                     config.IsMoeLayer(i), add_one));
    w.layers.push_back(std::move(layer));
  }
  MTPLX_ASSIGN_OR_RETURN(w.mtp, BindMtp(b, w.mlx_origin));
  return w;
}

}  // namespace mtplx::model
