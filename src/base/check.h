// Always-on invariant checks for programmer errors. Expected failures use Status instead.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace mtplx::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const char* msg);
}  // namespace mtplx::internal

#define MTPLX_CHECK(cond, msg)                                          \
  do {                                                                  \
    if (__builtin_expect(!(cond), 0))                                   \
      ::mtplx::internal::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

#ifdef NDEBUG
#define MTPLX_DCHECK(cond, msg) \
  do {                          \
  } while (0)
#else
#define MTPLX_DCHECK(cond, msg) MTPLX_CHECK(cond, msg)
#endif
