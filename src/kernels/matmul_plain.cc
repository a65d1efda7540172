#include "kernels/matmul_plain.h"

#include <cmath>

#include "kernels/affine_quant.h"
#include "kernels/panels.h"

namespace mtplx::kernels::plain {

void QuantRowInt8(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                  int64_t y_stride) {
  const int64_t groups = act.groups, group_size = w.quant.group_size;
  // Rows in the MLX layout are read directly; a panelled row (the twin checks) code by code.
  const bool panelled = n < PanelledRows(w);
  const uint32_t* words = w.quant.packed + n * w.PackedWordsPerRow();
  auto code = [&](int64_t k) {
    return static_cast<int32_t>(panelled ? CodeAt(w, n, k) : UnpackCode(words, k, w.quant.bits));
  };
  for (int64_t m = 0; m < act.rows; ++m) {
    const int8_t* x8 = act.x8_columns + m * act.x8_stride;
    float res = 0.0f, bias_term = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      int32_t dot = 0;
      for (int64_t k = g * group_size; k < (g + 1) * group_size; ++k) dot += code(k) * x8[k];
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
