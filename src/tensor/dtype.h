// Element types that appear in checkpoints.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mtplx {

enum class DType { kF32, kF16, kBF16, kF64, kU32, kI32, kI64, kU8, kI8, kU16, kI16, kBool };

size_t DTypeSize(DType dtype);
// Safetensors spelling: "F32", "BF16", "U32", ...
const char* DTypeName(DType dtype);
std::optional<DType> ParseDType(std::string_view name);
bool IsFloat(DType dtype);

}  // namespace mtplx
