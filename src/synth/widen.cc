#include "synth/widen.h"

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/file.h"
#include "base/float16.h"
#include "base/progress.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "kernels/affine_quant.h"
#include "pack/runtime_manifest.h"
#include "pack/staging.h"
#include "pack/tensor_writer.h"

namespace mtplx::synth {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// One axis of a tensor: its parts in order (e.g. in_proj_qkv rows are q | k | v) and whether
// each part is replicated (widened K times, in blocks) or kept.
struct Axis {
  std::vector<int64_t> parts;
  bool widened = false;

  int64_t Size(int k) const {
    int64_t n = 0;
    for (int64_t p : parts) n += p * (widened ? k : 1);
    return n;
  }
  // The source index of index `i` of the widened axis.
  int64_t Source(int64_t i, int k) const {
    if (!widened) return i;
    int64_t offset = 0;
    for (int64_t p : parts) {
      if (i < p * k) return offset + i % p;
      i -= p * k;
      offset += p;
    }
    return -1;
  }
};

// How one stored tensor is widened.
struct Role {
  Axis rows, cols;
  bool divide = false;     // a linear map consuming the widened columns: weights / K
  bool vector = false;     // a 1-D tensor (norm gains, A_log, dt_bias): stored as [cols]
  bool conv = false;       // conv1d taps stored [rows, kernel, 1]
  bool gain_norm = false;  // a trunk RMSNorm weight applied as (1 + w) by Qwen 3.5
};

Axis Kept(int64_t n) { return {{n}, false}; }
Axis Wide(std::vector<int64_t> parts) { return {std::move(parts), true}; }

// The role of a tensor from the end of its name ("layers.3.self_attn.q_proj", "embed_tokens").
Result<Role> RoleOf(const std::string& module, const io::ModelConfig& c) {
  const int64_t h = c.hidden_size, d = c.head_dim, inter = c.intermediate_size;
  const int64_t q_rows = c.num_heads * d * (c.attn_output_gate ? 2 : 1);
  const int64_t kd = c.KeyDim(), vd = c.ValueDim(), hv = c.linear_value_heads;
  const Axis hidden = Wide({h});
  auto linear = [](Axis rows, Axis cols) { return Role{std::move(rows), std::move(cols), true}; };
  auto vec = [](Axis cols) {
    Role r{Kept(1), std::move(cols)};
    r.vector = true;
    return r;
  };
  auto ends = [&](const char* suffix) { return EndsWith(module, suffix); };
  if (ends("embed_tokens")) return Role{Kept(c.vocab_size), hidden};  // replicated, not divided
  if (ends("lm_head")) return linear(Kept(c.vocab_size), hidden);
  if (ends("mtp.fc")) return linear(hidden, Wide({h, h}));
  const bool mtp = StartsWith(module, "mtp.");
  if (ends("layernorm") || ends("mtp.norm") || ends("model.norm") ||
      ends("pre_fc_norm_embedding") || ends("pre_fc_norm_hidden") || module == "norm") {
    Role r = vec(hidden);
    r.gain_norm = !mtp;
    return r;
  }
  if (ends("q_norm") || ends("k_norm")) {
    Role r = vec(Kept(d));
    r.gain_norm = !mtp;
    return r;
  }
  if (ends("linear_attn.norm")) return vec(Kept(c.linear_value_dim));
  if (ends("q_proj")) return linear(Wide({q_rows}), hidden);
  if (ends("k_proj") || ends("v_proj")) return linear(Wide({c.num_kv_heads * d}), hidden);
  if (ends("o_proj")) return linear(hidden, Wide({c.num_heads * d}));
  if (ends("in_proj_qkv")) return linear(Wide({kd, kd, vd}), hidden);
  if (ends("in_proj_z")) return linear(Wide({vd}), hidden);
  if (ends("in_proj_b") || ends("in_proj_a")) return linear(Wide({hv}), hidden);
  if (ends("out_proj")) return linear(hidden, Wide({vd}));
  if (ends("A_log") || ends("dt_bias")) return vec(Wide({hv}));
  if (ends("conv1d")) {
    Role r{Wide({kd, kd, vd}), Kept(c.conv_kernel)};
    r.conv = true;
    return r;
  }
  if (ends("gate_proj") || ends("up_proj")) return linear(Wide({inter}), hidden);
  if (ends("down_proj")) return linear(hidden, Wide({inter}));
  return Unimplemented("cannot widen tensor '" + module +
                       "': it is not a tensor of a dense Qwen 3.5 model or its MTP head");
}

// A source tensor as a matrix: dense, or the MLX triplet `module`.weight/.scales/.biases.
Result<Matrix> SourceMatrix(const io::Checkpoint& ck, const std::string& module,
                            const std::string& weight, int64_t rows, int64_t cols) {
  MTPLX_ASSIGN_OR_RETURN(TensorView w, ck.Get(weight));
  if (!ck.Has(module + ".scales")) {
    if (w.NumElements() != rows * cols || !IsFloat(w.dtype))
      return InvalidArgument(StrCat(ck.FileOf(weight), ": '", weight, "' has shape ",
                                    ShapeString(w.shape), ", expected ", rows, " x ", cols));
    return Matrix::Dense(rows, cols, w.dtype, w.data);
  }
  MTPLX_ASSIGN_OR_RETURN(TensorView s, ck.Get(module + ".scales"));
  MTPLX_ASSIGN_OR_RETURN(TensorView b, ck.Get(module + ".biases"));
  const int64_t words = w.dim(-1), groups = s.dim(-1);
  if (w.dtype != DType::kU32 || w.NumElements() != rows * words || groups <= 0 || cols % groups ||
      (words * 32) % cols || s.shape != b.shape)
    return InvalidArgument(StrCat(ck.FileOf(weight), ": '", weight, "' is not an MLX affine ", rows,
                                  " x ", cols, " matrix"));
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.quantized = true;
  m.quant.bits = static_cast<int>(words * 32 / cols);
  m.quant.group_size = static_cast<int>(cols / groups);
  m.quant.packed = static_cast<const uint32_t*>(w.data);
  m.quant.scales = s.data;
  m.quant.biases = b.data;
  m.quant.scale_dtype = s.dtype;
  return m;
}

struct Widened {
  pack::StoredTensor stored;
  Matrix source;
  Role role;
  std::string file;  // "model" or "mtp"
  bool conv_hf_order = false;
  float offset = 0.0f;  // added to every value: -1 turns an MLX (1 + w) gain into HF's w
};

// The widened tensor `name` (output name) from the source matrix of `role`.
Widened Plan(const std::string& name, Matrix source, Role role, DType dense_dtype,
             const WidenOptions& o, std::string file, bool conv_hf_order = false) {
  Widened w{{}, source, std::move(role), std::move(file), conv_hf_order};
  const int k = o.factor;
  const int64_t rows = w.role.rows.Size(k), cols = w.role.cols.Size(k);
  w.stored.name = name;
  w.stored.shape = w.role.vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  // conv1d taps keep the source's axis order: MLX [C, K, 1], Hugging Face [C, 1, K].
  if (w.role.conv)
    w.stored.file_shape =
        w.conv_hf_order ? std::vector<int64_t>{rows, 1, cols} : std::vector<int64_t>{rows, cols, 1};
  const int bits = w.file == "mtp" && o.mtp_bits >= 0 ? o.mtp_bits : o.bits;
  const bool quantize = bits > 0 && !w.role.vector && !w.role.conv;
  w.stored.dtype = !quantize          ? dense_dtype
                   : source.quantized ? source.quant.scale_dtype
                                      : DType::kBF16;
  w.stored.bits = quantize ? bits : 0;
  w.stored.group_size = o.group_size;
  return w;
}

// A quantized source can be widened without requantizing when the output has its bits and
// group size and every widened column block is whole groups: each output group is then a source
// group, with its codes as they are and its scale and bias divided by K (exact: K is a power of
// two). Requantizing the dequantized values would move some codes.
bool KeepsCodes(const Widened& w) {
  const Matrix& m = w.source;
  if (!m.quantized || w.stored.bits != m.quant.bits || w.stored.group_size != m.quant.group_size)
    return false;
  if (!w.role.cols.widened) return true;
  for (int64_t part : w.role.cols.parts)
    if (part % m.quant.group_size) return false;
  return true;
}

void StoreScalar(float value, DType dtype, void* base, int64_t i) {
  if (dtype == DType::kF32) {
    static_cast<float*>(base)[i] = value;
  } else {
    static_cast<uint16_t*>(base)[i] = dtype == DType::kF16 ? F32ToF16(value) : F32ToBf16(value);
  }
}

pack::TensorSource RowsOf(const Widened& w, int k) {
  pack::TensorSource source;
  const float scale = w.role.divide ? 1.0f / static_cast<float>(k) : 1.0f;
  source.row = [&w, k, scale](int64_t r, float* out) {
    std::vector<float> src(static_cast<size_t>(w.source.cols));
    kernels::DequantizeRow(w.source, w.role.rows.Source(r, k), src.data());
    const int64_t cols = w.role.cols.Size(k);
    for (int64_t c = 0; c < cols; ++c) out[c] = src[w.role.cols.Source(c, k)] * scale + w.offset;
  };
  if (!KeepsCodes(w) || w.offset != 0.0f) return source;
  source.quantized_row = [&w, k, scale](int64_t r, uint32_t* packed, void* scales, void* biases) {
    const Matrix& m = w.source;
    const int bits = m.quant.bits, group = m.quant.group_size;
    const int64_t src_row = w.role.rows.Source(r, k);
    const uint32_t* codes = m.quant.packed + src_row * m.PackedWordsPerRow();
    const int64_t cols = w.role.cols.Size(k), groups = cols / group;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t from = w.role.cols.Source(g * group, k);  // a whole source group
      for (int64_t c = 0; c < group; ++c) {
        const uint64_t bit = static_cast<uint64_t>(g * group + c) * bits;
        const uint64_t code = kernels::UnpackCode(codes, from + c, bits);
        packed[bit >> 5] |= static_cast<uint32_t>(code << (bit & 31u));
        if ((bit & 31u) + bits > 32)
          packed[(bit >> 5) + 1] |= static_cast<uint32_t>(code >> (32 - (bit & 31u)));
      }
      const int64_t src_group = src_row * m.GroupsPerRow() + from / group;
      StoreScalar(kernels::LoadScalar(m.quant.scales, src_group, m.quant.scale_dtype) * scale,
                  w.stored.dtype, scales, g);
      StoreScalar(kernels::LoadScalar(m.quant.biases, src_group, m.quant.scale_dtype) * scale,
                  w.stored.dtype, biases, g);
    }
  };
  return source;
}

// The source module of every stored tensor, and the weight name holding it.
std::map<std::string, std::string> Modules(const io::Checkpoint& ck) {
  std::map<std::string, std::string> modules;
  for (const std::string& name : ck.Names()) {
    if (EndsWith(name, ".scales") || EndsWith(name, ".biases")) continue;
    const std::string module = EndsWith(name, ".weight") ? name.substr(0, name.size() - 7) : name;
    modules[module] = name;
  }
  return modules;
}

Status CheckOptions(const WidenOptions& o, const io::ModelConfig& c) {
  if (o.factor < 2 || o.factor > 64 || (o.factor & (o.factor - 1)))
    return InvalidArgument(StrCat("--widen ", o.factor,
                                  " is not a power of two in 2..64 (a power of two keeps the "
                                  "division by K exact)"));
  if (o.hf_layout && o.bits != 0)
    return InvalidArgument("the Hugging Face layout is dense: --format hf takes --bits 0");
  if (o.bits != 0 && !kernels::IsSupportedAffineBits(o.bits))
    return InvalidArgument(StrCat("--bits ", o.bits, " is not one of 0, 2, 3, 4, 5, 6, 8"));
  if (o.mtp_bits > 0 && (!kernels::IsSupportedAffineBits(o.mtp_bits) || o.bits == 0))
    return InvalidArgument(
        StrCat("--mtp-bits ", o.mtp_bits,
               " needs a quantized output (--bits) and one of 2, 3, 4, 5, 6, 8"));
  if (!kernels::IsSupportedGroupSize(o.group_size))
    return InvalidArgument(StrCat("--group-size ", o.group_size, " is not 32, 64 or 128"));
  if (c.num_experts > 0)
    return Unimplemented("widening supports dense models; this one has experts (MoE)");
  for (int64_t dim :
       {c.hidden_size, c.intermediate_size, c.num_heads * c.head_dim, c.ValueDim(), c.KeyDim()})
    if (dim % o.group_size && o.bits > 0)
      return InvalidArgument(StrCat("a widened dimension (", dim,
                                    ") is not a multiple of --group-size ", o.group_size));
  return Status::Ok();
}

// config.json of the wide model: every count of units times K, embeddings untied, the
// quantization entries describing what was written.
Json WideConfig(const std::string& from_dir, const WidenOptions& o, bool mtp_sidecar,
                const std::vector<std::string>& mtp_modules) {
  Json config = Json::parse(*ReadTextFile(JoinPath(from_dir, "config.json")), nullptr, false);
  Json& text = config.contains("text_config") ? config["text_config"] : config;
  for (const char* key : {"hidden_size", "num_attention_heads", "num_key_value_heads",
                          "linear_num_key_heads", "linear_num_value_heads", "intermediate_size"})
    if (text.contains(key) && text[key].is_number_integer())
      text[key] = text[key].get<int64_t>() * o.factor;
  text["tie_word_embeddings"] = false;
  config["tie_word_embeddings"] = false;
  for (const char* key : {"quantization", "quantization_config", "mtplx_mtp_quantization"})
    config.erase(key);
  if (o.bits > 0) {
    const Json q = {{"group_size", o.group_size}, {"bits", o.bits}, {"mode", "affine"}};
    config["quantization"] = q;
    // MTP matrices at other bits: per-module entries, as MLX writes mixed quantization.
    if (o.mtp_bits > 0 && o.mtp_bits != o.bits)
      for (const std::string& module : mtp_modules)
        config["quantization"][module] = {{"group_size", o.group_size}, {"bits", o.mtp_bits}};
    config["quantization_config"] = config["quantization"];
    if (mtp_sidecar)
      config["mtplx_mtp_quantization"] = {{"group_size", o.group_size},
                                          {"bits", o.mtp_bits > 0 ? o.mtp_bits : o.bits},
                                          {"mode", "affine"}};
  }
  if (o.hf_layout) {  // the MTP head is inline; norms are zero-centred like the trunk's
    config.erase("mlx_lm_extra_tensors");
    config["mtplx_mtp_norm_encoding"] = "delta";
  }
  config["mtplx_widened"] = {
      {"from", fs::path(fs::absolute(from_dir).lexically_normal()).filename().string()},
      {"factor", o.factor}};
  return config;
}

// Tensors named mtp.* in the checkpoint written to `dir` (weights, scales and biases each count),
// what the runtime contract's mtp_tensor_count states.
Result<int64_t> CountMtpTensors(const std::string& dir) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<std::string> files, io::ListCheckpointFiles(dir));
  int64_t count = 0;
  for (const std::string& file : files) {
    uint64_t offset = 0, size = 0;
    MTPLX_ASSIGN_OR_RETURN(const io::SafetensorsHeader header,
                           io::SafetensorsFile::ReadHeader(file, &offset, &size));
    for (const auto& [name, entry] : header.tensors)
      if (StartsWith(name, "mtp.")) ++count;
  }
  return count;
}

Status CopyModelFiles(const std::string& from, const std::string& to, const WidenOptions& o) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                           "chat_template.json", "generation_config.json", "MODEL_CARD.md"}) {
    if (!FileExists(JoinPath(from, name))) continue;
    std::error_code ec;
    fs::copy_file(JoinPath(from, name), JoinPath(to, name), ec);
    if (ec) return Internal(StrCat("cannot copy ", name, ": ", ec.message()));
  }
  // The runtime contract carries over (sampler, depth) with the record of the widening.
  if (FileExists(JoinPath(from, "mtplx_runtime.json"))) {
    MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(JoinPath(from, "mtplx_runtime.json")));
    Json runtime = Json::parse(text, nullptr, false);
    if (runtime.is_object()) {
      runtime["precision_variant"] = "bf16";
      MTPLX_ASSIGN_OR_RETURN(const int64_t mtp_tensors, CountMtpTensors(to));
      runtime["mtp_tensor_count"] = mtp_tensors;
      runtime["forge_provenance"]["widened"] = {
          {"factor", o.factor}, {"bits", o.bits}, {"group_size", o.group_size}};
      if (runtime.contains("mtp_contract") && runtime["mtp_contract"].is_object()) {
        runtime["mtp_contract"]["mtp_quant_bits"] = o.mtp_bits > 0 ? o.mtp_bits : o.bits;
        runtime["mtp_contract"]["mtp_quant_group_size"] = o.group_size;
        runtime["mtp_contract"]["mtp_prequantized"] = o.bits > 0;
      }
      MTPLX_RETURN_IF_ERROR(
          WriteTextFile(JoinPath(to, "mtplx_runtime.json"), runtime.dump(2) + "\n"));
    }
  }
  return Status::Ok();
}

}  // namespace

// The Hugging Face name of an MLX tensor name (Qwen3_5ForCausalLM layout).
std::string HfName(const std::string& name) {
  if (StartsWith(name, "language_model.model.")) return "model." + name.substr(21);
  if (StartsWith(name, "language_model.")) return name.substr(15);
  return name;
}

Status WriteWidenedCheckpoint(const WidenOptions& o) {
  MTPLX_RETURN_IF_ERROR(io::CheckModelFolder(o.from_dir, /*need_tokenizer=*/false));
  MTPLX_ASSIGN_OR_RETURN(io::ModelConfig config, io::LoadModelConfig(o.from_dir));
  MTPLX_RETURN_IF_ERROR(CheckOptions(o, config));
  io::CheckpointOptions open;
  open.show_progress = o.progress;
  open.lock_memory = false;
  MTPLX_ASSIGN_OR_RETURN(auto ck, io::Checkpoint::Open(o.from_dir, open));

  std::vector<Widened> tensors;
  tensors.reserve(ck->Names().size() + 1);
  bool mlx_source = false;
  for (const std::string& name : ck->Names()) mlx_source |= StartsWith(name, "language_model.");
  for (const auto& [module, weight] : Modules(*ck)) {
    MTPLX_ASSIGN_OR_RETURN(Role role, RoleOf(module, config));
    MTPLX_ASSIGN_OR_RETURN(TensorView view, ck->Get(weight));
    const int64_t rows = role.rows.Size(1), cols = role.cols.Size(1);
    MTPLX_ASSIGN_OR_RETURN(Matrix source, SourceMatrix(*ck, module, weight, rows, cols));
    const bool mtp =
        StartsWith(module, "mtp.") || ck->FileOf(weight).find("mtp") != std::string::npos;
    const DType dense = view.dtype == DType::kU32 ? DType::kBF16 : view.dtype;
    const bool hf_conv = o.hf_layout || (role.conv && view.rank() == 3 && view.dim(1) == 1);
    const std::string name = o.hf_layout ? HfName(weight) : weight;
    tensors.push_back(
        Plan(name, source, role, dense, o, mtp && !o.hf_layout ? "mtp" : "model", hf_conv));
    if (o.hf_layout && role.gain_norm && mlx_source) tensors.back().offset = -1.0f;
    // A tied output head becomes its own lm_head: the embedding / K.
    if (EndsWith(module, "embed_tokens") && !StartsWith(module, "mtp.") &&
        config.tie_word_embeddings) {
      const std::string prefix =
          module.substr(0, module.size() - std::string("embed_tokens").size());
      // MLX "language_model.model." -> "language_model.lm_head"; Hugging Face "model." or
      // "model.language_model." -> "lm_head".
      const std::string head = prefix == "language_model.model." ? "language_model."
                               : prefix == "model." || prefix == "model.language_model." ? ""
                                                                                         : prefix;
      Role lm = role;
      lm.divide = true;
      const std::string lm_name = head + "lm_head.weight";
      tensors.push_back(
          Plan(o.hf_layout ? HfName(lm_name) : lm_name, source, lm, dense, o, "model"));
    }
  }
  MTPLX_ASSIGN_OR_RETURN(pack::StagingDir staging, pack::StagingDir::Create(o.out_dir, false));
  std::vector<pack::TensorJob> model_jobs, mtp_jobs;
  uint64_t total = 0;
  for (const Widened& w : tensors) {
    (w.file == "mtp" ? mtp_jobs : model_jobs).push_back({&w.stored, RowsOf(w, o.factor)});
    total += w.stored.Bytes();
  }
  ThreadPool pool(o.threads);
  ProgressBar progress("widening", total, "B", o.progress);
  pack::ShardOptions shards;
  shards.always_index = true;
  shards.format = o.hf_layout ? "pt" : "mlx";
  MTPLX_RETURN_IF_ERROR(
      pack::WriteShardedTensors(staging.path(), model_jobs, shards, pool, progress).status());
  if (!mtp_jobs.empty())
    MTPLX_RETURN_IF_ERROR(pack::WriteTensorFile(JoinPath(staging.path(), "mtp.safetensors"),
                                                mtp_jobs, "mlx", pool, progress));
  progress.Finish();
  std::vector<std::string> mtp_modules;
  for (const Widened& w : tensors)
    if (w.stored.bits > 0 && StartsWith(w.stored.name, "mtp."))
      mtp_modules.push_back(w.stored.Module());
  MTPLX_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(staging.path(), "config.json"),
                    WideConfig(o.from_dir, o, !mtp_jobs.empty(), mtp_modules).dump(2) + "\n"));
  MTPLX_RETURN_IF_ERROR(CopyModelFiles(o.from_dir, staging.path(), o));
  return staging.Commit();
}

}  // namespace mtplx::synth
