#include "synth/synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/float16.h"
#include "base/progress.h"
#include "base/rng.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "io/safetensors_writer.h"
#include "kernels/affine_quant.h"
#include "synth/plan.h"
#include "synth/presets.h"
#include "synth/tokenizer_files.h"

namespace mtplx::synth {
namespace {

using Json = nlohmann::ordered_json;

uint64_t HashName(std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Values of one row of a logical tensor; depends only on (seed, name, row).
void GenerateRow(const Logical& t, uint64_t seed, int64_t row, float* out) {
  SplitMix64 rng(MixSeed(MixSeed(seed, HashName(t.name)), static_cast<uint64_t>(row)));
  const float bound = std::sqrt(3.0f) * t.gain / std::sqrt(static_cast<float>(t.cols));
  for (int64_t c = 0; c < t.cols; ++c) {
    const double u = rng.Uniform();
    float v = 0.0f;
    switch (t.init) {
      case Init::kLinear:
        v = static_cast<float>((2.0 * u - 1.0) * bound);
        break;
      case Init::kNormDelta:
        v = static_cast<float>(std::floor(u * 65.0) - 32.0) / 128.0f;
        break;
      case Init::kGatedNorm:
        v = static_cast<float>(0.5 + u);
        break;
      case Init::kALog:
        v = static_cast<float>(-4.6 + 3.9 * u);
        break;
      case Init::kDtBias:
        v = static_cast<float>(-2.0 + 3.0 * u);
        break;
      case Init::kConv:
        v = static_cast<float>(-0.6 + 1.2 * u);
        break;
    }
    out[c] = v;
  }
}

// Values of physical row r (float, rounded to the storage precision of the model: bf16).
void PhysicalRow(const Physical& p, uint64_t seed, int64_t r, bool round_bf16, float* out) {
  int64_t row = r;
  for (const Part& part : p.parts) {
    if (row < part.tensor->rows) {
      GenerateRow(*part.tensor, seed, row, out);
      break;
    }
    row -= part.tensor->rows;
  }
  for (int64_t c = 0; c < p.cols(); ++c) {
    if (round_bf16) out[c] = RoundToBf16(out[c]);
    if (p.add_one) out[c] = RoundToBf16(1.0f + out[c]);
  }
}

void StoreDense(const float* values, int64_t n, DType dtype, std::vector<uint8_t>& bytes) {
  const size_t start = bytes.size();
  bytes.resize(start + n * DTypeSize(dtype));
  uint8_t* dst = bytes.data() + start;
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(dst + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
      std::memcpy(dst + 2 * i, &b, 2);
    }
  }
}

class ShardWriter {
 public:
  ShardWriter(const SynthOptions& options, ThreadPool& pool, ProgressBar& progress)
      : options_(options), pool_(pool), progress_(progress) {}

  Status Write(const std::string& path, const std::vector<const Physical*>& tensors) {
    io::SafetensorsWriter writer(path);
    writer.SetMetadata("format", options_.format == "mlx" ? "mlx" : "pt");
    for (const Physical* p : tensors) Declare(writer, *p);
    MTPLX_RETURN_IF_ERROR(writer.Begin());
    for (const Physical* p : tensors) MTPLX_RETURN_IF_ERROR(WriteTensor(writer, *p));
    return writer.Finish();
  }

 private:
  static std::vector<int64_t> WithLast(std::vector<int64_t> shape, int64_t last) {
    shape.back() = last;
    return shape;
  }

  void Declare(io::SafetensorsWriter& w, const Physical& p) {
    if (p.bits == 0) {
      w.Declare(p.name, p.dtype, p.file_shape.empty() ? p.shape : p.file_shape);
      return;
    }
    const std::string module = p.name.substr(0, p.name.size() - 7);  // drop ".weight"
    w.Declare(p.name, DType::kU32, WithLast(p.shape, p.cols() * p.bits / 32));
    w.Declare(module + ".scales", DType::kBF16, WithLast(p.shape, p.cols() / p.group_size));
    w.Declare(module + ".biases", DType::kBF16, WithLast(p.shape, p.cols() / p.group_size));
  }

  Status WriteTensor(io::SafetensorsWriter& w, const Physical& p) {
    const int64_t rows = p.rows(), cols = p.cols();
    const int64_t block = std::max<int64_t>(1, (8 << 20) / (cols * 4));
    const int64_t words = p.bits ? cols * p.bits / 32 : 0;
    const int64_t groups = p.bits ? cols / p.group_size : 0;
    std::vector<uint16_t> scales(p.bits ? rows * groups : 0), biases(scales.size());
    std::vector<float> values;
    std::vector<uint32_t> packed;
    std::vector<uint8_t> bytes;
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      values.resize(n * cols);
      packed.assign(n * words, 0);
      pool_.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          float* row = values.data() + i * cols;
          PhysicalRow(p, options_.seed, r0 + i, p.dtype != DType::kF32 || p.bits, row);
          if (p.bits)
            kernels::AffineQuantizeRow(row, cols, p.bits, p.group_size, DType::kBF16,
                                       packed.data() + i * words, scales.data() + (r0 + i) * groups,
                                       biases.data() + (r0 + i) * groups);
        }
      });
      if (p.bits) {
        MTPLX_RETURN_IF_ERROR(w.Append(packed.data(), packed.size() * 4));
      } else {
        bytes.clear();
        StoreDense(values.data(), n * cols, p.dtype, bytes);
        MTPLX_RETURN_IF_ERROR(w.Append(bytes.data(), bytes.size()));
      }
      progress_.Add(static_cast<uint64_t>(n) * (p.bits ? words * 4 : cols * DTypeSize(p.dtype)));
    }
    if (p.bits) {
      MTPLX_RETURN_IF_ERROR(w.Append(scales.data(), scales.size() * 2));
      MTPLX_RETURN_IF_ERROR(w.Append(biases.data(), biases.size() * 2));
      progress_.Add(scales.size() * 4);
    }
    return Status::Ok();
  }

  const SynthOptions& options_;
  ThreadPool& pool_;
  ProgressBar& progress_;
};

// Splits tensors into shards of at most `limit` bytes (a tensor never spans shards).
std::vector<std::vector<const Physical*>> Shard(const Plan& plan, uint64_t limit) {
  std::vector<std::vector<const Physical*>> shards(1);
  uint64_t size = 0;
  for (const Physical& p : plan.physicals) {
    if (limit && size > 0 && size + p.Bytes() > limit) {
      shards.emplace_back();
      size = 0;
    }
    shards.back().push_back(&p);
    size += p.Bytes();
  }
  return shards;
}

std::vector<std::string> PhysicalNames(const Physical& p) {
  if (p.bits == 0) return {p.name};
  const std::string module = p.name.substr(0, p.name.size() - 7);
  return {p.name, module + ".scales", module + ".biases"};
}

Status WriteIndex(const std::string& dir, const std::vector<std::string>& files,
                  const std::vector<std::vector<const Physical*>>& shards, uint64_t total) {
  Json map = Json::object();
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t s = 0; s < shards.size(); ++s)
    for (const Physical* p : shards[s])
      for (const auto& name : PhysicalNames(*p)) entries.emplace_back(name, files[s]);
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, file] : entries) map[name] = file;
  Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
  return WriteTextFile(JoinPath(dir, "model.safetensors.index.json"), index.dump(2) + "\n");
}

}  // namespace

Status WriteSyntheticCheckpoint(const SynthOptions& options) {
  if (options.out_dir.empty()) return InvalidArgument("synth: --out is required");
  PlanOptions plan_options{options.preset, options.format, options.bits, options.group_size,
                           options.fused_mtp_experts};
  MTPLX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(plan_options));
  MTPLX_RETURN_IF_ERROR(MakeDirectories(options.out_dir));
  MTPLX_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(options.out_dir, "config.json"), plan.config.dump(2) + "\n"));
  MTPLX_RETURN_IF_ERROR(WriteTextFile(JoinPath(options.out_dir, "generation_config.json"),
                                      GenerationConfig(plan.config).dump(2) + "\n"));
  MTPLX_RETURN_IF_ERROR(WriteTokenizerFiles(plan.config, options.out_dir));

  const auto shards = Shard(plan, options.shard_bytes);
  uint64_t total = 0;
  for (const Physical& p : plan.physicals) total += p.Bytes();
  ThreadPool pool(options.threads);
  ProgressBar progress("writing " + options.preset, total, "B", options.progress);
  ShardWriter writer(options, pool, progress);
  std::vector<std::string> files;
  for (size_t s = 0; s < shards.size(); ++s)
    files.push_back(shards.size() == 1
                        ? "model.safetensors"
                        : StrFormat("model-%05zu-of-%05zu.safetensors", s + 1, shards.size()));
  for (size_t s = 0; s < shards.size(); ++s)
    MTPLX_RETURN_IF_ERROR(writer.Write(JoinPath(options.out_dir, files[s]), shards[s]));
  progress.Finish();
  if (shards.size() > 1) MTPLX_RETURN_IF_ERROR(WriteIndex(options.out_dir, files, shards, total));
  return Status::Ok();
}

}  // namespace mtplx::synth
