// The draft head: an in-memory MLX-affine copy (4-bit, groups of 64 by default) of the output
// head that only the MTP drafter uses. A draft step runs one decoder layer, so the full-precision
// head (vocab x hidden, e.g. 248K x 4096) would otherwise be most of its cost. Exactness does not
// depend on it: acceptance uses the distribution q the drafter actually sampled from.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/matrix.h"

namespace mtplx::model {

class DraftHead {
 public:
  // Quantizes `head` row by row (dequantized to f32 first) with f16 scales and biases (f32 when
  // f16 cannot hold them; pass a row slice for a draft head over part of the vocabulary).
  static Result<std::unique_ptr<DraftHead>> Quantize(const Matrix& head, int bits, int group_size,
                                                     ThreadPool* pool);

  const Matrix& matrix() const { return matrix_; }
  int bits() const { return matrix_.quant.bits; }
  uint64_t bytes() const;
  // Into the int8 kernel's panel layout (kernels/panels.h), when its format allows; `streamed`:
  // see AffineQuant::streamed.
  void RepackToPanels(ThreadPool* pool, bool streamed);

 private:
  std::vector<uint32_t> packed_;
  std::vector<uint8_t> scales_, biases_;  // raw entries of matrix_.quant.scale_dtype
  Matrix matrix_;
};

}  // namespace mtplx::model
