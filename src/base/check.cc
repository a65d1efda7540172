#include "base/check.h"

namespace mtplx::internal {

void CheckFailed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "[mtplx] internal error at %s:%d: check '%s' failed: %s\n", file, line, cond,
               msg);
  std::abort();
}

}  // namespace mtplx::internal
