// The tensor plan of `mtplx convert`: every tensor a Hugging Face Qwen 3.5 / Qwen3.5-MoE /
// Qwen3-Next checkpoint must hold for its config, found by name, checked for shape and dtype, and
// mapped to the MLX layout the pack stores (names, conv1d [C, K, 1], trunk norms as 1 + w, MoE
// experts as switch_mlp stacks, affine quantization by pack/quant_policy.h). The MTP head goes to
// a separate list (the sidecar) under its HF names with its norms raw.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "pack/tensor_writer.h"
#include "tensor/tensor_view.h"

namespace mtplx::pack {

// Rows [first_row, first_row + rows) of a source tensor viewed as [rows..., cols].
struct RowRange {
  const TensorView* view;
  int64_t first_row = 0;
  int64_t rows = 0;
};

struct PlannedTensor : StoredTensor {
  std::vector<RowRange> parts;  // the stored rows are these ranges in order
  bool add_one = false;         // store 1 + w (a zero-centred norm in the MLX convention)

  // Writes stored row r as floats (1 + w already applied).
  void Row(int64_t r, float* out) const;
  // Source bytes that can be copied as they are, or null when the values change on the way.
  const void* Raw() const;
};

struct QuantRequest {
  int bits = 0;  // 0: keep every weight dense in its source dtype
  int group_size = 64;
};

struct ConvertPlan {
  std::deque<TensorView> views;  // source tensors the plan reads (stable addresses)
  std::deque<PlannedTensor> trunk;
  std::deque<PlannedTensor> mtp;     // empty when the source has no MTP head
  std::vector<std::string> dropped;  // source tensors deliberately left out (vision, tied head)
  // config.json quantization entries that differ from the global (bits, group), by module.
  std::map<std::string, QuantRequest> overrides;
  std::string source_dtype;  // "bf16", "fp16" or "fp32": the embedding's dtype
};

// Builds the plan and fails with the file and tensor named when a tensor is missing, has the
// wrong shape or dtype, or is not part of the layout (e.g. already quantized).
Result<ConvertPlan> BuildConvertPlan(const io::ModelConfig& config,
                                     const io::Checkpoint& checkpoint, const QuantRequest& trunk,
                                     const QuantRequest& mtp);

}  // namespace mtplx::pack
