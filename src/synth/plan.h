// The tensor plan of a synthetic checkpoint: logical tensors (one per weight of the model, named
// format-independently) and the physical tensors a format stores, each a concatenation of
// logical rows (e.g. a fused [E, 2I, H] gate_up stack is gate_0, up_0, gate_1, up_1, ...).
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "pack/tensor_writer.h"
#include "tensor/dtype.h"

namespace mtplx::synth {

enum class Init {
  kLinear,     // uniform, std = gain / sqrt(cols)
  kNormDelta,  // zero-centred norm w: multiples of 2^-7 in [-0.25, 0.25] (1 + w exact in bf16)
  kGatedNorm,  // gated-norm weight in [0.5, 1.5]
  kALog,       // A_log in [-4.6, -0.7]: decays exp(-exp(A_log) softplus(.)) span (0.5, 0.999)
  kDtBias,     // dt_bias in [-2, 1]
  kConv,       // conv1d taps in [-0.6, 0.6]
};

struct Logical {
  std::string name;
  int64_t rows = 0;
  int64_t cols = 0;
  Init init = Init::kLinear;
  float gain = 1.0f;
};

struct Part {
  const Logical* tensor;
};

// A tensor as the format stores it (name, shape, dtype, quantization), and where its rows come
// from.
struct Physical : pack::StoredTensor {
  bool add_one = false;     // store 1 + w (MLX norm convention)
  std::vector<Part> parts;  // rows are the parts' rows in order
};

struct Plan {
  std::deque<Logical> logicals;
  std::vector<Physical> physicals;
  nlohmann::ordered_json config;  // config.json to write
};

struct PlanOptions {
  std::string preset;
  std::string format;  // hf | mlx
  int bits = 0;
  int group_size = 64;
  bool fused_mtp_experts = false;
};

Result<Plan> BuildPlan(const PlanOptions& options);

}  // namespace mtplx::synth
