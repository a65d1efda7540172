// Compile-time dispatch for kernels templated on their code width and on the number of
// activation rows they run at once (internal to kernels/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "base/check.h"

namespace mtplx::kernels {

// Calls fn(std::integral_constant<int, Bits>{}) for a quantized width of 2, 3, 4, 5, 6 or 8 bits,
// so that a kernel templated on its width is written once per width set, not once per switch.
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

// Calls fn(std::integral_constant<int, Rows>{}, first_row) over `rows` activation rows in blocks
// of 4 (the last one 1-3 rows): each block reads the weights once for all its rows.
template <typename Fn>
void ForRowBlocks(int64_t rows, Fn&& fn) {
  for (int64_t m = 0; m < rows; m += 4) {
    switch (std::min<int64_t>(4, rows - m)) {
      case 1:
        fn(std::integral_constant<int, 1>{}, m);
        break;
      case 2:
        fn(std::integral_constant<int, 2>{}, m);
        break;
      case 3:
        fn(std::integral_constant<int, 3>{}, m);
        break;
      default:
        fn(std::integral_constant<int, 4>{}, m);
        break;
    }
  }
}

// ForRowBlocks, except that a last block of 5 or 6 rows (a depth-4 or depth-5 verify) runs as one
// block instead of 4 + 1 or 4 + 2: for kernels with the registers for 6 rows, whose second pass
// over the same weights for one or two rows would cost most of a 1- or 2-row call's arithmetic.
template <typename Fn>
void ForRowBlocksUpTo6(int64_t rows, Fn&& fn) {
  if (rows % 4 == 1 && rows >= 5) {
    ForRowBlocks(rows - 5, fn);
    fn(std::integral_constant<int, 5>{}, rows - 5);
    return;
  }
  if (rows % 4 == 2 && rows >= 6) {
    ForRowBlocks(rows - 6, fn);
    fn(std::integral_constant<int, 6>{}, rows - 6);
    return;
  }
  ForRowBlocks(rows, fn);
}

}  // namespace mtplx::kernels
