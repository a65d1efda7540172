// `mtplx synth --from DIR --widen K`: a trained checkpoint made K times wider without changing
// what it computes (Net2Net-style), so a small model with real MTP acceptance becomes a model
// large enough to be memory-bound, the regime speculative decoding is for.
//
// Every hidden unit, attention head, key/value head, Gated DeltaNet head (with its conv channels,
// A_log and dt_bias), FFN unit and the MTP head's units are replicated K times in blocks (copy c
// of unit i is unit c * n + i, which keeps GQA and DeltaNet head groups: head c*Hq + h still
// reads group c*Hkv + h/ratio); every weight that consumes a widened axis is divided by K, so the
// K copies sum to the original product. RMSNorms see the same mean square over the replicated
// stream, so the residual stream of the wide model is the original one repeated K times, and the
// logits are the original logits. The embedding is replicated (not divided), so a tied output
// head becomes an untied lm_head = embedding / K. With K a power of two the division is exact in
// every float format, and a quantized source requantizes to the same codes with scales / K.
#pragma once

#include <string>

#include "base/status.h"

namespace mtplx::synth {

struct WidenOptions {
  std::string from_dir;
  std::string out_dir;
  int factor = 2;  // K: a power of two, 2..64
  int bits = 0;    // 0: dense bf16; else MLX affine bits of every matrix
  // Bits of the MTP head's matrices (-1: `bits`): a smaller draft step (its bytes are the cost of
  // drafting on a memory-bound machine) for some loss of acceptance.
  int mtp_bits = -1;
  // Hugging Face layout (Qwen3_5ForCausalLM names, zero-centred norms, conv1d [C, 1, K], the MTP
  // head inline, dense only); false: the source's own layout.
  bool hf_layout = false;
  int group_size = 64;
  int threads = 0;
  bool progress = true;
};

Status WriteWidenedCheckpoint(const WidenOptions& options);

}  // namespace mtplx::synth
