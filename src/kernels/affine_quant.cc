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

namespace {

// The group's (scale, bias), as MLX chooses them: the edge with the larger magnitude is
// represented exactly (code 0), and zero stays exact.
struct GroupScale {
  float scale, bias;
};
GroupScale ChooseGroupScale(float w_min, float w_max, float n_bins) {
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
  return {scale, bias};
}

// std::nearbyint in the default rounding mode (ties to even) for 0 <= x <= 2^22: adding 1.5 * 2^23
// leaves no fraction bits, so the addition rounds. Inline arithmetic, so loops of it vectorize
// (nearbyint is a library call).
inline float RoundSmall(float x) {
  constexpr float kShift = 12582912.0f;
  return (x + kShift) - kShift;
}

// Packs n codes (n * bits a multiple of 32) LSB first into words.
void PackCodes(const uint8_t* codes, int64_t n, int bits, uint32_t* words) {
  auto* bytes = reinterpret_cast<uint8_t*>(words);
  if (bits == 8) {
    std::memcpy(bytes, codes, static_cast<size_t>(n));
  } else if (bits == 4) {
    for (int64_t i = 0; i < n / 2; ++i)
      bytes[i] = static_cast<uint8_t>(codes[2 * i] | codes[2 * i + 1] << 4);
  } else {
    uint64_t pending = 0;
    int filled = 0;
    for (int64_t i = 0; i < n; ++i) {
      pending |= static_cast<uint64_t>(codes[i]) << filled;
      filled += bits;
      if (filled >= 32) {
        *words++ = static_cast<uint32_t>(pending);
        pending >>= 32;
        filled -= 32;
      }
    }
  }
}

// Unpacks n codes (n * bits a multiple of 32) from LSB-first words.
void UnpackCodes(const uint32_t* words, int64_t n, int bits, uint8_t* codes) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(words);
  if (bits == 8) {
    std::memcpy(codes, bytes, static_cast<size_t>(n));
  } else if (bits == 4) {
    for (int64_t i = 0; i < n / 2; ++i) {
      codes[2 * i] = bytes[i] & 0x0Fu;
      codes[2 * i + 1] = bytes[i] >> 4;
    }
  } else {
    const uint32_t mask = (1u << bits) - 1u;
    uint64_t pending = 0;
    int filled = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (filled < bits) {
        pending |= static_cast<uint64_t>(*words++) << filled;
        filled += 32;
      }
      codes[i] = static_cast<uint8_t>(pending & mask);
      pending >>= bits;
      filled -= bits;
    }
  }
}

constexpr int kMaxGroup = 128;

}  // namespace

void AffineQuantizeRow(const float* row, int64_t cols, int bits, int group_size, DType scale_dtype,
                       uint32_t* packed, void* scales, void* biases) {
  MTPLX_CHECK(cols % group_size == 0, "cols must be a multiple of group_size");
  MTPLX_CHECK(group_size % 8 == 0 && group_size <= kMaxGroup, "unsupported group size");
  const float n_bins = static_cast<float>((1 << bits) - 1);
  const int64_t group_words = group_size * bits / 32;
  uint8_t codes[kMaxGroup];
  for (int64_t g = 0; g < cols / group_size; ++g) {
    const float* w = row + g * group_size;
    // Eight running minima and maxima: independent lanes, so the loop vectorizes. The order
    // does not change the extremes of finite values.
    float lo[8], hi[8];
    for (int l = 0; l < 8; ++l) lo[l] = hi[l] = w[l];
    for (int i = 8; i < group_size; i += 8)
      for (int l = 0; l < 8; ++l) {
        lo[l] = std::min(lo[l], w[i + l]);
        hi[l] = std::max(hi[l], w[i + l]);
      }
    float w_min = lo[0], w_max = hi[0];
    for (int l = 1; l < 8; ++l) {
      w_min = std::min(w_min, lo[l]);
      w_max = std::max(w_max, hi[l]);
    }
    const GroupScale gs = ChooseGroupScale(w_min, w_max, n_bins);
    // Clamping before rounding equals rounding then clamping: the bounds are integers.
    for (int i = 0; i < group_size; ++i) {
      const float q = std::min(std::max((w[i] - gs.bias) / gs.scale, 0.0f), n_bins);
      codes[i] = static_cast<uint8_t>(RoundSmall(q));
    }
    PackCodes(codes, group_size, bits, packed + g * group_words);
    StoreScalar(scales, g, scale_dtype, RoundToDType(gs.scale, scale_dtype));
    StoreScalar(biases, g, scale_dtype, RoundToDType(gs.bias, scale_dtype));
  }
}

void AffineQuantizeRowReference(const float* row, int64_t cols, int bits, int group_size,
                                DType scale_dtype, uint32_t* packed, void* scales, void* biases) {
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
    const GroupScale gs = ChooseGroupScale(w_min, w_max, n_bins);
    for (int i = 0; i < group_size; ++i) {
      float q = std::nearbyint((w[i] - gs.bias) / gs.scale);
      q = std::min(std::max(q, 0.0f), n_bins);
      PutCode(packed, g * group_size + i, bits, static_cast<uint32_t>(q));
    }
    StoreScalar(scales, g, scale_dtype, RoundToDType(gs.scale, scale_dtype));
    StoreScalar(biases, g, scale_dtype, RoundToDType(gs.bias, scale_dtype));
  }
}

namespace {

void DequantizeDenseRow(const Matrix& m, int64_t r, float* out) {
  const char* base = static_cast<const char*>(m.data) + r * m.cols * DTypeSize(m.dtype);
  if (m.dtype == DType::kF32) {
    std::memcpy(out, base, m.cols * sizeof(float));
  } else if (m.dtype == DType::kBF16) {
    const uint16_t* src = reinterpret_cast<const uint16_t*>(base);
    for (int64_t k = 0; k < m.cols; ++k) out[k] = Bf16ToF32(src[k]);
  } else {
    for (int64_t k = 0; k < m.cols; ++k) out[k] = LoadScalar(base, k, m.dtype);
  }
}

}  // namespace

void DequantizeRow(const Matrix& m, int64_t r, float* out) {
  if (!m.quantized) return DequantizeDenseRow(m, r, out);
  const AffineQuant& q = m.quant;
  if (q.panels && r < PanelledRows(m)) return DequantizePanelledRow(m, r, out);
  const uint32_t* words = q.packed + r * m.PackedWordsPerRow();
  const int64_t groups = m.GroupsPerRow(), group_words = q.group_size * q.bits / 32;
  uint8_t codes[kMaxGroup];
  for (int64_t g = 0; g < groups; ++g) {
    const float scale = LoadScalar(q.scales, r * groups + g, q.scale_dtype);
    const float bias = LoadScalar(q.biases, r * groups + g, q.scale_dtype);
    UnpackCodes(words + g * group_words, q.group_size, q.bits, codes);
    float* o = out + g * q.group_size;
    for (int i = 0; i < q.group_size; ++i) o[i] = scale * static_cast<float>(codes[i]) + bias;
  }
}

void DequantizeRowReference(const Matrix& m, int64_t r, float* out) {
  if (!m.quantized) return DequantizeDenseRow(m, r, out);
  const AffineQuant& q = m.quant;
  if (q.panels && r < PanelledRows(m)) return DequantizePanelledRow(m, r, out);
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
