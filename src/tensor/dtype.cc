#include "tensor/dtype.h"

namespace mtplx {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2}, {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8}, {DType::kU32, "U32", 4}, {DType::kI32, "I32", 4},
    {DType::kI64, "I64", 8}, {DType::kU8, "U8", 1},   {DType::kI8, "I8", 1},
    {DType::kU16, "U16", 2}, {DType::kI16, "I16", 2}, {DType::kBool, "BOOL", 1},
};

const DTypeInfo& Info(DType dtype) {
  for (const auto& info : kInfos)
    if (info.dtype == dtype) return info;
  return kInfos[0];
}

}  // namespace

size_t DTypeSize(DType dtype) { return Info(dtype).size; }
const char* DTypeName(DType dtype) { return Info(dtype).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& info : kInfos)
    if (name == info.name) return info.dtype;
  return std::nullopt;
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kF64;
}

}  // namespace mtplx
