// A prefix-cache entry on disk (the session bank's spill, `serve --cache-dir`): one file per
// conversation, restored bit for bit after a restart.
//
// Layout (little-endian; docs/formats.md): "MTPLXPFX", u32 format version, the fingerprint of the
// model and engine that wrote it, flags, the capture's size and checkpoint positions, then the
// arrays in a fixed order — tokens (i32), per checkpoint its hidden row and DeltaNet states, the
// trunk snapshot (attention caches) and the MTP snapshot — each array as u64 length + elements,
// and a u64 checksum of everything before it. Every length is
// checked against the bytes left before anything is allocated: a truncated or corrupt file is an
// error naming the file, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/prefix.h"

namespace mtplx::engine {

// What the header says, enough to index a file without reading its arrays.
struct PrefixFileInfo {
  std::string path;
  std::string fingerprint;
  std::vector<int32_t> tokens;
  std::vector<int64_t> checkpoints;  // positions, ascending
  bool has_mtp = false;
  bool pre_norm_hidden = false;
  uint64_t bytes = 0;  // the capture's bytes in memory (PrefixCapture::Bytes)
};

// Writes `capture` to `path` (a temporary file, then a rename: readers never see half a file).
Status WritePrefixFile(const std::string& path, const PrefixCapture& capture,
                       const std::string& fingerprint);

Result<PrefixFileInfo> ReadPrefixFileInfo(const std::string& path);

// The whole capture; its fingerprint must be `fingerprint`.
Result<PrefixCapture> ReadPrefixFile(const std::string& path, const std::string& fingerprint);

// The same from bytes in memory (`label` names them in errors); an empty fingerprint accepts any
// (the fuzz target).
Result<PrefixCapture> ParsePrefixFile(const std::string& label, const std::string& data,
                                      const std::string& fingerprint);

}  // namespace mtplx::engine
