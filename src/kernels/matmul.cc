#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/affine_quant.h"
#include "kernels/cpu.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_avx2.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_neon.h"
#include "kernels/matmul_plain.h"
#include "kernels/panels.h"
#include "kernels/parallel.h"
#include "kernels/simd.h"

namespace mtplx::kernels {
namespace {

constexpr int kLanes = 16;

// Sums a 16-lane accumulator in a fixed tree.
inline float ReduceLanes(float* acc) {
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0];
}

// Unpacks 32 codes stored in `Bits` consecutive words (32 * Bits bits, a little-endian bit
// stream). Fully unrolled: every shift and byte offset is a constant.
template <int Bits>
inline void Unpack32(const uint32_t* words, float* out) {
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(words);
  // A code a byte or a nibble: plain loops the compiler widens a vector at a time (the window
  // loop below stays scalar).
  if constexpr (Bits == 8) {
    for (int i = 0; i < 32; ++i) out[i] = static_cast<float>(bytes[i]);
  } else if constexpr (Bits == 4) {
    for (int i = 0; i < 16; ++i) {
      out[2 * i] = static_cast<float>(bytes[i] & 0xf);
      out[2 * i + 1] = static_cast<float>(bytes[i] >> 4);
    }
  } else {
    constexpr uint32_t kMask = (1u << Bits) - 1u;
#pragma GCC unroll 32
    for (int i = 0; i < 32; ++i) {
      const int bit = i * Bits;
      // Two bytes always cover a code of <= 8 bits at any bit offset; stay inside the block.
      const int byte = bit >> 3;
      uint32_t window = bytes[byte];
      if ((bit & 7) + Bits > 8) window |= static_cast<uint32_t>(bytes[byte + 1]) << 8;
      out[i] = static_cast<float>((window >> (bit & 7)) & kMask);
    }
  }
}

// y[m] for one quantized row: sum over groups of scale * (codes . x) + bias * sum(x).
template <int Bits>
MTPLX_TARGET_CLONES void QuantRowDot(const uint32_t* words, const float* scales,
                                     const float* biases, int64_t groups, int group_size,
                                     const float* x, const float* x_group_sums, int64_t m_rows,
                                     int64_t cols, float* y, int64_t y_stride, float* codes) {
  const int64_t total = groups * group_size;
  for (int64_t c = 0; c < total; c += 32) Unpack32<Bits>(words + (c / 32) * Bits, codes + c);
  for (int64_t m = 0; m < m_rows; ++m) {
    const float* xm = x + m * cols;
    float result = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      float acc[kLanes] = {};
      const float* cg = codes + g * group_size;
      const float* xg = xm + g * group_size;
      for (int k = 0; k < group_size; k += kLanes)
        for (int j = 0; j < kLanes; ++j) acc[j] += cg[k + j] * xg[k + j];
      result += scales[g] * ReduceLanes(acc) + biases[g] * x_group_sums[m * groups + g];
    }
    y[m * y_stride] = result;
  }
}

MTPLX_TARGET_CLONES float SumF32(const float* a, int64_t n) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[k + j];
  for (int j = 0; k < n; ++k, ++j) acc[j] += a[k];
  return ReduceLanes(acc);
}

MTPLX_TARGET_CLONES float DotF32Impl(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[k + j] * b[k + j];
  for (int j = 0; k < n; ++k, ++j) acc[j] += a[k] * b[k];
  return ReduceLanes(acc);
}

using QuantRowFn = void (*)(const uint32_t*, const float*, const float*, int64_t, int, const float*,
                            const float*, int64_t, int64_t, float*, int64_t, float*);

QuantRowFn QuantRowFor(int bits) {
  switch (bits) {
    case 2:
      return QuantRowDot<2>;
    case 3:
      return QuantRowDot<3>;
    case 4:
      return QuantRowDot<4>;
    case 5:
      return QuantRowDot<5>;
    case 6:
      return QuantRowDot<6>;
    default:
      return QuantRowDot<8>;
  }
}

// Per (row of x, group) sums, shared by every output row: the bias term is bias * sum(x).
std::vector<float> GroupSums(const float* x, int64_t m_rows, int64_t cols, int group_size) {
  const int64_t groups = cols / group_size;
  std::vector<float> sums(m_rows * groups);
  for (int64_t m = 0; m < m_rows; ++m)
    for (int64_t g = 0; g < groups; ++g)
      sums[m * groups + g] = SumF32(x + m * cols + g * group_size, group_size);
  return sums;
}

// Splits the output rows of `w` over the pool. Which thread computes a row never changes its
// result.
void ForEachRow(const Matrix& w, int64_t m_rows, ThreadPool* pool,
                const std::function<void(int64_t, int64_t)>& run) {
  const int64_t rows = w.rows;
  if (WorthParallel(pool, rows * w.cols * m_rows)) {
    pool->ParallelFor(rows, 16, run);
  } else {
    run(0, rows);
  }
}

// The int8 kernels this process runs: the best the CPU supports, capped by MTPLX_KERNELS
// (kernels/cpu.h).
enum class QuantIsa { kPortable, kAvx2, kAvxVnni, kAvx512Vnni256, kAvx512, kAmx, kNeonDot };

QuantIsa DetectQuantIsa() {
  const KernelCap cap = KernelCapFromEnvironment();
  if (cap == KernelCap::kAmx && amx::Supported()) return QuantIsa::kAmx;
  if (avx512::Supported() && cap >= KernelCap::kAvx512) return QuantIsa::kAvx512;
  if (cap >= KernelCap::kAvxVnni) {
    if (avx2::Supported(avx2::Dot::kAvxVnni)) return QuantIsa::kAvxVnni;
    if (avx2::Supported(avx2::Dot::kAvx512Vnni)) return QuantIsa::kAvx512Vnni256;
  }
  if (avx2::Supported() && cap != KernelCap::kPortable) return QuantIsa::kAvx2;
  if (neon::Supported() && cap != KernelCap::kPortable) return QuantIsa::kNeonDot;
  return QuantIsa::kPortable;
}

QuantIsa SelectedIsa() {
  static const QuantIsa isa = DetectQuantIsa();
  return isa;
}

bool Avx512KernelsAvailable() {
  return SelectedIsa() == QuantIsa::kAvx512 || SelectedIsa() == QuantIsa::kAmx;
}
bool Int8KernelsAvailable() { return SelectedIsa() != QuantIsa::kPortable; }

// Activations prepared for the kernels of matrices with `cols` columns and groups of
// `group_size`: exact group sums, and for int8 the rows quantized per group (column order).
struct PreparedInput {
  PreparedInput(const float* x, int64_t m_rows, int64_t cols, int group_size, bool int8) {
    const int64_t groups = cols / group_size;
    sums = GroupSums(x, m_rows, cols, group_size);
    act.rows = m_rows;
    act.groups = groups;
    act.x = x;
    act.group_sums = sums.data();
    if (!int8) return;
    act.x8_stride = X8Stride(cols);
    steps.resize(m_rows * groups);
    x8_columns.resize(m_rows * act.x8_stride);
    QuantizeActivations(x, m_rows, cols, group_size, x8_columns.data(), steps.data());
    x8_sums.resize(m_rows * groups);
    SumX8Groups(x8_columns.data(), m_rows, cols, group_size, x8_sums.data());
    act.x8_columns = x8_columns.data();
    act.steps = steps.data();
    act.x8_sums = x8_sums.data();
  }
  std::vector<float> sums, steps;
  std::vector<int8_t> x8_columns;
  std::vector<int32_t> x8_sums;
  PreparedActivations act;
};

// The panelled matrices `ws` against one prepared input: the panels of all of them as one
// parallel loop, then each matrix's rows after its last whole panel (MLX layout) by the plain
// int8 row kernel, whose results every panel kernel equals bit for bit: an int8 matmul gives
// the same floats on every CPU family. `work` (multiply-adds) decides whether the pool takes the
// loop.
// A kernel over panels first .. first + count - 1 of one matrix, panel first + j writing y + 16 j.
using PanelRangeKernel = void (*)(const Matrix&, int64_t, int64_t, const PreparedActivations&,
                                  float*, int64_t);

// The kernels that take one panel at a time, over a run.
template <void (*Kernel)(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t)>
void EachPanel(const Matrix& w, int64_t first, int64_t count, const PreparedActivations& act,
               float* y, int64_t y_stride) {
  for (int64_t j = 0; j < count; ++j) Kernel(w, first + j, act, y + j * kPanelRows, y_stride);
}

PanelRangeKernel PanelKernel() {
  switch (SelectedIsa()) {
    case QuantIsa::kAmx:
      return EachPanel<amx::PanelInt8>;
    case QuantIsa::kAvx512:
      return avx512::PanelRangeInt8;  // pairs panels for a prefill's rows
    case QuantIsa::kNeonDot:
      return EachPanel<neon::PanelInt8>;
    case QuantIsa::kAvxVnni:
      return EachPanel<avx2::PanelInt8<avx2::Dot::kAvxVnni>>;
    case QuantIsa::kAvx512Vnni256:
      return EachPanel<avx2::PanelInt8<avx2::Dot::kAvx512Vnni>>;
    default:
      return EachPanel<avx2::PanelInt8<avx2::Dot::kMaddubs>>;
  }
}

void RunPanelled(std::span<const Matrix* const> ws, std::span<float* const> ys,
                 const PreparedActivations& act, ThreadPool* pool, int64_t work) {
  const PanelRangeKernel panel_kernel = PanelKernel();
  int64_t total_panels = 0;
  for (const Matrix* w : ws) total_panels += PanelledRows(*w) / kPanelRows;
  // Panel t of the concatenated list belongs to the first matrix whose panels reach past t; each
  // matrix's share of [begin, end) goes to the kernel as one run.
  auto run = [&](int64_t begin, int64_t end) {
    size_t i = 0;
    int64_t base = 0;
    for (int64_t t = begin; t < end;) {
      while (t - base >= PanelledRows(*ws[i]) / kPanelRows)
        base += PanelledRows(*ws[i++]) / kPanelRows;
      const int64_t p = t - base;
      const int64_t count = std::min(end, base + PanelledRows(*ws[i]) / kPanelRows) - t;
      panel_kernel(*ws[i], p, count, act, ys[i] + p * kPanelRows, ws[i]->rows);
      t += count;
    }
  };
  if (WorthParallel(pool, work)) {
    pool->ParallelFor(total_panels, 2, run);  // even runs: whole pairs
  } else {
    run(0, total_panels);
  }
  for (size_t i = 0; i < ws.size(); ++i)
    for (int64_t n = PanelledRows(*ws[i]); n < ws[i]->rows; ++n)
      plain::QuantRowInt8(*ws[i], n, act, ys[i] + n, ws[i]->rows);
}

// Exact f32 activations on the AVX-512 row kernel (MLX layout).
void QuantizedMatMulAvx512F32(const Matrix& w, const float* x, int64_t m_rows, float* y,
                              ThreadPool* pool) {
  const PreparedInput in(x, m_rows, w.cols, w.quant.group_size, /*int8=*/false);
  ForEachRow(w, m_rows, pool, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) avx512::QuantRowF32(w, n, in.act, y + n, w.rows);
  });
}

// Int8 activations on any int8 kernel family: panels, then the rows after them by the plain row
// kernel; a matrix without panels (too small for one) row by row over the pool.
void QuantizedMatMulInt8(const Matrix& w, const float* x, int64_t m_rows, float* y,
                         ThreadPool* pool) {
  const PreparedInput in(x, m_rows, w.cols, w.quant.group_size, /*int8=*/true);
  if (PanelledRows(w) == 0) {
    ForEachRow(w, m_rows, pool, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) plain::QuantRowInt8(w, n, in.act, y + n, w.rows);
    });
    return;
  }
  const Matrix* ws[] = {&w};
  float* ys[] = {y};
  RunPanelled(ws, ys, in.act, pool, w.rows * w.cols * m_rows);
}

void QuantizedMatMulPortable(const Matrix& w, const float* x, int64_t m_rows, float* y,
                             ThreadPool* pool) {
  const int64_t groups = w.GroupsPerRow(), cols = w.cols;
  const int group_size = w.quant.group_size;
  const std::vector<float> x_group_sums = GroupSums(x, m_rows, w.cols, w.quant.group_size);
  const QuantRowFn row_fn = QuantRowFor(w.quant.bits);
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> codes(cols), scales(groups), biases(groups);
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        scales[g] = LoadScalar(w.quant.scales, n * groups + g, w.quant.scale_dtype);
        biases[g] = LoadScalar(w.quant.biases, n * groups + g, w.quant.scale_dtype);
      }
      row_fn(w.quant.packed + n * w.PackedWordsPerRow(), scales.data(), biases.data(), groups,
             group_size, x, x_group_sums.data(), m_rows, cols, y + n, w.rows, codes.data());
    }
  };
  ForEachRow(w, m_rows, pool, run);
}

void DenseMatMul(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool) {
  const int64_t cols = w.cols;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> row(cols);
    for (int64_t n = begin; n < end; ++n) {
      const float* weights = row.data();
      if (!w.quantized && w.dtype == DType::kF32) {
        weights = static_cast<const float*>(w.data) + n * cols;
      } else {
        DequantizeRow(w, n, row.data());
      }
      for (int64_t m = 0; m < m_rows; ++m)
        y[m * w.rows + n] = DotF32Impl(weights, x + m * cols, cols);
    }
  };
  ForEachRow(w, m_rows, pool, run);
}

void DenseMatMulAvx512(const Matrix& w, const float* x, int64_t m_rows, float* y,
                       ThreadPool* pool) {
  ForEachRow(w, m_rows, pool, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) avx512::DenseRow(w, n, x, m_rows, y + n, w.rows);
  });
}

}  // namespace

float DotF32(const float* a, const float* b, int64_t n) { return DotF32Impl(a, b, n); }

void MatMul(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool,
            Activations activations) {
  if (m_rows <= 0) return;
  if (!w.quantized) {
    if (Avx512KernelsAvailable()) {
      DenseMatMulAvx512(w, x, m_rows, y, pool);
    } else {
      DenseMatMul(w, x, m_rows, y, pool);
    }
  } else if (Int8KernelsAvailable() && activations == Activations::kInt8) {
    QuantizedMatMulInt8(w, x, m_rows, y, pool);
  } else if (w.quant.panels) {
    DenseMatMul(w, x, m_rows, y, pool);  // panels are for the int8 kernels; this path dequantizes
  } else if (Avx512KernelsAvailable()) {
    QuantizedMatMulAvx512F32(w, x, m_rows, y, pool);
  } else {
    QuantizedMatMulPortable(w, x, m_rows, y, pool);
  }
}

void MatMulSameInput(std::span<const Matrix* const> ws, const float* x, int64_t m_rows,
                     std::span<float* const> ys, ThreadPool* pool, Activations activations) {
  MTPLX_CHECK(ws.size() == ys.size(), "one output per matrix");
  if (m_rows <= 0 || ws.empty()) return;
  // The shared path: int8 activations on the int8 kernels, and every matrix quantized with
  // the same columns and groups (so one preparation serves all) and panelled, or too small for a
  // panel (its few rows take the serial row kernel). Otherwise one MatMul each.
  const Matrix& first = *ws[0];
  bool shared = Int8KernelsAvailable() && activations == Activations::kInt8;
  int64_t work = 0;
  for (const Matrix* w : ws) {
    shared = shared && w->quantized && w->cols == first.cols &&
             w->quant.group_size == first.quant.group_size &&
             (w->quant.panels || w->rows < kPanelRows);
    work += w->rows * w->cols * m_rows;
  }
  if (!shared) {
    for (size_t i = 0; i < ws.size(); ++i) MatMul(*ws[i], x, m_rows, ys[i], pool, activations);
    return;
  }
  const PreparedInput in(x, m_rows, first.cols, first.quant.group_size, /*int8=*/true);
  RunPanelled(ws, ys, in.act, pool, work);
}

void MatMulPortable(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool) {
  if (w.quantized && !w.quant.panels) {
    QuantizedMatMulPortable(w, x, m_rows, y, pool);
  } else {
    DenseMatMul(w, x, m_rows, y, pool);
  }
}

bool PanelKernelAvailable() { return Int8KernelsAvailable(); }

const char* QuantKernelName() {
  switch (SelectedIsa()) {
    case QuantIsa::kAmx:
      return "amx-int8";
    case QuantIsa::kAvx512:
      return "avx512-vnni";
    case QuantIsa::kAvx2:
      return "avx2";
    case QuantIsa::kAvxVnni:
      return "avx-vnni";
    case QuantIsa::kAvx512Vnni256:
      return "avx512-vnni-256";
    case QuantIsa::kNeonDot:
      return "neon-dotprod";
    default:
      return "portable";
  }
}

bool QuantKernelHasDotProduct() {
  const QuantIsa isa = SelectedIsa();
  return isa != QuantIsa::kPortable && isa != QuantIsa::kAvx2;
}

bool QuantKernelSplitsWideVectors() {
  return SelectedIsa() == QuantIsa::kAvx2 && SplitsWideVectors();
}

void MatMulReference(const Matrix& w, const float* x, int64_t m_rows, float* y) {
  std::vector<float> row(w.cols);
  for (int64_t n = 0; n < w.rows; ++n) {
    DequantizeRow(w, n, row.data());
    for (int64_t m = 0; m < m_rows; ++m) {
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) sum += static_cast<double>(row[k]) * x[m * w.cols + k];
      y[m * w.rows + n] = static_cast<float>(sum);
    }
  }
}

}  // namespace mtplx::kernels
