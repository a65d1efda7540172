add_library(mtplx_warnings INTERFACE)
target_compile_options(mtplx_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough -Wno-unused-parameter)
if(MTPLX_WERROR)
  target_compile_options(mtplx_warnings INTERFACE -Werror)
endif()

add_library(mtplx_options INTERFACE)
# Runtime dispatch picks SIMD paths; the baseline stays portable x86-64 / aarch64.
target_compile_options(mtplx_options INTERFACE $<$<CONFIG:Release,RelWithDebInfo>:-O2> -fno-math-errno -ffp-contract=off)
if(MTPLX_SANITIZE)
  target_compile_options(mtplx_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                 -fno-sanitize-recover=undefined)
  target_link_options(mtplx_options INTERFACE -fsanitize=address,undefined)
endif()
