#include "tensor/matrix.h"

#include "base/check.h"
#include "base/strings.h"

namespace mtplx {

uint64_t Matrix::StorageBytes() const {
  if (!quantized) return static_cast<uint64_t>(rows * cols) * DTypeSize(dtype);
  const uint64_t packed = static_cast<uint64_t>(rows * PackedWordsPerRow()) * 4;
  const uint64_t groups =
      static_cast<uint64_t>(rows * GroupsPerRow()) * DTypeSize(quant.scale_dtype);
  return packed + 2 * groups;
}

Matrix Matrix::RowSlice(int64_t begin, int64_t count) const {
  MTPLX_CHECK(begin >= 0 && begin + count <= rows, "row slice out of range");
  MTPLX_CHECK(!quantized || !quant.panels, "row slices of a panelled matrix are not supported");
  Matrix out = *this;
  out.rows = count;
  if (!quantized) {
    out.data = static_cast<const char*>(data) + begin * cols * DTypeSize(dtype);
    return out;
  }
  const size_t scale_size = DTypeSize(quant.scale_dtype);
  out.quant.packed = quant.packed + begin * PackedWordsPerRow();
  out.quant.scales = static_cast<const char*>(quant.scales) + begin * GroupsPerRow() * scale_size;
  out.quant.biases = static_cast<const char*>(quant.biases) + begin * GroupsPerRow() * scale_size;
  return out;
}

std::string Matrix::Describe() const {
  if (quantized)
    return StrFormat("[%lld, %lld] affine %d-bit g%d", static_cast<long long>(rows),
                     static_cast<long long>(cols), quant.bits, quant.group_size);
  return StrFormat("[%lld, %lld] %s", static_cast<long long>(rows), static_cast<long long>(cols),
                   DTypeName(dtype));
}

}  // namespace mtplx
