// The prefix cache's file parser (engine/prefix_file.h) on arbitrary bytes: it must return an
// error or a capture, never crash, read out of bounds or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/prefix_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto capture = mtplx::engine::ParsePrefixFile("fuzz", bytes, "");
  if (capture.ok()) (void)capture->Bytes();
  return 0;
}
