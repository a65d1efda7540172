#include "pack/quant_policy.h"

#include "base/strings.h"
#include "kernels/affine_quant.h"

namespace mtplx::pack {

QuantChoice ChooseQuantization(std::string_view module, int64_t cols, int bits, int group_size) {
  if (bits == 0) return {};
  QuantChoice choice{bits, group_size, false};
  if (EndsWith(module, "mlp.gate") || EndsWith(module, "shared_expert_gate"))
    choice = {kGateBits, kGateGroupSize, true};
  if (cols <= 0 || cols % choice.group_size != 0) return {};
  return choice;
}

Status CheckQuantOptions(int bits, int group_size, std::string_view bits_flag,
                         std::string_view group_flag) {
  if (bits != 0 && !kernels::IsSupportedAffineBits(bits))
    return InvalidArgument(StrCat(bits_flag, " ", bits, " is not one of 2, 3, 4, 5, 6, 8"));
  if (!kernels::IsSupportedGroupSize(group_size))
    return InvalidArgument(StrCat(group_flag, " ", group_size, " is not 32, 64 or 128"));
  return Status::Ok();
}

}  // namespace mtplx::pack
