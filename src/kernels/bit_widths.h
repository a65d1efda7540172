// Calls fn(std::integral_constant<int, Bits>{}) for a quantized width of 2, 3, 4, 5, 6 or 8 bits,
// so that a kernel templated on its width is written once per width set, not once per switch
// (internal to kernels/).
#pragma once

#include <type_traits>

#include "base/check.h"

namespace mtplx::kernels {

template <typename Fn>
void ForBitWidth(int bits, Fn&& fn) {
  switch (bits) {
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 5:
      return fn(std::integral_constant<int, 5>{});
    case 6:
      return fn(std::integral_constant<int, 6>{});
    case 8:
      return fn(std::integral_constant<int, 8>{});
    default:
      MTPLX_CHECK(false, "unsupported bit width");
  }
}

}  // namespace mtplx::kernels
