// Which weights an MLX-layout checkpoint quantizes, and how: the rule mlx-lm's `convert` applies
// to Qwen 3.5 / Qwen3.5-MoE / Qwen3-Next, shared by `mtplx convert` and `mtplx synth` so the two
// writers can never disagree.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace mtplx::pack {

struct QuantChoice {
  int bits = 0;  // 0: stored dense
  int group_size = 0;
  // True when the module deviates from the requested (bits, group) by rule (MoE gates), so the
  // config's quantization table needs a per-module entry for it.
  bool is_override = false;
};

// The MoE routers (`mlp.gate`) and shared-expert gates keep 8 bits, group 64: mlx-lm's
// qwen3_5_moe / qwen3_next quant_predicate, because routing is sensitive to rounding.
inline constexpr int kGateBits = 8;
inline constexpr int kGateGroupSize = 64;

// The choice for a linear or embedding module (MLX path without ".weight") whose input width is
// `cols`, when the user asked for `bits` (0: none) and `group_size`. Like mlx-lm, a module whose
// width does not divide into groups stays dense.
QuantChoice ChooseQuantization(std::string_view module, int64_t cols, int bits, int group_size);

// Rejects bit widths and group sizes MLX affine quantization does not define; `what` prefixes the
// message (e.g. "--bits").
Status CheckQuantOptions(int bits, int group_size, std::string_view bits_flag = "--bits",
                         std::string_view group_flag = "--group-size");

}  // namespace mtplx::pack
