#include "kernels/affine_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/panels.h"

namespace mtplx::kernels {
namespace {

void StoreScalar(void* base, int64_t i, DType dtype, float value) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(base)[i] = value;
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(base)[i] = F32ToBf16(value);
      return;
    case DType::kF16:
      static_cast<uint16_t*>(base)[i] = F32ToF16(value);
      return;
    default:
      MTPLX_CHECK(false, "unsupported scale dtype");
  }
}

float RoundToDType(float value, DType dtype) {
  if (dtype == DType::kBF16) return RoundToBf16(value);
  if (dtype == DType::kF16) return RoundToF16(value);
  return value;
}

void PutCode(uint32_t* words, int64_t k, int bits, uint32_t code) {
  const uint64_t bit = static_cast<uint64_t>(k) * bits;
  const uint64_t word = bit >> 5;
  const uint32_t shift = bit & 31u;
  words[word] |= code << shift;
  if (shift + bits > 32) words[word + 1] |= code >> (32 - shift);
}

void DequantizePanelledRow(const Matrix& m, int64_t r, float* out) {
  const AffineQuant& q = m.quant;
  for (int64_t g = 0; g < m.GroupsPerRow(); ++g) {
    const int64_t at = ScaleIndex(m, r, g);
    const float scale = LoadScalar(q.scales, at, q.scale_dtype);
    const float bias = LoadScalar(q.biases, at, q.scale_dtype);
    for (int64_t k = g * q.group_size; k < (g + 1) * q.group_size; ++k)
      out[k] = scale * static_cast<float>(CodeAt(m, r, k)) + bias;
  }
}

}  // namespace

bool IsSupportedAffineBits(int bits) {
  return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
}

bool IsSupportedGroupSize(int group_size) {
  return group_size == 32 || group_size == 64 || group_size == 128;
}

float LoadScalar(const void* base, int64_t i, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(base)[i];
    case DType::kBF16:
      return Bf16ToF32(static_cast<const uint16_t*>(base)[i]);
    case DType::kF16:
      return F16ToF32(static_cast<const uint16_t*>(base)[i]);
    default:
      MTPLX_CHECK(false, "unsupported scale dtype");
  }
  return 0.0f;
}

void AffineQuantizeRow(const float* row, int64_t cols, int bits, int group_size, DType scale_dtype,
                       uint32_t* packed, void* scales, void* biases) {
  MTPLX_CHECK(cols % group_size == 0, "cols must be a multiple of group_size");
  const float n_bins = static_cast<float>((1 << bits) - 1);
  std::memset(packed, 0, static_cast<size_t>(cols * bits / 32) * sizeof(uint32_t));
  for (int64_t g = 0; g < cols / group_size; ++g) {
    const float* w = row + g * group_size;
    float w_min = w[0], w_max = w[0];
    for (int i = 1; i < group_size; ++i) {
      w_min = std::min(w_min, w[i]);
      w_max = std::max(w_max, w[i]);
    }
    // The edge with the larger magnitude is represented exactly (code 0); zero stays exact.
    const bool mask = std::fabs(w_min) > std::fabs(w_max);
    float scale = std::max((w_max - w_min) / n_bins, 1e-7f);
    if (!mask) scale = -scale;
    const float edge = mask ? w_min : w_max;
    const float q0 = std::nearbyint(edge / scale);
    float bias = 0.0f;
    if (q0 != 0.0f) {
      scale = edge / q0;
      bias = edge;
    }
    for (int i = 0; i < group_size; ++i) {
      float q = std::nearbyint((w[i] - bias) / scale);
      q = std::min(std::max(q, 0.0f), n_bins);
      PutCode(packed, g * group_size + i, bits, static_cast<uint32_t>(q));
    }
    StoreScalar(scales, g, scale_dtype, RoundToDType(scale, scale_dtype));
    StoreScalar(biases, g, scale_dtype, RoundToDType(bias, scale_dtype));
  }
}

void DequantizeRow(const Matrix& m, int64_t r, float* out) {
  if (!m.quantized) {
    const char* base = static_cast<const char*>(m.data) + r * m.cols * DTypeSize(m.dtype);
    if (m.dtype == DType::kF32) {
      std::memcpy(out, base, m.cols * sizeof(float));
    } else if (m.dtype == DType::kBF16) {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(base);
      for (int64_t k = 0; k < m.cols; ++k) out[k] = Bf16ToF32(src[k]);
    } else {
      for (int64_t k = 0; k < m.cols; ++k) out[k] = LoadScalar(base, k, m.dtype);
    }
    return;
  }
  const AffineQuant& q = m.quant;
  if (q.panels) {
    DequantizePanelledRow(m, r, out);
    return;
  }
  const uint32_t* words = q.packed + r * m.PackedWordsPerRow();
  const int64_t groups = m.GroupsPerRow();
  for (int64_t g = 0; g < groups; ++g) {
    const float scale = LoadScalar(q.scales, r * groups + g, q.scale_dtype);
    const float bias = LoadScalar(q.biases, r * groups + g, q.scale_dtype);
    for (int64_t k = g * q.group_size; k < (g + 1) * q.group_size; ++k)
      out[k] = scale * static_cast<float>(UnpackCode(words, k, q.bits)) + bias;
  }
}

}  // namespace mtplx::kernels
