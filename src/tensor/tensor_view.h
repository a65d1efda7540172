// A non-owning view of a tensor stored row-major somewhere (a loaded checkpoint, a buffer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace mtplx {

struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;

  int64_t NumElements() const;
  uint64_t NumBytes() const { return static_cast<uint64_t>(NumElements()) * DTypeSize(dtype); }
  int64_t dim(int i) const { return shape[i < 0 ? shape.size() + i : i]; }
  int rank() const { return static_cast<int>(shape.size()); }

  // Reads element i (row-major) of a float tensor as f32.
  float GetFloat(int64_t i) const;
};

// Copies a float tensor (F32/F16/BF16) into f32.
std::vector<float> ToFloatVector(const TensorView& view);

}  // namespace mtplx
