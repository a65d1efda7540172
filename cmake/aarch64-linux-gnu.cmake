# Cross-compiling for 64-bit ARM Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and
# multiarch libraries (libgtest-dev:arm64 and the like); test programs run under qemu-user
# (scripts/test_arm.sh). They are linked statically: under Debian 12's qemu-user 7.2 a dynamically
# linked aarch64 program hangs in its first pthread_create.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(MTPLX_STATIC_EXECUTABLES ON CACHE BOOL "Link executables statically")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Debian ships cpp-httplib as a shared library only: the static ARM build leaves the server out.
set(MTPLX_BUILD_SERVER OFF CACHE BOOL "Build the HTTP server")
# No static libcurl either: `mtplx pull` is left out too.
set(MTPLX_WITH_CURL OFF CACHE BOOL "Build mtplx pull")
