#include "model/draft_head.h"

#include <cmath>

#include "base/strings.h"
#include "kernels/affine_quant.h"
#include "kernels/panels.h"

namespace mtplx::model {
namespace {

// Scales and biases as f16, as MLX stores them for a half-precision model: the drafter streams
// from memory every draft, and f32 entries would be a fifth of its bytes at 4 bits, groups of 64.
// A matrix whose scales or biases f16 cannot hold (beyond 65504) keeps f32 ones.
constexpr DType kScaleType = DType::kF16;

bool AllFinite(const std::vector<uint8_t>& entries, DType dtype) {
  const int64_t count = static_cast<int64_t>(entries.size() / DTypeSize(dtype));
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(kernels::LoadScalar(entries.data(), i, dtype))) return false;
  return true;
}

}  // namespace

Result<std::unique_ptr<DraftHead>> DraftHead::Quantize(const Matrix& head, int bits, int group_size,
                                                       ThreadPool* pool) {
  if (!kernels::IsSupportedAffineBits(bits) || !kernels::IsSupportedGroupSize(group_size))
    return InvalidArgument(StrCat("draft head: unsupported ", bits, "-bit / group ", group_size));
  if (head.cols % group_size != 0 || (head.cols * bits) % 32 != 0)
    return InvalidArgument(
        StrCat("draft head: ", head.cols, " columns do not split into groups of ", group_size));
  std::unique_ptr<DraftHead> d(new DraftHead());
  const int64_t words = head.cols * bits / 32, groups = head.cols / group_size;
  d->packed_.resize(head.rows * words);
  auto quantize = [&](DType scale_type) {
    const size_t entry = DTypeSize(scale_type);
    d->scales_.assign(head.rows * groups * entry, 0);
    d->biases_.assign(head.rows * groups * entry, 0);
    auto run = [&](int64_t begin, int64_t end) {
      std::vector<float> row(head.cols);
      for (int64_t r = begin; r < end; ++r) {
        kernels::DequantizeRow(head, r, row.data());
        kernels::AffineQuantizeRow(
            row.data(), head.cols, bits, group_size, scale_type, d->packed_.data() + r * words,
            d->scales_.data() + r * groups * entry, d->biases_.data() + r * groups * entry);
      }
    };
    if (pool) {
      pool->ParallelFor(head.rows, 64, run);
    } else {
      run(0, head.rows);
    }
  };
  DType scale_type = kScaleType;
  quantize(scale_type);
  if (!AllFinite(d->scales_, scale_type) || !AllFinite(d->biases_, scale_type)) {
    scale_type = DType::kF32;
    quantize(scale_type);
  }
  d->matrix_.rows = head.rows;
  d->matrix_.cols = head.cols;
  d->matrix_.quantized = true;
  d->matrix_.quant = AffineQuant{
      bits, group_size, d->packed_.data(), d->scales_.data(), d->biases_.data(), scale_type};
  return d;
}

void DraftHead::RepackToPanels(ThreadPool* pool, bool streamed) {
  if (!kernels::PanelEligible(matrix_)) return;
  kernels::RepackToPanels(matrix_, pool);  // owned storage
  matrix_.quant.streamed = streamed;
}

uint64_t DraftHead::bytes() const {
  return packed_.size() * sizeof(uint32_t) + scales_.size() + biases_.size();
}

}  // namespace mtplx::model
