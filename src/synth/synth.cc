#include "synth/synth.h"

#include <cmath>
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
#include "pack/tensor_writer.h"
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

// The writer's view of a plan: every physical tensor with its generated rows.
std::vector<pack::TensorJob> Jobs(const Plan& plan, uint64_t seed) {
  std::vector<pack::TensorJob> jobs;
  for (const Physical& p : plan.physicals) {
    const bool round_bf16 = p.dtype != DType::kF32 || p.bits;
    pack::TensorSource source;
    source.row = [&p, seed, round_bf16](int64_t r, float* out) {
      PhysicalRow(p, seed, r, round_bf16, out);
    };
    jobs.push_back({&p, std::move(source)});
  }
  return jobs;
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

  uint64_t total = 0;
  for (const Physical& p : plan.physicals) total += p.Bytes();
  ThreadPool pool(options.threads);
  ProgressBar progress("writing " + options.preset, total, "B", options.progress);
  pack::ShardOptions shard_options;
  shard_options.shard_bytes = options.shard_bytes;
  shard_options.format = options.format == "mlx" ? "mlx" : "pt";
  MTPLX_RETURN_IF_ERROR(pack::WriteShardedTensors(options.out_dir, Jobs(plan, options.seed),
                                                  shard_options, pool, progress)
                            .status());
  progress.Finish();
  return Status::Ok();
}

}  // namespace mtplx::synth
