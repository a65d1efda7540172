#include "tensor/tensor_view.h"

#include <cstring>

#include "base/check.h"
#include "base/float16.h"

namespace mtplx {

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float TensorView::GetFloat(int64_t i) const {
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, static_cast<const char*>(data) + 4 * i, 4);
      return v;
    }
    case DType::kBF16: {
      uint16_t v;
      std::memcpy(&v, static_cast<const char*>(data) + 2 * i, 2);
      return Bf16ToF32(v);
    }
    case DType::kF16: {
      uint16_t v;
      std::memcpy(&v, static_cast<const char*>(data) + 2 * i, 2);
      return F16ToF32(v);
    }
    case DType::kF64: {
      double v;
      std::memcpy(&v, static_cast<const char*>(data) + 8 * i, 8);
      return static_cast<float>(v);
    }
    default:
      MTPLX_CHECK(false, "GetFloat on a non-float tensor");
  }
  return 0.0f;
}

std::vector<float> ToFloatVector(const TensorView& view) {
  std::vector<float> out(view.NumElements());
  for (int64_t i = 0; i < view.NumElements(); ++i) out[i] = view.GetFloat(i);
  return out;
}

}  // namespace mtplx
