// Matrix: the one weight type the kernels see. A [rows, cols] matrix stored row-major, either
// dense (F32 / F16 / BF16) or MLX affine-quantized (bits 2..8, groups along cols). It never owns
// memory: it points into the resident checkpoint image.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace mtplx {

struct AffineQuant {
  int bits = 0;                      // 2, 3, 4, 5, 6 or 8
  int group_size = 0;                // 32, 64 or 128
  const uint32_t* packed = nullptr;  // [rows, cols * bits / 32]
  const void* scales = nullptr;      // [rows, cols / group_size], scale_dtype
  const void* biases = nullptr;      // [rows, cols / group_size], scale_dtype
  DType scale_dtype = DType::kBF16;
  // Rows grouped 16 at a time in the int8 kernel's panel layout (kernels/panels.h) instead of
  // the MLX layout; set only by kernels::RepackToPanels.
  bool panels = false;
  // The weights come from DRAM on every use (the model is larger than the caches): the panel
  // kernel then prefetches its codes a few KiB ahead. In cache the extra loads cost up to 30 %.
  bool streamed = false;
};

struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kF32;   // storage type when dense
  const void* data = nullptr;  // dense storage [rows, cols]
  bool quantized = false;
  AffineQuant quant;

  // A dense [rows, cols] matrix of `dtype` at `data`.
  static Matrix Dense(int64_t rows, int64_t cols, DType dtype, const void* data) {
    Matrix m;
    m.rows = rows;
    m.cols = cols;
    m.dtype = dtype;
    m.data = data;
    return m;
  }

  bool empty() const { return rows == 0; }
  // Bytes read to stream the whole matrix once (weights + scales + biases).
  uint64_t StorageBytes() const;
  // Words per row of packed codes.
  int64_t PackedWordsPerRow() const { return cols * quant.bits / 32; }
  int64_t GroupsPerRow() const { return cols / quant.group_size; }
  // A view of rows [begin, begin + count).
  Matrix RowSlice(int64_t begin, int64_t count) const;
  std::string Describe() const;
};

}  // namespace mtplx
