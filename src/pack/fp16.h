// `mtplx fp16 SRC OUT`: an FP16 sibling of a pack, for machines without fast bf16. Every bf16
// tensor (weights, scales, biases, norms) becomes fp16; packed integer and other tensors are
// copied byte for byte; the MTP sidecar likewise; the other files are copied, the runtime
// contract is patched (precision_variant fp16, precision_policy) and config.json's dtype too.
// MTPLX_FP16_CONVERSION_MANIFEST.json records what happened file by file and tensor by tensor.
// A bf16 value beyond fp16's range is never clamped: the conversion fails and names every such
// tensor. Written atomically (nothing is left at OUT on failure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::pack {

struct Fp16Options {
  std::string source_dir;
  std::string output_dir;
  bool replace = false;  // OUT may exist and be replaced
  bool progress = true;
};

struct Fp16Summary {
  int shards = 0;
  int64_t tensors_total = 0;
  int64_t converted = 0;        // bf16 -> fp16
  int64_t preserved = 0;        // copied byte for byte
  int64_t flushed_to_zero = 0;  // nonzero bf16 values below fp16's smallest subnormal
  std::vector<std::string> files_copied;
};

Result<Fp16Summary> MakeFp16Sibling(const Fp16Options& options);

}  // namespace mtplx::pack
