#include "kernels/matmul_plain.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/affine_quant.h"
#include "kernels/panels.h"
#include "kernels/simd.h"

namespace mtplx::kernels::plain {
namespace {

// The codes of row n as bytes: MLX-layout rows unpacked by width (8-bit codes are the row's
// bytes, 4-bit ones its nibbles, low first), panelled rows (the twin checks) code by code.
void RowCodes(const Matrix& w, int64_t n, uint8_t* out) {
  const int bits = w.quant.bits;
  if (n < PanelledRows(w)) {
    for (int64_t k = 0; k < w.cols; ++k) out[k] = static_cast<uint8_t>(CodeAt(w, n, k));
    return;
  }
  const uint32_t* words = w.quant.packed + n * w.PackedWordsPerRow();
  const auto* bytes = reinterpret_cast<const uint8_t*>(words);
  if (bits == 8) {
    std::memcpy(out, bytes, w.cols);
  } else if (bits == 4) {
    for (int64_t k = 0; k < w.cols; k += 2) {
      out[k] = bytes[k / 2] & 0x0F;
      out[k + 1] = bytes[k / 2] >> 4;
    }
  } else {
    for (int64_t k = 0; k < w.cols; ++k) out[k] = static_cast<uint8_t>(UnpackCode(words, k, bits));
  }
}

// The exact integer dot of `n` codes with int8 activations (any order gives the same integer).
MTPLX_TARGET_CLONES int32_t DotCodes(const uint8_t* codes, const int8_t* x, int64_t n) {
  int32_t sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += static_cast<int32_t>(codes[k]) * x[k];
  return sum;
}

}  // namespace

void QuantRowInt8(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                  int64_t y_stride) {
  const int64_t groups = act.groups, group_size = w.quant.group_size;
  thread_local std::vector<uint8_t> codes;
  codes.resize(w.cols);
  RowCodes(w, n, codes.data());
  for (int64_t m = 0; m < act.rows; ++m) {
    const int8_t* x8 = act.x8_columns + m * act.x8_stride;
    float res = 0.0f, bias_term = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      const int32_t dot = DotCodes(codes.data() + g * group_size, x8 + g * group_size, group_size);
      const int64_t entry = ScaleIndex(w, n, g);
      const float scale =
          LoadScalar(w.quant.scales, entry, w.quant.scale_dtype) * act.steps[m * groups + g];
      res = std::fma(static_cast<float>(dot), scale, res);
      bias_term = std::fma(LoadScalar(w.quant.biases, entry, w.quant.scale_dtype),
                           act.group_sums[m * groups + g], bias_term);
    }
    y[m * y_stride] = res + bias_term;
  }
}

}  // namespace mtplx::kernels::plain
